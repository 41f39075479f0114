/* Interposed MPI-IO calls: MPI_File_open applies the control file's hints (apply_mpiio.c; also
 * for HDF5's own opens); every call is counted and timed per file (capture). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adapt/adapt.h"
#include "apply/apply_mpiio.h"
#include "apply/ordered.h"
#include "base/idmap.h"
#include "capture/capture.h"
#include "core/abi.h"
#include "core/core.h"
#include "fs/fslayout.h"
#include "platform/fstype.h"
#include "platform/mpitype.h"
#include "trace/trace.h"
#include "trace/trace_types.h"
#include "wrap/wrap.h"

static iot_idmap handles; /* MPI_File -> {capture record, access mode}; under the capture lock */

/* The hints an open applied (not withdrawn) as "name=value\n" lines, cut at a line: what the
 * file's record says it got, also in adaptive mode, where the set changes from phase to phase. */
static void applied_lines(const iot_mpiio_hints *h, char *out, size_t size)
{
    size_t used = 0;
    out[0] = '\0';
    for (int i = 0; i < h->n; i++) {
        const iot_entry *e = h->hint[i];
        if (h->withdrawn && (!h->withdrawn_one || strcmp(e->name, h->withdrawn_one) == 0))
            continue;
        int n = snprintf(out + used, size - used, "%s=%s\n", e->name, e->value.text);
        if (n < 0 || (size_t)n >= size - used) {
            out[used] = '\0';
            return;
        }
        used += (size_t)n;
    }
}

/* Capture bookkeeping after an open: the record, the hints it applied, and on the
 * communicator's rank 0 the file system type and the hints in effect. */
static void opened(MPI_Comm comm, const char *filename, MPI_File fh, const iot_mpiio_hints *h,
                   double t, double dt, int outer)
{
    int rec = iot_rec_for(filename, IOT_L_MPIIO);
    int rank = 0, amode = 0;
    PMPI_Comm_rank(comm, &rank);
    PMPI_File_get_amode(fh, &amode);
    char fs[32] = "", hints[IOT_REC_HINTS] = "";
    if (rec >= 0 && rank == 0 && !iot_rec(rec)->hints[0]) { /* MPI calls outside the lock */
        iot_fstype(filename, fs, sizeof fs);
        iot_mpiio_read_hints(fh, hints, sizeof hints);
    }
    char applied[sizeof iot_rec(0)->mpapplied];
    applied_lines(h, applied, sizeof applied);
    if (rec < 0 || !iot_lock())
        return;
    iot_file_rec *r = iot_rec(rec);
    if (applied[0] && !r->mpapplied[0])
        memcpy(r->mpapplied, applied, sizeof applied);
    if (fs[0])
        memcpy(r->fs, fs, sizeof fs);
    if (hints[0])
        memcpy(r->hints, hints, sizeof hints);
    r->c[IOT_L_MPIIO].opens++;
    iot_mark_open(rec, t);
    if (iot_idmap_put(&handles, (uint64_t)(uintptr_t)fh, rec, amode) < 0)
        rec = -1; /* more handles open than the map holds: this one is not followed */
    iot_count_meta(rec, IOT_L_MPIIO, dt, outer);
    if (iot_trace_on)
        iot_trace(IOT_L_MPIIO, "MPI_File_open", rec, 0, -1, amode, t, dt);
    iot_unlock();
}

