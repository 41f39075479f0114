/*
 * vorpalio: the VORPAL-IO motif (3-D block-structured field data through H5Block).
 *
 * The ranks form a 3-D process grid PX x PY x PZ (MPI_Dims_create, or --procs); each owns a
 * block of BX x BY x BZ cells, so the global grid is (PX*BX) x (PY*BY) x (PZ*BZ). A vector field
 * with C components (default 3) is stored as H5Block stores it: one 3-D float64 dataset per
 * component, /Step#<s>/Block/E/<c>, of shape (NZ, NY, NX) with x varying fastest. Each rank
 * writes its block as a hyperslab of that dataset: BZ*BY separate runs of BX elements, i.e. a
 * noncontiguous selection in the shared file (one H5Dwrite per component and step).
 *
 * With --uneven the blocks differ in size, as H5Block's "non-uniform chunks" in the paper's
 * kernel: along each axis split over more than one rank, extents alternate B + B/2 and B - B/2
 * (the last block keeps B if the count is odd). The global grid, and so the file, is unchanged.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kh5.h"

static const char synopsis[] =
    "VORPAL-IO motif: a 3-D block of cells per rank on a 3-D process grid; a vector\n"
    "field of C float64 components stored H5Block-style as one 3-D dataset\n"
    "/Step#<s>/Block/E/<c> of shape (NZ,NY,NX) per component; each rank writes its\n"
    "block as a noncontiguous hyperslab (one H5Dwrite per component and step).";

typedef struct {
    long long block[3]; /* cells per rank: x, y, z */
    long long procs[3]; /* process grid: x, y, z (0 = choose) */
    long long components;
    long long steps;
    int mode;     /* 0 collective, 1 independent */
    int per_step; /* --file-per-step */
    int uneven;   /* blocks of different sizes */
    kc_common common;
    char path[KC_PATH_MAX];
} config;

typedef struct {
    hsize_t gdims[3]; /* dataset shape (z, y, x) */
    hsize_t start[3]; /* this rank's block origin (z, y, x) */
    hsize_t count[3]; /* this rank's block size (z, y, x) */
    size_t nelem;     /* elements of one component on this rank */
} layout;

/* What the phases work on. */
typedef struct {
    config c;
    layout l;
    double **buf;                   /* one block per component */
    long long cells_min, cells_max; /* cells of the smallest and the largest block */
} run;

/* The largest size of the run, checked for overflow (every other size is smaller). */
static long long phase_bytes(const kc_ctx *ctx, const config *c)
{
    const char *what = "the bytes of a phase (grid cells x --components x 8 x --steps)";
    long long n = kc_mul(ctx, kc_mul(ctx, c->components, 8, what), c->steps, what);
    for (int d = 0; d < 3; d++)
        n = kc_mul(ctx, n, kc_mul(ctx, c->procs[d], c->block[d], what), what);
    return n;
}

static void report(const kc_ctx *ctx, const run *r, const kc_timer *t, const char *phase,
                   int verified)
{
    const config *c = &r->c;
    char objects[64], extra[KC_EXTRA_MAX], grid[64];
    snprintf(objects, sizeof objects, "%lld datasets", c->components * c->steps);
    snprintf(grid, sizeof grid, "%lldx%lldx%lld", c->procs[0], c->procs[1], c->procs[2]);
    extra[0] = '\0';
    kc_json_int(extra, sizeof extra, "steps", c->steps);
    kc_json_int(extra, sizeof extra, "components", c->components);
    kc_json_str(extra, sizeof extra, "procs", grid);
    snprintf(grid, sizeof grid, "%lldx%lldx%lld", c->block[0], c->block[1], c->block[2]);
    kc_json_str(extra, sizeof extra, "block", grid);
    kc_json_int(extra, sizeof extra, "uneven", c->uneven);
    kc_json_int(extra, sizeof extra, "block_cells_min", r->cells_min);
    kc_json_int(extra, sizeof extra, "block_cells_max", r->cells_max);
    kc_json_str(extra, sizeof extra, "mode", c->mode == 0 ? "collective" : "independent");
    kc_json_str(extra, sizeof extra, "file", c->path);
    kc_report_info info = {phase, phase_bytes(ctx, c), objects, verified, extra};
    kc_report(ctx, t, &info);
}

/* Block `i` of `p` blocks of `b` cells along one axis. Uniform: [i*b, (i+1)*b). Uneven: every
 * odd boundary k*b (0 < k < p) moves up by b/2, so extents alternate b + b/2 and b - b/2 while
 * the blocks still tile [0, p*b). */
static void axis_block(long long b, long long p, long long i, int uneven, hsize_t *start,
                       hsize_t *count)
{
    long long shift = uneven ? b / 2 : 0;
    long long lo = i * b + (i % 2 == 1 ? shift : 0);
    long long hi = (i + 1) * b + ((i + 1) % 2 == 1 && i + 1 < p ? shift : 0);
    *start = (hsize_t)lo;
    *count = (hsize_t)(hi - lo);
}

