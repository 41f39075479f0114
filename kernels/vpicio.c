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

static const char synopsis[] =
    "VPIC-IO motif: N particles per rank, 8 variables (x,y,z,px,py,pz float32; id1,id2\n"
    "int32) written as 1-D datasets /Step#<s>/<var> of one shared HDF5 file; each rank\n"
    "writes its contiguous slab with one H5Dwrite per variable and step.";

typedef struct {
    long long particles; /* per rank */
    long long steps;
    int mode; /* 0 collective, 1 independent */
    kc_common common;
    char path[KC_PATH_MAX];
} config;

typedef struct {
    hsize_t total;  /* particles in the file */
    hsize_t offset; /* first particle of this rank */
    hsize_t count;  /* particles of this rank */
} layout;

/* What the phases work on. */
typedef struct {
    config c;
    layout l;
    void *buf[NVARS];
} run;

static void extra_json(const config *c, char *buf, size_t size)
{
    buf[0] = '\0';
    kc_json_int(buf, size, "steps", c->steps);
    kc_json_int(buf, size, "particles", c->particles);
    kc_json_str(buf, size, "mode", c->mode == 0 ? "collective" : "independent");
    kc_json_str(buf, size, "file", c->path);
}

static long long particle_bytes(void)
{
    long long n = 0;
    for (int v = 0; v < NVARS; v++)
        n += (long long)kc_type_size(var_type[v]);
    return n;
}

/* The largest size of the run, checked for overflow (every other size is smaller). */
static long long phase_bytes(const kc_ctx *ctx, const config *c)
{
    const char *what = "the bytes of a phase (--particles x ranks x 32 x --steps)";
    long long n = kc_mul(ctx, c->particles, ctx->nranks, what);
    n = kc_mul(ctx, n, particle_bytes(), what);
    return kc_mul(ctx, n, c->steps, what);
}

static void report(const kc_ctx *ctx, const config *c, const kc_timer *t, const char *phase,
                   int verified)
{
    char objects[64], extra[KC_EXTRA_MAX];
    snprintf(objects, sizeof objects, "%lld datasets", (long long)NVARS * c->steps);
    extra_json(c, extra, sizeof extra);
    kc_report_info info = {phase, phase_bytes(ctx, c), objects, verified, extra};
    kc_report(ctx, t, &info);
}

static void fill_step(void *buf[NVARS], const layout *l, int step)
{
    for (int v = 0; v < NVARS; v++)
        kc_fill(buf[v], var_type[v], l->count, l->offset, 1, (uint32_t)v, (uint32_t)step);
}

static void write_phase(const kc_ctx *ctx, void *arg)
{
    run *r = arg;
    const config *c = &r->c;
    const layout *l = &r->l;
    hid_t fspace, mspace;
    kh5_spaces(ctx, 1, &l->total, &l->offset, &l->count, &fspace, &mspace);
    fill_step(r->buf, l, 0);

    kh5_phase p;
    kh5_phase_open(ctx, &p, c->path, 1, c->mode == 0);
    for (int s = 0; s < c->steps; s++) {
        if (s > 0) { /* the next step's particles, outside the timed region */
            kc_timer_mark(&p.t, KC_IO);
            fill_step(r->buf, l, s);
            kc_timer_mark(&p.t, KC_SKIP);
        }
        char gname[64];
        snprintf(gname, sizeof gname, "Step#%d", s);
        hid_t group = kh5_create_group(ctx, p.file, gname);
        for (int v = 0; v < NVARS; v++)
            kh5_write_dataset(ctx, group, var_name[v], var_type[v], fspace, H5P_DEFAULT, mspace,
                              p.dxpl, r->buf[v]);
        kh5_close_group(ctx, group);
    }
    kc_timer_mark(&p.t, KC_IO);
    kh5_phase_close(ctx, &p);
    report(ctx, c, &p.t, "write", -1);
    H5Sclose(mspace);
    H5Sclose(fspace);
}

static int read_phase(const kc_ctx *ctx, void *arg)
{
    run *r = arg;
    const config *c = &r->c;
    const layout *l = &r->l;
    hid_t fspace, mspace;
    kh5_spaces(ctx, 1, &l->total, &l->offset, &l->count, &fspace, &mspace);
    for (int v = 0; v < NVARS; v++) /* never verify what the write phase left behind */
        memset(r->buf[v], 0, l->count * kc_type_size(var_type[v]));

    kh5_phase p;
    kh5_phase_open(ctx, &p, c->path, 0, c->mode == 0);
    for (int s = 0; s < c->steps; s++) {
        char gname[64];
        snprintf(gname, sizeof gname, "Step#%d", s);
        hid_t group = kh5_open_group(ctx, p.file, gname, c->path);
        for (int v = 0; v < NVARS; v++)
            kh5_read_dataset(ctx, group, var_name[v], 1, &l->total, var_type[v], mspace, fspace,
                             p.dxpl, r->buf[v]);
        kh5_close_group(ctx, group);
        kc_timer_mark(&p.t, KC_IO);
        for (int v = 0; v < NVARS; v++) { /* check outside the timed region */
            char what[96];
            snprintf(what, sizeof what, "/%s/%s", gname, var_name[v]);
            kc_check(&p.ver, r->buf[v], var_type[v], l->count, l->offset, 1, (uint32_t)v,
                     (uint32_t)s, what);
        }
        kc_timer_mark(&p.t, KC_SKIP);
    }
    int ok = kh5_phase_close(ctx, &p);
    report(ctx, c, &p.t, "read", ok);
    H5Sclose(mspace);
    H5Sclose(fspace);
    return ok;
}

int main(int argc, char **argv)
{
    kc_ctx ctx;
    kc_init(&ctx, "vpicio", &argc, &argv);
    run r = {.c = {.particles = 1048576, .steps = 1, .mode = 0, .common = {.file = "vpicio.h5"}}};
    config *c = &r.c;
    const kc_opt opts[] = {
        {"particles", KC_OPT_INT, &c->particles, NULL, 0, 1, "particles per rank"},
        {"steps", KC_OPT_INT, &c->steps, NULL, 0, 1, "time steps (groups /Step#0, /Step#1, ...)"},
        kh5_opt_mode(&c->mode),
        {NULL, KC_OPT_FLAG, NULL, NULL, 0, 0, NULL},
    };
    kc_parse_common(&ctx, argc, argv, opts, &c->common, synopsis);
    kh5_init(&ctx);
    kc_path(&ctx, c->path, sizeof c->path, c->common.dir, c->common.file, -1, -1);

    phase_bytes(&ctx, c);
    kc_check_memory(&ctx, c->particles * particle_bytes());
    layout *l = &r.l;
    l->count = (hsize_t)c->particles;
    l->total = l->count * (hsize_t)ctx.nranks;
    l->offset = l->count * (hsize_t)ctx.rank;
    for (int v = 0; v < NVARS; v++)
        r.buf[v] = kc_malloc(&ctx, l->count * kc_type_size(var_type[v]));

    kc_phases phases = {write_phase, read_phase, &r, c->path, 1, NULL};
    int code = kc_main(&ctx, &c->common, &phases);
    for (int v = 0; v < NVARS; v++)
        free(r.buf[v]);
    return kc_finish(&ctx, code);
}
