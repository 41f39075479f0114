/* An HDF5 file's access settings judged against what the machine allows (bounds.h), each and
 * together with the MPI-IO hints the file's open gets, alike on every rank of the file. */
#ifndef IOTUNE_H5BOUNDS_H
#define IOTUNE_H5BOUNDS_H

#include "apply/h5report.h"
#include "apply/resolve.h"
#include "platform/mpiapi.h"

/* One of the three metadata cache sizes (one configuration, one cache). */
int iot_h5_is_mdc(int p);

/* Marks in gone[] the file access settings that cost more than the machine allows, judged
 * alike on every rank of the file (comm; MPI_COMM_NULL for a serial file), and takes them out of
 * the file's resolved settings. */
void iot_h5_judge_fapl(iot_file_settings *rules, const char *name, MPI_Comm comm, int leader,
                       int *gone, iot_h5_report *r, iot_h5_outcome *out);

/* The file's buffers together: while they cost more than their share of the memory budget,
 * the costliest is withdrawn (gone[], or the MPI-IO hint for the file's open). */
void iot_h5_judge_total(iot_file_settings *rules, const char *name, int leader, int *gone,
                        iot_h5_report *r, iot_h5_outcome *out);

#endif
