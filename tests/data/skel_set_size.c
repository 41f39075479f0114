/* Sets an MPI-IO file's size, as h5perf does (issue 22): the file opened, its size set to 0
 * (MPI_File_set_size: ext4 then writes the file back at its close, a cost the skeleton must
 * have too), each rank's 1 MiB written collectively, then the size set past the data (to
 * 2 MiB per rank + 4096). Usage: skel_set_size FILE */
#include <mpi.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_File fh;
    MPI_File_open(MPI_COMM_WORLD, argc > 1 ? argv[1] : "set_size.dat",
                  MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh);
    MPI_File_set_size(fh, 0);
    int n = 1 << 20;
    char *data = malloc((size_t)n);
    memset(data, rank + 1, (size_t)n);
    MPI_File_write_at_all(fh, (MPI_Offset)rank * n, data, n, MPI_BYTE, MPI_STATUS_IGNORE);
    MPI_File_set_size(fh, (MPI_Offset)2 * n * size + 4096);
    MPI_File_close(&fh);
    free(data);
    MPI_Finalize();
    return 0;
}
