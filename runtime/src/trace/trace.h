/* Trace mode (IOTUNE_TRACE): per rank, the stream of calls as signatures (what a grammar and a
 * skeleton generator need: function, layer, file, dataset, size, offset step, mode) and runs of
 * calls merged per layer and file with their place in the call order and their times (schema 4,
 * docs/profile.md), written gzip-compressed. Memory is bounded: past IOTUNE_TRACE_LIMIT runs
 * calls are dropped and the trace says so. */
#ifndef IOTUNE_TRACE_H
#define IOTUNE_TRACE_H

#include <stdint.h>

#include "capture/capture.h"
#include "platform/mpiapi.h"

/* Will a call made now be traced? (Before its wrapper raises iot_depth.) For arguments that
 * cost something to find, such as an MPI-IO call's byte offset. */
static inline int iot_trace_wanted(void)
{
    return iot_trace_on == 2 || (iot_trace_on && iot_depth == 0);
}

/* Takes IOTUNE_TRACE and IOTUNE_TRACE_LIMIT from the environment (env.h). */
void iot_trace_init(void);

/* The functions below need the capture lock held (capture.h). */

/* One call that took dt seconds from t (iot_now()). offset -1: the call has none. mode: open
 * flags or amode for opens, whence for seeks, 1 collective / 0 independent for transfers. */
void iot_trace(iot_clayer layer, const char *func, int rec, uint64_t size, int64_t offset, int mode,
               double t, double dt);

/* An HDF5 call on dataset dset (from iot_trace_dataset, or -1) whose selection's bounding box
 * has ndims dimensions box[] (ndims 0: unknown). */
void iot_trace_h5(const char *func, int rec, int dset, uint64_t size, int64_t offset, int mode,
                  int ndims, const uint64_t *box, double t, double dt);

#define IOT_TRACE_FILL_MAX 16 /* a larger fill value is not kept (its time is) */

/* An HDF5 dataset as the trace describes it once, at its creation or opening: what a
 * skeleton needs to make the same dataset. */
typedef struct {
    int ndims;
    const uint64_t *dims;
    const uint64_t *maxdims; /* UINT64_MAX: unlimited; NULL: fixed (as dims) */
    const uint64_t *chunks;  /* NULL: not chunked */
    uint64_t type_size;
    int type_class;  /* H5T_class_t (H5T_INTEGER 0, H5T_FLOAT 1, ...), -1 unknown */
    int type_signed; /* integers: 1 signed, 0 unsigned; -1 otherwise */
    int type_order;  /* H5T_order_t: 0 little-, 1 big-endian; -1 otherwise */
    int fill_time;   /* H5D_fill_time_t (alloc 0, never 1, ifset 2); -1 unknown */
    int fill_len;    /* bytes of a user-defined fill value in fill (the file type's), else 0 */
    unsigned char fill[IOT_TRACE_FILL_MAX];
    int track_times; /* its object header records times (H5Pset_obj_track_times): 1, 0; -1 unknown
                      */
    int attr_order;  /* H5Pset_attr_creation_order's flags (1 tracked, 2 indexed); -1 unknown */
} iot_trace_dset_desc;

/* Index of HDF5 dataset path of file rec in the trace's dataset table (added with its
 * description on first use), or -1. */
int iot_trace_dataset(int rec, const char *path, const iot_trace_dset_desc *d);
/* An anonymous dataset (H5Dcreate_anon, or made in a group made by H5Gcreate_anon) named by
 * H5Olink: its entry renamed path, so that the table has one entry for it (it had a copy under
 * path beside the stand-in's); its index (another's when path had an entry already), or -1,
 * and its record in *rec. iot_trace_datasets_under calls fn for each traced dataset of path
 * prefix/REST (REST given; fn may rename it). */
int iot_trace_dataset_rename(int ds, const char *path, int *rec);
void iot_trace_datasets_under(const char *prefix, void (*fn)(int ds, const char *rest, void *ctx),
                              void *ctx);

