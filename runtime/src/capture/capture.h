/* Performance capture (H5PerfCapture): counters and timers per file and layer, reduced across
 * ranks at the end and written as one JSON profile (docs/profile.md). Active only when
 * IOTUNE_PROFILE is set; otherwise every hook costs one branch. */
#ifndef IOTUNE_CAPTURE_H
#define IOTUNE_CAPTURE_H

#include "platform/mpiapi.h"
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "counters_gen.h"

/* stdio is beside POSIX, not below it: glibc's fwrite reaches the kernel without calling the
 * interposable write(), so no byte is counted twice. */
typedef enum { IOT_L_HDF5, IOT_L_MPIIO, IOT_L_POSIX, IOT_L_STDIO, IOT_NLAYERS } iot_clayer;

#define IOT_SIZE_BINS 10

/* The counters of one file at one layer, generated from src/iotune/data/counters.tsv (the one
 * list that also gives their JSON names): count uint64_t, offset int64_t (-1 when no access had
 * an offset), seconds double, sizes a histogram. */
#define IOT_COUNTER_count(field) uint64_t field;
#define IOT_COUNTER_offset(field) int64_t field;
#define IOT_COUNTER_seconds(field) double field;
#define IOT_COUNTER_sizes(field) uint64_t field[IOT_SIZE_BINS];
#define IOT_COUNTER_FIELD(field, type, merge) IOT_COUNTER_##type(field)
typedef struct {
    IOT_COUNTERS(IOT_COUNTER_FIELD)
} iot_counters;

/* Empty counters: zero, and -1 for the offsets. */
#define IOT_COUNTER_INIT_count(x)
#define IOT_COUNTER_INIT_seconds(x)
#define IOT_COUNTER_INIT_sizes(x)
#define IOT_COUNTER_INIT_offset(x) x = -1;
#define IOT_COUNTER_INIT(field, type, merge) IOT_COUNTER_INIT_##type(c->field)
static inline void iot_counters_init(iot_counters *c)
{
    memset(c, 0, sizeof *c);
    IOT_COUNTERS(IOT_COUNTER_INIT)
}

#define IOT_REC_NAME 512
#define IOT_REC_HINTS 2048
#define IOT_REC_WITHDRAWN 768
#define IOT_MAX_FILES 4096

/* One file as seen by one rank. Plain data: ranks send their records to rank 0 as bytes. */
typedef struct {
    char name[IOT_REC_NAME];
    char fs[32];
    char hints[IOT_REC_HINTS];         /* "key=value\n..." read back after MPI_File_open */
    char withdrawn[IOT_REC_WITHDRAWN]; /* "setting\tvalue\treason\n...": iot_rec_withdraw */
    char h5applied[512];               /* lines "name=value": HDF5 settings read back in effect */
    char h5notes[1024];                /* lines: HDF5 settings not in effect and why, overrides */
    char h5dsets[384];   /* lines "name\tN\tM": a dataset setting reached N of the M dataset
                          * creations (and, for access settings, opens) it was meant for; room
                          * for the 8 dataset settings with 10-digit counts */
    char h5driver[16];   /* the HDF5 driver it was opened with (iot_h5_driver) */
    char mpapplied[512]; /* lines "name=value": the hints its first MPI_File_open with any applied
                          * (the control file's or the adaptive mode's), not withdrawn */
    char striping[640];  /* "outcome\tasked\tlayout\treason": its file system's striping (fs/) */
    int rank;
    int layers;        /* bit per iot_clayer used */
    int open_now;      /* handles open at any layer: a file never closed ends at the finish */
    double start, end; /* first open, last close, seconds since the runtime started */
    double outer_time; /* time in outermost I/O calls on this file */
    iot_counters c[IOT_NLAYERS];
} iot_file_rec;

extern int iot_capture_on;

/* 0 off, 1 the application's own calls (outermost), 2 every layer: the trace's level
 * (trace.h, set by iot_trace_init), here so that capture's own calls can test it. */
extern int iot_trace_on;

/* What the layers above capture register with it at start-up, as Darshan's modules register
 * with its core: the trace's recorder (trace.c's iot_trace, by iot_trace_init), and the
 * adaptive mode's call stream (adapt.h, by iot_adapt_init when the mode is on; NULL off it).
 * Called with the capture lock held. */
typedef struct {
    void (*trace)(iot_clayer layer, const char *func, int rec, uint64_t size, int64_t offset,
                  int mode, double t, double dt);
    void (*phase_begin)(int rec, const char *name);
    void (*call)(int rec, int layer, int is_write, uint64_t bytes);
    void (*phase_end)(int rec);
} iot_capture_hooks_t;
extern iot_capture_hooks_t iot_capture_hooks;