IOT_MPI_WRAPPER(int, MPI_File_open,
                (MPI_Comm comm, const char *filename, int amode, MPI_Info info, MPI_File *fh))
{
    double agree = iot_now(); /* as H5Fcreate's (wrap_hdf5_file.c): counted as the open's time */
    const iot_settings *s = filename ? iot_adapt_opening(comm, filename) : NULL;
    agree = iot_now() - agree;
    if (!s && !iot_capture_on)
        return PMPI_File_open(comm, filename, amode, info, fh);
    iot_mpiio_hints hints;
    MPI_Info use = iot_mpiio_merge(s, filename, info, &hints);
    iot_fs_striping striping; /* the file system's own striping (fs/): only when asked */
    int stripe = iot_fs_request(s, filename, amode, &striping);
    if (stripe)
        iot_fs_before_open(comm, filename, amode, &striping);
    IOT_TIMED(iot_mpiio_open(comm, filename, amode, info, use, fh, &hints));
    if (rc == MPI_SUCCESS)
        iot_ordered_opened(*fh, filename, &hints, info);
    if (stripe) /* before any rank returns: so before the first write */
        iot_fs_after_open(comm, filename, rc == MPI_SUCCESS, &striping);
    if (rc == MPI_SUCCESS && iot_capture_on)
        opened(comm, filename, *fh, &hints, t, dt + agree, outer);
    if (filename && iot_adapt_on)
        iot_adapt_opened(comm, filename, iot_rec_for(filename, IOT_L_MPIIO), *fh, !rc, t);
    int rank = 0, size = 0;
    PMPI_Comm_rank(comm, &rank);
    PMPI_Comm_size(comm, &size);
    if (rc == MPI_SUCCESS && s && iot_g.verbose && rank == 0)
        iot_mpiio_report(filename, *fh, size, &hints);
    iot_mpiio_done(&hints, &use);
    return rc;
}

/* The record of a handle, or -1; the lock must be held. */
static int record_of(MPI_File fh)
{
    int *v = iot_idmap_get(&handles, (uint64_t)(uintptr_t)fh);
    return v ? v[0] : -1;
}

IOT_MPI_WRAPPER(int, MPI_File_close, (MPI_File * fh))
{
    if (fh)
        iot_ordered_closing(*fh);
    if (!iot_capture_on)
        return PMPI_File_close(fh);
    iot_adapt_closing(*fh);
    int rec = -1;
    if (iot_lock()) { /* forgotten first: another thread may get the same handle at once */
        rec = record_of(*fh);
        iot_idmap_del(&handles, (uint64_t)(uintptr_t)*fh);
        iot_unlock();
    }
    IOT_TIMED(PMPI_File_close(fh));
    if (rec >= 0 && iot_lock()) {
        iot_count_close(rec, IOT_L_MPIIO, "MPI_File_close", t, t + dt, outer);
        iot_unlock();
    }
    return rc;
}

IOT_MPI_WRAPPER(int, MPI_File_sync, (MPI_File fh))
{
    if (!iot_capture_on)
        return PMPI_File_sync(fh);
    IOT_TIMED(PMPI_File_sync(fh));
    if (iot_lock()) {
        int rec = record_of(fh);
        if (rec >= 0)
            iot_rec(rec)->c[IOT_L_MPIIO].syncs++;
        iot_count_meta(rec, IOT_L_MPIIO, dt, outer);
        if (iot_trace_on && rec >= 0)
            iot_trace(IOT_L_MPIIO, "MPI_File_sync", rec, 0, -1, 0, t, dt);
        iot_unlock();
    }
    return rc;
}

/* A file's size set (h5perf sets it to 0 after opening; ext4 then writes the file back at its
 * close): counted as metadata, traced with the new size (a skeleton sets it too). */
IOT_MPI_WRAPPER(int, MPI_File_set_size, (MPI_File fh, MPI_Offset size))
{
    if (!iot_capture_on)
        return PMPI_File_set_size(fh, size);
    IOT_TIMED(PMPI_File_set_size(fh, size));
    if (iot_lock()) {
        int rec = record_of(fh);
        iot_count_meta(rec, IOT_L_MPIIO, dt, outer);
        if (iot_trace_on && rec >= 0 && rc == MPI_SUCCESS && size >= 0)
            iot_trace(IOT_L_MPIIO, "MPI_File_set_size", rec, (uint64_t)size, -1, 0, t, dt);
        iot_unlock();
    }
    return rc;
}

