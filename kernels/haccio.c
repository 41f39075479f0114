/*
 * haccio: the HACC-IO motif (a cosmology checkpoint through MPI-IO or POSIX; no HDF5).
 *
 * Every rank holds N particles with 9 variables: xx, yy, zz, vx, vy, vz, phi (float32),
 * pid (int64) and mask (uint16), 38 bytes per particle. The checkpoint file starts with a small
 * header, then stores the variables one after the other (variable-major); inside a variable the
 * ranks' particles follow in rank order:
 *
 *   offset 0       "IOTHACC1"            8-byte magic
 *   offset 8       int64 nblocks         ranks whose particles are in this file
 *   offset 16      int64 count[nblocks]  particles per rank
 *   offset H       xx of all particles, then yy, ..., then mask   (H = 16 + 8 * nblocks)
 *
 * With --layout fpp every rank writes its own file (nblocks = 1) named <file> with ".r<rank>"
 * inserted before the extension. Modes:
 *   mpiio-one-call  one collective MPI_File_write_all for the whole checkpoint: a file view and
 *                   a memory datatype (hindexed) describe header + 9 variables at once
 *   mpiio-per-var   one collective MPI_File_write_at_all per variable (header: independent)
 *   mpiio-indep     one independent MPI_File_write_at per variable
 *   posix           one pwrite per variable on a plain POSIX descriptor
 * The read phase uses the same mode with the matching read calls.
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

#include "kcommon.h"

#define NVARS 9
#define MAGIC "IOTHACC1"

static const char *const var_name[NVARS] = {"xx", "yy",  "zz",  "vx",  "vy",
                                            "vz", "phi", "pid", "mask"};
static const kc_type var_type[NVARS] = {KC_F32, KC_F32, KC_F32, KC_F32, KC_F32,
                                        KC_F32, KC_F32, KC_I64, KC_U16};

enum { MODE_ONE_CALL, MODE_PER_VAR, MODE_INDEP, MODE_POSIX };
static const char *const mode_names = "mpiio-one-call|mpiio-per-var|mpiio-indep|posix";
enum { LAYOUT_SHARED, LAYOUT_FPP };

static const char synopsis[] =
    "HACC-IO motif: a checkpoint of N particles per rank x 9 variables (xx,yy,zz,vx,vy,\n"
    "vz,phi float32; pid int64; mask uint16) after a small header of particle counts,\n"
    "stored variable by variable, through MPI-IO (one collective call, one collective\n"
    "call per variable, or independent calls) or POSIX pwrite; shared file or one file\n"
    "per process. No HDF5.";

typedef struct {
    long long particles; /* per rank */
    int mode;
    int layout;
    int fsync;
    kc_common common;
    char path[KC_PATH_MAX];  /* this rank's file */
    char shown[KC_PATH_MAX]; /* the name reported (fpp: rank 0's) */
} config;

typedef struct {
    long long nblocks;     /* header entries of this rank's file */
    long long in_file;     /* particles in this rank's file */
    uint64_t first;        /* global index of this rank's first particle */
    int header;            /* this rank writes/reads the header */
    size_t hsize;          /* header bytes */
    MPI_Offset off[NVARS]; /* file offset of this rank's part of each variable */
    size_t len[NVARS];     /* bytes of this rank's part of each variable */
} layout;

typedef struct {
    int fd;
    MPI_File fh;
} handle;

/* What the phases work on. */
typedef struct {
    config c;
    layout l;
    void *buf[NVARS];
    unsigned char *hdr;
} run;