/* Capture ends for good and nothing is written (a forked child: call with the capture lock
 * held; the other family's MPI). */
void iot_capture_never(void);

/* Capture has ended for good: by iot_capture_never, or claimed by the end (finish.c). */
extern int iot_capture_done;

/* Per-thread nesting depth of intercepted calls: only the outermost call counts toward the
 * rank's I/O time, so an H5Dwrite is not counted again for its MPI-IO and POSIX calls. */
extern __thread int iot_depth;
extern __thread uint64_t iot_coll_calls; /* collective MPI-IO calls made, for HDF5 modes */
/* The record of the last file this thread accessed inside an intercepted call (an inner call:
 * MPI-IO or POSIX under HDF5), or -1, and whether an inner call wrote to it: a release of an
 * HDF5 object resets them, and the file they name after the call is the one HDF5 wrote or read
 * on the application's behalf. */
extern __thread int iot_inner_rec, iot_inner_wrote;

static inline double iot_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The bookkeeping of a call (counters, descriptor and handle tables, trace) runs under one
 * lock, so that threads do not lose updates. It is taken only with capture on, after the real
 * call and never across it; uncontended it costs a few tens of nanoseconds. iot_lock returns 0
 * (not holding it) once capture has ended, or when this thread holds it already (I/O of a
 * signal handler that interrupted the bookkeeping): the caller skips its bookkeeping. */
extern pthread_mutex_t iot_cap_lock;
extern int iot_frozen;
extern __thread int iot_locked;
static inline int iot_lock(void)
{
    if (iot_locked)
        return 0;
    pthread_mutex_lock(&iot_cap_lock);
    if (!iot_frozen) {
        iot_locked = 1;
        return 1;
    }
    pthread_mutex_unlock(&iot_cap_lock);
    return 0;
}
static inline void iot_unlock(void)
{
    iot_locked = 0;
    pthread_mutex_unlock(&iot_cap_lock);
}

/* Record index of a file by name (created on first use), or -1 when capture is off or the
 * file is one the runtime does not track (/proc, /sys, /dev, ...). Takes the lock itself:
 * call it without holding it. */
int iot_rec_for(const char *name, iot_clayer layer);
/* Record index of a file the runtime already follows (never made here), or -1. Takes the lock
 * itself. */
int iot_rec_find(const char *name);
iot_file_rec *iot_rec(int index);

/* A setting withdrawn from a file because the call that applied it failed and the call
 * succeeded without it (fail-safe): kept with the file's record, written to the profile as
 * "withdrawn": [{"setting", "value", "reason"}]. For every layer (MPI-IO hints, HDF5
 * properties). Takes the lock itself; does nothing with capture off or the record full. */
/* The same, for a record already found (rec from iot_rec_for). */
void iot_rec_withdraw_at(int rec, const char *setting, const char *value, const char *reason);
void iot_rec_withdraw(const char *filename, iot_clayer layer, const char *setting,
                      const char *value, const char *reason);

/* The functions below need the lock held. */

/* Accounts one data access of bytes at offset (-1: unknown) that took dt seconds. */
void iot_count_access(int rec, iot_clayer layer, int is_write, int64_t offset, uint64_t bytes,
                      double dt, int outer);
/* Accounts dt more seconds of transfer without a new operation (a split collective's end). */
void iot_count_time(int rec, iot_clayer layer, int is_write, double dt, int outer);
/* Accounts a metadata call (open, close, sync, ...) of dt seconds. */
void iot_count_meta(int rec, iot_clayer layer, double dt, int outer);
void iot_mark_open(int rec, double t);
void iot_mark_close(int rec, double t);
/* A close of rec's file by func at one layer, from t to end: counts, phase end, trace. */
void iot_count_close(int rec, iot_clayer layer, const char *func, double t, double end, int outer);

/* Per-rank time spent in outermost I/O calls. */
extern double iot_rank_io_time;

/* This rank's records (count in *n), for the end of the run. */
iot_file_rec *iot_recs(int *n);

/* The runtime's clock (lifecycle.c): iot_now() when it loaded, the same instant in wall-clock
 * time, and the job's common instant after MPI_Init (-1 before, or without MPI). */
typedef struct {
    double start, wall_start, sync;
} iot_clock_t;
extern iot_clock_t iot_clock;

/* Seconds since the runtime started. */
static inline double iot_since_start(void)
{
    return iot_now() - iot_clock.start;
}

#endif
