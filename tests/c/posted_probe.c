/* posted_probe: recurring phases of nonblocking collective MPI-IO writes (MPI 3.1). Each of 3
 * steps writes posted_<s>.dat, one block per rank at the rank's offset, with
 * MPI_File_iwrite_at_all and then MPI_Wait: most of the write's time is in the wait, which the
 * runtime does not time (docs/profile.md).
 * usage: posted_probe [N] (doubles per rank, default 65536) */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    int n = argc > 1 ? atoi(argv[1]) : 65536;
    double *buf = malloc(sizeof *buf * (size_t)n);
    for (int s = 0; s < 3; s++) {
        for (int i = 0; i < n; i++)
            buf[i] = rank * 1e6 + s * 1e3 + i;
        char name[32];
        snprintf(name, sizeof name, "posted_%d.dat", s);
        MPI_File fh;
        MPI_File_open(MPI_COMM_WORLD, name, MPI_MODE_CREATE | MPI_MODE_WRONLY, MPI_INFO_NULL, &fh);
        MPI_Request req;
        MPI_File_iwrite_at_all(fh, (MPI_Offset)rank * n * (MPI_Offset)sizeof *buf, buf, n,
                               MPI_DOUBLE, &req);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        MPI_File_close(&fh);
    }
    free(buf);
    MPI_Finalize();
    return 0;
}
