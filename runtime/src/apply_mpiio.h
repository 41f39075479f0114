/* Settings -> MPI-IO hints: the control file's hints merged over the application's info at
 * MPI_File_open (also HDF5's own opens), and the hints read back to say what took effect. */
#ifndef IOTUNE_APPLY_MPIIO_H
#define IOTUNE_APPLY_MPIIO_H

#include <mpi.h>
#include <stddef.h>

#include "settings.h"

/* The hints for one open. */
typedef struct {
    const iot_entry **hint; /* the control file's hints for the file, in document order */
    int n;
    char notes[1024]; /* "\n..." lines: where the control file overrode the application */
} iot_mpiio_hints;

/* The info to open filename with: the application's (app) with the control file's hints on
 * top, a new object the caller frees with iot_mpiio_done; MPI_INFO_NULL when no hint
 * applies (open with app then). */
MPI_Info iot_mpiio_merge(const iot_settings *s, const char *filename, MPI_Info app,
                         iot_mpiio_hints *h);

/* Verbose report after the open: each requested hint and what MPI-IO actually kept. */
void iot_mpiio_report(const char *filename, MPI_File fh, const iot_mpiio_hints *h);

void iot_mpiio_done(iot_mpiio_hints *h, MPI_Info *merged);

/* The hints in effect on fh (MPI_File_get_info) as "key=value\n" lines, cut at a line. */
void iot_mpiio_read_hints(MPI_File fh, char *hints, size_t size);

#endif
