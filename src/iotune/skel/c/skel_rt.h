/* The fixed part of every generated skeleton (iotune skel, docs/skel.md): the I/O methods,
 * the per-rank timing and its JSON output. The generated skeleton.c says *what* is written;
 * this file says *how*, for the method chosen at run time (--method). */
#ifndef SKEL_RT_H
#define SKEL_RT_H

#include <hdf5.h>
#include <mpi.h>

enum skel_api { SKEL_HDF5, SKEL_MPIIO, SKEL_POSIX };
enum skel_method { SKEL_NATIVE, SKEL_M_HDF5, SKEL_M_MPIIO, SKEL_M_POSIX, SKEL_AGGREGATE };

typedef struct skel_param {
    const char *name;
    long long *value;
} skel_param;

extern long long skel_size; /* ranks of the job, for default_steps */

typedef struct skel skel_t;
typedef struct skel_file skel_file_t;

/* Parses the run-time options (--method, --transfer, --stripe, --aggregators, --steps,
 * --set NAME=VALUE, --timing FILE, --dir DIR, --cleanup, --gaps); *steps may be overridden. */
skel_t *skel_init(int *argc, char ***argv, const char *name, const char *default_method,
                  skel_param *params, int nparams, long long *steps,
                  long long (*default_steps)(void));
/* Untimed, before the first step: the calls of one step made between these two only count
 * the memory their writes read (no file is touched, nothing is timed); _end allocates and
 * fills it, so that no write of the run waits for its data to be made (an application's
 * arrays exist before its I/O phase). */
void skel_prepare_begin(skel_t *s);
void skel_prepare_end(skel_t *s);
void skel_step(skel_t *s, long long step); /* the step whose time the next calls count */
void skel_compute(skel_t *s, double seconds);
void skel_inputs_made(skel_t *s); /* the inputs made: their time and bytes forgotten */
/* Time between two calls of a step (a write entry's gap_s), after the first: spent as CPU work
 * over the data just transferred (SKEL_GAPS_BUSY), slept, or left out, as --gaps says (else
 * the generated default, skel_gaps_default). Nothing while the memory is counted. */
#define SKEL_GAPS_OFF 0
#define SKEL_GAPS_BUSY 1
#define SKEL_GAPS_SLEEP 2
int skel_gaps_mode(const char *name); /* busy, sleep, off; -1 for another name */
void skel_gaps_default(skel_t *s, int mode);
void skel_gap(skel_file_t *f, double seconds);
/* flags: SKEL_OPEN_EXISTING (open a file an earlier entry wrote, never create; it must be on
 * the skeleton's list), SKEL_OPEN_READS (the entry reads too: opened read-write), or only
 * reads (READONLY) */
#define SKEL_OPEN_EXISTING 1
#define SKEL_OPEN_READS 2
#define SKEL_OPEN_READONLY 4 /* with EXISTING: nothing is written (H5F_ACC_RDONLY, ...) */
#define SKEL_OPEN_SERIAL 8   /* an HDF5 file of one rank through the serial (sec2) driver */
#define SKEL_OPEN_SUBSET 16  /* opened by the ranks where member is non-zero only, together */
/* member: with SKEL_OPEN_SUBSET, whether this rank opens the file (the entry's `when`); every
 * rank calls skel_open, the members open it on a communicator of theirs (native and hdf5
 * methods; the others open it on every rank). skel_member(f): whether the rank makes the
 * entry's calls. */
skel_file_t *skel_open(skel_t *s, const char *pattern, enum skel_api api, long long step, int flags,
                       int member);
int skel_member(const skel_file_t *f);
/* The file of pattern removed once every rank closed it (the application deleted it): by rank
 * 0, or each rank its own ({rank}); only a file the skeleton wrote, and only under the native
 * and hdf5 methods (the others' layouts are their own). Collective. */
void skel_remove(skel_t *s, const char *pattern, long long step);
void skel_group(skel_file_t *f, const char *pattern, long long step);
/* Element types: a descriptor type name (float32 ... uint64), n opaque bytes, or a compound of
 * n members (names, descriptor type names, byte offsets) in size bytes. */
hid_t skel_type_named(const char *name);
hid_t skel_type_opaque(long long size);
hid_t skel_type_compound(long long size, int n, const char *const *names, const char *const *types,
                         const long long *offsets);
/* filters: NULL or a comma-separated list of shuffle, fletcher32, deflate=LEVEL (in order);
 * alloc_time, fill_time: an H5D_alloc_time_t, H5D_fill_time_t or -1 (HDF5's default);
 * fill_value: one element's bytes in hex as type stores them, or NULL (HDF5's default) */
