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
