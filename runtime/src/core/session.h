/* Where a run's results go, and whether this process may write them: the session rule of
 * docs/profile.md. Wrappers (bash -c, timeout, a script's helper programs) inherit
 * LD_PRELOAD too; without a rule every process of a tree would write the profile and the
 * last to exit would win. */
#ifndef IOTUNE_SESSION_H
#define IOTUNE_SESSION_H

#include <stdint.h>
#include <stdio.h>

/* The run this process belongs to: IOTUNE_SESSION, made (and exported to children) by the
 * first process of a run that loads the runtime with capture asked for. */
void iot_session_init(void);
const char *iot_session(void);
void iot_session_set(const char *id); /* the session an MPI job agreed on */
int iot_session_created(void);        /* this process made it: it is the first of its run */

/* What this process's profile would say, to compare with one already written. */
typedef struct {
    int mpi;        /* from an MPI job (reduced or not) */
    uint64_t bytes; /* bytes written and read at the outermost layers */
    int nfiles;     /* files tracked */
} iot_claim;

typedef struct {
    const char *path;  /* as given (messages name it) */
    char target[4200]; /* the file written: a symbolic link's target */
    int dirfd;         /* the target's directory, locked (flock) while deciding and writing */
    FILE *f;           /* a temporary file beside the target, or the stream itself */
    int stream;        /* a FIFO or character device, written in place: no traces beside it */
    char tmp[4300];
} iot_out;

/* Returns 1 when this process writes the profile: write it to o->f, then iot_out_commit.
 * Returns 0 when it must not: a profile of the same session that is as good is there, this
 * process tracked no file and one exists already, or the path is unusable (one message). */
int iot_out_open(iot_out *o, const char *path, const iot_claim *c);
/* Says the problems of iot_out_open and iot_out_commit once per run: first(key) is 1 for the
 * first process of the run to claim key (iot_run_first). */
void iot_out_once(int (*first)(const char *key));
void iot_out_commit(iot_out *o); /* renames over the profile; a message when that fails */
/* Any other output (IOTUNE_REDUCE_STATS): a FIFO or character device written in place (a
 * FIFO's reader waited for a bounded time), else the file created or truncated. */
FILE *iot_open_output(const char *path);
void iot_out_cancel(iot_out *o);

/* Removes from a trace directory a previous run's traces: rank-K.json.gz with K >= nranks,
 * host-K.json.gz with K >= nhosts, and every rank-K.json (schema 2, an older runtime's). */
void iot_out_prune_traces(const char *dir, int nranks, int nhosts);

#endif
