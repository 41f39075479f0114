/* Writes through subarray file views with explicit offsets, as PnetCDF does (issue 22): rank 0
 * writes a 512-byte header, then every rank sets a view of its half of a 64x64x64 int array
 * (a subarray along the last dimension: 4,096 blocks of 128 bytes, more than the trace lists
 * one by one) and writes it in two MPI_File_write_at_all calls, at view offsets 0 and half
 * its data; then a 2-D view of 64 blocks, written at view offset 0; then a contiguous view
 * (MPI_BYTE), written at view offset rank * 256. Usage: skel_view_at FILE */
#include <mpi.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_File fh;
    MPI_File_open(MPI_COMM_WORLD, argc > 1 ? argv[1] : "view_at.dat",
                  MPI_MODE_CREATE | MPI_MODE_WRONLY, MPI_INFO_NULL, &fh);
    char header[512] = {0};
    if (rank == 0)
        MPI_File_write_at(fh, 0, header, 512, MPI_BYTE, MPI_STATUS_IGNORE);
    int n = 64, half = n / size;
    int gsizes[3] = {n, n, n}, lsizes[3] = {n, n, half}, starts[3] = {0, 0, rank * half};
    MPI_Datatype sub;
    MPI_Type_create_subarray(3, gsizes, lsizes, starts, MPI_ORDER_C, MPI_INT, &sub);
    MPI_Type_commit(&sub);
    int count = n * n * half;
    int *data = malloc(sizeof(int) * (size_t)count);
    for (int i = 0; i < count; i++)
        data[i] = rank * count + i;
    MPI_File_set_view(fh, 512, MPI_INT, sub, "native", MPI_INFO_NULL);
    MPI_File_write_at_all(fh, 0, data, count / 2, MPI_INT, MPI_STATUS_IGNORE);
    /* set again before the next write, as PnetCDF does per request */
    MPI_File_set_view(fh, 512, MPI_INT, sub, "native", MPI_INFO_NULL);
    MPI_File_write_at_all(fh, count / 2, data + count / 2, count / 2, MPI_INT, MPI_STATUS_IGNORE);
    int g2[2] = {n, n}, l2[2] = {n, half}, s2[2] = {0, rank * half};
    MPI_Datatype sub2;
    MPI_Type_create_subarray(2, g2, l2, s2, MPI_ORDER_C, MPI_INT, &sub2);
    MPI_Type_commit(&sub2);
    MPI_File_set_view(fh, 512 + (MPI_Offset)sizeof(int) * n * n * n, MPI_INT, sub2, "native",
                      MPI_INFO_NULL);
    MPI_File_write_at_all(fh, 0, data, n * half, MPI_INT, MPI_STATUS_IGNORE);
    /* a contiguous view (bytes), as PnetCDF sets before a variable whose ranks' parts are
     * contiguous, and an explicit-offset write through it */
    MPI_Offset end = 512 + (MPI_Offset)sizeof(int) * (n * n * n + n * n);
    MPI_File_set_view(fh, end, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL);
    MPI_File_write_at_all(fh, (MPI_Offset)rank * 256, data, 64, MPI_INT, MPI_STATUS_IGNORE);
    MPI_File_close(&fh);
    MPI_Type_free(&sub);
    MPI_Type_free(&sub2);
    free(data);
    MPI_Finalize();
    return 0;
}
