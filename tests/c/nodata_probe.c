/* A test application whose files are also opened without moving data, as benchmarks and tools
 * do (IOR asks a file's size through its own MPI_File_open on MPI_COMM_SELF after each phase;
 * codes create or truncate a file before writing it):
 *   per step s: every rank opens chk.<s>.dat with MPI_MODE_CREATE and closes it (no data),
 *   opens it again and writes one block per rank collectively, then rank 0 opens it twice on
 *   MPI_COMM_SELF and asks its size.
 * Usage: mpiexec -n 2 nodata_probe [STEPS] [N] [nocreate] (default 4 steps, 4096 doubles per
 * rank; nocreate: no open before the write). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void size_query(const char *name)
{
    MPI_File fh;
    MPI_Offset size = 0;
    if (MPI_File_open(MPI_COMM_SELF, name, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh) != MPI_SUCCESS)
        return;
    MPI_File_get_size(fh, &size);
    MPI_File_close(&fh);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    int steps = argc > 1 ? atoi(argv[1]) : 4;
    int n = argc > 2 ? atoi(argv[2]) : 4096;
    int create = !(argc > 3 && strcmp(argv[3], "nocreate") == 0);
    double *buf = malloc((size_t)n * sizeof *buf);
    for (int step = 0; step < steps; step++) {
        char name[64];
        snprintf(name, sizeof name, "chk.%d.dat", step);
        MPI_File fh;
        if (create) { /* the file created (or truncated) first, without data */
            MPI_File_open(MPI_COMM_WORLD, name, MPI_MODE_CREATE | MPI_MODE_WRONLY, MPI_INFO_NULL,
                          &fh);
            MPI_File_close(&fh);
        }
        for (int i = 0; i < n; i++)
            buf[i] = rank * 1e6 + step * 1e3 + i;
        MPI_File_open(MPI_COMM_WORLD, name, MPI_MODE_CREATE | MPI_MODE_WRONLY, MPI_INFO_NULL, &fh);
        MPI_Offset at = (MPI_Offset)rank * n * (MPI_Offset)sizeof(double);
        MPI_File_write_at_all(fh, at, buf, n, MPI_DOUBLE, MPI_STATUS_IGNORE);
        MPI_File_close(&fh);
        if (rank == 0) {
            size_query(name);
            size_query(name);
        }
        MPI_Barrier(MPI_COMM_WORLD);
    }
    free(buf);
    if (rank == 0)
        printf("nodata_probe done\n");
    MPI_Finalize();
    return 0;
}
