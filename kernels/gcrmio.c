/*
 * gcrmio: the GCRM-IO motif (semi-structured geodesic mesh, chunked datasets).
 *
 * GCRM discretises the sphere into a geodesic grid of (mostly hexagonal) cells with vertical
 * levels. On such a grid there are about 3 edges and 2 corners per cell, and model variables
 * live at cell centres (on layers or on the layer interfaces), on edges and on corners. Each
 * rank owns a contiguous range of `cells` cells and therefore 3*cells edges and 2*cells
 * corners. Per iteration the kernel writes, in the group /Step#<i> of one shared file, five
 * 2-D float64 datasets (rows = mesh entities of all ranks, columns = levels):
 *
 *   pressure            (Ncells,   L)      cells x layers
 *   temperature         (Ncells,   L)      cells x layers
 *   vertical_velocity   (Ncells,   L + 1)  cells x layer interfaces
 *   normal_wind         (3*Ncells, L)      edges x layers
 *   vorticity           (2*Ncells, L)      corners x layers
 *
 * Datasets are chunked with chunks of (chunk_cells * entities-per-cell) rows by all levels
 * (clamped to the dataset), or contiguous with --chunk-cells 0. Each rank writes its row range
 * with one H5Dwrite per variable; with chunking the rank boundaries need not meet chunk
 * boundaries, as in the original kernel.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kh5.h"

#define NVARS 5

typedef struct {
    const char *name;
    int per_cell;     /* mesh entities per cell: 1 cells, 3 edges, 2 corners */
    int extra_levels; /* 1 for variables on layer interfaces */
} var_desc;

static const var_desc vars[NVARS] = {
    {"pressure", 1, 0},    {"temperature", 1, 0}, {"vertical_velocity", 1, 1},
    {"normal_wind", 3, 0}, {"vorticity", 2, 0},
};

static const char synopsis[] =
    "GCRM-IO motif: a geodesic mesh with `cells` cells per rank (3 edges and 2 corners\n"
    "per cell) and L vertical levels; per iteration five float64 datasets\n"
    "/Step#<i>/{pressure,temperature (cells x L), vertical_velocity (cells x L+1),\n"
    "normal_wind (edges x L), vorticity (corners x L)}, chunked by --chunk-cells;\n"
    "each rank writes its row range with one H5Dwrite per variable.";

typedef struct {
    long long cells; /* per rank */
    long long levels;
    long long chunk_cells; /* 0: contiguous */
    long long iterations;
    int mode;     /* 0 collective, 1 independent */
    int per_step; /* --file-per-step */
    kc_common common;
    char path[KC_PATH_MAX];
} config;

/* What the phases work on. */
typedef struct {
    config c;
    double *buf[NVARS];
} run;

typedef struct {
    hsize_t gdims[2]; /* rows of all ranks, levels */
    hsize_t start[2]; /* first row of this rank, 0 */
    hsize_t count[2]; /* rows of this rank, levels */
    hsize_t chunk[2];
} var_layout;

static void layout_of(const kc_ctx *ctx, const config *c, int v, var_layout *l)
{
    hsize_t rows = (hsize_t)(c->cells * vars[v].per_cell);
    hsize_t levels = (hsize_t)(c->levels + vars[v].extra_levels);
    l->gdims[0] = rows * (hsize_t)ctx->nranks;
    l->gdims[1] = levels;
    l->start[0] = rows * (hsize_t)ctx->rank;
    l->start[1] = 0;
    l->count[0] = rows;
    l->count[1] = levels;
    /* chunks may not exceed the space; clamped before multiplying, which cannot overflow then */
    hsize_t cells = (hsize_t)c->cells * (hsize_t)ctx->nranks;
    hsize_t ccells = (hsize_t)c->chunk_cells < cells ? (hsize_t)c->chunk_cells : cells;
    l->chunk[0] = ccells * (hsize_t)vars[v].per_cell;
    l->chunk[1] = levels;
}

/* HDF5 refuses chunks of 4 GiB or more only at H5Dcreate, once the file exists: check up front
 * and name the largest --chunk-cells that works. Not clamped: the chunk size is a tunable, and
 * a run must measure the one asked for. */
static void check_chunks(const kc_ctx *ctx, const config *c)
{
    const hsize_t limit = 0xFFFFFFFFu; /* bytes; HDF5: "chunk size must be < 4GB" */
    hsize_t cell_bytes = 0;            /* bytes per chunk cell of the largest variable */
    for (int v = 0; v < NVARS; v++) {
        hsize_t b = (hsize_t)vars[v].per_cell * (hsize_t)(c->levels + vars[v].extra_levels) * 8;
        cell_bytes = b > cell_bytes ? b : cell_bytes;
    }
    for (int v = 0; c->chunk_cells > 0 && v < NVARS; v++) {
        var_layout l;
        layout_of(ctx, c, v, &l);
        hsize_t bytes = l.chunk[0] * l.chunk[1] * sizeof(double); /* < the phase's bytes */
        if (bytes > limit)
            kc_fail_all(ctx, KC_EXIT_USAGE,
                        "--chunk-cells %lld makes chunks of %llu bytes (%s); HDF5 chunks must be "
                        "below 4 GiB: use --chunk-cells %llu or less, or 0 (contiguous)",
                        c->chunk_cells, (unsigned long long)bytes, vars[v].name,
                        (unsigned long long)(limit / cell_bytes));
    }
}