/* A followed file deleted: traced (a skeleton deletes its file there too), nothing counted. */
IOT_MPI_WRAPPER(int, MPI_File_delete, (const char *filename, MPI_Info info))
{
    if (!iot_capture_on || !iot_trace_on || !filename)
        return PMPI_File_delete(filename, info);
    IOT_TIMED(PMPI_File_delete(filename, info));
    int rec = rc == MPI_SUCCESS && outer ? iot_rec_find(filename) : -1;
    if (rec >= 0 && iot_lock()) {
        iot_trace(IOT_L_MPIIO, "MPI_File_delete", rec, 0, -1, 0, t, dt);
        iot_unlock();
    }
    return rc;
}

/* Traced with the displacement as offset, the file type's size as size and the view's layout
 * (iot_trace_describe_view). */
IOT_MPI_WRAPPER(int, MPI_File_set_view,
                (MPI_File fh, MPI_Offset disp, MPI_Datatype etype, MPI_Datatype filetype,
                 const char *datarep, MPI_Info info))
{
    if (!iot_capture_on)
        return PMPI_File_set_view(fh, disp, etype, filetype, datarep, info);
    IOT_TIMED(PMPI_File_set_view(fh, disp, etype, filetype, datarep, info));
    MPI_Count size = 0;
    int view = -1, traced = iot_trace_wanted() && rc == MPI_SUCCESS;
    if (traced)
        view = iot_trace_describe_view(disp, etype, filetype, &size);
    int rec = -1;
    if (iot_lock()) {
        rec = record_of(fh);
        if (rec >= 0)
            iot_rec(rec)->c[IOT_L_MPIIO].set_views++;
        iot_count_meta(rec, IOT_L_MPIIO, dt, outer);
        if (traced && rec >= 0)
            iot_trace_set_view(rec, view, size > 0 ? (uint64_t)size : 0, disp >= 0 ? disp : -1, t,
                               dt);
        iot_unlock();
    }
    if (outer && iot_adapt_on && rc == MPI_SUCCESS) /* the application's view: its transfers' */
        iot_adapt_view(rec, filetype);
    return rc;
}

/* ---- data transfers ---- */

static uint64_t requested_bytes(MPI_Count count, MPI_Datatype type)
{
    MPI_Count size = 0;
    PMPI_Type_size_x(type, &size);
    return count > 0 && size > 0 ? (uint64_t)count * (uint64_t)size : 0;
}

/* What a completed call moved, from its status: a read at the end of the file moves fewer
 * bytes than it asked for. */
static uint64_t status_bytes(const MPI_Status *st, MPI_Count count, MPI_Datatype type)
{
    MPI_Count n = MPI_UNDEFINED;
    if (PMPI_Get_elements_x(st, MPI_BYTE, &n) == MPI_SUCCESS && n != MPI_UNDEFINED && n >= 0)
        return (uint64_t)n;
    return requested_bytes(count, type);
}

/* The individual file pointer before a call (trace only): in etypes of the view, -1 when the
 * file has none (MPI_MODE_SEQUENTIAL). */
static MPI_Offset position(MPI_File fh)
{
    int amode = 0;
    MPI_Offset pos = -1;
    if (PMPI_File_get_amode(fh, &amode) == MPI_SUCCESS && !(amode & MPI_MODE_SEQUENTIAL) &&
        PMPI_File_get_position(fh, &pos) != MPI_SUCCESS)
        pos = -1;
    return pos;
}

/* An offset in etypes of the view as bytes from the file's start (local in ROMIO). */
static int64_t byte_offset(MPI_File fh, MPI_Offset off)
{
    MPI_Offset disp;
    return off >= 0 && PMPI_File_get_byte_offset(fh, off, &disp) == MPI_SUCCESS ? disp : -1;
}

/* The shared file pointer moved (collective): traced with where it points, in bytes from the
 * file's start, as its offset (a skeleton moves its own there); asked of MPI only for a
 * relative seek. Counted as metadata. */
