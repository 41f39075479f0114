/* view_probe: a plain MPI-IO program whose ranks write and read one shared file through a file
 * view, each rank's blocks interleaved with the others' (a resized filetype: holes) or, with
 * "contiguous", each rank's one region. Two collective writes, then the file is reopened and
 * read back in one collective read; exits 3 when a value read differs.
 * usage: view_probe FILE [interleaved|contiguous] */
#include <mpi.h>
#include <stdlib.h>
#include <string.h>

#define N 4096    /* ints per rank and write */
#define BLOCK 256 /* ints per block of the interleaved view */

static void set_view(MPI_File fh, int rank, int size, int interleaved, MPI_Datatype *ft)
{
    if (interleaved) {
        MPI_Datatype block;
        MPI_Type_contiguous(BLOCK, MPI_INT, &block);
        MPI_Type_create_resized(block, 0, (MPI_Aint)BLOCK * size * (MPI_Aint)sizeof(int), ft);
        MPI_Type_free(&block);
        MPI_Type_commit(ft);
        MPI_File_set_view(fh, (MPI_Offset)rank * BLOCK * (MPI_Offset)sizeof(int), MPI_INT, *ft,
                          "native", MPI_INFO_NULL);
    } else {
        *ft = MPI_DATATYPE_NULL;
        MPI_File_set_view(fh, (MPI_Offset)rank * 2 * N * (MPI_Offset)sizeof(int), MPI_INT, MPI_INT,
                          "native", MPI_INFO_NULL);
    }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc < 2)
        MPI_Abort(MPI_COMM_WORLD, 2);
    int interleaved = argc < 3 || strcmp(argv[2], "contiguous") != 0;
    int *b = malloc(2 * N * sizeof(int)), *r = calloc(2 * N, sizeof(int));
    for (int i = 0; i < 2 * N; i++)
        b[i] = rank * 1000000 + i;
    MPI_File fh;
    MPI_Datatype ft;
    MPI_File_open(MPI_COMM_WORLD, argv[1], MPI_MODE_CREATE | MPI_MODE_WRONLY, MPI_INFO_NULL, &fh);
    set_view(fh, rank, size, interleaved, &ft);
    for (int rep = 0; rep < 2; rep++)
        MPI_File_write_at_all(fh, (MPI_Offset)rep * N, b + rep * N, N, MPI_INT, MPI_STATUS_IGNORE);
    MPI_File_close(&fh);
    if (ft != MPI_DATATYPE_NULL)
        MPI_Type_free(&ft);
    MPI_File_open(MPI_COMM_WORLD, argv[1], MPI_MODE_RDONLY, MPI_INFO_NULL, &fh);
    set_view(fh, rank, size, interleaved, &ft);
    MPI_File_read_at_all(fh, 0, r, 2 * N, MPI_INT, MPI_STATUS_IGNORE);
    MPI_File_close(&fh);
    if (ft != MPI_DATATYPE_NULL)
        MPI_Type_free(&ft);
    int bad = memcmp(b, r, 2 * N * sizeof(int)) != 0, any = 0;
    MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    free(b);
    free(r);
    MPI_Finalize();
    return any ? 3 : 0;
}
