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
 *   views     N times the same 6 file views (MPI_File_set_view on PATH.<rank>.v, MPI_COMM_SELF),
 *             each followed by one MPI_File_write_all of its filetype's size: see view_types
 *   h5types   datasets of known types and layouts in PATH.<rank>.h5 (N ignored): see h5types_mode
 *   h5again   /d of 100 ints, elements 10-19 written (H5S_ALL in memory), the link deleted, /d
 *             again as 50 x 4 ints, row 5 written, then the whole dataset (H5S_ALL)
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

/* The filetypes of the views mode, with their displacements (tests/python/test_trace.py knows
 * the blocks each must flatten to). */
static int view_types(MPI_Datatype *t, MPI_Offset *disp)
{
    int sizes[2] = {6, 8}, sub[2] = {2, 3}, starts[2] = {1, 2};
    int bl[3] = {1, 2, 1}, idx[3] = {0, 3, 7}, sbl[2] = {1, 3};
    MPI_Aint sdisp[2] = {0, 16};
    MPI_Datatype stypes[2] = {MPI_INT, MPI_CHAR}, vec, wide;
    MPI_Type_vector(4, 2, 5, MPI_INT, &t[0]); /* [0,8] [20,8] [40,8] [60,8] */
    disp[0] = 100;
    MPI_Type_create_subarray(2, sizes, sub, starts, MPI_ORDER_C, MPI_DOUBLE, &t[1]);
    disp[1] = 0; /* elements 10-12, 18-20: [80,24] [144,24] */
    MPI_Type_create_subarray(2, sizes, sub, starts, MPI_ORDER_FORTRAN, MPI_FLOAT, &t[2]);
    disp[2] = 0; /* elements 13-14, 19-20, 25-26: [52,8] [76,8] [100,8] */
    MPI_Type_create_struct(2, sbl, sdisp, stypes, &t[3]);
    disp[3] = 8; /* [0,4] [16,3] */
    MPI_Type_indexed(3, bl, idx, MPI_SHORT, &t[4]);
    disp[4] = 0; /* [0,2] [6,4] [14,2] */
    MPI_Type_vector(2, 1, 2, MPI_INT, &vec);
    MPI_Type_create_resized(vec, 0, 16, &wide);
    MPI_Type_contiguous(2, wide, &t[5]);
    disp[5] = 0; /* [0,4] [8,4] [16,4] [24,4] */
    MPI_Type_free(&vec);
    MPI_Type_free(&wide);
    for (int i = 0; i < 6; i++)
        MPI_Type_commit(&t[i]);
    return 6;
}

static void views_mode(const char *path, int rank, long n)
{
    char name[4096];
    snprintf(name, sizeof name, "%s.%d.v", path, rank);
    MPI_File fh;
    check(MPI_File_open(MPI_COMM_SELF, name, MPI_MODE_CREATE | MPI_MODE_WRONLY, MPI_INFO_NULL,
                        &fh) == MPI_SUCCESS,
          "MPI_File_open");
    MPI_Datatype t[6];
    MPI_Offset disp[6];
    int nt = view_types(t, disp);
    static char buf[1024];
    for (long i = 0; i < n; i++)
        for (int k = 0; k < nt; k++) {
            int size;
            MPI_Status st;
            MPI_Type_size(t[k], &size);
            check(MPI_File_set_view(fh, disp[k], MPI_BYTE, t[k], "native", MPI_INFO_NULL) ==
                      MPI_SUCCESS,
                  "MPI_File_set_view");
            check(MPI_File_write_all(fh, buf, size, MPI_BYTE, &st) == MPI_SUCCESS,
                  "MPI_File_write_all");
        }
    for (int k = 0; k < nt; k++)
        MPI_Type_free(&t[k]);
    MPI_File_close(&fh);
}

/* Datasets of known types and layouts (no data written): /u16 uint16 [10]; /f64c double [8, 6]
 * chunked [4, 3]; /ext big-endian int32 [4] of unlimited maximum, chunked [2]; /str a fixed
 * 8-byte string [3]. */
