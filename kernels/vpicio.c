/*
 * vpicio: the VPIC-IO motif (particle data through H5Part, 1-D arrays).
 *
 * Every rank owns N particles with 8 variables (x, y, z, px, py, pz as float32; id1, id2 as
 * int32). For each time step the kernel creates the H5Part group "/Step#<s>" in ONE shared file
 * and writes each variable as a 1-D dataset of N * nranks elements; rank r writes the
 * contiguous slab [r*N, (r+1)*N) with one H5Dwrite per variable. Values are a function of
 * (global particle index, variable, step), so the file is identical for any rank count with the
 * same total, and the read phase checks every value.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kh5.h"

#define NVARS 8

static const char *const var_name[NVARS] = {"x", "y", "z", "px", "py", "pz", "id1", "id2"};
static const kc_type var_type[NVARS] = {KC_F32, KC_F32, KC_F32, KC_F32,
                                        KC_F32, KC_F32, KC_I32, KC_I32};

typedef struct {
    long long particles; /* per rank */
    long long steps;
    int mode; /* 0 collective, 1 independent */
    const char *file;
    const char *dir;
    char path[4096];
} config;

typedef struct {
    hsize_t total;  /* particles in the file */
    hsize_t offset; /* first particle of this rank */
    hsize_t count;  /* particles of this rank */
} layout;

static void extra_json(const config *c, char *buf, size_t size)
{
    buf[0] = '\0';
    kc_json_int(buf, size, "steps", c->steps);
    kc_json_int(buf, size, "particles", c->particles);
    kc_json_str(buf, size, "mode", c->mode == 0 ? "collective" : "independent");
    kc_json_str(buf, size, "file", c->path);
}

static long long phase_bytes(const config *c, const layout *l)
{
    long long per_particle = 0;
    for (int v = 0; v < NVARS; v++)
        per_particle += (long long)kc_type_size(var_type[v]);
    return (long long)l->total * per_particle * c->steps;
}

static void report(const kc_ctx *ctx, const config *c, const layout *l, const kc_timer *t,
                   const char *phase, int verified)
{
    char objects[64], extra[4608];
    snprintf(objects, sizeof objects, "%lld datasets", (long long)NVARS * c->steps);
    extra_json(c, extra, sizeof extra);
    kc_report_info info = {phase, phase_bytes(c, l), objects, verified, extra};
    kc_report(ctx, t, &info);
}

static void fill_step(void *buf[NVARS], const layout *l, int step)
{
    for (int v = 0; v < NVARS; v++)
        kc_fill(buf[v], var_type[v], l->count, l->offset, 1, (uint32_t)v, (uint32_t)step);
}

