/* Which HDF5 settings are in effect (read back and judged), and the outcome lists. */
#ifndef IOTUNE_EFFECT_HDF5_H
#define IOTUNE_EFFECT_HDF5_H

#include <stddef.h>

#include "apply/resolve.h"
#include "platform/h5api.h"

/* What reached a file or a dataset, read back from HDF5's property lists ("name=value" lines),
 * and notes: settings not in effect and why, the application's own settings overridden. */
typedef struct {
    char applied[512];
    char notes[1024];
    char withdrawn[256]; /* "name\n" lines: settings withdrawn before the call (too costly,
                          * or fill_time=never left out by its guard: fill_guard.c) */
} iot_h5_outcome;

/* What the transfers of a dataset get: the forced mode (H5FD_MPIO_COLLECTIVE /
 * H5FD_MPIO_INDEPENDENT), mpio_chunk_opt (H5FD_mpio_chunk_opt_t), mpio_collective_opt
 * (H5FD_mpio_collective_opt_t) and the chunk optimisation thresholds; -1: not set. */
typedef struct {
    int mode, chunk_opt, coll_opt;
    long long chunk_num, chunk_ratio;
} iot_xfer;
#define IOT_XFER_MAX 64

/* The combination of a code of iot_transfer_mode (apply_hdf5.h); NULL for -1 or an unknown
 * code. */
const iot_xfer *iot_xfer_of(int code);

/* After the file opened with the control file's file access settings: which are in effect,
 * read back from the file's access list (collective for the MPI-IO driver, as the open is),
 * and for a file created now (created) its creation list; taken: the access list the open
 * took (for what HDF5 keeps with the open file but leaves off the file's list). */
void iot_readback_file(const iot_file_settings *rules, hid_t fid, int created, hid_t taken,
                       iot_h5_outcome *out);

/* After a dataset was created or opened with settings: which are in effect, read back from its
 * creation and access lists (dcpl, dapl: whether they were given); mode: the forced transfer
 * mode or -1. */
void iot_readback_dataset(const iot_file_settings *rules, const char *dset, hid_t id, int dcpl,
                          int dapl, int mode, iot_h5_outcome *out);

/* Appends a line to an outcome's list (applied or notes) unless it is there already. */
void iot_outcome_add(char *list, size_t size, const char *line);

/* "name=value, ..." of the settings of one kind (an IOT_TARGET_*, or -1 for dataset creation
 * and access) that apply to the file (dset NULL) or one of its datasets. */
void iot_describe_settings(const iot_file_settings *rules, const char *dset, int target, char *buf,
                           size_t len);

/* The application's own file access settings the control file replaces (fapl, before the
 * open): said once per parameter (leader), and noted for the profile. */
void note_overrides(const iot_file_settings *rules, const char *name, hid_t fapl, int leader,
                    iot_h5_outcome *out);

/* Settings of parallel HDF5 and MPI-IO: without meaning for a serial (sec2) file. */
int parallel_only(int p);

/* A serial file opted in: the settings it matches that have no meaning for it, said once per
 * run (leader) and noted for the profile. */
void note_meaningless(const iot_file_settings *rules, const char *name, int leader,
                      iot_h5_outcome *out);

#endif
