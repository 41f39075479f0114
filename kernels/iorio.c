/*
 * iorio: an IOR-style kernel (block / transfer / segment pattern through HDF5, MPI-IO or POSIX).
 *
 * Each rank moves `segments` x `block` bytes per time step in calls of `transfer` bytes.
 * Shared file: segment s of rank r starts at byte s*block*nranks + r*block (IOR's segmented
 * layout); file per process: at s*block in the rank's own file. Transfers go in ascending order
 * or, with --order random, in a seeded random permutation of the rank's transfers. Every time
 * step writes a NEW file (the step number is put into the name), so a run has --steps recurring
 * I/O phases. The data are 64-bit words whose value is a function of the word's position in the
 * file (for HDF5: in the dataset), the file and the step; the read phase checks every word.
 *
 * api hdf5:  one 1-D uint64 dataset "/data" per file, one H5Dwrite per transfer (hyperslab)
 * api mpiio: MPI_File_write_at (independent) or MPI_File_write_at_all (collective) per transfer
 * api posix: pwrite per transfer (independent only)
 */
#define _POSIX_C_SOURCE 200809L /* pread, pwrite, fsync, access, unlink */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kh5.h"

enum { API_HDF5, API_MPIIO, API_POSIX };
enum { LAYOUT_SHARED, LAYOUT_FPP };
enum { MODE_INDEP, MODE_COLL };
enum { ORDER_SEQ, ORDER_RANDOM };

static const char synopsis[] =
    "IOR-style kernel: per step, each rank moves segments x block bytes in calls of\n"
    "transfer bytes (shared file with IOR's segmented layout, or one file per process),\n"
    "through HDF5 (1-D uint64 dataset /data), MPI-IO or POSIX, in sequential or seeded\n"
    "random order. Every step writes a new file.";

typedef struct {
    int api, layout, mode, order, fsync;
    long long block, transfer, segments, steps, seed;
    kc_common common;
} config;

typedef struct {
    long long ntransfers; /* per rank and step */
    long long *perm;      /* transfer order */
    uint64_t *data;       /* segments * block bytes: this rank's data of one step */
} state;

typedef struct {
    int fd;
    MPI_File fh;
    hid_t file, dset, fspace, mspace, dxpl;
} handle;

/* What the phases work on. */
typedef struct {
    config c;
    state s;
} run;

static const char *const api_names = "hdf5|mpiio|posix";

/* Byte offset in the file of transfer k of this rank. */
static long long transfer_offset(const kc_ctx *ctx, const config *c, long long k)
{
    long long per_block = c->block / c->transfer;
    long long seg = k / per_block, j = k % per_block;
    if (c->layout == LAYOUT_SHARED)
        return seg * c->block * ctx->nranks + (long long)ctx->rank * c->block + j * c->transfer;
    return seg * c->block + j * c->transfer;
}

static uint32_t data_var(const kc_ctx *ctx, const config *c)
{
    return c->layout == LAYOUT_SHARED ? 0u : (uint32_t)ctx->rank;
}

/* Buffer slot of transfer k: transfers are stored in k order, whatever the issue order. */
static uint64_t *slot(const config *c, const state *s, long long k)
{
    return s->data + (size_t)k * (size_t)(c->transfer / 8);
}

static void fill_step(const kc_ctx *ctx, const config *c, const state *s, int step)
{
    size_t words = (size_t)(c->transfer / 8);
    for (long long k = 0; k < s->ntransfers; k++)
        kc_fill(slot(c, s, k), KC_U64, words, (uint64_t)transfer_offset(ctx, c, k) / 8, 1,
                data_var(ctx, c), (uint32_t)step);
}

static void make_order(const kc_ctx *ctx, const config *c, state *s, int step)
{
    for (long long k = 0; k < s->ntransfers; k++)
        s->perm[k] = k;
    if (c->order != ORDER_RANDOM)
        return;
    /* Fisher-Yates with a counter-based generator seeded by (seed, rank, step) */
    uint64_t ctr = 0;
    for (long long k = s->ntransfers - 1; k > 0; k--) {
        uint64_t r = kc_hash(ctr++, (uint32_t)ctx->rank ^ 0x5eed0000u,
                             (uint32_t)((uint64_t)c->seed * 7919u + (uint64_t)step));
        long long j = (long long)(r % (uint64_t)(k + 1));
        long long tmp = s->perm[k];
        s->perm[k] = s->perm[j];
        s->perm[j] = tmp;
    }
}

