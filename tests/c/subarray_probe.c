/* subarray_probe: a plain MPI-IO program (an outside tester's, in the style scientists write)
 * that writes a 2-D array of doubles, one file per step, through a subarray file view with one
 * MPI_File_write_at_all per rank. "rows" splits the array into row blocks (each rank's part is
 * one run of the file: its view's filetype has no holes); "cols" into column blocks (each rank
 * writes G pieces of a row's share, interleaved with the other ranks').
 * usage: subarray_probe rows|cols [STEPS] */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define G 256 /* the global array is G x G doubles */

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc < 2 || G % size)
        MPI_Abort(MPI_COMM_WORLD, 2);
    int cols = strcmp(argv[1], "cols") == 0, steps = argc > 2 ? atoi(argv[2]) : 3;
    int gs[2] = {G, G};
    int ls[2] = {cols ? G : G / size, cols ? G / size : G};
    int st[2] = {cols ? 0 : rank * ls[0], cols ? rank * ls[1] : 0};
    MPI_Datatype ft;
    MPI_Type_create_subarray(2, gs, ls, st, MPI_ORDER_C, MPI_DOUBLE, &ft);
    MPI_Type_commit(&ft);
    int n = ls[0] * ls[1];
    double *buf = malloc(sizeof(double) * (size_t)n);
    for (int step = 0; step < steps; step++) {
        for (int i = 0; i < ls[0]; i++)
            for (int j = 0; j < ls[1]; j++)
                buf[i * ls[1] + j] = step * 1e6 + (st[0] + i) * G + st[1] + j;
        char name[64];
        snprintf(name, sizeof name, "grid_%03d.dat", step);
        MPI_File fh;
        MPI_File_open(MPI_COMM_WORLD, name, MPI_MODE_CREATE | MPI_MODE_WRONLY, MPI_INFO_NULL, &fh);
        MPI_File_set_view(fh, 0, MPI_DOUBLE, ft, "native", MPI_INFO_NULL);
        MPI_File_write_at_all(fh, 0, buf, n, MPI_DOUBLE, MPI_STATUS_IGNORE);
        MPI_File_close(&fh);
    }
    free(buf);
    MPI_Type_free(&ft);
    MPI_Finalize();
    return 0;
}
