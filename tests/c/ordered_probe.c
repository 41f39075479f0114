/* ordered_probe: MPI_File_write_ordered and MPI_File_read_ordered, the calls whose records
 * ROMIO puts out of order with collective buffering disabled. Each of 3 steps writes
 * log_<s>.txt, 4 ordered 16-byte records per rank; then each file is opened again and read
 * back with ordered reads, and every rank checks it got the records of the standard's order
 * (rank order within each call). Exits 3 when a record differs (a write and a read both out
 * of order can cancel out: the tests compare the files too).
 * usage: ordered_probe */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

#define STEPS 3
#define CALLS 4

static void record(char *out, int step, int rank, int call)
{
    char text[17];
    snprintf(text, sizeof text, "s%dr%dk%d..........", step, rank, call);
    memcpy(out, text, 15);
    out[15] = '\n';
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size, bad = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (int s = 0; s < STEPS; s++) {
        char name[32], rec[16];
        snprintf(name, sizeof name, "log_%d.txt", s);
        MPI_File fh;
        MPI_File_open(MPI_COMM_WORLD, name, MPI_MODE_CREATE | MPI_MODE_WRONLY, MPI_INFO_NULL, &fh);
        for (int k = 0; k < CALLS; k++) {
            record(rec, s, rank, k);
            MPI_File_write_ordered(fh, rec, 16, MPI_CHAR, MPI_STATUS_IGNORE);
        }
        MPI_File_close(&fh);
    }
    for (int s = 0; s < STEPS; s++) {
        char name[32], rec[16], want[16];
        snprintf(name, sizeof name, "log_%d.txt", s);
        MPI_File fh;
        MPI_File_open(MPI_COMM_WORLD, name, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh);
        for (int k = 0; k < CALLS; k++) { /* call k reads record k*size+rank: rank's own */
            MPI_File_read_ordered(fh, rec, 16, MPI_CHAR, MPI_STATUS_IGNORE);
            record(want, s, rank, k);
            bad += memcmp(rec, want, 16) != 0;
        }
        MPI_File_close(&fh);
    }
    int any = 0;
    MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("ordered_probe: %d records out of order\n", any);
    MPI_Finalize();
    return any ? 3 : 0;
}
