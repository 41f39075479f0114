/* Settings -> MPI-IO hints: the control file's hints merged over the application's info at
 * MPI_File_open (also HDF5's own opens), and the hints read back to say what took effect. */
#ifndef IOTUNE_APPLY_MPIIO_H
#define IOTUNE_APPLY_MPIIO_H

#include "platform/mpiapi.h"
#include <stddef.h>

#include "config/settings.h"

/* The hints for one open. */
typedef struct {
    const iot_entry **hint; /* the control file's hints for the file, in document order */
    int n;
    char notes[1024];          /* "\n..." lines: where the control file overrode the application */
    const char *withdrawn;     /* NULL, or why hints were withdrawn (points into why) */
    const char *withdrawn_one; /* the one withdrawn, or NULL: every hint was */
    char why[MPI_MAX_ERROR_STRING + 1];
    const char *file; /* the file opened */
} iot_mpiio_hints;

/* A hint withdrawn for filename by the total of the file's buffers (judged at its HDF5 open,
 * apply_hdf5.c): left out at the MPI_File_open of that name. */
void iot_mpiio_withdraw_total(const char *filename, int param);

/* The info to open filename with: the application's (app) with the control file's hints on
 * top, a new object the caller frees with iot_mpiio_done; MPI_INFO_NULL when no hint
 * applies (open with app then). */
MPI_Info iot_mpiio_merge(const iot_settings *s, const char *filename, MPI_Info app,
                         iot_mpiio_hints *h);

/* MPI_File_open, fail-safe: with merged (the control file's hints) when there is one; when
 * that fails on every rank, once more with the application's own info (app): the run goes on,
 * the hints are withdrawn (h->withdrawn says why; one line on stderr; the profile's record).
 * Only when the application's own call fails too is its error returned, unchanged. */
int iot_mpiio_open(MPI_Comm comm, const char *filename, int amode, MPI_Info app, MPI_Info merged,
                   MPI_File *fh, iot_mpiio_hints *h);

/* Whether a hint took effect, judged from what MPI-IO read back ("key=value\n" lines) on a file
 * system fs, for the MPI and I/O component of the process (abi.h): yes, no (why says why), or
 * unverifiable (an MPI that echoes every hint it was given). file_ranks: the size of the file's
 * communicator, 0 when not known (it caps cb_nodes). */
typedef enum { IOT_EFFECT_YES, IOT_EFFECT_NO, IOT_EFFECT_UNVERIFIABLE } iot_effect;
iot_effect iot_mpiio_effect(const char *key, const char *requested, const char *readback,
                            const char *fs, int file_ranks, char *why, size_t len);
const char *iot_effect_name(iot_effect e); /* "yes", "no", "unverifiable" */

/* Verbose report after the open: each requested hint and what MPI-IO actually kept. */
void iot_mpiio_report(const char *filename, MPI_File fh, int file_ranks, const iot_mpiio_hints *h);

void iot_mpiio_done(iot_mpiio_hints *h, MPI_Info *merged);

/* The hints in effect on fh (MPI_File_get_info) as "key=value\n" lines, cut at a line. */
void iot_mpiio_read_hints(MPI_File fh, char *hints, size_t size);

#endif
