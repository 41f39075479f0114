/* Trace mode, the recording: each traced call becomes a signature (trace_store.h), and calls of
 * one signature that recur regularly in one stream (layer and file) merge into one run. The
 * file is written at the end by trace_write.c. */
#include "trace/trace.h"

#include <stdlib.h>

#include "base/env.h"
#include "trace/trace_store.h"

#define DEFAULT_MAX_EVENTS (1u << 20) /* 64 MiB of runs */
#define MAX_SIGNATURES (1u << 18)     /* 12 MiB of signatures */

trace_sig *trace_sigs;
uint32_t trace_nsigs, trace_max_sigs = MAX_SIGNATURES;
trace_event *trace_events;
size_t trace_nevents, trace_max_events = DEFAULT_MAX_EVENTS;
uint64_t trace_dropped; /* calls not recorded once a limit was reached */
static uint32_t cap_sigs;
static size_t cap_events;
static iot_index sig_index_tab;
static uint64_t ncalls;                     /* traced calls so far: the next call's seq */
static uint32_t (*open_run)[IOT_NLAYERS];   /* per record + 1 and layer: its last run + 1 */
static int64_t (*last_offset)[IOT_NLAYERS]; /* per record and layer */

void iot_trace_init(void)
{
    iot_trace_on = iot_env.trace;
    iot_capture_hooks.trace = iot_trace; /* capture's own calls (opens, closes) */
    if (!iot_trace_on)
        return;
    /* per file and layer: the last offset (for steps) and the open run (calls without a
     * followed file, rec -1, share row 0); without them no call is recorded */
    last_offset = calloc(IOT_MAX_FILES, sizeof *last_offset);
    open_run = calloc(IOT_MAX_FILES + 1, sizeof *open_run);
    long long n = iot_env.trace_limit;
    if (n > 0 && n < (1ll << 31)) {
        trace_max_events = (size_t)n;
        trace_max_sigs = n < MAX_SIGNATURES ? (uint32_t)n : MAX_SIGNATURES;
    }
}

static uint64_t mix(uint64_t h, uint64_t v)
{
    h = (h ^ v) * 0x9E3779B97F4A7C15ull;
    return h ^ (h >> 29);
}

static uint64_t sig_hash(const trace_sig *s)
{
    uint64_t h = mix(0, (uint64_t)(uintptr_t)s->func);
    h = mix(h, (uint64_t)s->step);
    h = mix(h, s->size);
    h = mix(h, ((uint64_t)(uint32_t)s->rec << 32) | (uint32_t)s->dset);
    h = mix(h, ((uint64_t)(uint32_t)s->dims << 32) | (uint32_t)s->mode);
    return mix(h, ((uint64_t)(uint32_t)s->layer << 32) | (uint32_t)s->has_step);
}

static int sig_equal(const trace_sig *a, const trace_sig *b)
{
    return a->func == b->func && a->step == b->step && a->size == b->size && a->rec == b->rec &&
           a->dset == b->dset && a->dims == b->dims && a->mode == b->mode && a->layer == b->layer &&
           a->has_step == b->has_step;
}

static uint64_t sig_hash_of(uint32_t i)
{
    return sig_hash(&trace_sigs[i]);
}

static int sig_is(uint32_t i, const void *key)
{
    return sig_equal(&trace_sigs[i], key);
}

static int sig_index(const trace_sig *s)
{
    uint64_t h = sig_hash(s);
    uint32_t found = iot_index_find(&sig_index_tab, h, sig_is, s);
    if (found)
        return (int)found - 1;
    if (trace_nsigs >= trace_max_sigs)
        return -1;
    if (trace_nsigs == cap_sigs) {
        uint32_t cap = cap_sigs ? 2 * cap_sigs : 256;
        trace_sig *grown = realloc(trace_sigs, (size_t)cap * sizeof *grown);
        if (!grown)
            return -1;
        trace_sigs = grown;
        cap_sigs = cap;
    }
    if (!iot_index_add(&sig_index_tab, trace_nsigs, h, sig_hash_of))
        return -1;
    trace_sigs[trace_nsigs] = *s;
    return (int)trace_nsigs++;
}

/* Does call seq, started at t, continue run e? If so the run's period bounds are narrowed.
 * (The common case, a run that goes on, costs one comparison of seq and two of times.) */
