/* Whether the HDF5 library of the process supports a parameter for a file: its release (the
 * registry's since), its build (serial or parallel) and the file's driver
 * (src/iotune/data/h5versions.tsv); one not supported is skipped, said once per run. */
#ifndef IOTUNE_H5SUPPORT_H
#define IOTUNE_H5SUPPORT_H

#include <stddef.h>

#include "apply/effect_hdf5.h"
#include "apply/h5report.h"
#include "config/settings.h"

/* 0 when the HDF5 loaded supports parameter p for a file (mpio: opened with MPI-IO); else 1
 * and why not, one sentence, in why. */
int iot_h5_unsupported(int p, int mpio, char *why, size_t len);

/* The libver_low value of e as this library's H5F_libver_t, or -1 when it is newer than the
 * library's latest file format (why says so). */
int iot_h5_libver(const iot_entry *e, char *why, size_t len);

/* Withdraws e before the call for the reason why: said once per parameter and run (leader),
 * kept for the profile as withdrawn and in the verbose report. */
void iot_h5_withdraw(const iot_entry *e, const char *file, const char *why, int leader,
                     iot_h5_report *r, iot_h5_outcome *out);

/* Skips e when this HDF5 cannot take it (iot_h5_unsupported, and libver_low beyond the
 * library): said once per parameter and run (leader), kept for the profile as withdrawn and
 * in the verbose report; 1 when skipped. */
int iot_h5_skip_unsupported(const iot_entry *e, int mpio, const char *file, int leader,
                            iot_h5_report *r, iot_h5_outcome *out);

#endif
