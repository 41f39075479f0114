/* What the parts of a skeleton's runtime share (skel_rt.h is its interface to the generated
 * skeleton.c): the run's and a file's state, and helpers. The methods, chosen with --method:
 *
 * native     what the application did: HDF5 files through HDF5 with the traced transfer mode,
 *            MPI-IO files with MPI_File_write_at(_all) at the traced offsets or through the
 *            traced file view (skel_write_view), POSIX files with pwrite.
 * hdf5       everything through HDF5 (--transfer forces collective or independent); a raw
 *            file becomes one 1-D byte dataset per write, ranks' blocks in rank order.
 * mpiio      Skel's MPI_LUSTRE: one shared raw file, each rank's bytes of a file contiguous
 *            from an offset aligned to --stripe (found with an MPI_Allgather: communication).
 * posix      one file per rank (NAME.dir/rank-R), written with pwrite.
 * aggregate  Skel's MPI_AMR: --aggregators N groups; members send their bytes to the group's
 *            first rank (MPI_Gatherv: communication), which writes NAME.dir/agg-G.
 */
#ifndef SKEL_INTERNAL_H
#define SKEL_INTERNAL_H

#include "skel_rt.h"

#include <hdf5.h>
#include <stddef.h>

/* the parts of a step's time (skel_report.c names them; read last, after version 1's four) */
enum { T_OPEN, T_COMM, T_WRITE, T_CLOSE, T_READ, T_N };
#define MAX_OPEN_DATASETS 4096

struct skel {
    const char *name;
    int rank, size;
    enum skel_method method;
    int transfer; /* -1: as described, 0 independent, 1 collective */
    long long stripe;
    int aggregators;
    long long steps, cur_step;
    double *times; /* steps x T_N */
    long long bytes;
    char *buf;
    size_t buf_size;
    size_t cursor; /* where the next write's data starts in buf */
    int sizing;    /* between skel_prepare_begin and _end: calls only count their memory */
    size_t need;   /* the memory one step's writes read (skel_prepare) */
    int prepared;  /* after skel_prepare_end: a growth of buf is late (a write waited) */
    long long late_growths;
    const char *timing, *dir;
    int cleanup;
    MPI_Comm group_comm; /* aggregate: ranks of one aggregator */
    int group;
    int format[5]; /* skel_file_format's, for the next skel_open; has_format: set */
    int has_format;
    char **created; /* files to remove with --cleanup */
    int ncreated;
    int gaps;              /* SKEL_GAPS_*, -1: not set by --gaps (skel_gaps_default) */
    const char *last_data; /* the last transfer's memory (skel_data_for), for skel_gap */
    size_t last_size;
    unsigned gap_sum;
};

struct skel_file {
    skel_t *s;
    enum skel_api api;
    char name[4096];
    MPI_Comm comm;
    MPI_Comm subcomm; /* SKEL_OPEN_SUBSET: the members' communicator (else MPI_COMM_NULL) */
    int member;       /* the rank opens the file and makes the entry's calls */
    hid_t h5;
    MPI_File mf;
    int fd;
    long long pos;     /* next byte of this rank in a method that packs (mpiio, posix) */
    long long *pieces; /* mpiio / aggregate: sizes written at close */
    int npieces, cap;
    int nwrites;          /* hdf5 method on a raw file: datasets /w0, /w1 ... */
    const long long *mem; /* skel_memory: the next write's memory pieces */
    int nmem;
    int anonymous;    /* the next dataset made without a name (skel_anonymous) */
    int shared_moved; /* an independent call moved the shared file pointer since the last
                       * collective one (skel_shared_settle) */
    struct {
        char name[1024];
        hid_t id;
        hid_t type;
    } dsets[MAX_OPEN_DATASETS];
    int ndsets;
    hid_t attr;          /* the attribute last created or opened, still open (0: none) */
    char attr_key[2100]; /* its object's path and name */
};

/* Before a transfer through the shared file pointer (skel_bytes.c): a collective one
 * (MPI_File_*_ordered) after independent ones (MPI_File_*_shared) waits for every rank of the
 * file, so that the pointer is past their records (ROMIO's rank 0 takes its offset at once: a
 * rank's earlier write_shared could land after the ordered records). A program that writes its
 * shared-pointer records in a layout it can rely on synchronises there (a barrier the trace does
 * not show); one that does not gets some layout, this one among them. */
void skel_shared_settle(skel_file_t *f, int collective);
long long skel_shared_count(skel_t *s, long long size, int active, const char *what);

/* messages and the clock (skel_setup.c) */
void skel_die(skel_t *s, const char *what); /* prints and aborts the job */
double skel_now(void);
void skel_add(skel_t *s, int part, double t0); /* time since t0 to the step's part */
void skel_format_name(char *out, size_t n, const char *pattern, long long step, int rank);
void skel_remember(skel_t *s, const char *path); /* a file to remove with --cleanup */

/* memory the writes read from (skel_buffer.c) */
void skel_ensure_buffer(skel_t *s, size_t bytes);
char *skel_data_for(skel_t *s, size_t bytes); /* NULL while sizing */
void skel_need(skel_t *s, size_t bytes);      /* while sizing: bytes read from the start */

/* HDF5 (skel_hdf5.c) */
int skel_is_hdf5(skel_file_t *f);      /* is f written through HDF5 under the run's method? */
void skel_close_types(skel_file_t *f); /* the element types skel_dataset kept */
void skel_dataset_room(skel_file_t *f, const char *name); /* a place in f->dsets */
hid_t skel_mem_type(hid_t t);
void skel_h5_write(skel_file_t *f, hid_t id, hid_t type, size_t esize, int nd, const hsize_t *start,
                   const hsize_t *count, int collective, int active);

/* the memory of a native MPI-IO write (skel_datatypes.c) */
const char *skel_write_memory(skel_file_t *f, long long size, MPI_Datatype *type, int *count);

void skel_flush_packed(skel_file_t *f);           /* skel_packed.c */
void skel_close_attr_type(hid_t t);               /* skel_attrs.c: a type made for a call */
void skel_attr_release(skel_file_t *f);           /* skel_attr_calls.c: its open attribute */
const char *skel_method_name(enum skel_method m); /* skel_report.c */

/* collective or independent: as described unless --transfer says */
static inline int skel_transfer_of(skel_t *s, int collective)
{
    return s->transfer >= 0 ? s->transfer : collective;
}

#endif
