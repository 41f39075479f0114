/* pnc_probe: an ordinary PnetCDF program (classic netCDF files written through MPI-IO). Each
 * rank writes its block of rows of a 2-D float variable collectively, the file is closed,
 * reopened and read back; the exit status says whether the data read back is what was written.
 *
 * usage: pnc_probe FILE [ROWS_PER_RANK] */
#include <mpi.h>
#include <pnetcdf.h>
#include <stdio.h>
#include <stdlib.h>

#define COLS 100

#define CHECK(call)                                                                                \
    do {                                                                                           \
        int err_ = (call);                                                                         \
        if (err_ != NC_NOERR) {                                                                    \
            fprintf(stderr, "pnc_probe: %s: %s\n", #call, ncmpi_strerror(err_));                   \
            MPI_Abort(MPI_COMM_WORLD, 1);                                                          \
        }                                                                                          \
    } while (0)

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, nprocs;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    if (argc < 2) {
        fprintf(stderr, "usage: pnc_probe FILE [ROWS_PER_RANK]\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    MPI_Offset rows = argc > 2 ? atol(argv[2]) : 256;
    float *data = malloc((size_t)rows * COLS * sizeof *data),
          *back = malloc((size_t)rows * COLS * sizeof *back);
    for (MPI_Offset i = 0; i < rows * COLS; i++)
        data[i] = (float)(rank * 1000000 + (int)i);

    int ncid, dims[2], var;
    CHECK(ncmpi_create(MPI_COMM_WORLD, argv[1], NC_CLOBBER | NC_64BIT_DATA, MPI_INFO_NULL, &ncid));
    CHECK(ncmpi_def_dim(ncid, "row", rows * nprocs, &dims[0]));
    CHECK(ncmpi_def_dim(ncid, "col", COLS, &dims[1]));
    CHECK(ncmpi_def_var(ncid, "field", NC_FLOAT, 2, dims, &var));
    CHECK(ncmpi_enddef(ncid));
    MPI_Offset start[2] = {rows * rank, 0}, count[2] = {rows, COLS};
    CHECK(ncmpi_put_vara_float_all(ncid, var, start, count, data));
    CHECK(ncmpi_close(ncid));

    CHECK(ncmpi_open(MPI_COMM_WORLD, argv[1], NC_NOWRITE, MPI_INFO_NULL, &ncid));
    CHECK(ncmpi_inq_varid(ncid, "field", &var));
    CHECK(ncmpi_get_vara_float_all(ncid, var, start, count, back));
    CHECK(ncmpi_close(ncid));
    int bad = 0, anybad;
    for (MPI_Offset i = 0; i < rows * COLS; i++)
        bad |= back[i] != data[i];
    MPI_Allreduce(&bad, &anybad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (rank == 0)
        printf("pnc_probe: %s\n", anybad ? "data differ" : "verified");
    free(data);
    free(back);
    MPI_Finalize();
    return anybad;
}