static void step_path(const kc_ctx *ctx, const config *c, int step, char *out, size_t size)
{
    kc_path(ctx, out, size, c->common.dir, c->common.file, c->steps > 1 ? step : -1,
            c->layout == LAYOUT_FPP ? ctx->rank : -1);
}

static long long file_bytes(const kc_ctx *ctx, const config *c)
{
    return c->segments * c->block * (c->layout == LAYOUT_SHARED ? ctx->nranks : 1);
}

/* ---------------------------------------------------------------- open / transfer / close */

static void open_file(const kc_ctx *ctx, const config *c, const char *path, int writing, handle *h)
{
    MPI_Comm comm = c->layout == LAYOUT_SHARED ? ctx->comm : MPI_COMM_SELF;
    if (c->api == API_POSIX) {
        h->fd = writing ? open(path, O_WRONLY | O_CREAT, 0644) : open(path, O_RDONLY);
        if (h->fd < 0)
            kc_die(ctx, "cannot open '%s': %s", path, strerror(errno));
    } else if (c->api == API_MPIIO) {
        int amode = writing ? MPI_MODE_WRONLY | MPI_MODE_CREATE : MPI_MODE_RDONLY;
        int rc = MPI_File_open(comm, path, amode, MPI_INFO_NULL, &h->fh);
        if (rc != MPI_SUCCESS)
            kc_die(ctx, "cannot open '%s' with MPI-IO", path);
    } else {
        hid_t fapl = kh5_fapl(ctx, comm);
        h->file = writing ? kh5_create(ctx, path, fapl) : kh5_open(ctx, path, fapl);
        H5Pclose(fapl);
    }
}

/* HDF5: create or open "/data" (counted as I/O time, like IOR's dataset setup). */
static void open_dataset(const kc_ctx *ctx, const config *c, int writing, handle *h)
{
    hsize_t n = (hsize_t)(file_bytes(ctx, c) / 8), words = (hsize_t)(c->transfer / 8);
    h->fspace = H5Screate_simple(1, &n, NULL);
    h->mspace = H5Screate_simple(1, &words, NULL);
    kh5_check(ctx, h->fspace < 0 || h->mspace < 0 ? -1 : 0, "H5Screate_simple");
    h->dxpl = kh5_dxpl(ctx, c->mode == MODE_COLL);
    if (writing) {
        h->dset = H5Dcreate2(h->file, "data", H5T_NATIVE_UINT64, h->fspace, H5P_DEFAULT,
                             H5P_DEFAULT, H5P_DEFAULT);
        kh5_check(ctx, h->dset, "H5Dcreate2");
    } else {
        h->dset = kh5_open_dataset(ctx, h->file, "data", 1, &n, KC_U64);
    }
}

