/*
 * kh5: HDF5 helpers of the iotune kernels (a separate small library, so that the MPI-IO/POSIX
 * kernels do not link HDF5).
 *
 * Files are always opened through the MPI-IO driver with MPI_INFO_NULL and otherwise default
 * property lists: tuning is injected from outside (the iotune runtime), never hard-coded here.
 */
#ifndef IOTUNE_KH5_H
#define IOTUNE_KH5_H

#include <hdf5.h>

#include "kcommon.h"

/* Silence HDF5's automatic error-stack printing (the kernels print their own one-line errors);
 * set IOTUNE_KERNEL_H5_ERRORS=1 to see HDF5's stack as well. */
void kh5_init(const kc_ctx *ctx);

/* File access property list: MPI-IO driver on `comm`, MPI_INFO_NULL. */
hid_t kh5_fapl(const kc_ctx *ctx, MPI_Comm comm);
/* Data transfer property list: collective or independent MPI-IO. */
hid_t kh5_dxpl(const kc_ctx *ctx, int collective);

/* H5Fcreate (truncate) / H5Fopen (read-only); die with a clean message on failure. */
hid_t kh5_create(const kc_ctx *ctx, const char *path, hid_t fapl);
hid_t kh5_open(const kc_ctx *ctx, const char *path, hid_t fapl);

/* Die with "<what> failed" when an HDF5 call returned a negative value. */
void kh5_check(const kc_ctx *ctx, long long status, const char *what);

/* Native HDF5 type of a kcommon element type. */
hid_t kh5_type(kc_type type);

/* Open dataset `name` under `loc` and check it has `ndims` dimensions equal to `dims` and the
 * class and size of `type`. A missing or differently shaped dataset ends the run on all ranks
 * with exit code 3 (the file does not hold what the arguments describe). Collective. */
hid_t kh5_open_dataset(const kc_ctx *ctx, hid_t loc, const char *name, int ndims,
                       const hsize_t *dims, kc_type type);

/* Close helpers that die on failure. */
void kh5_close_dataset(const kc_ctx *ctx, hid_t dset);
void kh5_close_group(const kc_ctx *ctx, hid_t group);
void kh5_close_file(const kc_ctx *ctx, hid_t file);

#endif
