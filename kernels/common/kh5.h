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

/* The --mode option of the HDF5 motifs: 0 collective, 1 independent H5Dwrite/H5Dread. */
kc_opt kh5_opt_mode(int *mode);

/* Native HDF5 type of a kcommon element type. */
hid_t kh5_type(kc_type type);

/* Open dataset `name` under `loc` and check it has `ndims` dimensions equal to `dims` and the
 * class and size of `type`. A missing or differently shaped dataset ends the run on all ranks
 * with exit code 3 (the file does not hold what the arguments describe). Collective. */
hid_t kh5_open_dataset(const kc_ctx *ctx, hid_t loc, const char *name, int ndims,
                       const hsize_t *dims, kc_type type);

/* A file space of shape `dims` with this rank's block (`start`, `count`) selected, and the
 * memory space of that block. */
void kh5_spaces(const kc_ctx *ctx, int ndims, const hsize_t *dims, const hsize_t *start,
                const hsize_t *count, hid_t *fspace, hid_t *mspace);

/* H5Gcreate2 that dies on failure. */
hid_t kh5_create_group(const kc_ctx *ctx, hid_t loc, const char *name);
/* Open group `name` of `file`; a missing group ends the run on all ranks with exit code 3
 * (`path` names the file in the message). Collective. */
hid_t kh5_open_group(const kc_ctx *ctx, hid_t file, const char *name, const char *path);

/* One timed phase on the shared HDF5 file of vpicio, vorpalio and gcrmio, or (--file-per-step)
 * on one shared file per step, as simulation codes write a checkpoint or plot file per step. */
typedef struct {
    int writing;
    hid_t fapl, dxpl, file;
    kc_timer t;
    kc_verify ver;          /* what a read phase checked */
    const char *dir, *name; /* per-step files: kc_path(dir, name, step) */
    int step;               /* the step whose file is open (-1 none) */
    char path[KC_PATH_MAX];
} kh5_phase;

/* The --file-per-step option (a flag into `on`). */
kc_opt kh5_opt_file_per_step(int *on);

/* Property lists, a clean `ver` and the timer, then create (writing) or open `path`, charged to
 * KC_OPEN. `collective` chooses the transfer mode of `dxpl`. */
void kh5_phase_open(const kc_ctx *ctx, kh5_phase *p, const char *path, int writing, int collective);
/* The same with one file per step, named as kc_path(dir, name, step, -1) names them: no file
 * is open until kh5_phase_file asks for a step's. */
void kh5_phase_open_steps(const kc_ctx *ctx, kh5_phase *p, const char *dir, const char *name,
                          int writing, int collective);
/* The file of step `step`: the phase's one file, or the step's own (the previous step's file
 * closed, charged to KC_CLOSE, and this one created or opened, charged to KC_OPEN). */
hid_t kh5_phase_file(const kc_ctx *ctx, kh5_phase *p, int step);
/* Close the file, charged to KC_CLOSE, end the phase (kc_phase_end) and close the property
 * lists. Returns the report's `verified`. */
int kh5_phase_close(const kc_ctx *ctx, kh5_phase *p);
/* Collective: remove the per-step files of steps 0 .. steps-1 (rank 0). */
void kh5_remove_steps(const kc_ctx *ctx, const char *dir, const char *name, long long steps);

/* Create dataset `name` of `type` elements in the shape of `fspace` (creation properties `dcpl`)
 * and write this rank's selection from `buf` with one H5Dwrite. */
void kh5_write_dataset(const kc_ctx *ctx, hid_t loc, const char *name, kc_type type, hid_t fspace,
                       hid_t dcpl, hid_t mspace, hid_t dxpl, const void *buf);
/* Open dataset `name`, checked as kh5_open_dataset does, and read this rank's selection into
 * `buf` with one H5Dread. */
void kh5_read_dataset(const kc_ctx *ctx, hid_t loc, const char *name, int ndims,
                      const hsize_t *dims, kc_type type, hid_t mspace, hid_t fspace, hid_t dxpl,
                      void *buf);

/* Close helpers that die on failure. */
void kh5_close_dataset(const kc_ctx *ctx, hid_t dset);
void kh5_close_group(const kc_ctx *ctx, hid_t group);
void kh5_close_file(const kc_ctx *ctx, hid_t file);

#endif
