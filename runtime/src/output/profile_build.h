/* The ranks' records merged by file name (profile_build.c), for the profile to write. */
#ifndef IOTUNE_PROFILE_BUILD_H
#define IOTUNE_PROFILE_BUILD_H

#include "output/reduce.h"

typedef struct {
    iot_reduced *files; /* the job's files (iot_job_files's, sorted in place) by first open */
    int nfiles, nranks;
    const iot_reduced *summary;         /* files beyond IOT_GATHER_MAX, summed (summary->files) */
    iot_file_rec total;                 /* every file's counters summed, per layer */
    uint64_t bytes_written, bytes_read; /* at each file's outermost layer */
    double io_time;                     /* the slowest rank's time in outermost calls */
} iot_profile;

/* The profile of the job's files j (reduce.h) of nranks ranks: j's files sorted by first open
 * (then name), the totals. j must live until the profile is written. */
void iot_profile_build(iot_profile *p, iot_job_files *j, int nranks);

#endif
