/* The verbose report of what the runtime set on an HDF5 property list, setting by setting, and
 * the settings withdrawn because they cost too much: shared by the files that apply settings to
 * HDF5 lists (apply_hdf5.c, apply_hdf5_dataset.c, h5bounds.c). */
#ifndef IOTUNE_H5REPORT_H
#define IOTUNE_H5REPORT_H

#include <stddef.h>

#include "apply/effect_hdf5.h"
#include "config/settings.h"
#include "platform/h5api.h"

/* One line of verbose report, built up setting by setting. */
typedef struct {
    char text[8192];
    size_t len;
    int items;
} iot_h5_report;

/* Adds a line to the report. */
__attribute__((format(printf, 2, 3))) void iot_h5_report_add(iot_h5_report *r, const char *fmt,
                                                             ...);

/* Adds "name=value [origin]", or the same said refused by HDF5 (rc < 0). */
void iot_h5_report_entry(iot_h5_report *r, const iot_entry *e, herr_t rc);

/* Copies (or creates) a property list the first time a setting needs changing it. */
hid_t iot_h5_writable(hid_t *copy, hid_t orig, hid_t cls);

/* A setting that costs more than the machine allows (bounds.h): withdrawn before the call,
 * said once per run (by the file's leader) and kept in the file's profile record. */
void iot_h5_withdraw_costly(const iot_entry *e, const char *file, const char *why, int leader,
                            iot_h5_report *r, iot_h5_outcome *out);

/* A dataset setting's cost judged against this process's memory: 1 when withdrawn. */
int iot_h5_too_costly(const iot_entry *e, double cost, const char *file, int leader,
                      iot_h5_report *r, iot_h5_outcome *out);

/* Logs a list's report (header, then its lines), or keeps it while deferred: an object opened
 * by H5Oopen is reported only once it is known to be a dataset (h5py opens groups that way). */
void iot_h5_report_log(const char *header, const char *lines);
void iot_h5_defer_reports(void);
/* The deferred report said when show, else dropped; reports are logged again from here on. */
void iot_h5_end_deferral(int show);

/* Copies the report's "NOT applied" lines (settings held back, and why) into notes. */
void iot_h5_keep_refusals(const iot_h5_report *r, iot_h5_outcome *out);

#endif
