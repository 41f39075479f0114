/* nc4_probe: an ordinary parallel netCDF-4 program (netCDF on parallel HDF5 and MPI-IO). Each
 * rank writes its block of rows of a 2-D float variable collectively, the file is closed,
 * reopened and read back; the exit status says whether the data read back is what was written.
 *
 * usage: nc4_probe FILE [ROWS_PER_RANK] */
#include <mpi.h>
#include <netcdf.h>
#include <netcdf_par.h>
#include <stdio.h>
#include <stdlib.h>

#define COLS 100

#define CHECK(call)                                                                                \
    do {                                                                                           \
        int err_ = (call);                                                                         \
        if (err_ != NC_NOERR) {                                                                    \
            fprintf(stderr, "nc4_probe: %s: %s\n", #call, nc_strerror(err_));                      \
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
        fprintf(stderr, "usage: nc4_probe FILE [ROWS_PER_RANK]\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    size_t rows = argc > 2 ? (size_t)atol(argv[2]) : 256;
    float *data = malloc(rows * COLS * sizeof *data), *back = malloc(rows * COLS * sizeof *back);
    for (size_t i = 0; i < rows * COLS; i++)
        data[i] = (float)(rank * 1000000 + (int)i);

    int ncid, dims[2], var;
    CHECK(nc_create_par(argv[1], NC_NETCDF4 | NC_CLOBBER, MPI_COMM_WORLD, MPI_INFO_NULL, &ncid));
    CHECK(nc_def_dim(ncid, "row", rows * (size_t)nprocs, &dims[0]));
    CHECK(nc_def_dim(ncid, "col", COLS, &dims[1]));
    CHECK(nc_def_var(ncid, "field", NC_FLOAT, 2, dims, &var));
    CHECK(nc_enddef(ncid));
    CHECK(nc_var_par_access(ncid, var, NC_COLLECTIVE));
    size_t start[2] = {rows * (size_t)rank, 0}, count[2] = {rows, COLS};
    CHECK(nc_put_vara_float(ncid, var, start, count, data));
    CHECK(nc_close(ncid));

    CHECK(nc_open_par(argv[1], NC_NOWRITE, MPI_COMM_WORLD, MPI_INFO_NULL, &ncid));
    CHECK(nc_inq_varid(ncid, "field", &var));
    CHECK(nc_var_par_access(ncid, var, NC_COLLECTIVE));
    CHECK(nc_get_vara_float(ncid, var, start, count, back));
    CHECK(nc_close(ncid));
    int bad = 0, anybad;
    for (size_t i = 0; i < rows * COLS; i++)
        bad |= back[i] != data[i];
    MPI_Allreduce(&bad, &anybad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (rank == 0)
        printf("nc4_probe: %s\n", anybad ? "data differ" : "verified");
    free(data);
    free(back);
    MPI_Finalize();
    return anybad;
}
