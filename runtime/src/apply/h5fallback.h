/* The fail-safe of the HDF5 calls a setting reaches: the attempt with the control file's
 * lists, the application's own call when HDF5 refuses it, and what is said and kept. */
#ifndef IOTUNE_H5FALLBACK_H
#define IOTUNE_H5FALLBACK_H

#include <stddef.h>

#include "apply/apply_hdf5.h"
#include "platform/h5api.h"

/* A call made first with the control file's lists and, if HDF5 refuses it, once more with the
 * application's own (own = 1). */
typedef hid_t (*h5_call)(const iot_h5_api *real, const void *args, int own);

/* The call with the control file's lists, then (if refused) with the application's own; why
 * receives HDF5's reason when the settings were withdrawn. */
hid_t with_fallback(const iot_h5_api *real, h5_call call, const void *args, int injected, char *why,
                    size_t wlen);
/* Closes the runtime's copies of property lists, keeping a failed call's error stack. */
void close_copies(const iot_h5_api *real, hid_t result, const hid_t *copies, int n);
/* Says once, and notes in the file's record, which settings were withdrawn and why. */
void say_withdrawn(const char *call, const char *file, const char *object, const char *settings,
                   const char *why, int leader, int rec);
/* What reached a file or dataset (and what did not), kept in the file's profile record. */
void keep_outcome(int rec, const iot_h5_outcome *out);
/* After a dataset's creation (creating) or open: each dataset setting meant for it (creation
 * settings at its creation only) counted in the file's record, and whether it reached it (out's
 * applied, read back): a setting that reached some datasets of a file and not others is told
 * from one that reached them all. */
void keep_dataset_counts(int rec, const iot_file_settings *rules, const char *dset, int creating,
                         const iot_h5_outcome *out);

#endif
