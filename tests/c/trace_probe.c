/* trace_probe: call sequences with known signatures and order, for the trace tests and the trace
 * volume bench (bench/tracevol.py). usage: trace_probe MODE PATH N
 * Each rank works on its own files (PATH.<rank>...), opened before and closed after the loop:
 *   seq       N pwrite of 256 bytes, each right after the last (offset i * 256)
 *   random    N pwrite of 1..4096 bytes at offsets below 256 MiB drawn from a 64-bit LCG
 *             (x = x * 6364136223846793005 + 1442695040888963407, x0 = 1 + rank; size
 *             1 + (x >> 33) % 4096, offset (x >> 20) % 2^28): every call a new signature
 *   twofiles  N times: pwrite 256 bytes to PATH.<rank>.a at i * 256, 512 to PATH.<rank>.b at i *
 * 512 h5        N independent H5Dwrite of 64 ints to the next 64 elements of a 1-D dataset (MPI-IO
 *             driver on MPI_COMM_SELF, so each call passes HDF5, MPI-IO and POSIX)
 *   h5same    N H5Dwrite as h5, all to the first 256 ints (the callcost bench's pattern)
 *   timed     N pwrite of 64 bytes at offset 0, call i starting (busy wait) 50 us after call
 *             i - 1 for the first half and 120 us after for the rest, every 7th call 30 us
 *             later still; prints "before" and "after": the clock (CLOCK_MONOTONIC, s) read
 *             right before and right after each call
 * Prints {"mode": ..., "calls": N, "seconds": loop time}. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <hdf5.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void check(int ok, const char *what)
{
    if (!ok) {
        fprintf(stderr, "trace_probe: %s failed\n", what);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
}

static int open_rank_file(const char *path, int rank, const char *suffix)
{
    char name[4096];
    snprintf(name, sizeof name, "%s.%d%s", path, rank, suffix);
    int fd = open(name, O_CREAT | O_TRUNC | O_RDWR, 0644);
    check(fd >= 0, "open");
    return fd;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void timed_mode(const char *path, int rank, long n)
{
    static char buf[64];
    double *starts = malloc((size_t)n * sizeof *starts), *ends = malloc((size_t)n * sizeof *ends);
    check(starts && ends, "malloc");
    int fd = open_rank_file(path, rank, "");
    double next = now();
    for (long i = 0; i < n; i++) {
        while ((starts[i] = now()) < next)
            ;
        check(pwrite(fd, buf, sizeof buf, 0) == (ssize_t)sizeof buf, "pwrite");
        ends[i] = now();
        next = starts[i] + (i < n / 2 ? 50e-6 : 120e-6) + (i % 7 == 6 ? 30e-6 : 0);
    }
    close(fd);
    if (rank == 0) {
        printf("{\"before\": [");
        for (long i = 0; i < n; i++)
            printf("%s%.9f", i ? ", " : "", starts[i]);
        printf("], \"after\": [");
        for (long i = 0; i < n; i++)
            printf("%s%.9f", i ? ", " : "", ends[i]);
        printf("]}\n");
    }
    free(starts);
    free(ends);
}

static void posix_modes(const char *mode, const char *path, int rank, long n)
{
    static char buf[4096];
    if (strcmp(mode, "twofiles") == 0) {
        int a = open_rank_file(path, rank, ".a"), b = open_rank_file(path, rank, ".b");
        for (long i = 0; i < n; i++) {
            check(pwrite(a, buf, 256, i * 256) == 256, "pwrite");
            check(pwrite(b, buf, 512, i * 512) == 512, "pwrite");
        }
        close(a);
        close(b);
        return;
    }
    int fd = open_rank_file(path, rank, "");
    uint64_t x = 1 + (uint64_t)rank;
    for (long i = 0; i < n; i++) {
        size_t size = 256;
        off_t offset = (off_t)i * 256;
        if (strcmp(mode, "random") == 0) {
            x = x * 6364136223846793005ull + 1442695040888963407ull;
            size = 1 + (size_t)((x >> 33) % 4096);
            offset = (off_t)((x >> 20) % (1ull << 28));
        }
        check(pwrite(fd, buf, size, offset) == (ssize_t)size, "pwrite");
    }
    close(fd);
}

static void h5_modes(const char *mode, const char *path, int rank, long n)
{
    char name[4096];
    snprintf(name, sizeof name, "%s.%d.h5", path, rank);
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    H5Pset_fapl_mpio(fapl, MPI_COMM_SELF, MPI_INFO_NULL);
    hid_t f = H5Fcreate(name, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    int same = strcmp(mode, "h5same") == 0;
    hsize_t count = same ? 256 : 64, dims = same ? 65536 : (hsize_t)n * count;
    hid_t space = H5Screate_simple(1, &dims, NULL), mem = H5Screate_simple(1, &count, NULL);
    hid_t d = H5Dcreate2(f, "d", H5T_NATIVE_INT, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    check(d >= 0, "H5Dcreate2");
    static int buf[256];
    for (long i = 0; i < n; i++) {
        hsize_t start = same ? 0 : (hsize_t)i * count;
        H5Sselect_hyperslab(space, H5S_SELECT_SET, &start, NULL, &count, NULL);
        check(H5Dwrite(d, H5T_NATIVE_INT, mem, space, H5P_DEFAULT, buf) >= 0, "H5Dwrite");
    }
    H5Dclose(d);
    H5Sclose(mem);
    H5Sclose(space);
    H5Fclose(f);
    H5Pclose(fapl);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    if (argc != 4) {
        fprintf(stderr, "usage: trace_probe seq|random|twofiles|h5|h5same|timed PATH N\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    const char *mode = argv[1];
    long n = atol(argv[3]);
    double t = MPI_Wtime();
    if (strncmp(mode, "h5", 2) == 0)
        h5_modes(mode, argv[2], rank, n);
    else if (strcmp(mode, "timed") == 0)
        timed_mode(argv[2], rank, n);
    else
        posix_modes(mode, argv[2], rank, n);
    t = MPI_Wtime() - t;
    if (rank == 0)
        printf("{\"mode\": \"%s\", \"calls\": %ld, \"seconds\": %.6f}\n", mode, n, t);
    MPI_Finalize();
    return 0;
}
