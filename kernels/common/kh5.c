/* kh5: HDF5 helpers of the iotune kernels (see kh5.h). */
#include "kh5.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void kh5_init(const kc_ctx *ctx)
{
    const char *show = getenv("IOTUNE_KERNEL_H5_ERRORS");
    if (!(show && *show && strcmp(show, "0") != 0))
        H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    (void)ctx;
}

void kh5_check(const kc_ctx *ctx, long long status, const char *what)
{
    if (status < 0)
        kc_die(ctx, "%s failed", what);
}

hid_t kh5_fapl(const kc_ctx *ctx, MPI_Comm comm)
{
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    kh5_check(ctx, fapl, "H5Pcreate(H5P_FILE_ACCESS)");
    kh5_check(ctx, H5Pset_fapl_mpio(fapl, comm, MPI_INFO_NULL), "H5Pset_fapl_mpio");
    return fapl;
}

hid_t kh5_dxpl(const kc_ctx *ctx, int collective)
{
    hid_t dxpl = H5Pcreate(H5P_DATASET_XFER);
    kh5_check(ctx, dxpl, "H5Pcreate(H5P_DATASET_XFER)");
    kh5_check(ctx,
              H5Pset_dxpl_mpio(dxpl, collective ? H5FD_MPIO_COLLECTIVE : H5FD_MPIO_INDEPENDENT),
              "H5Pset_dxpl_mpio");
    return dxpl;
}

hid_t kh5_create(const kc_ctx *ctx, const char *path, hid_t fapl)
{
    hid_t file = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    if (file < 0)
        kc_die(ctx, "cannot create HDF5 file '%s'", path);
    return file;
}

hid_t kh5_open(const kc_ctx *ctx, const char *path, hid_t fapl)
{
    hid_t file = H5Fopen(path, H5F_ACC_RDONLY, fapl);
    if (file < 0)
        kc_die(ctx, "cannot open HDF5 file '%s'", path);
    return file;
}

kc_opt kh5_opt_mode(int *mode)
{
    kc_opt opt = {.name = "mode",
                  .type = KC_OPT_CHOICE,
                  .value = mode,
                  .choices = "collective|independent",
                  .help = "MPI-IO transfer mode of H5Dwrite/H5Dread"};
    return opt;
}

hid_t kh5_type(kc_type type)
{
    switch (type) {
    case KC_F32: return H5T_NATIVE_FLOAT;
    case KC_F64: return H5T_NATIVE_DOUBLE;
    case KC_I32: return H5T_NATIVE_INT32;
    case KC_I64: return H5T_NATIVE_INT64;
    case KC_U16: return H5T_NATIVE_UINT16;
    case KC_U64: return H5T_NATIVE_UINT64;
    }
    return H5T_NATIVE_UCHAR;
}

static void dims_text(char *out, size_t size, int ndims, const hsize_t *dims)
{
    size_t n = (size_t)snprintf(out, size, "(");
    for (int i = 0; i < ndims && n < size; i++)
        n += (size_t)snprintf(out + n, size - n, "%s%llu", i ? "," : "",
                              (unsigned long long)dims[i]);
    if (n < size)
        snprintf(out + n, size - n, ")");
}

hid_t kh5_open_dataset(const kc_ctx *ctx, hid_t loc, const char *name, int ndims,
                       const hsize_t *dims, kc_type type)
{
    hid_t dset = H5Dopen2(loc, name, H5P_DEFAULT);
    if (dset < 0)
        kc_fail_all(ctx, KC_EXIT_VERIFY, "dataset '%s' is missing", name);
    hid_t space = H5Dget_space(dset);
    kh5_check(ctx, space, "H5Dget_space");
    hsize_t have[H5S_MAX_RANK];
    int have_n = H5Sget_simple_extent_dims(space, have, NULL);
    H5Sclose(space);
    int same = have_n == ndims;
    for (int i = 0; same && i < ndims; i++)
        same = have[i] == dims[i];
    if (!same) {
        char a[128], b[128];
        dims_text(a, sizeof a, have_n < 0 ? 0 : have_n, have);
        dims_text(b, sizeof b, ndims, dims);
        kc_fail_all(ctx, KC_EXIT_VERIFY, "dataset '%s' has shape %s, expected %s", name, a, b);
    }
    hid_t ftype = H5Dget_type(dset);
    kh5_check(ctx, ftype, "H5Dget_type");
    hid_t want = kh5_type(type);
    int ok = H5Tget_class(ftype) == H5Tget_class(want) && H5Tget_size(ftype) == H5Tget_size(want);
    if (ok && H5Tget_class(want) == H5T_INTEGER)
        ok = H5Tget_sign(ftype) == H5Tget_sign(want);
    H5Tclose(ftype);
    if (!ok)
        kc_fail_all(ctx, KC_EXIT_VERIFY, "dataset '%s' does not hold %s values", name,
                    kc_type_name(type));
    return dset;
}

void kh5_spaces(const kc_ctx *ctx, int ndims, const hsize_t *dims, const hsize_t *start,
                const hsize_t *count, hid_t *fspace, hid_t *mspace)
{
    *fspace = H5Screate_simple(ndims, dims, NULL);
    *mspace = H5Screate_simple(ndims, count, NULL);
    kh5_check(ctx, *fspace < 0 || *mspace < 0 ? -1 : 0, "H5Screate_simple");
    kh5_check(ctx, H5Sselect_hyperslab(*fspace, H5S_SELECT_SET, start, NULL, count, NULL),
              "H5Sselect_hyperslab");
}