static void write_phase(const kc_ctx *ctx, const config *c, const layout *l, void *buf[NVARS])
{
    hid_t fapl = kh5_fapl(ctx, ctx->comm);
    hid_t dxpl = kh5_dxpl(ctx, c->mode == 0);
    hid_t fspace = H5Screate_simple(1, &l->total, NULL);
    hid_t mspace = H5Screate_simple(1, &l->count, NULL);
    kh5_check(ctx, fspace < 0 || mspace < 0 ? -1 : 0, "H5Screate_simple");
    kh5_check(ctx, H5Sselect_hyperslab(fspace, H5S_SELECT_SET, &l->offset, NULL, &l->count, NULL),
              "H5Sselect_hyperslab");
    fill_step(buf, l, 0);

    kc_timer t;
    kc_timer_start(&t, ctx->comm);
    hid_t file = kh5_create(ctx, c->path, fapl);
    kc_timer_mark(&t, KC_OPEN);
    for (int s = 0; s < c->steps; s++) {
        if (s > 0) { /* the next step's particles, outside the timed region */
            kc_timer_mark(&t, KC_IO);
            fill_step(buf, l, s);
            kc_timer_mark(&t, KC_SKIP);
        }
        char gname[64];
        snprintf(gname, sizeof gname, "Step#%d", s);
        hid_t group = H5Gcreate2(file, gname, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
        kh5_check(ctx, group, "H5Gcreate2");
        for (int v = 0; v < NVARS; v++) {
            hid_t type = kh5_type(var_type[v]);
            hid_t dset =
                H5Dcreate2(group, var_name[v], type, fspace, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
            kh5_check(ctx, dset, "H5Dcreate2");
            kh5_check(ctx, H5Dwrite(dset, type, mspace, fspace, dxpl, buf[v]), "H5Dwrite");
            kh5_close_dataset(ctx, dset);
        }
        kh5_close_group(ctx, group);
    }
    kc_timer_mark(&t, KC_IO);
    kh5_close_file(ctx, file);
    kc_timer_mark(&t, KC_CLOSE);
    kc_timer_reduce(&t);
    report(ctx, c, l, &t, "write", -1);

    H5Sclose(mspace);
    H5Sclose(fspace);
    H5Pclose(dxpl);
    H5Pclose(fapl);
}

static int read_phase(const kc_ctx *ctx, const config *c, const layout *l, void *buf[NVARS])
{
    hid_t fapl = kh5_fapl(ctx, ctx->comm);
    hid_t dxpl = kh5_dxpl(ctx, c->mode == 0);
    hid_t fspace = H5Screate_simple(1, &l->total, NULL);
    hid_t mspace = H5Screate_simple(1, &l->count, NULL);
    kh5_check(ctx, fspace < 0 || mspace < 0 ? -1 : 0, "H5Screate_simple");
    kh5_check(ctx, H5Sselect_hyperslab(fspace, H5S_SELECT_SET, &l->offset, NULL, &l->count, NULL),
              "H5Sselect_hyperslab");
    kc_verify ver;
    kc_verify_init(&ver);
    for (int v = 0; v < NVARS; v++) /* never verify what the write phase left behind */
        memset(buf[v], 0, l->count * kc_type_size(var_type[v]));

    kc_timer t;
    kc_timer_start(&t, ctx->comm);
    hid_t file = kh5_open(ctx, c->path, fapl);
    kc_timer_mark(&t, KC_OPEN);
    for (int s = 0; s < c->steps; s++) {
        char gname[64];
        snprintf(gname, sizeof gname, "Step#%d", s);
        hid_t group = H5Gopen2(file, gname, H5P_DEFAULT);
        if (group < 0)
            kc_fail_all(ctx, KC_EXIT_VERIFY, "group '/%s' is missing in '%s'", gname, c->path);
        for (int v = 0; v < NVARS; v++) {
            hid_t dset = kh5_open_dataset(ctx, group, var_name[v], 1, &l->total, var_type[v]);
            kh5_check(ctx, H5Dread(dset, kh5_type(var_type[v]), mspace, fspace, dxpl, buf[v]),
                      "H5Dread");
            kh5_close_dataset(ctx, dset);
        }
        kh5_close_group(ctx, group);
        kc_timer_mark(&t, KC_IO);
        for (int v = 0; v < NVARS; v++) { /* check outside the timed region */
            char what[96];
            snprintf(what, sizeof what, "/%s/%s", gname, var_name[v]);
            kc_check(&ver, buf[v], var_type[v], l->count, l->offset, 1, (uint32_t)v, (uint32_t)s,
                     what);
        }
        kc_timer_mark(&t, KC_SKIP);
    }
    kh5_close_file(ctx, file);
    kc_timer_mark(&t, KC_CLOSE);
    kc_timer_reduce(&t);
    int ok = kc_verify_reduce(ctx, &ver);
    report(ctx, c, l, &t, "read", ok);

    H5Sclose(mspace);
    H5Sclose(fspace);
    H5Pclose(dxpl);
    H5Pclose(fapl);
    return ok;
}

int main(int argc, char **argv)
{
    kc_ctx ctx;
    kc_init(&ctx, "vpicio", &argc, &argv);
    config c = {.particles = 1048576, .steps = 1, .mode = 0, .file = "vpicio.h5", .dir = "."};
    int do_read = 0, read_only = 0, cleanup = 0;
    const kc_opt opts[] = {
        {"particles", KC_OPT_INT, &c.particles, NULL, 0, 1, "particles per rank"},
        {"steps", KC_OPT_INT, &c.steps, NULL, 0, 1, "time steps (groups /Step#0, /Step#1, ...)"},
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
             "VPIC-IO motif: N particles per rank, 8 variables (x,y,z,px,py,pz float32; id1,id2\n"
             "int32) written as 1-D datasets /Step#<s>/<var> of one shared HDF5 file; each rank\n"
             "writes its contiguous slab with one H5Dwrite per variable and step.");
    kh5_init(&ctx);
    kc_path(&ctx, c.path, sizeof c.path, c.dir, c.file, -1, -1);

    layout l;
    l.count = (hsize_t)c.particles;
    l.total = l.count * (hsize_t)ctx.nranks;
    l.offset = l.count * (hsize_t)ctx.rank;
    void *buf[NVARS];
    for (int v = 0; v < NVARS; v++)
        buf[v] = kc_malloc(&ctx, l.count * kc_type_size(var_type[v]));

    int ok = 1;
    if (read_only) {
        kc_require_file(&ctx, c.path);
        ok = read_phase(&ctx, &c, &l, buf);
    } else {
        write_phase(&ctx, &c, &l, buf);
        if (do_read)
            ok = read_phase(&ctx, &c, &l, buf);
    }
    if (cleanup)
        kc_remove_file(&ctx, c.path, 1);
    for (int v = 0; v < NVARS; v++)
        free(buf[v]);
    return kc_finish(&ctx, ok ? KC_EXIT_OK : KC_EXIT_VERIFY);
}
