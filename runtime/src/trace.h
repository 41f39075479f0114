/* Trace mode (IOTUNE_TRACE): per rank, the stream of calls as signatures (what a grammar and a
 * skeleton generator need: function, layer, file, dataset, size, offset step, mode) and runs of
 * calls merged per layer and file with their place in the call order and their times (schema 3,
 * docs/profile.md), written gzip-compressed. Memory is bounded: past IOTUNE_TRACE_LIMIT runs
 * calls are dropped and the trace says so. */
#ifndef IOTUNE_TRACE_H
#define IOTUNE_TRACE_H

#include <stdint.h>

#include "capture.h"

/* 0 off, 1 the application's own calls (outermost), 2 every layer. */
extern int iot_trace_on;

/* Will a call made now be traced? (Before its wrapper raises iot_depth.) For arguments that
 * cost something to find, such as an MPI-IO call's byte offset. */
static inline int iot_trace_wanted(void)
{
    return iot_trace_on == 2 || (iot_trace_on && iot_depth == 0);
}

/* Takes IOTUNE_TRACE and IOTUNE_TRACE_LIMIT from the environment (env.h). */
void iot_trace_init(void);

/* The functions below need the capture lock held (capture.h). */

/* One call that took dt seconds from t (iot_now()). offset -1: the call has none. mode: open
 * flags or amode for opens, whence for seeks, 1 collective / 0 independent for transfers. */
void iot_trace(iot_clayer layer, const char *func, int rec, uint64_t size, int64_t offset, int mode,
               double t, double dt);

/* An HDF5 call on dataset dset (from iot_trace_dataset, or -1) whose selection's bounding box
 * has ndims dimensions box[] (ndims 0: unknown). */
void iot_trace_h5(const char *func, int rec, int dset, uint64_t size, int64_t offset, int mode,
                  int ndims, const uint64_t *box, double t, double dt);

/* Index of HDF5 dataset path of file rec in the trace's dataset table (added on first use with
 * its extent and element size), or -1. */
int iot_trace_dataset(int rec, const char *path, int ndims, const uint64_t *dims,
                      uint64_t type_size);

/* Did the trace reach a limit and drop calls? */
int iot_trace_truncated(void);

/* Writes this rank's trace to path (gzip); run times are written relative to origin (iot_now() of
 * the job's start on this rank's clock; epoch: the same instant in wall-clock time). Returns 0
 * or an errno. Call after capture has ended (no lock needed then). */
int iot_trace_write(const char *path, int rank, int nranks, const char *session, double origin,
                    double epoch);

#endif
