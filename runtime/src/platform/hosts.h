/* The hosts of a job: how many distinct host names its ranks ran on, and those names, found
 * once when the profile is reduced. */
#ifndef IOTUNE_HOSTS_H
#define IOTUNE_HOSTS_H

#include "platform/mpiapi.h"

#define IOT_HOST_LEN 64 /* a host name, NUL-padded (longer ones are cut: the count stays) */

typedef struct {
    int count;                   /* distinct host names; 0 when unknown (out of memory) */
    int listed;                  /* names below, sorted, at most count */
    char (*names)[IOT_HOST_LEN]; /* malloc'ed; NULL when listed is 0 */
} iot_hosts;

/* Collective over comm (every rank calls it; MPI_COMM_NULL: this process alone). The result is
 * filled on rank 0 of comm; other ranks get zeros. */
void iot_hosts_gather(MPI_Comm comm, iot_hosts *h);
void iot_hosts_free(iot_hosts *h);

#endif
