/* An MPI datatype's layout as byte blocks (mpitype.c): what a file view's filetype selects, so
 * that a trace can say how a rank's data of one call lies in the file. */
#ifndef IOTUNE_MPITYPE_H
#define IOTUNE_MPITYPE_H

#include "platform/mpiapi.h"
#include <stdint.h>

typedef struct iot_block {
    int64_t off, len; /* bytes from the type's origin */
} iot_block;

/* The blocks of one instance of type, in its type map's order, adjacent ones merged; at most
 * max of them. Returns their number, or -1 when the type has more than max blocks or is built
 * by a constructor this does not follow (darray, Fortran types); type and its extent are
 * untouched either way. */
int iot_type_blocks(MPI_Datatype type, iot_block *out, int max);

typedef struct iot_run {
    int64_t off, len, count, stride; /* count blocks of len bytes, the k-th at off + k * stride */
} iot_run;

/* The n blocks as runs of blocks of one length at one stride, in order (a subarray's rows):
 * at most max of them. Returns their number, or -1 when more than max are needed. */
int iot_blocks_runs(const iot_block *b, int n, iot_run *out, int max);

#endif