static void transfer(const kc_ctx *ctx, const config *c, handle *h, int writing, long long off,
                     void *buf)
{
    MPI_Status st;
    int len = (int)c->transfer;
    if (c->api == API_POSIX) {
        size_t done = 0;
        while (done < (size_t)len) {
            ssize_t n = writing ? pwrite(h->fd, (char *)buf + done, (size_t)len - done,
                                         (off_t)(off + (long long)done))
                                : pread(h->fd, (char *)buf + done, (size_t)len - done,
                                        (off_t)(off + (long long)done));
            if (n < 0 && errno == EINTR)
                continue;
            if (n < 0)
                kc_die(ctx, "%s failed: %s", writing ? "pwrite" : "pread", strerror(errno));
            if (n == 0) {
                if (writing)
                    kc_die(ctx, "pwrite made no progress");
                break; /* end of file: reported by the size check, the zeros fail the data check */
            }
            done += (size_t)n;
        }
    } else if (c->api == API_MPIIO) {
        int rc;
        if (writing)
            rc = c->mode == MODE_COLL ? MPI_File_write_at_all(h->fh, off, buf, len, MPI_BYTE, &st)
                                      : MPI_File_write_at(h->fh, off, buf, len, MPI_BYTE, &st);
        else
            rc = c->mode == MODE_COLL ? MPI_File_read_at_all(h->fh, off, buf, len, MPI_BYTE, &st)
                                      : MPI_File_read_at(h->fh, off, buf, len, MPI_BYTE, &st);
        kc_mpi_check(ctx, rc, writing ? "MPI_File_write_at" : "MPI_File_read_at");
    } else {
        hsize_t start = (hsize_t)(off / 8), count = (hsize_t)(c->transfer / 8);
        kh5_check(ctx, H5Sselect_hyperslab(h->fspace, H5S_SELECT_SET, &start, NULL, &count, NULL),
                  "H5Sselect_hyperslab");
        herr_t rc = writing
                        ? H5Dwrite(h->dset, H5T_NATIVE_UINT64, h->mspace, h->fspace, h->dxpl, buf)
                        : H5Dread(h->dset, H5T_NATIVE_UINT64, h->mspace, h->fspace, h->dxpl, buf);
        kh5_check(ctx, rc, writing ? "H5Dwrite" : "H5Dread");
    }
}

static void close_dataset(const kc_ctx *ctx, handle *h)
{
    kh5_close_dataset(ctx, h->dset);
    H5Sclose(h->fspace);
    H5Sclose(h->mspace);
    H5Pclose(h->dxpl);
}

static void close_file(const kc_ctx *ctx, const config *c, int writing, handle *h)
{
    int sync = writing && c->fsync;
    if (c->api == API_POSIX) {
        if (sync && fsync(h->fd) != 0)
            kc_die(ctx, "fsync failed: %s", strerror(errno));
        if (close(h->fd) != 0)
            kc_die(ctx, "close failed: %s", strerror(errno));
    } else if (c->api == API_MPIIO) {
        if (sync)
            kc_mpi_check(ctx, MPI_File_sync(h->fh), "MPI_File_sync");
        kc_mpi_check(ctx, MPI_File_close(&h->fh), "MPI_File_close");
    } else {
        if (sync)
            kh5_check(ctx, H5Fflush(h->file, H5F_SCOPE_GLOBAL), "H5Fflush");
        kh5_close_file(ctx, h->file);
    }
}

/* ---------------------------------------------------------------- phases */

static void report(const kc_ctx *ctx, const config *c, const kc_timer *t, const char *phase,
                   int verified)
{
    int files_per_step = c->layout == LAYOUT_SHARED ? 1 : ctx->nranks;
    long long files = files_per_step * c->steps;
    long long bytes = c->segments * c->block * ctx->nranks * c->steps;
    char objects[96], extra[KC_EXTRA_MAX], name[32], path[KC_PATH_MAX];
    snprintf(objects, sizeof objects, "%lld file%s, %lld transfers of %lld bytes", files,
             files == 1 ? "" : "s", bytes / c->transfer, c->transfer);
    extra[0] = '\0';
    kc_choice_name(api_names, c->api, name, sizeof name);
    kc_json_str(extra, sizeof extra, "api", name);
    kc_json_str(extra, sizeof extra, "mode", c->mode == MODE_COLL ? "collective" : "independent");
    kc_json_str(extra, sizeof extra, "layout", c->layout == LAYOUT_SHARED ? "shared" : "fpp");
    kc_json_str(extra, sizeof extra, "order", c->order == ORDER_RANDOM ? "random" : "sequential");
    kc_json_int(extra, sizeof extra, "block", c->block);
    kc_json_int(extra, sizeof extra, "transfer", c->transfer);
    kc_json_int(extra, sizeof extra, "segments", c->segments);
    kc_json_int(extra, sizeof extra, "steps", c->steps);
    kc_json_int(extra, sizeof extra, "files", files);
    kc_path(ctx, path, sizeof path, c->common.dir, c->common.file, c->steps > 1 ? 0 : -1,
            c->layout == LAYOUT_FPP ? 0 : -1);
    kc_json_str(extra, sizeof extra, "file", path);
    kc_report_info info = {phase, bytes, objects, verified, extra};
    kc_report(ctx, t, &info);
}

