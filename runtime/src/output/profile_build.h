/* The ranks' records merged by file name (profile_build.c), for the profile to write. */
#ifndef IOTUNE_PROFILE_BUILD_H
#define IOTUNE_PROFILE_BUILD_H

#include "capture/capture.h"

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

#endif
