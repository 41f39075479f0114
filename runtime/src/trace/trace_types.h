/* MPI datatypes described for the trace (trace_types.c). */
#ifndef IOTUNE_TRACE_TYPES_H
#define IOTUNE_TRACE_TYPES_H

#include "platform/mpiapi.h"

/* The view's index in the trace (its etype's size, filetype's blocks or runs of them, size and
 * extent), -1 when it cannot be kept; *size: the filetype's size. MPI calls outside the lock. */
int iot_trace_describe_view(MPI_Offset disp, MPI_Datatype etype, MPI_Datatype filetype,
                            MPI_Count *size);

/* The memory layout's index in the trace of a transfer of count instances of type, -1 when the
 * datatype is contiguous (the common case costs three type queries). */
int iot_trace_describe_memory(MPI_Count count, MPI_Datatype type);

#endif
