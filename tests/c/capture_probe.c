/* capture_probe: I/O patterns with known counts, one per mode, for the capture tests.
 * usage: capture_probe MODE PATH [N]
 *   threads    4 threads share one descriptor: N pwrite of 64 bytes each at distinct offsets
 *   random     N pwrite of 8 bytes at pseudo-random offsets; prints {"seconds": loop time}
 *   dup        write 100 bytes through fd, dup(fd), dup2(fd, 100), fcntl(F_DUPFD): 400 bytes
 *   vector     writev 3 x 100 bytes, pwritev 2 x 50 at 1000, readv 2 x 100, preadv 1 x 50
 *   openat     openat, openat64, __openat_2, __open_2 of PATH (absolute), 10 bytes each
 *   stdio      fopen "w", 3 fwrite of 1000 bytes, fclose; fopen "r", fread 3000, fclose
 *   seeks      write 4 x 512, lseek 0, read 512, fsync, close (for the trace)
 *   noclose    open, write 4096 bytes, sleep 0.2 s, exit without closing
 *   longname   open a file under PATH whose full name has 600 characters, twice
 *   many       create N files PATH.<i> (write 1 byte, close)
 *   sofile     write PATH (a data file whose name contains ".so"), then read it back
 * MPI modes (each rank on PATH.<rank> unless said):
 *   mpiio      nonblocking, split-collective and large-count writes of 1000 bytes each on the
 *              shared PATH at distinct offsets, a short read (65536 asked, 200 there), sync,
 *              set_view; prints nothing
 *   clock      open PATH.<rank> right after MPI_Init, close, MPI_Finalize
 *   nofinalize MPI_Init, write 1000 bytes to PATH.<rank>, exit without MPI_Finalize; ranks
 *              but 0 exit 0.5 s later (Hydra kills every rank once one has exited so)
 *   manympi    every rank writes 100 bytes to the shared PATH.shared (pwrite at rank x 100),
 *              then N files PATH.<rank>.<i> of 1 byte each (the profile's summary) */
#define _GNU_SOURCE
#include <fcntl.h>
#include <mpi.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

int __openat_2(int dirfd, const char *path, int flags);
int __open_2(const char *path, int flags);

static int bad;
#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "capture_probe: %s:%d: %s failed\n", __FILE__, __LINE__, #cond);       \
            bad = 1;                                                                               \
        }                                                                                          \
    } while (0)

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

typedef struct {
    int fd, id;
    long n;
} worker;

static void *pwrites(void *arg)
{
    worker *w = arg;
    char buf[64];
    memset(buf, 'a' + w->id, sizeof buf);
    for (long i = 0; i < w->n; i++)
        CHECK(pwrite(w->fd, buf, sizeof buf, (off_t)((w->id * w->n + i) * 64)) == 64);
    return NULL;
}

static void threads(const char *path, long n)
{
    int fd = open(path, O_CREAT | O_TRUNC | O_WRONLY, 0644);
    CHECK(fd >= 0);
    pthread_t t[4];
    worker w[4];
    for (int i = 0; i < 4; i++) {
        w[i] = (worker){fd, i, n};
        pthread_create(&t[i], NULL, pwrites, &w[i]);
    }
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    CHECK(close(fd) == 0);
}

static void random_writes(const char *path, long n)
{
    int fd = open(path, O_CREAT | O_TRUNC | O_WRONLY, 0644);
    CHECK(fd >= 0);
    uint64_t x = 88172645463325252ull;
    double t = now();
    for (long i = 0; i < n; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        CHECK(pwrite(fd, &x, 8, (off_t)(x % (64u << 20)) & ~7) == 8);
    }
    printf("{\"seconds\": %.6f}\n", now() - t);
    CHECK(close(fd) == 0);
}

static void dups(const char *path)
{
    char buf[100] = {0};
    int fd = open(path, O_CREAT | O_TRUNC | O_WRONLY, 0644);
    CHECK(write(fd, buf, 100) == 100);
    int a = dup(fd);
    CHECK(write(a, buf, 100) == 100);
    CHECK(dup2(fd, 100) == 100);
    CHECK(write(100, buf, 100) == 100);
    int b = fcntl(fd, F_DUPFD, 200);
    CHECK(b >= 200 && write(b, buf, 100) == 100);
    CHECK(close(fd) == 0 && close(a) == 0 && close(100) == 0 && close(b) == 0);
}

static void vector(const char *path)
{
    char a[100] = {0}, b[100] = {0}, c[100] = {0};
    int fd = open(path, O_CREAT | O_TRUNC | O_RDWR, 0644);
    struct iovec w[3] = {{a, 100}, {b, 100}, {c, 100}};
    CHECK(writev(fd, w, 3) == 300);
    struct iovec pw[2] = {{a, 50}, {b, 50}};
    CHECK(pwritev(fd, pw, 2, 1000) == 100);
    CHECK(lseek(fd, 0, SEEK_SET) == 0);
    struct iovec r[2] = {{a, 100}, {b, 100}};
    CHECK(readv(fd, r, 2) == 200);
    struct iovec pr[1] = {{c, 50}};
    CHECK(preadv(fd, pr, 1, 1000) == 50);
    CHECK(close(fd) == 0);
}