static void h5types_mode(const char *path, int rank)
{
    char name[4096];
    snprintf(name, sizeof name, "%s.%d.h5", path, rank);
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    H5Pset_fapl_mpio(fapl, MPI_COMM_SELF, MPI_INFO_NULL);
    hid_t f = H5Fcreate(name, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    hsize_t d1 = 10, d2[2] = {8, 6}, c2[2] = {4, 3}, d3 = 4, m3 = H5S_UNLIMITED, c3 = 2, d4 = 3;
    hid_t str = H5Tcopy(H5T_C_S1);
    H5Tset_size(str, 8);
    hid_t dcpl2 = H5Pcreate(H5P_DATASET_CREATE), dcpl3 = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_chunk(dcpl2, 2, c2);
    H5Pset_chunk(dcpl3, 1, &c3);
    struct {
        const char *name;
        hid_t type, space, dcpl;
    } ds[] = {{"u16", H5T_NATIVE_UINT16, H5Screate_simple(1, &d1, NULL), H5P_DEFAULT},
              {"f64c", H5T_NATIVE_DOUBLE, H5Screate_simple(2, d2, NULL), dcpl2},
              {"ext", H5T_STD_I32BE, H5Screate_simple(1, &d3, &m3), dcpl3},
              {"str", str, H5Screate_simple(1, &d4, NULL), H5P_DEFAULT}};
    for (size_t i = 0; i < sizeof ds / sizeof ds[0]; i++) {
        hid_t d = H5Dcreate2(f, ds[i].name, ds[i].type, ds[i].space, H5P_DEFAULT, ds[i].dcpl,
                             H5P_DEFAULT);
        check(d >= 0, "H5Dcreate2");
        H5Dclose(d);
        H5Sclose(ds[i].space);
    }
    H5Pclose(dcpl2);
    H5Pclose(dcpl3);
    H5Tclose(str);
    H5Fclose(f);
    H5Pclose(fapl);
}

/* One dataset path with two extents in turn: a transfer's box and offset must follow the
 * dataset it writes, not the first one of that path. */
static void h5again_mode(const char *path, int rank)
{
    char name[4096];
    snprintf(name, sizeof name, "%s.%d.h5", path, rank);
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    H5Pset_fapl_mpio(fapl, MPI_COMM_SELF, MPI_INFO_NULL);
    hid_t f = H5Fcreate(name, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    static int buf[200];
    hsize_t n1 = 100, start1 = 10, count1 = 10, n2[2] = {50, 4}, start2[2] = {5, 0},
            count2[2] = {1, 4};
    hid_t space = H5Screate_simple(1, &n1, NULL), mem = H5Screate_simple(1, &count1, NULL);
    hid_t d = H5Dcreate2(f, "d", H5T_NATIVE_INT, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    H5Sselect_hyperslab(space, H5S_SELECT_SET, &start1, NULL, &count1, NULL);
    check(H5Dwrite(d, H5T_NATIVE_INT, mem, space, H5P_DEFAULT, buf) >= 0, "H5Dwrite");
    H5Dclose(d);
    H5Sclose(space);
    H5Sclose(mem);
    check(H5Ldelete(f, "d", H5P_DEFAULT) >= 0, "H5Ldelete");
    space = H5Screate_simple(2, n2, NULL);
    mem = H5Screate_simple(2, count2, NULL);
    d = H5Dcreate2(f, "d", H5T_NATIVE_INT, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    H5Sselect_hyperslab(space, H5S_SELECT_SET, start2, NULL, count2, NULL);
    check(H5Dwrite(d, H5T_NATIVE_INT, mem, space, H5P_DEFAULT, buf) >= 0, "H5Dwrite");
    check(H5Dwrite(d, H5T_NATIVE_INT, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) >= 0, "H5Dwrite");
    H5Dclose(d);
    H5Sclose(space);
    H5Sclose(mem);
    H5Fclose(f);
    H5Pclose(fapl);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    if (argc != 4) {
        fprintf(stderr, "usage: trace_probe "
                        "seq|random|twofiles|h5|h5same|timed|views|h5types|h5again PATH N\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    const char *mode = argv[1];
    long n = atol(argv[3]);
    double t = MPI_Wtime();
    if (strcmp(mode, "views") == 0)
        views_mode(argv[2], rank, n);
    else if (strcmp(mode, "h5types") == 0)
        h5types_mode(argv[2], rank);
    else if (strcmp(mode, "h5again") == 0)
        h5again_mode(argv[2], rank);
    else if (strncmp(mode, "h5", 2) == 0)
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
