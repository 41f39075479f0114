/* The runtime's state: settings from the control file, logging, and who the leader rank is. */
#ifndef IOTUNE_CORE_H
#define IOTUNE_CORE_H

#include "platform/mpiapi.h"

#include "base/log.h"
#include "config/settings.h"

/* The interposed functions are the only symbols the library exports. */
#define IOT_EXPORT __attribute__((visibility("default")))

typedef struct {
    iot_settings settings;
    int loaded;
    int verbose;  /* IOTUNE_VERBOSE */
    int disabled; /* IOTUNE_DISABLE=1: pass everything through */
    /* The settings in effect given the control file's: registered by the adaptive mode
     * (adapt.h) at start-up when it is on; NULL: the control file's alone. */
    const iot_settings *(*in_effect)(const iot_settings *control);
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
    const iot_settings *s = iot_g.in_effect ? iot_g.in_effect(&iot_g.settings) : &iot_g.settings;
    return (!iot_g.disabled && s->count > 0) ? s : NULL;
}

/* Rank in MPI_COMM_WORLD, or 0 without MPI. */
int iot_world_rank(void);

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
/* Why a setting overrides the application's own value, for the message that says so: the
 * control file wins (docs/control-file.md), or the adaptive mode chose it (docs/adaptive.md). */
const char *iot_who_wins(const iot_entry *e);

#endif