static inline int continues(trace_event *e, uint64_t seq, double t)
{
    double since = t - e->start;
    if (e->count > 1) {
        if (seq != e->last + e->stride || e->count == UINT32_MAX)
            return 0;
        double k = e->count, lo = (since - e->tol) / k, hi = (since + e->tol) / k;
        lo = lo > e->p_lo ? lo : e->p_lo;
        hi = hi < e->p_hi ? hi : e->p_hi;
        if (lo > hi)
            return 0;
        e->p_lo = lo;
        e->p_hi = hi;
        return 1;
    }
    if (seq - e->last > UINT32_MAX)
        return 0;
    e->stride = (uint32_t)(seq - e->last);
    double tol = since / 16 > TRACE_TIME_TOLERANCE ? since / 16 : TRACE_TIME_TOLERANCE;
    e->tol = (float)tol;
    e->p_lo = since - tol;
    e->p_hi = since + tol;
    return 1;
}

static void append(const trace_sig *s, double t, double dt)
{
    uint64_t seq = ncalls++;
    if (trace_dropped ||
        !open_run) { /* past a limit nothing more: the record is a prefix of the calls */
        trace_dropped++;
        return;
    }
    uint32_t *stream = &open_run[s->rec + 1][s->layer];
    trace_event *last = *stream ? &trace_events[*stream - 1] : NULL;
    /* a call like the stream's last one needs no signature lookup (the common case) */
    int same = last && sig_equal(&trace_sigs[last->sig], s);
    if (same && continues(last, seq, t)) {
        last->count++;
        last->last = seq;
        last->busy += dt;
        last->end = t + dt;
        return;
    }
    int id = same ? (int)last->sig : sig_index(s);
    if (id < 0) {
        trace_dropped++;
        return;
    }
    if (trace_nevents >= trace_max_events) {
        trace_dropped++;
        return;
    }
    if (trace_nevents == cap_events) {
        size_t cap = cap_events ? 2 * cap_events : 1024;
        trace_event *grown = realloc(trace_events, cap * sizeof *grown);
        if (!grown) {
            trace_dropped++;
            return;
        }
        trace_events = grown;
        cap_events = cap;
    }
    trace_events[trace_nevents] = (trace_event){(uint32_t)id, 1, seq, 0, 0, t, dt, t + dt, 0, 0};
    *stream = (uint32_t)++trace_nevents;
}

/* The offset step of a call: offset minus the previous offset on the same file and layer
 * (0 before the first, so a first access's step is its offset). */
static void set_step(trace_sig *s, int64_t offset)
{
    if (offset < 0 || s->rec < 0 || !last_offset)
        return;
    s->has_step = 1;
    s->step = offset - last_offset[s->rec][s->layer];
    last_offset[s->rec][s->layer] = offset;
}

void iot_trace(iot_clayer layer, const char *func, int rec, uint64_t size, int64_t offset, int mode,
               double t, double dt)
{
    if (iot_depth > 0 && iot_trace_on < 2)
        return; /* level 1: the application's own calls; level 2 (all): every layer */
    trace_sig s = {func, 0, size, rec, -1, -1, mode, (int32_t)layer, 0};
    set_step(&s, offset);
    append(&s, t, dt);
}

void iot_trace_h5(const char *func, int rec, int dset, uint64_t size, int64_t offset, int mode,
                  int ndims, const uint64_t *box, double t, double dt)
{
    if (iot_depth > 0 && iot_trace_on < 2)
        return;
    trace_sig s = {func, 0, size, rec, dset, trace_dims_id(ndims, box), mode, IOT_L_HDF5, 0};
    set_step(&s, offset);
    append(&s, t, dt);
}

void iot_trace_mpiio(const char *func, int rec, int memory, uint64_t size, int64_t offset, int mode,
                     double t, double dt)
{
    if (iot_depth > 0 && iot_trace_on < 2)
        return;
    /* the memory layout's index in the dataset column: an MPI-IO call names no dataset */
    trace_sig s = {func, 0, size, rec, memory, -1, mode, IOT_L_MPIIO, 0};
    set_step(&s, offset);
    append(&s, t, dt);
}

void iot_trace_set_view(int rec, int view, uint64_t size, int64_t disp, double t, double dt)
{
    if (iot_depth > 0 && iot_trace_on < 2)
        return;
    /* the view's index in the dataset column: an MPI-IO call names no dataset */
    trace_sig s = {"MPI_File_set_view", 0, size, rec, view, -1, 0, IOT_L_MPIIO, 0};
    set_step(&s, disp);
    append(&s, t, dt);
}

int iot_trace_truncated(void)
{
    return trace_dropped > 0;
}