/* The next dataset skel_dataset makes is made without a name (H5Dcreate_anon) and never linked,
 * as the application's; the descriptor's name stays the skeleton's handle for it. */
void skel_anonymous(skel_file_t *f);
void skel_dataset(skel_file_t *f, const char *pattern, long long step, hid_t type, int nd,
                  const long long *dims, const long long *maxdims, const long long *chunks,
                  const char *filters, int alloc_time, int fill_time, const char *fill_value,
                  int track_times, int attr_order);
/* The format the next skel_open creates or opens an HDF5 file in (each -1: HDF5's default):
 * format bounds (H5F_libver_t low, high), 0: object headers without times, the root group's
 * link and attribute creation order (H5P_CRT_ORDER_* flags). A dataset's track_times (0: no
 * times) and attr_order (flags) likewise, -1 for the default. */
void skel_file_format(skel_t *s, int libver_low, int libver_high, int track_times, int link_order,
                      int attr_order);
/* A string type: size bytes (0: variable length), its padding and character set. */
hid_t skel_type_string(long long size, H5T_str_t pad, H5T_cset_t cset);
/* An attribute name of type t (closed here) on the object at path `on` (group or dataset), of
 * nd dimensions (0: scalar), written with zeros; one that exists already is left as it is. */
void skel_attribute(skel_file_t *f, const char *on, long long step, const char *name, hid_t t,
                    int nd, const long long *dims);
/* The application's attribute calls, in its order (skel_attr_calls.c), on the object at path
 * `on` (the root, a group, a dataset): a creation of attribute name of type t (closed here) and
 * nd dimensions (0: scalar, -1: a null dataspace); the others by name (iterate: none) with
 * H5Awrite (of zeros; a variable-length string's size characters), H5Aread, H5Aopen,
 * H5Aexists, H5Aiterate2, H5Arename (to the name to) or H5Adelete. The attribute last created
 * or opened stays open for the calls on it that follow, as an application holds it. The
 * lookups are made by the ranks where active is non-zero, timed as reads. Other methods: none. */
enum skel_attr_call {
    SKEL_ATTR_WRITE,
    SKEL_ATTR_READ,
    SKEL_ATTR_OPEN,
    SKEL_ATTR_EXISTS,
    SKEL_ATTR_ITERATE,
    SKEL_ATTR_RENAME,
    SKEL_ATTR_DELETE
};
void skel_attr_create(skel_file_t *f, const char *on, long long step, const char *name, hid_t t,
                      int nd, const long long *dims);
void skel_attr_call(skel_file_t *f, enum skel_attr_call call, const char *on, long long step,
                    const char *name, const char *to, long long size, int active);
void skel_write(skel_file_t *f, const char *pattern, long long step, int nd, const long long *start,
                const long long *count, int collective, int active);
void skel_write_bytes(skel_file_t *f, long long offset, long long size, int collective, int active);
/* A dataset made before (a file opened existing): opened, its elements read as type t. */
void skel_dataset_open(skel_file_t *f, const char *pattern, long long step, hid_t t);
/* Reads of the same selections (the native method, and the hdf5 method on HDF5 files; the
 * other methods skip them): into the skeleton's memory, timed as its I/O; fresh: into memory
 * mapped for the read and unmapped after it (the application read into memory never touched). */
void skel_read(skel_file_t *f, const char *pattern, long long step, int nd, const long long *start,
               const long long *count, int collective, int fresh, int active);
void skel_read_bytes(skel_file_t *f, long long offset, long long size, int collective, int active);
/* Transfers through the shared file pointer (native method, MPI-IO files): MPI_File_write_ordered
 * / MPI_File_read_ordered when collective, else MPI_File_write_shared / MPI_File_read_shared;
 * the other methods write the bytes at the rank's running position and skip the reads. */
void skel_write_shared(skel_file_t *f, long long size, int collective, int active);
void skel_read_shared(skel_file_t *f, long long size, int collective, int active);
/* The shared file pointer moved to byte offset (MPI_File_seek_shared, every rank of the file). */
void skel_seek_shared(skel_file_t *f, long long offset);
/* Direct chunk transfers (H5Dwrite_chunk, H5Dread_chunk) of the chunk at start of a dataset:
 * size stored bytes, filters skipped by mask (skel_chunk.c); other methods write size raw
 * bytes and skip the reads. */
void skel_write_chunk(skel_file_t *f, const char *pattern, long long step, int nd,
                      const long long *start, long long size, unsigned mask, int active);