/* The timed part of one step: open `path`, all transfers in this step's order, close. Reading a
 * raw file, its size is checked into `ver` first. */
static void move_step(const kc_ctx *ctx, const config *c, state *s, const char *path, int writing,
                      kc_timer *t, kc_verify *ver)
{
    handle h;
    open_file(ctx, c, path, writing, &h);
    kc_timer_mark(t, KC_OPEN);
    if (!writing && c->api != API_HDF5) { /* untimed; HDF5 checks its file itself */
        kc_check_file_size(ver, path, kc_file_size(ctx, c->api == API_POSIX ? h.fd : -1, h.fh),
                           file_bytes(ctx, c));
        kc_timer_mark(t, KC_SKIP);
    }
    if (c->api == API_HDF5)
        open_dataset(ctx, c, writing, &h);
    for (long long i = 0; i < s->ntransfers; i++) {
        long long k = s->perm[i];
        transfer(ctx, c, &h, writing, transfer_offset(ctx, c, k), slot(c, s, k));
    }
    if (c->api == API_HDF5)
        close_dataset(ctx, &h);
    kc_timer_mark(t, KC_IO);
    close_file(ctx, c, writing, &h);
    kc_timer_mark(t, KC_CLOSE);
}

static void write_phase(const kc_ctx *ctx, void *arg)
{
    run *r = arg;
    const config *c = &r->c;
    state *s = &r->s;
    char path[KC_PATH_MAX];
    kc_timer t;
    kc_timer_start(&t, ctx->comm);
    for (int step = 0; step < c->steps; step++) {
        /* untimed: this step's data, order and a fresh file */
        fill_step(ctx, c, s, step);
        make_order(ctx, c, s, step);
        step_path(ctx, c, step, path, sizeof path);
        kc_remove_file(ctx, path, c->layout == LAYOUT_SHARED);
        kc_writing(ctx, c->common.dir, c->common.file, c->steps > 1 ? step : -1,
                   c->layout == LAYOUT_FPP);
        kc_timer_mark(&t, KC_SKIP);
        move_step(ctx, c, s, path, 1, &t, NULL);
        kc_written();
    }
    kc_timer_reduce(&t);
    report(ctx, c, &t, "write", -1);
}

static int read_phase(const kc_ctx *ctx, void *arg)
{
    run *r = arg;
    const config *c = &r->c;
    state *s = &r->s;
    char path[KC_PATH_MAX];
    kc_verify ver;
    kc_verify_init(&ver);
    kc_timer t;
    kc_timer_start(&t, ctx->comm);
    for (int step = 0; step < c->steps; step++) {
        memset(s->data, 0, (size_t)(s->ntransfers * c->transfer));
        make_order(ctx, c, s, step);
        step_path(ctx, c, step, path, sizeof path);
        kc_require_file(ctx, path);
        kc_timer_mark(&t, KC_SKIP);
        move_step(ctx, c, s, path, 0, &t, &ver);

        size_t words = (size_t)(c->transfer / 8);
        for (long long k = 0; k < s->ntransfers; k++) {
            char what[KC_PATH_MAX + 16];
            snprintf(what, sizeof what, "%s word", path);
            kc_check(&ver, slot(c, s, k), KC_U64, words, (uint64_t)transfer_offset(ctx, c, k) / 8,
                     1, data_var(ctx, c), (uint32_t)step, what);
        }
        kc_timer_mark(&t, KC_SKIP);
    }
    int ok = kc_phase_end(ctx, &t, &ver);
    report(ctx, c, &t, "read", ok);
    return ok;
}

/* --cleanup: every step's file. */
static void cleanup(const kc_ctx *ctx, void *arg)
{
    const config *c = &((run *)arg)->c;
    char path[KC_PATH_MAX];
    for (int step = 0; step < c->steps; step++) {
        step_path(ctx, c, step, path, sizeof path);
        kc_remove_file(ctx, path, c->layout == LAYOUT_SHARED);
    }
}

