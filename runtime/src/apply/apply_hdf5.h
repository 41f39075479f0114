/* Settings -> HDF5 property lists (file access, dataset creation/access, transfer). */
#ifndef IOTUNE_APPLY_HDF5_H
#define IOTUNE_APPLY_HDF5_H

#include "apply/effect_hdf5.h"
#include "apply/resolve.h"
#include "config/settings.h"
#include "platform/h5api.h"

/* Returns the file access list to use for opening name (a new list the caller closes, or
 * fapl itself when nothing applies) and fills info, with the settings resolved for the file
 * (info->rules: the caller hands them to iot_files_remember or frees them). how is
 * "H5Fcreate" or "H5Fopen". */
hid_t iot_apply_fapl(const iot_settings *s, const char *how, const char *name, hid_t fapl,
                     iot_file_info *info, iot_h5_outcome *out);

/* File creation list for H5Fcreate (file space strategy and page size) from info->rules, after
 * iot_apply_fapl made fapl (the list the create will use: a page buffer on it without paging is
 * taken off again); a new list the caller closes, or fcpl itself. */
hid_t iot_apply_fcpl(const iot_file_info *info, const char *name, hid_t fcpl, hid_t fapl,
                     iot_h5_outcome *out);

/* The driver a file access list opens files with: "mpio", "sec2" (also H5P_DEFAULT), "core",
 * "other" or "unknown"; no collective call (H5Pget_driver only), the error stack untouched. */
const char *iot_h5_driver(hid_t fapl);

/* Dataset creation list for a new dataset (file name, full dataset path, its dataspace and
 * type), from the file's resolved settings f->rules; a new list or dcpl itself. */
hid_t iot_apply_dcpl(const iot_file_info *f, const char *file, const char *dset, hid_t type,
                     hid_t space, hid_t dcpl, iot_h5_outcome *out);

/* Dataset access list (chunk cache); a new list or dapl itself. */
hid_t iot_apply_dapl(const iot_file_info *f, const char *file, const char *dset, hid_t dapl,
                     iot_h5_outcome *out);

/* The transfers of the open dataset id, as one code (-1: nothing; not the MPI-IO driver, or
 * independent asked for a filtered dataset): an index below IOT_XFER_MAX into the run's table
 * of distinct combinations (iot_xfer_of). */
int iot_transfer_mode(const iot_file_info *f, const char *file, const char *dset, hid_t id);

#endif
