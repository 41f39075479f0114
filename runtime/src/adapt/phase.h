/* Phases of the runtime's adaptive mode: a file's open-to-close. A phase's class is its file's
 * base name with the numbering made a '*' (iotune.insights.group_pattern: chk_0001.h5 and
 * chk_0002.h5 are one class, and a file reopened is its own class again); a phase recurs when
 * its class was seen before. A phase's statistics are summed (or maxed) over the ranks of the
 * file's own communicator, and its insights (the names of insights.tsv) computed from them, so
 * that every rank of the file sees the same insights. */
#ifndef IOTUNE_PHASE_H
#define IOTUNE_PHASE_H

#include <stddef.h>

#include "capture/capture.h"
#include "rules_gen.h"

#define IOT_CLASS_MAX 256

/* The class of a file name into out; 0 when the name cannot be one (too long, or a character
 * that a file pattern would read as a wildcard). */
int iot_phase_class(const char *name, char *out, size_t len);

/* What a phase did on one rank, as numbers that add up (sum) or compare (max) over ranks. */
enum {
    IOT_S_RANKS,
    IOT_S_VIEWS,      /* MPI_File_set_view calls */
    IOT_S_PAIRS,      /* successive POSIX transfers of a descriptor */
    IOT_S_BACKWARD,   /* ... of which went backwards */
    IOT_S_GAPS,       /* ... of which skipped bytes */
    IOT_S_SELECTIONS, /* HDF5 transfers whose selection was looked at (MPI-IO: the
                         application's transfers) */
    IOT_S_NONCONTIG,  /* ... that were not one run of elements (of the file's bytes) */
    IOT_S_H5_PAIRS,   /* successive HDF5 transfers of a dataset (their selections' first
                         elements), of which: */
    IOT_S_H5_BACKWARD,
    IOT_S_H5_GAPS,
    IOT_S_POSTED, /* nonblocking MPI-IO transfers the application posted (MPI_File_iwrite...) */
    IOT_S_LAYER0, /* per layer: writes, reads, collective, bytes written, bytes read, meta time,
                     busy time, then the size histogram */
    IOT_S_PER_LAYER = 7 + IOT_SIZE_BINS,
    IOT_S_COUNT = IOT_S_LAYER0 + IOT_NLAYERS * IOT_S_PER_LAYER
};
enum {
    IOT_SL_W,
    IOT_SL_R,
    IOT_SL_COLL,
    IOT_SL_BW,
    IOT_SL_BR,
    IOT_SL_META,
    IOT_SL_BUSY,
    IOT_SL_SIZES
};
/* compared over ranks: maxima, and minima stored negated */
enum {
    IOT_M_ELAPSED,  /* seconds from open to close (the slowest rank's) */
    IOT_M_TRANSFER, /* seconds in data transfers at the rank's outermost layer (slowest) */
    IOT_M_BUSY,     /* seconds in transfers and metadata calls (dataset creation, where HDF5
                       writes fill values) at that layer: the guard's measure */
    IOT_M_FILE_END, /* highest POSIX offset */
    IOT_M_HINTS,    /* 5 hints (cb_buffer_size, romio_cb_write/read, romio_ds_write/read) */
    IOT_M_NEG_HINTS = IOT_M_HINTS + 5,
    IOT_M_PARALLEL_FS = IOT_M_NEG_HINTS + 5,
    IOT_M_NEG_PARALLEL_FS,
    IOT_M_CONFIG_LIST1, /* cb_config_list is *:1 */
    IOT_M_NEG_CONFIG_LIST1,
    IOT_M_COUNT
};

typedef struct {
    double sum[IOT_S_COUNT];
    double max[IOT_M_COUNT];
} iot_phase_stats;

/* The counters of one phase on this rank: now minus at (the record's counters at the open). */
void iot_phase_local(iot_phase_stats *s, const iot_counters *now, const iot_counters *at);

/* Hints read back (key=value lines, as capture keeps them) into the stats. */
void iot_phase_hints(iot_phase_stats *s, const char *hints, const char *fs);

/* An insight: unknown, a number or a word. */
typedef struct {
    int known;
    double number;
    const char *word; /* NULL for a number */
} iot_insight;

typedef struct {
    iot_insight v[IOT_I_COUNT];
    char fs[32];
    /* why an unknown insight is unknown (static text, the same on every rank), or NULL: the
     * profile says it, so that a rule left undecided by it says why (docs/adaptive.md) */
    const char *why[IOT_I_COUNT];
} iot_insights;

/* The insights of a phase from its statistics over comm_size ranks of a job of world ranks. */
void iot_phase_insights(iot_insights *in, const iot_phase_stats *s, int comm_size, int world,
                        const char *fs);

/* Bytes moved at the outermost layer (the guard's measure). */
double iot_phase_bytes(const iot_phase_stats *s);

#endif