static void opens_at(const char *path)
{
    int fds[4] = {openat(AT_FDCWD, path, O_CREAT | O_WRONLY | O_TRUNC, 0644),
                  openat64(AT_FDCWD, path, O_WRONLY), __openat_2(AT_FDCWD, path, O_WRONLY),
                  __open_2(path, O_WRONLY)};
    for (int i = 0; i < 4; i++) {
        CHECK(fds[i] >= 0 && write(fds[i], "0123456789", 10) == 10);
        CHECK(close(fds[i]) == 0);
    }
}

static void streams(const char *path)
{
    char buf[3000] = {0};
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    for (int i = 0; i < 3; i++)
        CHECK(fwrite(buf, 1, 1000, f) == 1000);
    CHECK(fclose(f) == 0);
    f = fopen(path, "r");
    CHECK(f && fread(buf, 1, 3000, f) == 3000);
    CHECK(fclose(f) == 0);
}

static void seeks(const char *path)
{
    char buf[512] = {0};
    int fd = open(path, O_CREAT | O_TRUNC | O_RDWR, 0644);
    for (int i = 0; i < 4; i++)
        CHECK(write(fd, buf, 512) == 512);
    CHECK(lseek(fd, 0, SEEK_SET) == 0);
    CHECK(read(fd, buf, 512) == 512);
    CHECK(fsync(fd) == 0);
    CHECK(close(fd) == 0);
}

static void noclose(const char *path)
{
    static char buf[4096];
    int fd = open(path, O_CREAT | O_TRUNC | O_WRONLY, 0644);
    CHECK(write(fd, buf, sizeof buf) == sizeof buf);
    usleep(200000);
}

static void longname(const char *dir)
{
    char path[1024];
    int n = snprintf(path, sizeof path, "%s/", dir);
    while (n < 520) { /* directories of 100 characters until the name is long enough */
        n += snprintf(path + n, sizeof path - (size_t)n, "%0100d/", 0);
        mkdir(path, 0755);
    }
    while (n < 600)
        path[n++] = 'f';
    path[n] = '\0';
    for (int i = 0; i < 2; i++) {
        int fd = open(path, O_CREAT | O_WRONLY, 0644);
        CHECK(fd >= 0 && write(fd, "x", 1) == 1 && close(fd) == 0);
    }
}

static void many(const char *path, long n)
{
    for (long i = 0; i < n; i++) {
        char name[4200];
        snprintf(name, sizeof name, "%s.%ld", path, i);
        int fd = open(name, O_CREAT | O_TRUNC | O_WRONLY, 0644);
        CHECK(fd >= 0 && write(fd, "x", 1) == 1 && close(fd) == 0);
    }
}

static void sofile(const char *path)
{
    char buf[256] = {0};
    int fd = open(path, O_CREAT | O_TRUNC | O_WRONLY, 0644);
    CHECK(fd >= 0 && write(fd, buf, 256) == 256 && close(fd) == 0);
    fd = open(path, O_RDONLY);
    CHECK(fd >= 0 && read(fd, buf, 256) == 256 && close(fd) == 0);
}

/* MPI-4 large-count calls (MPI_File_write_at_c, ...) where the MPI has them; an MPI 3.1 library
 * (Open MPI 4.1, MPICH 3) gets the classic call in their place, so the file and the counts
 * stay the same. */
#if MPI_VERSION >= 4
#define LARGE(call) call##_c
#else
#define LARGE(call) call
#endif

/* Every data call is 1000 bytes at its own offset: 14 writes, then two reads. */
static void mpiio(const char *path)
{
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_File fh;
    CHECK(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL,
                        &fh) == MPI_SUCCESS);
    static char buf[65536];
    MPI_Request req[4];
    MPI_Status st;
    int k = 0;