IOT_MPI_WRAPPER(int, MPI_File_seek_shared, (MPI_File fh, MPI_Offset offset, int whence))
{
    if (!iot_capture_on)
        return PMPI_File_seek_shared(fh, offset, whence);
    int want = iot_trace_wanted();
    IOT_TIMED(PMPI_File_seek_shared(fh, offset, whence));
    MPI_Offset pos = offset;
    if (want && rc == MPI_SUCCESS && whence != MPI_SEEK_SET &&
        PMPI_File_get_position_shared(fh, &pos) != MPI_SUCCESS)
        pos = -1;
    int64_t at = want && rc == MPI_SUCCESS ? byte_offset(fh, pos) : -1;
    if (iot_lock()) {
        int rec = record_of(fh);
        iot_count_meta(rec, IOT_L_MPIIO, dt, outer);
        if (iot_trace_on && rec >= 0 && at >= 0)
            iot_trace(IOT_L_MPIIO, "MPI_File_seek_shared", rec, 0, at, whence, t, dt);
        iot_unlock();
    }
    return rc;
}

/* Accounts one data call: bytes moved (or posted, for the nonblocking and split calls). */
static void accessed(MPI_File fh, const char *func, int is_write, int is_coll, int64_t offset,
                     uint64_t bytes, int memory, double t, double dt, int outer)
{
    if (!iot_lock())
        return;
    int rec = record_of(fh);
    iot_count_access(rec, IOT_L_MPIIO, is_write, offset, bytes, dt, outer);
    if (outer && iot_adapt_on) /* the application's own transfer: the mode's access pattern */
        iot_adapt_io_step(rec, offset, bytes, strncmp(func, "MPI_File_i", 10) == 0);
    if (rec >= 0) {
        iot_counters *c = &iot_rec(rec)->c[IOT_L_MPIIO];
        if (is_write)
            is_coll ? c->coll_writes++ : c->indep_writes++;
        else
            is_coll ? c->coll_reads++ : c->indep_reads++;
        if (iot_trace_on)
            iot_trace_mpiio(func, rec, memory, bytes, offset, is_coll, t, dt);
    }
    iot_unlock();
}

/* The end of a split collective: its time (the wait), no new operation. */
static void ended(MPI_File fh, const char *func, int is_write, double t, double dt, int outer)
{
    if (!iot_lock())
        return;
    int rec = record_of(fh);
    iot_count_time(rec, IOT_L_MPIIO, is_write, dt, outer);
    if (iot_trace_on && rec >= 0)
        iot_trace(IOT_L_MPIIO, func, rec, 0, -1, 1, t, dt);
    iot_unlock();
}

/* One wrapper per MPI-IO data call. AT: 1 explicit offset, 0 individual file pointer, S shared
 * file pointer (no offset is traced: reading it would take communication). */
#define IOT_AT_PARAM_1 MPI_Offset offset,
#define IOT_AT_PARAM_0
#define IOT_AT_PARAM_S
#define IOT_AT_ARG_1 offset,
#define IOT_AT_ARG_0
#define IOT_AT_ARG_S
#define IOT_AT_POS_1 offset
#define IOT_AT_POS_0 position(fh)
#define IOT_AT_POS_S -1
#define IOT_ORDERED_1 0
#define IOT_ORDERED_0 0
#define IOT_ORDERED_S 1