/* Global index of the first cell of row (z, y) of this rank's block. */
static uint64_t row_index(const layout *l, hsize_t z, hsize_t y)
{
    return ((uint64_t)(l->start[0] + z) * l->gdims[1] + (l->start[1] + y)) * l->gdims[2] +
           l->start[2];
}

static void fill_component(double *buf, const layout *l, int comp, int step)
{
    size_t row = 0;
    for (hsize_t z = 0; z < l->count[0]; z++)
        for (hsize_t y = 0; y < l->count[1]; y++, row++)
            kc_fill(buf + row * l->count[2], KC_F64, l->count[2], row_index(l, z, y), 1,
                    (uint32_t)comp, (uint32_t)step);
}

static void check_component(kc_verify *v, const double *buf, const layout *l, int comp, int step,
                            const char *what)
{
    size_t row = 0;
    for (hsize_t z = 0; z < l->count[0]; z++)
        for (hsize_t y = 0; y < l->count[1]; y++, row++)
            kc_check(v, buf + row * l->count[2], KC_F64, l->count[2], row_index(l, z, y), 1,
                     (uint32_t)comp, (uint32_t)step, what);
}

static void fill_step(double **buf, const config *c, const layout *l, int step)
{
    for (int k = 0; k < c->components; k++)
        fill_component(buf[k], l, k, step);
}

static void write_phase(const kc_ctx *ctx, void *arg)
{
    run *r = arg;
    const config *c = &r->c;
    const layout *l = &r->l;
    hid_t fspace, mspace;
    kh5_spaces(ctx, 3, l->gdims, l->start, l->count, &fspace, &mspace);
    fill_step(r->buf, c, l, 0);

    kh5_phase p;
    if (c->per_step)
        kh5_phase_open_steps(ctx, &p, c->common.dir, c->common.file, 1, c->mode == 0);
    else
        kh5_phase_open(ctx, &p, c->path, 1, c->mode == 0);
    for (int s = 0; s < c->steps; s++) {
        if (s > 0) {
            kc_timer_mark(&p.t, KC_IO);
            fill_step(r->buf, c, l, s);
            kc_timer_mark(&p.t, KC_SKIP);
        }
        char name[64];
        snprintf(name, sizeof name, "Step#%d", s);
        hid_t step = kh5_create_group(ctx, kh5_phase_file(ctx, &p, s), name);
        hid_t block = kh5_create_group(ctx, step, "Block");
        hid_t field = kh5_create_group(ctx, block, "E");
        for (int k = 0; k < c->components; k++) {
            snprintf(name, sizeof name, "%d", k);
            kh5_write_dataset(ctx, field, name, KC_F64, fspace, H5P_DEFAULT, mspace, p.dxpl,
                              r->buf[k]);
        }
        kh5_close_group(ctx, field);
        kh5_close_group(ctx, block);
        kh5_close_group(ctx, step);
    }
    kc_timer_mark(&p.t, KC_IO);
    kh5_phase_close(ctx, &p);
    report(ctx, r, &p.t, "write", -1);
    H5Sclose(mspace);
    H5Sclose(fspace);
}

static int read_phase(const kc_ctx *ctx, void *arg)
{
    run *r = arg;
    const config *c = &r->c;
    const layout *l = &r->l;
    hid_t fspace, mspace;
    kh5_spaces(ctx, 3, l->gdims, l->start, l->count, &fspace, &mspace);
    for (int k = 0; k < c->components; k++) /* never verify what the write phase left behind */
        memset(r->buf[k], 0, l->nelem * sizeof(double));

    kh5_phase p;
    if (c->per_step)
        kh5_phase_open_steps(ctx, &p, c->common.dir, c->common.file, 0, c->mode == 0);
    else
        kh5_phase_open(ctx, &p, c->path, 0, c->mode == 0);
    for (int s = 0; s < c->steps; s++) {
        char gname[64], name[96];
        snprintf(gname, sizeof gname, "/Step#%d/Block/E", s);
        hid_t field = kh5_open_group(ctx, kh5_phase_file(ctx, &p, s), gname, c->path);
        for (int k = 0; k < c->components; k++) {
            snprintf(name, sizeof name, "%d", k);
            kh5_read_dataset(ctx, field, name, 3, l->gdims, KC_F64, mspace, fspace, p.dxpl,
                             r->buf[k]);
        }
        kh5_close_group(ctx, field);
        kc_timer_mark(&p.t, KC_IO);
        for (int k = 0; k < c->components; k++) {
            snprintf(name, sizeof name, "%s/%d", gname, k);
            check_component(&p.ver, r->buf[k], l, k, s, name);
        }
        kc_timer_mark(&p.t, KC_SKIP);
    }
    int ok = kh5_phase_close(ctx, &p);
    report(ctx, r, &p.t, "read", ok);
    H5Sclose(mspace);
    H5Sclose(fspace);
    return ok;
}