/* The largest size of the run, checked for overflow (every other size is smaller). */
static long long phase_bytes(const kc_ctx *ctx, const config *c)
{
    const char *what =
        "the bytes of a phase (--cells x ranks x (8 x --levels + 1) x 8 x --iterations)";
    long long per_cell = kc_mul(ctx, c->levels, 8, what) + 1; /* values over the 5 variables */
    long long n = kc_mul(ctx, c->cells, ctx->nranks, what);
    n = kc_mul(ctx, n, per_cell, what);
    n = kc_mul(ctx, n, (long long)sizeof(double), what);
    return kc_mul(ctx, n, c->iterations, what);
}

static void report(const kc_ctx *ctx, const config *c, const kc_timer *t, const char *phase,
                   int verified)
{
    char objects[64], extra[KC_EXTRA_MAX];
    snprintf(objects, sizeof objects, "%lld datasets", (long long)NVARS * c->iterations);
    extra[0] = '\0';
    kc_json_int(extra, sizeof extra, "steps", c->iterations);
    kc_json_int(extra, sizeof extra, "cells", c->cells);
    kc_json_int(extra, sizeof extra, "levels", c->levels);
    kc_json_int(extra, sizeof extra, "chunk_cells", c->chunk_cells);
    kc_json_str(extra, sizeof extra, "mode", c->mode == 0 ? "collective" : "independent");
    kc_json_str(extra, sizeof extra, "file", c->path);
    kc_report_info info = {phase, phase_bytes(ctx, c), objects, verified, extra};
    kc_report(ctx, t, &info);
}

/* Element (row, level) of variable v has global index row * levels + level. */
static void fill_step(const kc_ctx *ctx, const config *c, double **buf, int step)
{
    for (int v = 0; v < NVARS; v++) {
        var_layout l;
        layout_of(ctx, c, v, &l);
        kc_fill(buf[v], KC_F64, (size_t)(l.count[0] * l.count[1]), l.start[0] * l.gdims[1], 1,
                (uint32_t)v, (uint32_t)step);
    }
}

static void write_phase(const kc_ctx *ctx, void *arg)
{
    run *r = arg;
    const config *c = &r->c;
    hid_t dcpl[NVARS];
    for (int v = 0; v < NVARS; v++) {
        var_layout l;
        layout_of(ctx, c, v, &l);
        dcpl[v] = H5Pcreate(H5P_DATASET_CREATE);
        kh5_check(ctx, dcpl[v], "H5Pcreate(H5P_DATASET_CREATE)");
        if (c->chunk_cells > 0)
            kh5_check(ctx, H5Pset_chunk(dcpl[v], 2, l.chunk), "H5Pset_chunk");
    }
    fill_step(ctx, c, r->buf, 0);

    kh5_phase p;
    if (c->per_step)
        kh5_phase_open_steps(ctx, &p, c->common.dir, c->common.file, 1, c->mode == 0);
    else
        kh5_phase_open(ctx, &p, c->path, 1, c->mode == 0);
    for (int it = 0; it < c->iterations; it++) {
        if (it > 0) {
            kc_timer_mark(&p.t, KC_IO);
            fill_step(ctx, c, r->buf, it);
            kc_timer_mark(&p.t, KC_SKIP);
        }
        char gname[64];
        snprintf(gname, sizeof gname, "Step#%d", it);
        hid_t group = kh5_create_group(ctx, kh5_phase_file(ctx, &p, it), gname);
        for (int v = 0; v < NVARS; v++) {
            var_layout l;
            hid_t fspace, mspace;
            layout_of(ctx, c, v, &l);
            kh5_spaces(ctx, 2, l.gdims, l.start, l.count, &fspace, &mspace);
            kh5_write_dataset(ctx, group, vars[v].name, KC_F64, fspace, dcpl[v], mspace, p.dxpl,
                              r->buf[v]);
            H5Sclose(mspace);
            H5Sclose(fspace);
        }
        kh5_close_group(ctx, group);
    }
    kc_timer_mark(&p.t, KC_IO);
    kh5_phase_close(ctx, &p);
    report(ctx, c, &p.t, "write", -1);
    for (int v = 0; v < NVARS; v++)
        H5Pclose(dcpl[v]);
}

