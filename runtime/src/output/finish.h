/* The end of a run: capture stops, the ranks' records are reduced to rank 0, and the profile
 * and traces are written (docs/profile.md). lifecycle.c decides when. */
#ifndef IOTUNE_FINISH_H
#define IOTUNE_FINISH_H

#include "platform/mpiapi.h"

/* At MPI_Finalize: reduces across comm and writes the profile (collective). */
void iot_finish_job(MPI_Comm comm);

/* At exit. mpi_rank: this process's rank in MPI_COMM_WORLD when MPI_Init came (and then
 * MPI_Finalize did not: rank 0 writes its own counters, unreduced), or -1 without MPI. */
void iot_finish_at_exit(int mpi_rank);

#endif