/* An HDF5 attribute as the trace describes it (an entry of its attribute table, which the
 * dataset column of the attribute calls indexes: wrap_hdf5_attrtrace.c): the path of the object
 * it is on and its name (NULL: none, as for an iteration over them); when described (creations,
 * opens), its dataspace (H5S_class_t: 0 scalar, 1 simple with ndims dims, 2 null) and element
 * type as a dataset's, and for strings the padding (H5T_str_t), character set (H5T_cset_t) and
 * whether their length is variable. */
typedef struct {
    const char *object, *name;
    int described;
    int space, ndims;
    const uint64_t *dims;
    uint64_t type_size;
    int type_class, type_signed, type_order;
    int str_pad, str_cset, str_variable; /* -1 for other types */
} iot_trace_attr_desc;

/* Index of the attribute a describes in the trace's attribute table (added on first use), or
 * -1 (no memory, or a name that is not UTF-8 text). */
int iot_trace_attribute(const iot_trace_attr_desc *a);

struct iot_block; /* mpitype.h */
struct iot_run;

/* The extent of traced dataset ds (an index from iot_trace_dataset) into dims, when it cannot
 * change (maximum extent equal to it): returns its rank, or 0 when unknown or extendible. Needs
 * no lock: what a transfer uses instead of asking HDF5 for the file space's extent. */
int iot_trace_fixed_extent(int ds, uint64_t *dims);
/* Dataset ds's extent changed (H5Dset_extent): transfers ask HDF5 for it from now on. */
void iot_trace_extent_changed(int ds);

/* A file view as the trace describes it (once per distinct view): its displacement, the etype's
 * size, the filetype's size, extent, true extent (from its first to its last byte: beyond its
 * size when it has holes) and byte blocks (nblocks -1: too many or not followed; then the
 * blocks as nruns runs when nruns > 0).
 * Returns its index in the trace's view table, or -1. */
int iot_trace_view(int64_t disp, uint64_t etype_size, uint64_t size, int64_t lb, int64_t extent,
                   int64_t true_extent, const struct iot_block *blocks, int nblocks,
                   const struct iot_run *runs, int nruns);

/* The memory layout of an MPI-IO transfer whose datatype is not contiguous: the lengths of the
 * pieces of one instance, in order (gaps are addresses of the application's buffers: not
 * kept). Returns its index in the trace's table of memory layouts, or -1. */
int iot_trace_memory(uint64_t size, const struct iot_block *blocks, int nblocks);

/* An MPI-IO data call; memory: from iot_trace_memory, -1 for contiguous memory. */
void iot_trace_mpiio(const char *func, int rec, int memory, uint64_t size, int64_t offset, int mode,
                     double t, double dt);

/* MPI_File_set_view of file rec: view from iot_trace_view (or -1), size the filetype's size. */
void iot_trace_set_view(int rec, int view, uint64_t size, int64_t disp, double t, double dt);

/* Did the trace reach a limit and drop calls? */
int iot_trace_truncated(void);

/* Writes this rank's trace to path (gzip); run times are written relative to origin (iot_now() of
 * the job's start on this rank's clock; epoch: the same instant in wall-clock time). Returns 0
 * or an errno. Call after capture has ended (no lock needed then). */
int iot_trace_write(const char *path, int rank, int nranks, const char *session, double origin,
                    double epoch);

/* What a host's trace file says of the job and the host. */
typedef struct {
    int rank, nranks; /* in the job */
    const char *session, *host;
    int host_index;
    double origin, epoch; /* as iot_trace_write's */
} iot_trace_meta;

/* Collective over hc (the ranks of one host; its rank 0, the leader, writes path): one file
 * (schema 5) with the trace of every rank of the host, what ranks repeat stored once
 * (trace_host.c). Returns 1 when this rank's trace is in it, 0 when the caller must write it
 * alone with iot_trace_write (the file could not be written, or this trace did not fit). */
int iot_trace_write_host(MPI_Comm hc, const char *path, const iot_trace_meta *m);

#endif
