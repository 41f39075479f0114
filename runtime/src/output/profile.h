/* The JSON profile (docs/profile.md): the ranks' records merged by file name, then written. */
#ifndef IOTUNE_PROFILE_H
#define IOTUNE_PROFILE_H

#include <stdio.h>

#include "capture/capture.h"
#include "platform/hosts.h"

typedef struct {
    double max, min, sum;
    int slowest, ranks;
} iot_file_stats; /* per file, of the ranks' times in outermost calls */

typedef struct {
    iot_file_rec *files; /* merged, in order of first open; .rank indexes stats */
    iot_file_stats *stats;
    int nfiles, nranks;
    iot_file_rec total;                 /* every file's counters summed, per layer */
    uint64_t bytes_written, bytes_read; /* at each file's outermost layer */
    double io_time;                     /* the slowest rank's time in outermost calls */
    const iot_file_rec *all;            /* every rank's records, for the per-rank counters */
    int *first, *next; /* file k's records in all: first[k], then next[i] (-1 ends) */
} iot_profile;

/* Merges nall records of nranks ranks (rank_times: each rank's time in outermost calls).
 * all must live until the profile is written (its records give the per-rank counters).
 * Returns 0, or -1 when out of memory. */
int iot_profile_build(iot_profile *p, const iot_file_rec *all, int nall, const double *rank_times,
                      int nranks);
void iot_profile_free(iot_profile *p);

typedef struct {
    const char *session;
    int mpi;                /* MPI was initialised */
    int reduced;            /* 0: rank 0's counters alone (MPI_Finalize never came) */
    double epoch;           /* wall-clock time of the job's start */
    double wall;            /* seconds from the start to the end, slowest rank */
    const iot_hosts *hosts; /* the job's distinct hosts (rank 0's alone when not reduced) */
} iot_profile_meta;

void iot_profile_write(FILE *f, const iot_profile *p, const iot_profile_meta *m);

#endif
