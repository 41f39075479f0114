/* The hosts of a job: how many distinct host names its ranks ran on, and those names, found
 * once when the profile is reduced; and, per host, a communicator of its ranks (the traces are
 * written one file per host, by its leader). */
#ifndef IOTUNE_HOSTS_H
#define IOTUNE_HOSTS_H

#include "platform/mpiapi.h"

#define IOT_HOST_LEN 64 /* a host name, NUL-padded (longer ones are cut: the count stays) */
/* names gathered: those of the first hosts (by their lowest rank) */
#define IOT_HOSTS_LISTED 1024

typedef struct {
    int count;                   /* rank 0: distinct host names; 0 unknown (elsewhere: 0) */
    int listed;                  /* names below, sorted, at most count and IOT_HOSTS_LISTED */
    char (*names)[IOT_HOST_LEN]; /* malloc'ed; NULL when listed is 0 */
    MPI_Comm comm;               /* this host's ranks (MPI_COMM_NULL: alone, or not found) */
    int leader;                  /* this rank is its host's first (rank 0 of comm) */
    int index;                   /* at a leader: its host's number, 0 .. count - 1 */
} iot_hosts;

/* This process's host name, NUL-padded. */
void iot_host_name(char name[IOT_HOST_LEN]);

/* Collective over comm (every rank calls it; MPI_COMM_NULL: this process alone). The count and
 * names are filled on rank 0 of comm; comm, leader and index on every rank. */
void iot_hosts_gather(MPI_Comm comm, iot_hosts *h);
/* Frees the names and the host communicator (collective over the host's ranks). */
void iot_hosts_free(iot_hosts *h);

#endif
