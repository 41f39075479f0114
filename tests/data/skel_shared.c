/* An MPI-IO program written for the skeleton tests: records through the shared file pointer.
 * Rank 0 writes a 32-byte header at offset 0 (explicit offset: the shared pointer does not
 * move), then at every step the ranks append records of their own lengths in rank order
 * (MPI_File_write_ordered: rank r's 100 + 60 r bytes) and then one each in any order
 * (MPI_File_write_shared: 40 (r + 1) bytes), all past each other, and the shared pointer
 * overwrites the header. The file is then opened again and read back the same way
 * (MPI_File_read_ordered, MPI_File_read_shared). Every byte a rank writes is rank + 1, so a
 * file's bytes say which rank wrote where. Its skeleton wrote every record at offset 0.
 * Usage: skel_shared NAME [STEPS] */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void check(int rc)
{
    if (rc != MPI_SUCCESS)
        MPI_Abort(MPI_COMM_WORLD, 1);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc < 2)
        MPI_Abort(MPI_COMM_WORLD, 2);
    int steps = argc > 2 ? atoi(argv[2]) : 2;
    int ordered = 100 + 60 * rank, shared = 40 * (rank + 1);
    char *buf = malloc((size_t)ordered + (size_t)shared + 32);
    memset(buf, rank + 1, (size_t)ordered + (size_t)shared + 32);
    MPI_File fh;
    check(MPI_File_open(MPI_COMM_WORLD, argv[1], MPI_MODE_CREATE | MPI_MODE_WRONLY, MPI_INFO_NULL,
                        &fh));
    if (rank == 0)
        check(MPI_File_write_at(fh, 0, buf, 32, MPI_BYTE, MPI_STATUS_IGNORE));
    for (int s = 0; s < steps; s++) {
        check(MPI_File_write_ordered(fh, buf, ordered, MPI_BYTE, MPI_STATUS_IGNORE));
        check(MPI_File_write_shared(fh, buf, shared, MPI_BYTE, MPI_STATUS_IGNORE));
        MPI_Barrier(MPI_COMM_WORLD);
    }
    check(MPI_File_close(&fh));
    check(MPI_File_open(MPI_COMM_WORLD, argv[1], MPI_MODE_RDONLY, MPI_INFO_NULL, &fh));
    for (int s = 0; s < steps; s++) {
        check(MPI_File_read_ordered(fh, buf, ordered, MPI_BYTE, MPI_STATUS_IGNORE));
        check(MPI_File_read_shared(fh, buf, shared, MPI_BYTE, MPI_STATUS_IGNORE));
        MPI_Barrier(MPI_COMM_WORLD);
    }
    check(MPI_File_close(&fh));
    free(buf);
    MPI_Finalize();
    return 0;
}