static void make_layout(const kc_ctx *ctx, const config *c, layout *l)
{
    long long n = c->particles;
    int shared = c->layout == LAYOUT_SHARED;
    l->nblocks = shared ? ctx->nranks : 1;
    l->in_file = n * l->nblocks;
    l->first = (uint64_t)n * (uint64_t)ctx->rank;
    l->header = !shared || ctx->rank == 0;
    l->hsize = 16 + 8 * (size_t)l->nblocks;
    long long before = shared ? n * ctx->rank : 0;
    MPI_Offset region = (MPI_Offset)l->hsize;
    for (int v = 0; v < NVARS; v++) {
        long long es = (long long)kc_type_size(var_type[v]);
        l->off[v] = region + before * es;
        l->len[v] = (size_t)(n * es);
        region += l->in_file * es;
    }
}

static void make_header(const layout *l, long long particles, unsigned char *hdr)
{
    int64_t nb = l->nblocks, count = particles;
    memcpy(hdr, MAGIC, 8);
    memcpy(hdr + 8, &nb, 8);
    for (long long i = 0; i < nb; i++)
        memcpy(hdr + 16 + 8 * i, &count, 8);
}

static long long phase_bytes(const kc_ctx *ctx, const config *c, const layout *l)
{
    long long per_particle = 0;
    for (int v = 0; v < NVARS; v++)
        per_particle += (long long)kc_type_size(var_type[v]);
    long long headers =
        c->layout == LAYOUT_SHARED ? (long long)l->hsize : (long long)l->hsize * ctx->nranks;
    return per_particle * c->particles * ctx->nranks + headers;
}

static void report(const kc_ctx *ctx, const config *c, const layout *l, const kc_timer *t,
                   const char *phase, int verified)
{
    char objects[64], extra[KC_EXTRA_MAX], mode[64];
    int files = c->layout == LAYOUT_SHARED ? 1 : ctx->nranks;
    snprintf(objects, sizeof objects, "%d variables in %d file%s", NVARS, files,
             files == 1 ? "" : "s");
    kc_choice_name(mode_names, c->mode, mode, sizeof mode);
    extra[0] = '\0';
    kc_json_int(extra, sizeof extra, "particles", c->particles);
    kc_json_str(extra, sizeof extra, "mode", mode);
    kc_json_str(extra, sizeof extra, "layout", c->layout == LAYOUT_SHARED ? "shared" : "fpp");
    kc_json_int(extra, sizeof extra, "files", files);
    kc_json_str(extra, sizeof extra, "file", c->shown);
    kc_report_info info = {phase, phase_bytes(ctx, c, l), objects, verified, extra};
    kc_report(ctx, t, &info);
}

/* ---------------------------------------------------------------- MPI-IO and POSIX helpers */

static void hindexed_pair(const kc_ctx *ctx, const layout *l, unsigned char *hdr, void **buf,
                          MPI_Datatype *ftype, MPI_Datatype *mtype)
{
    int blen[NVARS + 1], n = 0;
    MPI_Aint fdisp[NVARS + 1], mdisp[NVARS + 1];
    if (l->header) {
        blen[n] = (int)l->hsize;
        fdisp[n] = 0;
        MPI_Get_address(hdr, &mdisp[n]);
        n++;
    }
    for (int v = 0; v < NVARS; v++) {
        if (l->len[v] > INT_MAX)
            kc_die(ctx, "too many particles per rank for one call (%zu bytes in %s)", l->len[v],
                   var_name[v]);
        blen[n] = (int)l->len[v];
        fdisp[n] = (MPI_Aint)l->off[v];
        MPI_Get_address(buf[v], &mdisp[n]);
        n++;
    }
    kc_mpi_check(ctx, MPI_Type_create_hindexed(n, blen, fdisp, MPI_BYTE, ftype),
                 "MPI_Type_create_hindexed");
    kc_mpi_check(ctx, MPI_Type_commit(ftype), "MPI_Type_commit");
    kc_mpi_check(ctx, MPI_Type_create_hindexed(n, blen, mdisp, MPI_BYTE, mtype),
                 "MPI_Type_create_hindexed");
    kc_mpi_check(ctx, MPI_Type_commit(mtype), "MPI_Type_commit");
}

