/* A FILE that deflates what it is given into a gzip file (readable by any gzip tool): a trace
 * is printed as JSON through it, never held whole in memory. Only the trace's files use it. */
#ifndef IOTUNE_TRACE_GZ_H
#define IOTUNE_TRACE_GZ_H

#include <stdio.h>

typedef struct trace_gz trace_gz;

/* Opens path for writing; NULL with errno set when it cannot. */
FILE *trace_gz_open(const char *path, trace_gz **g);

/* Flushes, finishes the gzip stream and closes; returns 0 or an errno (the first failure). */
int trace_gz_close(FILE *f, trace_gz *g);

#endif
