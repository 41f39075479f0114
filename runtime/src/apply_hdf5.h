/* Settings -> HDF5 property lists (file access, dataset creation/access, transfer). */
#ifndef IOTUNE_APPLY_HDF5_H
#define IOTUNE_APPLY_HDF5_H

#include "h5api.h"
#include "settings.h"

/* What the runtime knows of an open HDF5 file. */
typedef struct {
    int mpio;   /* opened with the MPI-IO driver */
    int leader; /* this rank reports for the file (rank 0 of its communicator) */
} iot_file_info;

/* Returns the file access list to use for opening name (a new list the caller closes, or
 * fapl itself when nothing applies) and fills info. how is "H5Fcreate" or "H5Fopen". */
hid_t iot_apply_fapl(const iot_settings *s, const char *how, const char *name, hid_t fapl,
                     iot_file_info *info);

/* Dataset creation list for a new dataset (file name, full dataset path, its dataspace and
 * type); a new list or dcpl itself. */
hid_t iot_apply_dcpl(const iot_settings *s, const iot_file_info *f, const char *file,
                     const char *dset, hid_t type, hid_t space, hid_t dcpl);

/* Dataset access list (chunk cache); a new list or dapl itself. */
hid_t iot_apply_dapl(const iot_settings *s, const iot_file_info *f, const char *file,
                     const char *dset, hid_t dapl);

/* Transfer mode for the open dataset id: H5FD_MPIO_COLLECTIVE / H5FD_MPIO_INDEPENDENT, or
 * -1 (nothing set, not the MPI-IO driver, or independent asked for a filtered dataset). */
int iot_transfer_mode(const iot_settings *s, const iot_file_info *f, const char *file,
                      const char *dset, hid_t id);

/* Remembers and recalls the files opened (by name, as H5Fget_name reports it); forget once
 * per close. */
void iot_files_remember(const char *name, const iot_file_info *info);
void iot_files_forget(const char *name);
iot_file_info iot_files_lookup(const char *name);

#endif
