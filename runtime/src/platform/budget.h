/* The machine's limits the bounds judge settings against (bounds.h): the memory one process
 * may count on, and the free space of a file's file system. */
#ifndef IOTUNE_BUDGET_H
#define IOTUNE_BUDGET_H

#include "platform/mpiapi.h"

#include "config/bounds.h"

/* Collective over comm (MPI_COMM_WORLD after MPI_Init): the ranks on each host counted, and
 * every rank takes the least memory budget of all, so that settings which must be the same
 * on every rank (HDF5 file access, MPI-IO hints) are judged alike. */
void iot_limits_agree(MPI_Comm comm);

/* The budget with its memory part filled in (agreed, or this process's own when no
 * agreement was made) and its disk part unknown. */
iot_budget iot_limits_budget(void);

/* Fills b's disk part: the free space of the file system holding file (its directory). */
void iot_limits_disk(const char *file, iot_budget *b);

#endif