static void cleanup(const kc_ctx *ctx, void *arg)
{
    const config *c = &((run *)arg)->c;
    kh5_remove_steps(ctx, c->common.dir, c->common.file, c->steps);
}

int main(int argc, char **argv)
{
    kc_ctx ctx;
    kc_init(&ctx, "vorpalio", &argc, &argv);
    run r = {.c = {.block = {100, 100, 60},
                   .procs = {0, 0, 0},
                   .components = 3,
                   .steps = 1,
                   .mode = 0,
                   .common = {.file = "vorpalio.h5"}}};
    config *c = &r.c;
    const kc_opt opts[] = {
        {"block", KC_OPT_LIST, c->block, NULL, 3, 1, "cells per rank in x,y,z"},
        {"procs", KC_OPT_LIST, c->procs, NULL, 3, 0,
         "process grid in x,y,z (product = ranks; zeros: MPI_Dims_create)"},
        {"components", KC_OPT_INT, &c->components, NULL, 0, 1,
         "components of the field (datasets per step)"},
        {"steps", KC_OPT_INT, &c->steps, NULL, 0, 1, "time steps (groups /Step#0, /Step#1, ...)"},
        {"uneven", KC_OPT_FLAG, &c->uneven, NULL, 0, 0,
         "blocks of different sizes: extents alternate B+B/2, B-B/2 along split axes"},
        kh5_opt_mode(&c->mode),
        kh5_opt_file_per_step(&c->per_step),
        {NULL, KC_OPT_FLAG, NULL, NULL, 0, 0, NULL},
    };
    kc_parse_common(&ctx, argc, argv, opts, &c->common, synopsis);
    kh5_init(&ctx);

    /* zeros in --procs are chosen by MPI_Dims_create; the others must fit the rank count */
    long long fixed = 1;
    int zeros = 0;
    for (int d = 0; d < 3; d++) {
        if (c->procs[d] > ctx.nranks)
            fixed = 0;
        else if (c->procs[d] == 0)
            zeros++;
        else
            fixed *= c->procs[d];
    }
    if (fixed == 0 || (zeros == 0 && fixed != ctx.nranks) || ctx.nranks % fixed != 0)
        kc_fail_all(&ctx, KC_EXIT_USAGE, "--procs %lld,%lld,%lld does not fit %d ranks",
                    c->procs[0], c->procs[1], c->procs[2], ctx.nranks);
    int dims[3] = {(int)c->procs[0], (int)c->procs[1], (int)c->procs[2]};
    MPI_Dims_create(ctx.nranks, 3, dims);
    for (int d = 0; d < 3; d++)
        c->procs[d] = dims[d];
    int coord[3] = {ctx.rank % dims[0], (ctx.rank / dims[0]) % dims[1],
                    ctx.rank / (dims[0] * dims[1])};

    phase_bytes(&ctx, c);
    layout *l = &r.l;
    /* dataset order is (z, y, x); options are (x, y, z) */
    long long most = 1; /* cells of the largest block (rank 0's), known to every rank */
    for (int d = 0; d < 3; d++) {
        l->gdims[2 - d] = (hsize_t)(c->procs[d] * c->block[d]);
        axis_block(c->block[d], c->procs[d], coord[d], c->uneven, &l->start[2 - d],
                   &l->count[2 - d]);
        most *= c->block[d] + (c->uneven && c->procs[d] > 1 ? c->block[d] / 2 : 0);
    }
    l->nelem = (size_t)(l->count[0] * l->count[1] * l->count[2]);
    long long mine = (long long)l->nelem;
    MPI_Allreduce(&mine, &r.cells_min, 1, MPI_LONG_LONG, MPI_MIN, ctx.comm);
    MPI_Allreduce(&mine, &r.cells_max, 1, MPI_LONG_LONG, MPI_MAX, ctx.comm);
    /* with a file per step, the first step's file stands for them (--read-only checks it) */
    kc_path(&ctx, c->path, sizeof c->path, c->common.dir, c->common.file, c->per_step ? 0 : -1, -1);

    /* a block of each component and the pointers to them */
    const char *what = "the buffers of a rank ((block cells + 1) x --components x 8)";
    kc_check_memory(&ctx, kc_mul(&ctx, most + 1, c->components * 8, what));
    r.buf = kc_malloc(&ctx, sizeof(double *) * (size_t)c->components);
    for (int k = 0; k < c->components; k++)
        r.buf[k] = kc_malloc(&ctx, l->nelem * sizeof(double));

    kc_phases phases = {write_phase, read_phase, &r, c->per_step ? NULL : c->path, 1, cleanup};
    int code = kc_main(&ctx, &c->common, &phases);
    for (int k = 0; k < c->components; k++)
        free(r.buf[k]);
    free(r.buf);
    return kc_finish(&ctx, code);
}