int main(int argc, char **argv)
{
    kc_ctx ctx;
    kc_init(&ctx, "iorio", &argc, &argv);
    run r = {.c = {.api = API_MPIIO,
                   .layout = LAYOUT_SHARED,
                   .mode = MODE_INDEP,
                   .order = ORDER_SEQ,
                   .block = 8LL << 20,
                   .transfer = 1LL << 20,
                   .segments = 4,
                   .steps = 1,
                   .seed = 1}};
    config *c = &r.c;
    c->common = (kc_common){
        .file = NULL, /* chosen by --api below */
        .file_help =
            "file name (default iorio.h5 or iorio.dat); steps > 1 insert .<step>, fpp .r<rank>",
        .dir_help = "directory of the files (unless --file is absolute)",
        .read_only_help = "only read and verify files written with the same arguments",
        .cleanup_help = "delete the files at the end",
    };
    const kc_opt opts[] = {
        {"api", KC_OPT_CHOICE, &c->api, api_names, 0, 0, "I/O interface"},
        {"block", KC_OPT_INT, &c->block, NULL, 0, 8, "bytes per rank and segment"},
        {"transfer", KC_OPT_INT, &c->transfer, NULL, 0, 8,
         "bytes per call (multiple of 8, divides --block)"},
        {"segments", KC_OPT_INT, &c->segments, NULL, 0, 1, "segments per file"},
        {"layout", KC_OPT_CHOICE, &c->layout, "shared|fpp", 0, 0,
         "one shared file, or one file per process"},
        {"mode", KC_OPT_CHOICE, &c->mode, "independent|collective", 0, 0,
         "MPI-IO transfer mode (hdf5, mpiio)"},
        {"order", KC_OPT_CHOICE, &c->order, "sequential|random", 0, 0,
         "order of a rank's transfers"},
        {"seed", KC_OPT_INT, &c->seed, NULL, 0, 0, "seed of the random order"},
        {"steps", KC_OPT_INT, &c->steps, NULL, 0, 1,
         "time steps; each writes a new file with the step number in its name"},
        {"fsync", KC_OPT_FLAG, &c->fsync, NULL, 0, 0,
         "fsync / MPI_File_sync / H5Fflush before closing a written file"},
        {NULL, KC_OPT_FLAG, NULL, NULL, 0, 0, NULL},
    };
    kc_parse_common(&ctx, argc, argv, opts, &c->common, synopsis);
    if (c->transfer % 8 != 0 || c->block % c->transfer != 0)
        kc_fail_all(&ctx, KC_EXIT_USAGE,
                    "--transfer (%lld) must be a multiple of 8 that divides --block (%lld)",
                    c->transfer, c->block);
    if (c->transfer > INT_MAX)
        kc_fail_all(&ctx, KC_EXIT_USAGE, "--transfer must be below 2 GiB");
    if (c->api == API_POSIX && c->mode == MODE_COLL)
        kc_fail_all(&ctx, KC_EXIT_USAGE, "--mode collective needs --api hdf5 or mpiio");
    if (c->common.file == NULL)
        c->common.file = c->api == API_HDF5 ? "iorio.h5" : "iorio.dat";
    if (c->api == API_HDF5)
        kh5_init(&ctx);

    /* the largest size of the run, checked for overflow (every other size is smaller) */
    const char *what = "the bytes of a phase (--segments x --block x ranks x --steps)";
    long long per_rank = kc_mul(&ctx, c->segments, c->block, what);
    kc_mul(&ctx, kc_mul(&ctx, per_rank, ctx.nranks, what), c->steps, what);
    state *s = &r.s;
    s->ntransfers = per_rank / c->transfer;
    /* the data of a step and the transfer order */
    what = "the buffers of a rank (--segments x --block + 8 per transfer)";
    kc_check_memory(&ctx, kc_mul(&ctx, s->ntransfers, c->transfer + 8, what));
    s->perm = kc_malloc(&ctx, sizeof(long long) * (size_t)s->ntransfers);
    s->data = kc_malloc(&ctx, (size_t)(c->segments * c->block));

    /* no single path: the read phase checks each step's file, cleanup removes them all */
    kc_phases phases = {write_phase, read_phase, &r, NULL, 0, cleanup};
    int code = kc_main(&ctx, &c->common, &phases);
    free(s->perm);
    free(s->data);
    return kc_finish(&ctx, code);
}
