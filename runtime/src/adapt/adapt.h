/* The runtime's adaptive mode (IOTUNE_MODE=adaptive, docs/adaptive.md): it learns each class
 * of recurring phase (phase.h) from its first phase, evaluates the online rules of the rule
 * table on that phase's insights (rules.h), and gives the class's later phases the settings
 * those rules propose, as an ordinary settings set that the control-file path applies (a
 * control file's setting of the same parameter wins). A guard compares each optimised phase
 * with the learning phase and reverts the rules of one that was slower. Everything goes into
 * the profile's "adaptive" section (docs/profile.md). */
#ifndef IOTUNE_ADAPT_H
#define IOTUNE_ADAPT_H

#include "platform/mpiapi.h"
#include <stdint.h>
#include <stdio.h>

#include "config/settings.h"

extern int iot_adapt_on; /* adaptive mode asked for, and capture on */

/* Starts the mode (at start-up, after the environment is read and capture decided). */
void iot_adapt_init(void);

/* Frees the MPI objects the mode made (a datatype and an operation): MPI_Finalize, after the
 * profile's collectives and before the real call. */
void iot_adapt_release(void);

/* The settings in effect: control's entries after the adaptive ones (so control wins), or
 * control itself when the mode is off or has nothing to add. */
const iot_settings *iot_adapt_settings(const iot_settings *control);

/* H5Fcreate/H5Fopen of filename with the MPI-IO driver on comm (collective): the settings the
 * file and its datasets are to get, agreed on by the ranks of comm like an open's (else the
 * control file's alone, or an empty set): never NULL in adaptive mode, so that every rank makes
 * the same HDF5 calls, some of which are collective. Off the mode: iot_active(). */
const iot_settings *iot_adapt_file_settings(MPI_Comm comm, const char *filename);

/* MPI_File_open of filename on comm (collective): before the real open, the settings the open
 * is to use, which the ranks of comm agreed on (else the control file's alone); after it,
 * iot_adapt_opened with the same comm on every rank, whatever the open returned. */
const iot_settings *iot_adapt_opening(MPI_Comm comm, const char *filename);
void iot_adapt_opened(MPI_Comm comm, const char *filename, int rec, MPI_File fh, int ok, double t);

/* MPI_File_close of fh (collective over the file's ranks), before the real close. */
void iot_adapt_closing(MPI_File fh);

/* An HDF5 transfer (dataset and file space ids, hid_t) on the file of capture record rec:
 * counts whether its file selection is one run of elements; a write's box (is_write: a write
 * that succeeded) is kept for the phase's fully_written. */
void iot_adapt_transfer(int rec, int64_t dset, int64_t fspace, int is_write);

/* An application's own MPI-IO transfer (not HDF5's) at a byte offset on record rec (-1: not
 * known): the step from its previous one in the phase (backward, skipping bytes) is counted; a
 * phase's first transfer starts the count again (iot_adapt_steps_restart, at the phase's
 * open). posted: a nonblocking call (MPI_File_iwrite...), whose wait is not timed. */
void iot_adapt_io_step(int rec, int64_t offset, uint64_t bytes, int posted);
void iot_adapt_steps_restart(int rec);

/* The application's own MPI_File_set_view on record rec, once it succeeded: whether its
 * filetype has holes (true extent beyond size) or instances apart (extent not its size),
 * decided here once, so that each later transfer is counted as noncontiguous (through the
 * holes, or longer than one filetype) at the cost of a comparison. */
void iot_adapt_view(int rec, MPI_Datatype filetype);

/* A dataset of capture record rec created or opened (id: its hid_t, path: its full path): its
 * layout, fill time, chunk and chunk cache read back for the phase's layout insights. */
void iot_adapt_dataset(int rec, int64_t id, const char *path);

/* The call stream for prediction (capture lock held): a phase of record rec begins (its first
 * handle opened), an outermost data call on it, its end (last handle closed). */
void iot_adapt_phase_begin(int rec, const char *name);
void iot_adapt_call(int rec, int layer, int is_write, uint64_t bytes);
void iot_adapt_phase_end(int rec);

/* The profile's "adaptive" member (nothing when the mode is off). */
void iot_adapt_write_json(FILE *f);

#endif
