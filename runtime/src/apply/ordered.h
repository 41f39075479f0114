/* Ordered MPI-IO calls and an injected "disable" of collective buffering. ROMIO (MPICH 4.0.2
 * here) puts the records of MPI_File_write_ordered in rank order per call only while
 * collective buffering is enabled: with romio_cb_write=disable rank 0's records all come
 * first, and MPI_File_read_ordered with romio_cb_read=disable reads the wrong records (an
 * outside tester; the same with the hint and no iotune). Such a hint, when the control file or
 * the adaptive mode injected it, is withdrawn from the file handle at its first ordered call
 * of that direction: the application's own value is set back (MPI_File_set_info, collective
 * like the ordered call itself), said once, and kept in the profile's "withdrawn". */
#ifndef IOTUNE_ORDERED_H
#define IOTUNE_ORDERED_H

#include "apply/apply_mpiio.h"
#include "platform/mpiapi.h"

/* After a successful open of filename with hints h over the application's info app. */
void iot_ordered_opened(MPI_File fh, const char *filename, const iot_mpiio_hints *h, MPI_Info app);
/* Before an ordered call (blocking or split) on fh, on every rank of the file. */
void iot_ordered_call(MPI_File fh, int is_write);
/* Before MPI_File_close of fh: the handle's value may be reused by a later open. */
void iot_ordered_closing(MPI_File fh);

#endif
