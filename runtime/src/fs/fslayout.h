/* The file-system layer: a file's striping applied the way its file system takes it, and read
 * back from the file system itself (docs/striping.md). Entered at MPI_File_open only for a file
 * whose settings ask for striping (striping_factor, striping_unit, striping_object_size).
 *
 *   CephFS (kernel or ceph-fuse)  the new, still empty file's ceph.file.layout set by the
 *                                 communicator's rank 0 after the open and before any rank
 *                                 returns from it (so before the first write); read back with
 *                                 getxattr; refused on a file that has (or had) data
 *   Lustre                        ROMIO's hints at create; where ROMIO's generic driver cannot,
 *                                 the new file is created first with liblustreapi (dlopen); read
 *                                 back from lustre.lov. Written, NOT tested here (no Lustre)
 *   GPFS, BeeGFS, NFS, local      no per-file striping the runtime can set: refused, one message
 */
#ifndef IOTUNE_FSLAYOUT_H
#define IOTUNE_FSLAYOUT_H

#include "platform/mpiapi.h"

#include "config/settings.h"

/* What one open asks and gets. Plain data: rank 0 broadcasts it as bytes. */
typedef struct {
    long long count, unit, object; /* striping asked (-1: not asked) */
    char asked[160];               /* "striping_factor=3 striping_unit=1048576" */
    char fs[32];
    char outcome[16]; /* applied | in effect | NOT in effect | refused | not applicable */
    char layout[160]; /* what the file system reads back, "" when nothing */
    char reason[288]; /* why (refused, not applicable, not in effect), or where it came from */
    int precreated;   /* Lustre: rank 0 created the file with liblustreapi before the open */
} iot_fs_striping;

/* Whether settings s ask striping of file (same answer on every rank: it depends on s and the
 * name only) for an open of access mode amode (a read-only open asks nothing); fills j. */
int iot_fs_request(const iot_settings *s, const char *file, int amode, iot_fs_striping *j);

/* Collective over comm, before MPI_File_open: rank 0 finds the file system (and on Lustre
 * creates the new file with its layout where it can); every rank gets its answer. */
void iot_fs_before_open(MPI_Comm comm, const char *file, int amode, iot_fs_striping *j);

/* Collective over comm, after MPI_File_open (opened: it succeeded on this rank): rank 0 applies
 * the layout and reads it back; every rank waits for it, records the outcome on the file's
 * record (the profile's "striping") and rank 0 says it with IOTUNE_VERBOSE. */
void iot_fs_after_open(MPI_Comm comm, const char *file, int opened, iot_fs_striping *j);

#endif