/* The common body: BYTES is how the moved bytes are known once the call returned. */
#define IOT_MPIIO_BODY(fn, AT, ARGS, IS_WRITE, IS_COLL, BYTES)                                     \
    if (IOT_ORDERED_##AT && IS_COLL) /* ordered.h */                                               \
        iot_ordered_call(fh, IS_WRITE);                                                            \
    if (!iot_capture_on)                                                                           \
        return P##fn ARGS;                                                                         \
    int want = iot_trace_wanted(), steps = want || iot_adapt_on; /* the adaptive mode's steps */   \
    MPI_Offset pos = steps ? IOT_AT_POS_##AT : -1;                                                 \
    if (IS_COLL)                                                                                   \
        iot_coll_calls++;                                                                          \
    IOT_TIMED(P##fn ARGS);                                                                         \
    int ok = rc == MPI_SUCCESS;                                                                    \
    steps = ok && (want || (steps && outer));                                                      \
    accessed(fh, #fn, IS_WRITE, IS_COLL, steps ? byte_offset(fh, pos) : -1, ok ? BYTES : 0,        \
             ok &&want ? iot_trace_describe_memory(count, type) : -1, t, dt, outer);               \
    return rc;

/* Blocking: bytes from the status (a local one when the application ignores it). */
#define IOT_MPIIO_BLOCKING(fn, AT, BUF, CNT, IS_WRITE, IS_COLL)                                    \
    IOT_MPI_WRAPPER(int, fn,                                                                       \
                    (MPI_File fh, IOT_AT_PARAM_##AT BUF buf, CNT count, MPI_Datatype type,         \
                     MPI_Status * status))                                                         \
    {                                                                                              \
        MPI_Status mine;                                                                           \
        MPI_Status *st = status == MPI_STATUS_IGNORE && iot_capture_on ? &mine : status;           \
        IOT_MPIIO_BODY(fn, AT, (fh, IOT_AT_ARG_##AT buf, count, type, st), IS_WRITE, IS_COLL,      \
                       status_bytes(st, count, type))                                              \
    }

/* Nonblocking: bytes counted when posted (what completes is known only to MPI_Wait). */
#define IOT_MPIIO_POST(fn, AT, BUF, CNT, IS_WRITE, IS_COLL)                                        \
    IOT_MPI_WRAPPER(                                                                               \
        int, fn,                                                                                   \
        (MPI_File fh, IOT_AT_PARAM_##AT BUF buf, CNT count, MPI_Datatype type, MPI_Request * req)) \
    {                                                                                              \
        IOT_MPIIO_BODY(fn, AT, (fh, IOT_AT_ARG_##AT buf, count, type, req), IS_WRITE, IS_COLL,     \
                       requested_bytes(count, type))                                               \
    }

/* Split collectives: the operation and its bytes at _begin, the rest of its time at _end. */
#define IOT_MPIIO_BEGIN(fn, AT, BUF, CNT, IS_WRITE)                                                \
    IOT_MPI_WRAPPER(int, fn,                                                                       \
                    (MPI_File fh, IOT_AT_PARAM_##AT BUF buf, CNT count, MPI_Datatype type))        \
    {                                                                                              \
        IOT_MPIIO_BODY(fn, AT, (fh, IOT_AT_ARG_##AT buf, count, type), IS_WRITE, 1,                \
                       requested_bytes(count, type))                                               \
    }

#define IOT_MPIIO_END(fn, BUF, IS_WRITE)                                                           \
    IOT_MPI_WRAPPER(int, fn, (MPI_File fh, BUF buf, MPI_Status * status))                          \
    {                                                                                              \
        if (!iot_capture_on)                                                                       \
            return P##fn(fh, buf, status);                                                         \
        IOT_TIMED(P##fn(fh, buf, status));                                                         \
        ended(fh, #fn, IS_WRITE, t, dt, outer);                                                    \
        return rc;                                                                                 \
    }

#define IOT_MPIIO_FAMILY(SUFFIX, CNT)                                                              \
    IOT_MPIIO_BLOCKING(MPI_File_write##SUFFIX, 0, const void *, CNT, 1, 0)                         \
    IOT_MPIIO_BLOCKING(MPI_File_write_at##SUFFIX, 1, const void *, CNT, 1, 0)                      \
    IOT_MPIIO_BLOCKING(MPI_File_write_all##SUFFIX, 0, const void *, CNT, 1, 1)                     \
    IOT_MPIIO_BLOCKING(MPI_File_write_at_all##SUFFIX, 1, const void *, CNT, 1, 1)                  \
    IOT_MPIIO_BLOCKING(MPI_File_write_shared##SUFFIX, S, const void *, CNT, 1, 0)                  \
    IOT_MPIIO_BLOCKING(MPI_File_write_ordered##SUFFIX, S, const void *, CNT, 1, 1)                 \
    IOT_MPIIO_BLOCKING(MPI_File_read##SUFFIX, 0, void *, CNT, 0, 0)                                \
    IOT_MPIIO_BLOCKING(MPI_File_read_at##SUFFIX, 1, void *, CNT, 0, 0)                             \
    IOT_MPIIO_BLOCKING(MPI_File_read_all##SUFFIX, 0, void *, CNT, 0, 1)                            \
    IOT_MPIIO_BLOCKING(MPI_File_read_at_all##SUFFIX, 1, void *, CNT, 0, 1)                         \
    IOT_MPIIO_BLOCKING(MPI_File_read_shared##SUFFIX, S, void *, CNT, 0, 0)                         \
    IOT_MPIIO_BLOCKING(MPI_File_read_ordered##SUFFIX, S, void *, CNT, 0, 1)                        \
    IOT_MPIIO_POST(MPI_File_iwrite##SUFFIX, 0, const void *, CNT, 1, 0)                            \
    IOT_MPIIO_POST(MPI_File_iwrite_at##SUFFIX, 1, const void *, CNT, 1, 0)                         \
    IOT_MPIIO_POST(MPI_File_iwrite_shared##SUFFIX, S, const void *, CNT, 1, 0)                     \
    IOT_MPIIO_POST(MPI_File_iread##SUFFIX, 0, void *, CNT, 0, 0)                                   \
    IOT_MPIIO_POST(MPI_File_iread_at##SUFFIX, 1, void *, CNT, 0, 0)                                \
    IOT_MPIIO_POST(MPI_File_iread_shared##SUFFIX, S, void *, CNT, 0, 0)                            \
    IOT_MPIIO_BEGIN(MPI_File_write_all_begin##SUFFIX, 0, const void *, CNT, 1)                     \
    IOT_MPIIO_BEGIN(MPI_File_write_at_all_begin##SUFFIX, 1, const void *, CNT, 1)                  \
    IOT_MPIIO_BEGIN(MPI_File_write_ordered_begin##SUFFIX, S, const void *, CNT, 1)                 \
    IOT_MPIIO_BEGIN(MPI_File_read_all_begin##SUFFIX, 0, void *, CNT, 0)                            \
    IOT_MPIIO_BEGIN(MPI_File_read_at_all_begin##SUFFIX, 1, void *, CNT, 0)                         \
    IOT_MPIIO_BEGIN(MPI_File_read_ordered_begin##SUFFIX, S, void *, CNT, 0)

/* The nonblocking collectives came with MPI 3.1. */
#define IOT_MPIIO_FAMILY_31(SUFFIX, CNT)                                                           \
    IOT_MPIIO_POST(MPI_File_iwrite_all##SUFFIX, 0, const void *, CNT, 1, 1)                        \
    IOT_MPIIO_POST(MPI_File_iwrite_at_all##SUFFIX, 1, const void *, CNT, 1, 1)                     \
    IOT_MPIIO_POST(MPI_File_iread_all##SUFFIX, 0, void *, CNT, 0, 1)                               \
    IOT_MPIIO_POST(MPI_File_iread_at_all##SUFFIX, 1, void *, CNT, 0, 1)

IOT_MPIIO_FAMILY(, int)
#if MPI_VERSION > 3 || (MPI_VERSION == 3 && MPI_SUBVERSION >= 1)
IOT_MPIIO_FAMILY_31(, int)
#endif
#if MPI_VERSION >= 4 /* the large-count calls: a real benchmark built here uses them */
IOT_MPIIO_FAMILY(_c, MPI_Count)
IOT_MPIIO_FAMILY_31(_c, MPI_Count)
#endif
IOT_MPIIO_END(MPI_File_write_all_end, const void *, 1)
IOT_MPIIO_END(MPI_File_write_at_all_end, const void *, 1)
IOT_MPIIO_END(MPI_File_write_ordered_end, const void *, 1)
IOT_MPIIO_END(MPI_File_read_all_end, void *, 0)
IOT_MPIIO_END(MPI_File_read_at_all_end, void *, 0)
IOT_MPIIO_END(MPI_File_read_ordered_end, void *, 0)