hid_t kh5_create_group(const kc_ctx *ctx, hid_t loc, const char *name)
{
    hid_t group = H5Gcreate2(loc, name, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    kh5_check(ctx, group, "H5Gcreate2");
    return group;
}

hid_t kh5_open_group(const kc_ctx *ctx, hid_t file, const char *name, const char *path)
{
    hid_t group = H5Gopen2(file, name, H5P_DEFAULT);
    if (group < 0) /* a name relative to the file is shown from its root */
        kc_fail_all(ctx, KC_EXIT_VERIFY, "group '%s%s' is missing in '%s'",
                    name[0] == '/' ? "" : "/", name, path);
    return group;
}

kc_opt kh5_opt_file_per_step(int *on)
{
    kc_opt opt = {.name = "file-per-step",
                  .type = KC_OPT_FLAG,
                  .value = on,
                  .help = "one file per step (<file>.<step>.h5), as codes write checkpoints"};
    return opt;
}

static void phase_lists(const kc_ctx *ctx, kh5_phase *p, int writing, int collective)
{
    p->writing = writing;
    p->fapl = kh5_fapl(ctx, ctx->comm);
    p->dxpl = kh5_dxpl(ctx, collective);
    p->dir = p->name = NULL;
    p->step = -1;
    p->file = H5I_INVALID_HID;
    kc_verify_init(&p->ver);
    kc_timer_start(&p->t, ctx->comm);
}

static void open_file(const kc_ctx *ctx, kh5_phase *p, const char *path, int step)
{
    if (p->writing)
        kc_writing(ctx, p->dir, p->dir || p->name ? p->name : path, step, 0);
    p->file = p->writing ? kh5_create(ctx, path, p->fapl) : kh5_open(ctx, path, p->fapl);
    kc_timer_mark(&p->t, KC_OPEN);
}

static void close_file(const kc_ctx *ctx, kh5_phase *p)
{
    if (p->file < 0)
        return;
    kh5_close_file(ctx, p->file);
    p->file = H5I_INVALID_HID;
    kc_written();
    kc_timer_mark(&p->t, KC_CLOSE);
}

void kh5_phase_open(const kc_ctx *ctx, kh5_phase *p, const char *path, int writing, int collective)
{
    phase_lists(ctx, p, writing, collective);
    open_file(ctx, p, path, -1);
}

void kh5_phase_open_steps(const kc_ctx *ctx, kh5_phase *p, const char *dir, const char *name,
                          int writing, int collective)
{
    phase_lists(ctx, p, writing, collective);
    p->dir = dir;
    p->name = name;
}

hid_t kh5_phase_file(const kc_ctx *ctx, kh5_phase *p, int step)
{
    if (!p->name || step == p->step)
        return p->file;
    kc_timer_mark(&p->t, KC_IO);
    close_file(ctx, p);
    kc_path(ctx, p->path, sizeof p->path, p->dir, p->name, step, -1);
    if (!p->writing)
        kc_require_file(ctx, p->path);
    open_file(ctx, p, p->path, step);
    p->step = step;
    return p->file;
}

int kh5_phase_close(const kc_ctx *ctx, kh5_phase *p)
{
    close_file(ctx, p);
    int verified = kc_phase_end(ctx, &p->t, p->writing ? NULL : &p->ver);
    H5Pclose(p->dxpl);
    H5Pclose(p->fapl);
    return verified;
}

void kh5_remove_steps(const kc_ctx *ctx, const char *dir, const char *name, long long steps)
{
    char path[KC_PATH_MAX];
    for (long long s = 0; s < steps; s++) {
        kc_path(ctx, path, sizeof path, dir, name, (int)s, -1);
        kc_remove_file(ctx, path, 1);
    }
}

void kh5_write_dataset(const kc_ctx *ctx, hid_t loc, const char *name, kc_type type, hid_t fspace,
                       hid_t dcpl, hid_t mspace, hid_t dxpl, const void *buf)
{
    hid_t htype = kh5_type(type);
    hid_t dset = H5Dcreate2(loc, name, htype, fspace, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    kh5_check(ctx, dset, "H5Dcreate2");
    kh5_check(ctx, H5Dwrite(dset, htype, mspace, fspace, dxpl, buf), "H5Dwrite");
    kh5_close_dataset(ctx, dset);
}

void kh5_read_dataset(const kc_ctx *ctx, hid_t loc, const char *name, int ndims,
                      const hsize_t *dims, kc_type type, hid_t mspace, hid_t fspace, hid_t dxpl,
                      void *buf)
{
    hid_t dset = kh5_open_dataset(ctx, loc, name, ndims, dims, type);
    kh5_check(ctx, H5Dread(dset, kh5_type(type), mspace, fspace, dxpl, buf), "H5Dread");
    kh5_close_dataset(ctx, dset);
}

void kh5_close_dataset(const kc_ctx *ctx, hid_t dset)
{
    kh5_check(ctx, H5Dclose(dset), "H5Dclose");
}

void kh5_close_group(const kc_ctx *ctx, hid_t group)
{
    kh5_check(ctx, H5Gclose(group), "H5Gclose");
}

void kh5_close_file(const kc_ctx *ctx, hid_t file)
{
    kh5_check(ctx, H5Fclose(file), "H5Fclose");
}