static int read_phase(const kc_ctx *ctx, void *arg)
{
    run *r = arg;
    const config *c = &r->c;
    for (int v = 0; v < NVARS; v++) { /* never verify what the write phase left behind */
        var_layout l;
        layout_of(ctx, c, v, &l);
        memset(r->buf[v], 0, (size_t)(l.count[0] * l.count[1]) * sizeof(double));
    }

    kh5_phase p;
    if (c->per_step)
        kh5_phase_open_steps(ctx, &p, c->common.dir, c->common.file, 0, c->mode == 0);
    else
        kh5_phase_open(ctx, &p, c->path, 0, c->mode == 0);
    for (int it = 0; it < c->iterations; it++) {
        char gname[64];
        snprintf(gname, sizeof gname, "Step#%d", it);
        hid_t group = kh5_open_group(ctx, kh5_phase_file(ctx, &p, it), gname, c->path);
        for (int v = 0; v < NVARS; v++) {
            var_layout l;
            hid_t fspace, mspace;
            layout_of(ctx, c, v, &l);
            kh5_spaces(ctx, 2, l.gdims, l.start, l.count, &fspace, &mspace);
            kh5_read_dataset(ctx, group, vars[v].name, 2, l.gdims, KC_F64, mspace, fspace, p.dxpl,
                             r->buf[v]);
            H5Sclose(mspace);
            H5Sclose(fspace);
        }
        kh5_close_group(ctx, group);
        kc_timer_mark(&p.t, KC_IO);
        for (int v = 0; v < NVARS; v++) {
            var_layout l;
            char what[128];
            layout_of(ctx, c, v, &l);
            snprintf(what, sizeof what, "/%s/%s", gname, vars[v].name);
            kc_check(&p.ver, r->buf[v], KC_F64, (size_t)(l.count[0] * l.count[1]),
                     l.start[0] * l.gdims[1], 1, (uint32_t)v, (uint32_t)it, what);
        }
        kc_timer_mark(&p.t, KC_SKIP);
    }
    int ok = kh5_phase_close(ctx, &p);
    report(ctx, c, &p.t, "read", ok);
    return ok;
}

static void cleanup(const kc_ctx *ctx, void *arg)
{
    const config *c = &((run *)arg)->c;
    kh5_remove_steps(ctx, c->common.dir, c->common.file, c->iterations);
}

int main(int argc, char **argv)
{
    kc_ctx ctx;
    kc_init(&ctx, "gcrmio", &argc, &argv);
    run r = {.c = {.cells = 32768,
                   .levels = 25,
                   .chunk_cells = 16384,
                   .iterations = 1,
                   .mode = 0,
                   .common = {.file = "gcrmio.h5"}}};
    config *c = &r.c;
    const kc_opt opts[] = {
        {"cells", KC_OPT_INT, &c->cells, NULL, 0, 1,
         "grid cells per rank (the mesh has cells x ranks; 3 edges, 2 corners each)"},
        {"levels", KC_OPT_INT, &c->levels, NULL, 0, 1, "vertical levels (layers)"},
        {"chunk-cells", KC_OPT_INT, &c->chunk_cells, NULL, 0, 0,
         "cells per chunk (x entities per cell, x all levels); 0 = contiguous datasets"},
        {"iterations", KC_OPT_INT, &c->iterations, NULL, 0, 1,
         "output iterations (groups /Step#0, /Step#1, ...)"},
        {"steps", KC_OPT_INT, &c->iterations, NULL, 0, 1, "same as --iterations"},
        kh5_opt_mode(&c->mode),
        kh5_opt_file_per_step(&c->per_step),
        {NULL, KC_OPT_FLAG, NULL, NULL, 0, 0, NULL},
    };
    kc_parse_common(&ctx, argc, argv, opts, &c->common, synopsis);
    kh5_init(&ctx);
    /* with a file per step, the first step's file stands for them (--read-only checks it) */
    kc_path(&ctx, c->path, sizeof c->path, c->common.dir, c->common.file, c->per_step ? 0 : -1, -1);

    long long bytes = phase_bytes(&ctx, c); /* per rank and iteration: a ranks x iterations-th */
    check_chunks(&ctx, c);
    kc_check_memory(&ctx, bytes / ctx.nranks / c->iterations);
    for (int v = 0; v < NVARS; v++) {
        var_layout l;
        layout_of(&ctx, c, v, &l);
        r.buf[v] = kc_malloc(&ctx, (size_t)(l.count[0] * l.count[1]) * sizeof(double));
    }
    kc_phases phases = {write_phase, read_phase, &r, c->per_step ? NULL : c->path, 1, cleanup};
    int code = kc_main(&ctx, &c->common, &phases);
    for (int v = 0; v < NVARS; v++)
        free(r.buf[v]);
    return kc_finish(&ctx, code);
}