/* H5Dset_extent of a dataset to extent (nd dimensions); on a file shared by the ranks every
 * rank calls it (active or not: it is collective), with the same extent. Other methods: none. */
void skel_extend(skel_file_t *f, const char *pattern, long long step, int nd,
                 const long long *extent, int active);
/* Dimension scales (skel_scales.c, built only when the descriptor makes them): H5DSset_scale
 * of a dataset with a name of name_size bytes (with its NUL; 0: none), H5DSattach_scale
 * (attach 1) or H5DSdetach_scale (0) of dataset scale to dimension dim of a dataset; every rank
 * of the file calls them (they change metadata). Other methods: none. */
void skel_set_scale(skel_file_t *f, const char *pattern, long long step, long long name_size);
void skel_attach_scale(skel_file_t *f, const char *pattern, const char *scale, long long step,
                       long long dim, int attach);
/* A lookup of a dataset's scales, as netCDF-4 makes at every open (they read DIMENSION_LIST and
 * what it references): kind 0 H5DSis_scale, 1 H5DSget_num_scales, 2 H5DSiterate_scales of
 * dimension dim; by the ranks where active is non-zero; timed as a read. */
void skel_lookup_scales(skel_file_t *f, const char *pattern, long long step, int kind,
                        long long dim, int active);
void skel_read_chunk(skel_file_t *f, const char *pattern, long long step, int nd,
                     const long long *start, long long size, int active);
/* The application's memory datatype of the next write on f: n pieces of these lengths (gaps
 * between them are the skeleton's own); used by the native method on an MPI-IO file when the
 * write's size is their sum, else the write is from contiguous memory. */
void skel_memory(skel_file_t *f, int n, const long long *pieces);
/* Sets the file view (displacement offset, etype MPI_BYTE, filetype: the blocks of nblocks
 * (offset, length, count, stride) entries of view[], each count blocks of length bytes stride
 * apart, resized to lb and extent) and writes size bytes through it, at byte at of the view
 * (MPI_File_write_at(_all)) or, at -1, from its start (MPI_File_write(_all)); native method on
 * an MPI-IO file; the other methods write the bytes as skel_write_bytes does. */
void skel_write_view(skel_file_t *f, long long offset, long long size, long long lb,
                     long long extent, long long at, int nblocks, const long long *view,
                     int collective, int active);
/* The file's size set to size (MPI_File_set_size on an MPI-IO file, by every rank of the file,
 * active or not: it is collective; ftruncate on a POSIX file by the active ranks); native
 * method only. */
void skel_set_size(skel_file_t *f, long long size, int active);
void skel_sync(skel_file_t *f); /* to storage: H5Fflush + fsync, MPI_File_sync, fsync */
/* H5Ldelete of the link pattern (step, rank filled in), every rank of the file (HDF5 files
 * written through HDF5; nothing for the other methods) */
void skel_delete(skel_file_t *f, const char *pattern, long long step);
void skel_close(skel_file_t *f);
int skel_finish(skel_t *s);

/* The descriptor's arithmetic, checked: an overflow of long long or a division by zero (sizes
 * changed with --set, a larger job) stops the job with one message naming the operation. */
void skel_overflow(const char *op, long long a, long long b); /* prints and aborts */

static inline long long skel_iadd(long long a, long long b)
{
    long long r;
    if (__builtin_add_overflow(a, b, &r))
        skel_overflow("+", a, b);
    return r;
}
static inline long long skel_isub(long long a, long long b)
{
    long long r;
    if (__builtin_sub_overflow(a, b, &r))
        skel_overflow("-", a, b);
    return r;
}
static inline long long skel_imul(long long a, long long b)
{
    long long r;
    if (__builtin_mul_overflow(a, b, &r))
        skel_overflow("*", a, b);
    return r;
}
static inline long long skel_idiv(long long a, long long b)
{
    if (b == 0 || (b == -1 && a == (-9223372036854775807LL - 1)))
        skel_overflow("/", a, b);
    return a / b;
}
static inline long long skel_imod(long long a, long long b)
{
    if (b == 0 || (b == -1 && a == (-9223372036854775807LL - 1)))
        skel_overflow("%", a, b);
    return a % b;
}
static inline long long skel_ineg(long long a)
{
    return skel_isub(0, a);
}

static inline long long skel_min(long long a, long long b)
{
    return a < b ? a : b;
}
static inline long long skel_max(long long a, long long b)
{
    return a > b ? a : b;
}

#endif