static void posix_write(const kc_ctx *ctx, int fd, const void *buf, size_t len, off_t off)
{
    const char *p = buf;
    while (len > 0) {
        ssize_t n = pwrite(fd, p, len, off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            kc_die(ctx, "pwrite failed: %s", n < 0 ? strerror(errno) : "no progress");
        p += n;
        len -= (size_t)n;
        off += n;
    }
}

/* Stops at the end of the file: the size check reports a short file. */
static void posix_read(const kc_ctx *ctx, int fd, void *buf, size_t len, off_t off)
{
    char *p = buf;
    size_t done = 0;
    while (done < len) {
        ssize_t n = pread(fd, p + done, len - done, off + (off_t)done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            kc_die(ctx, "pread failed: %s", strerror(errno));
        if (n == 0)
            break;
        done += (size_t)n;
    }
}

/* MPI_File_write_at[_all] or MPI_File_read_at[_all]; `what` follows the call's name in an
 * error. */
static void mpi_at(const kc_ctx *ctx, MPI_File fh, int writing, int all, MPI_Offset off, void *buf,
                   size_t len, const char *what)
{
    MPI_Status st;
    int rc, n = (int)len;
    if (writing)
        rc = all ? MPI_File_write_at_all(fh, off, buf, n, MPI_BYTE, &st)
                 : MPI_File_write_at(fh, off, buf, n, MPI_BYTE, &st);
    else
        rc = all ? MPI_File_read_at_all(fh, off, buf, n, MPI_BYTE, &st)
                 : MPI_File_read_at(fh, off, buf, n, MPI_BYTE, &st);
    if (rc != MPI_SUCCESS) {
        char call[64];
        snprintf(call, sizeof call, "MPI_File_%s_at%s%s", writing ? "write" : "read",
                 all ? "_all" : "", what);
        kc_mpi_check(ctx, rc, call);
    }
}

static MPI_Comm file_comm(const kc_ctx *ctx, const config *c)
{
    return c->layout == LAYOUT_SHARED ? ctx->comm : MPI_COMM_SELF;
}

static void open_file(const kc_ctx *ctx, const config *c, int writing, handle *h)
{
    if (c->mode == MODE_POSIX) {
        h->fd = writing ? open(c->path, O_WRONLY | O_CREAT, 0644) : open(c->path, O_RDONLY);
        if (h->fd < 0)
            kc_die(ctx, "cannot open '%s': %s", c->path, strerror(errno));
        return;
    }
    int amode = writing ? MPI_MODE_WRONLY | MPI_MODE_CREATE : MPI_MODE_RDONLY;
    int rc = MPI_File_open(file_comm(ctx, c), c->path, amode, MPI_INFO_NULL, &h->fh);
    if (rc != MPI_SUCCESS) {
        char msg[MPI_MAX_ERROR_STRING];
        int len = 0;
        MPI_Error_string(rc, msg, &len);
        kc_die(ctx, "cannot open '%s': %.*s", c->path, len, msg);
    }
}

/* Bytes of a complete checkpoint file: the header and 38 bytes per particle in it. */
static long long file_bytes(const layout *l)
{
    return (long long)l->hsize + 38 * l->in_file;
}

static void close_file(const kc_ctx *ctx, const config *c, int writing, handle *h)
{
    if (c->mode == MODE_POSIX) {
        if (writing && c->fsync && fsync(h->fd) != 0)
            kc_die(ctx, "fsync failed: %s", strerror(errno));
        if (close(h->fd) != 0)
            kc_die(ctx, "close failed: %s", strerror(errno));
        return;
    }
    if (writing && c->fsync)
        kc_mpi_check(ctx, MPI_File_sync(h->fh), "MPI_File_sync");
    kc_mpi_check(ctx, MPI_File_close(&h->fh), "MPI_File_close");
}

/* ---------------------------------------------------------------- phases */

/* The timed part of a phase: open, the header and the variables as --mode says, close. Reading,
 * *size receives the file's size, taken (untimed) right after the open. */
static void move(const kc_ctx *ctx, run *r, int writing, kc_timer *t, long long *size)
{
    const config *c = &r->c;
    const layout *l = &r->l;
    MPI_Datatype ftype = MPI_DATATYPE_NULL, mtype = MPI_DATATYPE_NULL;
    if (c->mode == MODE_ONE_CALL)
        hindexed_pair(ctx, l, r->hdr, r->buf, &ftype, &mtype);

    handle h;
    kc_timer_start(t, ctx->comm);
    open_file(ctx, c, writing, &h);
    kc_timer_mark(t, KC_OPEN);
    if (!writing) {
        *size = kc_file_size(ctx, c->mode == MODE_POSIX ? h.fd : -1, h.fh);
        kc_timer_mark(t, KC_SKIP);
    }
    MPI_Status st;
    switch (c->mode) {
    case MODE_ONE_CALL:
        kc_mpi_check(ctx, MPI_File_set_view(h.fh, 0, MPI_BYTE, ftype, "native", MPI_INFO_NULL),
                     "MPI_File_set_view");
        if (writing)
            kc_mpi_check(ctx, MPI_File_write_all(h.fh, MPI_BOTTOM, 1, mtype, &st),
                         "MPI_File_write_all");
        else
            kc_mpi_check(ctx, MPI_File_read_all(h.fh, MPI_BOTTOM, 1, mtype, &st),
                         "MPI_File_read_all");
        break;
    case MODE_PER_VAR:
    case MODE_INDEP:
        if (l->header)
            mpi_at(ctx, h.fh, writing, 0, 0, r->hdr, l->hsize, " (header)");
        for (int v = 0; v < NVARS; v++)
            mpi_at(ctx, h.fh, writing, c->mode == MODE_PER_VAR, l->off[v], r->buf[v], l->len[v],
                   "");
        break;
    case MODE_POSIX:
        if (l->header) {
            if (writing)
                posix_write(ctx, h.fd, r->hdr, l->hsize, 0);
            else
                posix_read(ctx, h.fd, r->hdr, l->hsize, 0);
        }
        for (int v = 0; v < NVARS; v++) {
            if (writing)
                posix_write(ctx, h.fd, r->buf[v], l->len[v], (off_t)l->off[v]);
            else
                posix_read(ctx, h.fd, r->buf[v], l->len[v], (off_t)l->off[v]);
        }
        break;
    }
    kc_timer_mark(t, KC_IO);
    close_file(ctx, c, writing, &h);
    kc_timer_mark(t, KC_CLOSE);
    if (c->mode == MODE_ONE_CALL) {
        MPI_Type_free(&ftype);
        MPI_Type_free(&mtype);
    }
}

static void write_phase(const kc_ctx *ctx, void *arg)
{
    run *r = arg;
    const config *c = &r->c;
    const layout *l = &r->l;
    for (int v = 0; v < NVARS; v++)
        kc_fill(r->buf[v], var_type[v], (size_t)c->particles, l->first, 1, (uint32_t)v, 0);
    make_header(l, c->particles, r->hdr);
    kc_remove_file(ctx, c->path, c->layout == LAYOUT_SHARED); /* start from an empty file */
    kc_writing(ctx, c->common.dir, c->common.file, -1, c->layout == LAYOUT_FPP);

    kc_timer t;
    move(ctx, r, 1, &t, NULL);
    kc_written();
    kc_timer_reduce(&t);
    report(ctx, c, l, &t, "write", -1);
}

static int read_phase(const kc_ctx *ctx, void *arg)
{
    run *r = arg;
    const config *c = &r->c;
    const layout *l = &r->l;
    for (int v = 0; v < NVARS; v++) /* never verify what an earlier phase left behind */
        memset(r->buf[v], 0, l->len[v]);
    memset(r->hdr, 0, l->hsize);

    kc_timer t;
    long long size;
    move(ctx, r, 0, &t, &size);
    kc_verify ver;
    kc_verify_init(&ver);
    /* the header first: it tells a checkpoint of other arguments from a truncated one */
    if (l->header && size >= (long long)l->hsize) {
        unsigned char want[16 + 8 * 64];
        unsigned char *expect = l->hsize <= sizeof want ? want : kc_malloc(ctx, l->hsize);
        make_header(l, c->particles, expect);
        if (memcmp(r->hdr, expect, 8) != 0)
            kc_verify_fail(&ver, "%s: bad magic (not a haccio checkpoint)", c->path);
        else if (memcmp(r->hdr, expect, l->hsize) != 0)
            kc_verify_fail(&ver, "%s: header does not describe %lld ranks x %lld particles",
                           c->path, l->nblocks, c->particles);
        if (expect != want)
            free(expect);
    }
    kc_check_file_size(&ver, c->path, size, file_bytes(l));
    for (int v = 0; v < NVARS; v++)
        kc_check(&ver, r->buf[v], var_type[v], (size_t)c->particles, l->first, 1, (uint32_t)v, 0,
                 var_name[v]);
    int ok = kc_phase_end(ctx, &t, &ver);
    report(ctx, c, l, &t, "read", ok);
    return ok;
}

int main(int argc, char **argv)
{
    kc_ctx ctx;
    kc_init(&ctx, "haccio", &argc, &argv);
    run r = {.c = {.particles = 100000, .mode = MODE_ONE_CALL, .layout = LAYOUT_SHARED}};
    config *c = &r.c;
    c->common = (kc_common){
        .file = "haccio.dat",
        .file_help = "checkpoint file name (fpp: + .r<rank>)",
        .read_only_help =
            "only read and verify an existing checkpoint written with the same arguments",
        .cleanup_help = "delete the file(s) at the end",
    };
    const kc_opt opts[] = {
        {"particles", KC_OPT_INT, &c->particles, NULL, 0, 1, "particles per rank"},
        {"mode", KC_OPT_CHOICE, &c->mode, mode_names, 0, 0, "how the checkpoint is written/read"},
        {"layout", KC_OPT_CHOICE, &c->layout, "shared|fpp", 0, 0,
         "one shared file, or one file per process"},
        {"fsync", KC_OPT_FLAG, &c->fsync, NULL, 0, 0,
         "fsync / MPI_File_sync before closing a written file (counted in close time)"},
        {NULL, KC_OPT_FLAG, NULL, NULL, 0, 0, NULL},
    };
    kc_parse_common(&ctx, argc, argv, opts, &c->common, synopsis);
    int shared = c->layout == LAYOUT_SHARED;
    const char *dir = c->common.dir, *file = c->common.file;
    kc_path(&ctx, c->path, sizeof c->path, dir, file, -1, shared ? -1 : ctx.rank);
    kc_path(&ctx, c->shown, sizeof c->shown, dir, file, -1, shared ? -1 : 0);

    if (c->particles > INT_MAX / 8) /* a variable's bytes must fit one MPI count */
        kc_fail_all(&ctx, KC_EXIT_USAGE, "--particles must be at most %d", INT_MAX / 8);
    make_layout(&ctx, c, &r.l);
    kc_check_memory(&ctx, 38 * c->particles + (long long)r.l.hsize);
    for (int v = 0; v < NVARS; v++)
        r.buf[v] = kc_malloc(&ctx, r.l.len[v]);
    r.hdr = kc_malloc(&ctx, r.l.hsize);

    kc_phases phases = {write_phase, read_phase, &r, c->path, shared, NULL};
    int code = kc_main(&ctx, &c->common, &phases);
    for (int v = 0; v < NVARS; v++)
        free(r.buf[v]);
    free(r.hdr);
    return kc_finish(&ctx, code);
}
