/* The runtime's state: settings from the control file, logging, and who the leader rank is. */
#ifndef IOTUNE_CORE_H
#define IOTUNE_CORE_H

#include "platform/mpiapi.h"

#include "adapt/adapt.h"
#include "config/settings.h"

/* The interposed functions are the only symbols the library exports. */
#define IOT_EXPORT __attribute__((visibility("default")))

typedef struct {
    iot_settings settings;
    int loaded;
    int verbose;  /* IOTUNE_VERBOSE */
    int disabled; /* IOTUNE_DISABLE=1: pass everything through */
} iot_state;

extern iot_state iot_g;

/* Loads the control file if that has not happened yet. With MPI initialised and comm given,
 * rank 0 of comm reads and parses it and broadcasts the result (collective over comm);
 * with comm == MPI_COMM_NULL every caller reads it itself. */
void iot_load(MPI_Comm comm);

/* Settings to apply, or NULL when there is nothing to do. */
static inline const iot_settings *iot_active(void)
{
    if (!iot_g.loaded)
        iot_load(MPI_COMM_NULL);
    const iot_settings *s = iot_adapt_settings(&iot_g.settings); /* adaptive mode's rules */
    return (!iot_g.disabled && s->count > 0) ? s : NULL;
}

/* Rank in MPI_COMM_WORLD, or 0 without MPI. */
int iot_world_rank(void);

/* Prints one line "iotune: ..." to stderr. Callers decide which rank speaks. */
__attribute__((format(printf, 1, 2))) void iot_log(const char *fmt, ...);

/* Prints a header line and then each line of lines (separated by \n), indented. */
void iot_log_block(const char *header, const char *lines);

/* Prints a problem once per run and key (e.g. a setting that could not be applied): by rank 0
 * of an MPI job, by one process of a pipeline of programs (iot_run_first). */
__attribute__((format(printf, 2, 3))) void iot_warn_once(const char *key, const char *fmt, ...);

/* 1 for the first process of the run to claim key (this process once per key, then the run's
 * session markers: a directory per key under <tmp>/iotune-<uid>/<session>); 0 for every later
 * claim and for MPI ranks other than 0. */
int iot_run_first(const char *key);

/* Removes the run's markers (the process that made the session, at its end). */
void iot_run_markers_remove(void);

/* This process's rank from the launcher's variables (PMI_RANK, ...), -1 when none is set. */
int iot_launcher_rank(void);

/* Describes where a setting came from, e.g. "run.xml:12". */
const char *iot_origin(const iot_entry *e, char *buf, int len);

#endif
