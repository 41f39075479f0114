/* The JSON profile (docs/profile.md): the merged records (profile_build.h) written. */
#ifndef IOTUNE_PROFILE_H
#define IOTUNE_PROFILE_H

#include <stdio.h>

#include "output/profile_build.h"
#include "platform/hosts.h"

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