#define AT(i) (((MPI_Offset)(i)*size + rank) * 1000) /* call i of every rank side by side */
    MPI_File_iwrite_at(fh, AT(k++), buf, 1000, MPI_BYTE, &req[0]);
    MPI_File_iwrite_at_all(fh, AT(k++), buf, 1000, MPI_BYTE, &req[1]);
    LARGE(MPI_File_iwrite_at)(fh, AT(k++), buf, 1000, MPI_BYTE, &req[2]);
    LARGE(MPI_File_iwrite_at_all)(fh, AT(k++), buf, 1000, MPI_BYTE, &req[3]);
    for (int i = 0; i < 4; i++)
        MPI_Wait(&req[i], MPI_STATUS_IGNORE);
    MPI_File_write_at_all_begin(fh, AT(k++), buf, 1000, MPI_BYTE);
    MPI_File_write_at_all_end(fh, buf, &st);
    LARGE(MPI_File_write_at_all_begin)(fh, AT(k++), buf, 1000, MPI_BYTE);
    MPI_File_write_at_all_end(fh, buf, MPI_STATUS_IGNORE);
    MPI_File_seek(fh, AT(k++), MPI_SEEK_SET);
    MPI_File_write_all_begin(fh, buf, 1000, MPI_BYTE);
    MPI_File_write_all_end(fh, buf, MPI_STATUS_IGNORE);
    MPI_File_seek(fh, AT(k++), MPI_SEEK_SET);
    MPI_File_iwrite(fh, buf, 1000, MPI_BYTE, &req[0]);
    MPI_Wait(&req[0], MPI_STATUS_IGNORE);
    MPI_File_seek(fh, AT(k++), MPI_SEEK_SET);
    MPI_File_iwrite_all(fh, buf, 1000, MPI_BYTE, &req[0]);
    MPI_Wait(&req[0], MPI_STATUS_IGNORE);
    MPI_File_write_at(fh, AT(k++), buf, 1000, MPI_BYTE, MPI_STATUS_IGNORE);
    LARGE(MPI_File_write_at)(fh, AT(k++), buf, 1000, MPI_BYTE, &st);
    MPI_File_write_at_all(fh, AT(k++), buf, 1000, MPI_BYTE, MPI_STATUS_IGNORE);
    LARGE(MPI_File_write_at_all)(fh, AT(k++), buf, 1000, MPI_BYTE, MPI_STATUS_IGNORE);
    MPI_File_seek(fh, AT(k++), MPI_SEEK_SET);
    LARGE(MPI_File_write_all)(fh, buf, 1000, MPI_BYTE, MPI_STATUS_IGNORE);
    CHECK(k == 14);
    MPI_File_sync(fh);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_File_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL);
    /* the file ends at 14000 * size: a read of 65536 just before the end gets 200 bytes */
    MPI_Offset end = (MPI_Offset)14000 * size;
    MPI_File_read_at(fh, end - 200, buf, 65536, MPI_BYTE, MPI_STATUS_IGNORE);
    int got = 0;
    MPI_File_read_at(fh, end - 200, buf, 65536, MPI_BYTE, &st);
    MPI_Get_count(&st, MPI_BYTE, &got);
    CHECK(got == 200);
    MPI_File_close(&fh);
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: capture_probe MODE PATH [N]\n");
        return 2;
    }
    const char *mode = argv[1], *path = argv[2];
    long n = argc > 3 ? atol(argv[3]) : 1000;
    int use_mpi = !strcmp(mode, "mpiio") || !strcmp(mode, "clock") || !strcmp(mode, "nofinalize") ||
                  !strcmp(mode, "manympi");
    char mine[4200];
    if (use_mpi) {
        MPI_Init(&argc, &argv);
        int rank;
        MPI_Comm_rank(MPI_COMM_WORLD, &rank);
        snprintf(mine, sizeof mine, "%s.%d", path, rank);
    }
    if (!strcmp(mode, "threads"))
        threads(path, n);
    else if (!strcmp(mode, "random"))
        random_writes(path, n);
    else if (!strcmp(mode, "dup"))
        dups(path);
    else if (!strcmp(mode, "vector"))
        vector(path);
    else if (!strcmp(mode, "openat"))
        opens_at(path);
    else if (!strcmp(mode, "stdio"))
        streams(path);
    else if (!strcmp(mode, "seeks"))
        seeks(path);
    else if (!strcmp(mode, "noclose"))
        noclose(path);
    else if (!strcmp(mode, "longname"))
        longname(path);
    else if (!strcmp(mode, "many"))
        many(path, n);
    else if (!strcmp(mode, "sofile"))
        sofile(path);
    else if (!strcmp(mode, "mpiio"))
        mpiio(path);
    else if (!strcmp(mode, "clock")) {
        int fd = open(mine, O_CREAT | O_TRUNC | O_WRONLY, 0644);
        CHECK(fd >= 0 && close(fd) == 0);
    } else if (!strcmp(mode, "nofinalize")) {
        static char buf[1000];
        int fd = open(mine, O_CREAT | O_TRUNC | O_WRONLY, 0644);
        CHECK(fd >= 0 && write(fd, buf, sizeof buf) == sizeof buf && close(fd) == 0);
        int rank;
        MPI_Comm_rank(MPI_COMM_WORLD, &rank);
        if (rank != 0)
            usleep(500000);
        exit(bad);
    } else if (!strcmp(mode, "manympi")) {
        static char buf[100];
        char shared[4300];
        snprintf(shared, sizeof shared, "%s.shared", path);
        int rank, fd = open(shared, O_CREAT | O_WRONLY, 0644);
        MPI_Comm_rank(MPI_COMM_WORLD, &rank);
        CHECK(fd >= 0 && pwrite(fd, buf, sizeof buf, (off_t)rank * 100) == sizeof buf &&
              close(fd) == 0);
        many(mine, n);
    } else {
        fprintf(stderr, "capture_probe: unknown mode %s\n", mode);
        return 2;
    }
    if (use_mpi)
        MPI_Finalize();
    return bad;
}
