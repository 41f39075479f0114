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

typedef struct {
    long long cells; /* per rank */
    long long levels;
    long long chunk_cells; /* 0: contiguous */
    long long iterations;
    int mode; /* 0 collective, 1 independent */
    const char *file;
    const char *dir;
    char path[4096];
} config;

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
    hsize_t crow = (hsize_t)(c->chunk_cells * vars[v].per_cell);
    l->chunk[0] = crow < l->gdims[0] ? crow : l->gdims[0]; /* chunks may not exceed the space */
    l->chunk[1] = levels;
}

static long long phase_bytes(const kc_ctx *ctx, const config *c)
{
    long long per_cell = 0;
    for (int v = 0; v < NVARS; v++)
        per_cell += vars[v].per_cell * (c->levels + vars[v].extra_levels);
    return per_cell * c->cells * ctx->nranks * (long long)sizeof(double) * c->iterations;
}

static void report(const kc_ctx *ctx, const config *c, const kc_timer *t, const char *phase,
                   int verified)
{
    char objects[64], extra[4608];
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

static void spaces(const kc_ctx *ctx, const var_layout *l, hid_t *fspace, hid_t *mspace)
{
    *fspace = H5Screate_simple(2, l->gdims, NULL);
    *mspace = H5Screate_simple(2, l->count, NULL);
    kh5_check(ctx, *fspace < 0 || *mspace < 0 ? -1 : 0, "H5Screate_simple");
    kh5_check(ctx, H5Sselect_hyperslab(*fspace, H5S_SELECT_SET, l->start, NULL, l->count, NULL),
              "H5Sselect_hyperslab");
}

static void write_phase(const kc_ctx *ctx, const config *c, double **buf)
{
    hid_t fapl = kh5_fapl(ctx, ctx->comm), dxpl = kh5_dxpl(ctx, c->mode == 0);
    hid_t dcpl[NVARS];
    for (int v = 0; v < NVARS; v++) {
        var_layout l;
        layout_of(ctx, c, v, &l);
        dcpl[v] = H5Pcreate(H5P_DATASET_CREATE);
        kh5_check(ctx, dcpl[v], "H5Pcreate(H5P_DATASET_CREATE)");
        if (c->chunk_cells > 0)
            kh5_check(ctx, H5Pset_chunk(dcpl[v], 2, l.chunk), "H5Pset_chunk");
    }
    fill_step(ctx, c, buf, 0);

    kc_timer t;
    kc_timer_start(&t, ctx->comm);
    hid_t file = kh5_create(ctx, c->path, fapl);
    kc_timer_mark(&t, KC_OPEN);
    for (int it = 0; it < c->iterations; it++) {
        if (it > 0) {
            kc_timer_mark(&t, KC_IO);
            fill_step(ctx, c, buf, it);
            kc_timer_mark(&t, KC_SKIP);
        }
        char gname[64];
        snprintf(gname, sizeof gname, "Step#%d", it);
        hid_t group = H5Gcreate2(file, gname, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
        kh5_check(ctx, group, "H5Gcreate2");
        for (int v = 0; v < NVARS; v++) {
            var_layout l;
            hid_t fspace, mspace;
            layout_of(ctx, c, v, &l);
            spaces(ctx, &l, &fspace, &mspace);
            hid_t dset = H5Dcreate2(group, vars[v].name, H5T_NATIVE_DOUBLE, fspace, H5P_DEFAULT,
                                    dcpl[v], H5P_DEFAULT);
            kh5_check(ctx, dset, "H5Dcreate2");
            kh5_check(ctx, H5Dwrite(dset, H5T_NATIVE_DOUBLE, mspace, fspace, dxpl, buf[v]),
                      "H5Dwrite");
            kh5_close_dataset(ctx, dset);
            H5Sclose(mspace);
            H5Sclose(fspace);
        }
        kh5_close_group(ctx, group);
    }
    kc_timer_mark(&t, KC_IO);
    kh5_close_file(ctx, file);
    kc_timer_mark(&t, KC_CLOSE);
    kc_timer_reduce(&t);
    report(ctx, c, &t, "write", -1);
    for (int v = 0; v < NVARS; v++)
        H5Pclose(dcpl[v]);
    H5Pclose(dxpl);
    H5Pclose(fapl);
}

static int read_phase(const kc_ctx *ctx, const config *c, double **buf)
{
    hid_t fapl = kh5_fapl(ctx, ctx->comm), dxpl = kh5_dxpl(ctx, c->mode == 0);
    kc_verify ver;
    kc_verify_init(&ver);
    for (int v = 0; v < NVARS; v++) { /* never verify what the write phase left behind */
        var_layout l;
        layout_of(ctx, c, v, &l);
        memset(buf[v], 0, (size_t)(l.count[0] * l.count[1]) * sizeof(double));
    }

    kc_timer t;
    kc_timer_start(&t, ctx->comm);
    hid_t file = kh5_open(ctx, c->path, fapl);
    kc_timer_mark(&t, KC_OPEN);
    for (int it = 0; it < c->iterations; it++) {
        char gname[64];
        snprintf(gname, sizeof gname, "Step#%d", it);
        hid_t group = H5Gopen2(file, gname, H5P_DEFAULT);
        if (group < 0)
            kc_fail_all(ctx, KC_EXIT_VERIFY, "group '/%s' is missing in '%s'", gname, c->path);
        for (int v = 0; v < NVARS; v++) {
            var_layout l;
            hid_t fspace, mspace;
            layout_of(ctx, c, v, &l);
            spaces(ctx, &l, &fspace, &mspace);
            hid_t dset = kh5_open_dataset(ctx, group, vars[v].name, 2, l.gdims, KC_F64);
            kh5_check(ctx, H5Dread(dset, H5T_NATIVE_DOUBLE, mspace, fspace, dxpl, buf[v]),
                      "H5Dread");
            kh5_close_dataset(ctx, dset);
            H5Sclose(mspace);
            H5Sclose(fspace);
        }
        kh5_close_group(ctx, group);
        kc_timer_mark(&t, KC_IO);
        for (int v = 0; v < NVARS; v++) {
            var_layout l;
            char what[128];
            layout_of(ctx, c, v, &l);
            snprintf(what, sizeof what, "/%s/%s", gname, vars[v].name);
            kc_check(&ver, buf[v], KC_F64, (size_t)(l.count[0] * l.count[1]),
                     l.start[0] * l.gdims[1], 1, (uint32_t)v, (uint32_t)it, what);
        }
        kc_timer_mark(&t, KC_SKIP);
    }
    kh5_close_file(ctx, file);
    kc_timer_mark(&t, KC_CLOSE);
    kc_timer_reduce(&t);
    int ok = kc_verify_reduce(ctx, &ver);
    report(ctx, c, &t, "read", ok);
    H5Pclose(dxpl);
    H5Pclose(fapl);
    return ok;
}

int main(int argc, char **argv)
{
    kc_ctx ctx;
    kc_init(&ctx, "gcrmio", &argc, &argv);
    config c = {.cells = 32768,
                .levels = 25,
                .chunk_cells = 16384,
                .iterations = 1,
                .mode = 0,
                .file = "gcrmio.h5",
                .dir = "."};
    int do_read = 0, read_only = 0, cleanup = 0;
    const kc_opt opts[] = {
        {"cells", KC_OPT_INT, &c.cells, NULL, 0, 1,
         "grid cells per rank (3 edges, 2 corners each)"},
        {"levels", KC_OPT_INT, &c.levels, NULL, 0, 1, "vertical levels (layers)"},
        {"chunk-cells", KC_OPT_INT, &c.chunk_cells, NULL, 0, 0,
         "cells per chunk (x entities per cell, x all levels); 0 = contiguous datasets"},
        {"iterations", KC_OPT_INT, &c.iterations, NULL, 0, 1,
         "output iterations (groups /Step#0, /Step#1, ...)"},
        {"steps", KC_OPT_INT, &c.iterations, NULL, 0, 1, "same as --iterations"},
        {"mode", KC_OPT_CHOICE, &c.mode, "collective|independent", 0, 0,
         "MPI-IO transfer mode of H5Dwrite/H5Dread"},
        {"file", KC_OPT_STR, &c.file, NULL, 0, 0, "HDF5 file name"},
        {"dir", KC_OPT_STR, &c.dir, NULL, 0, 0,
         "directory of the file (unless --file is absolute)"},
        {"read", KC_OPT_FLAG, &do_read, NULL, 0, 0, "after writing, read back and verify"},
        {"read-only", KC_OPT_FLAG, &read_only, NULL, 0, 0,
         "only read and verify an existing file written with the same arguments"},
        {"cleanup", KC_OPT_FLAG, &cleanup, NULL, 0, 0, "delete the file at the end"},
        {NULL, KC_OPT_FLAG, NULL, NULL, 0, 0, NULL},
    };
    kc_parse(&ctx, argc, argv, opts,
             "GCRM-IO motif: a geodesic mesh with `cells` cells per rank (3 edges and 2 corners\n"
             "per cell) and L vertical levels; per iteration five float64 datasets\n"
             "/Step#<i>/{pressure,temperature (cells x L), vertical_velocity (cells x L+1),\n"
             "normal_wind (edges x L), vorticity (corners x L)}, chunked by --chunk-cells;\n"
             "each rank writes its row range with one H5Dwrite per variable.");
    kh5_init(&ctx);
    kc_path(&ctx, c.path, sizeof c.path, c.dir, c.file, -1, -1);

    double *buf[NVARS];
    for (int v = 0; v < NVARS; v++) {
        var_layout l;
        layout_of(&ctx, &c, v, &l);
        buf[v] = kc_malloc(&ctx, (size_t)(l.count[0] * l.count[1]) * sizeof(double));
    }
    int ok = 1;
    if (read_only) {
        kc_require_file(&ctx, c.path);
        ok = read_phase(&ctx, &c, buf);
    } else {
        write_phase(&ctx, &c, buf);
        if (do_read)
            ok = read_phase(&ctx, &c, buf);
    }
    if (cleanup)
        kc_remove_file(&ctx, c.path, 1);
    for (int v = 0; v < NVARS; v++)
        free(buf[v]);
    return kc_finish(&ctx, ok ? KC_EXIT_OK : KC_EXIT_VERIFY);
}
