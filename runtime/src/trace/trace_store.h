/* What the trace keeps in memory between the calls (trace.c records them, trace_objects.c
 * describes the files' datasets once) and the end of the run (trace_write.c writes it,
 * trace_host.c sends it to the host's leader). Only the trace's files include this header. */
#ifndef IOTUNE_TRACE_STORE_H
#define IOTUNE_TRACE_STORE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "base/hash.h"

/* A signature: everything about a call but its time. Repeats of one signature in a row make
 * one event; the table is found through a hash, so each call costs O(1) however many distinct
 * signatures a run has (random offsets make one per call). */
typedef struct {
    const char *func; /* a literal: compared by address */
    int64_t step;     /* offset minus the previous one (same file, layer); has_step 0: none */
    uint64_t size;
    int32_t rec, dset, dims, mode; /* dims: interned "[n, m]" text, or -1 */
    int32_t layer, has_step;
} trace_sig;

/* A run: count calls of one signature in one stream (layer and file), merged even when calls of
 * other streams come between them, as long as their place in the rank's call sequence (seq) and
 * their start times are regular: call k of the run is call seq + k * stride of the rank, and it
 * started within tol of start + k * period, for any period in [p_lo, p_hi]. */
typedef struct {
    uint32_t sig, count;
    uint64_t last; /* the seq of the run's last call (the first is last - (count - 1) * stride) */
    uint32_t stride;
    float tol;
    double start, busy, end; /* first call's start, summed durations, last call's end */
    double p_lo, p_hi;
} trace_event;

/* Interned strings: dims texts, dataset keys "rec\x1fpath", file views. */
typedef struct {
    char **s;
    uint32_t n, cap;
    iot_index index;
} trace_strtab;

typedef struct {
    int rec, dims, maxdims, chunks; /* interned "[n, m]" texts, or -1 */
    uint64_t type_size;
    int type_class, type_signed, type_order; /* as iot_trace_dset_desc */
    int fill_time, fill_len;
    unsigned char fill[IOT_TRACE_FILL_MAX];
    int track_times, attr_order; /* as iot_trace_dset_desc */
} trace_dataset;

/* Start times of a run may stray this far from the regular spacing: 10 us, or a sixteenth of
 * the gap between its first two calls when that is larger (docs/profile.md). */
#define TRACE_TIME_TOLERANCE 10e-6

/* trace.c: the signatures and runs, the calls not recorded, the limits. */
extern trace_sig *trace_sigs;
extern uint32_t trace_nsigs, trace_max_sigs;
extern trace_event *trace_events;
extern size_t trace_nevents, trace_max_events;
extern uint64_t trace_dropped;

/* trace_objects.c: interned dims texts, the datasets (keys in trace_dset_keys, "rec\x1fpath"),
 * the file views, the memory layouts of MPI-IO transfers and the HDF5 attributes (each a JSON
 * object's text). */
extern trace_strtab trace_dims_tab, trace_dset_keys, trace_views, trace_memory, trace_attrs;
extern trace_dataset *trace_dsets;

/* The id of "[n, m, ...]" (interned), or -1 (ndims <= 0, no memory). */
int trace_dims_id(int ndims, const uint64_t *dims);

/* trace_write.c: this rank's trace in parts, as JSON texts, for the host's file (trace_host.c). */
void trace_put_files(FILE *f); /* [name, ...] */
void trace_put_shape(FILE *f); /* "datasets": .., "views", "memory", "signatures" (no step) */
void trace_put_order(FILE *f); /* "sig": [..], "count", "seq", "stride": the runs' order */
void trace_put_steps(FILE *f); /* [step or null, ...] per signature */
void trace_put_times(FILE *f, double origin); /* "start": [..], "period", "busy", "idle" */
void trace_put_limits(FILE *f);               /* "limits": ..., "tick_s": .., "tolerance_s": .. */

#endif
