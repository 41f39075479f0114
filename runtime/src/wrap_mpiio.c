/* Interposed MPI calls: MPI_Init* loads the control file collectively; MPI_File_open merges
 * the control file's hints into the application's (also for HDF5's own opens). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capture.h"
#include "core.h"
#include "fstype.h"
#include "idmap.h"
#include "trace.h"

/* After MPI is up: the control file, collectively; and a mark for the processes this rank
 * may start, so that they do not write profiles of their own. */
static void started(void)
{
    iot_load(MPI_COMM_WORLD);
    iot_capture_mpi_started();
    setenv("IOTUNE_RANK_CHILD", "1", 1);
}

IOT_EXPORT int MPI_Init(int *argc, char ***argv)
{
    int rc = PMPI_Init(argc, argv);
    if (rc == MPI_SUCCESS)
        started();
    return rc;
}

IOT_EXPORT int MPI_Init_thread(int *argc, char ***argv, int required, int *provided)
{
    int rc = PMPI_Init_thread(argc, argv, required, provided);
    if (rc == MPI_SUCCESS)
        started();
    return rc;
}

typedef struct {
    const iot_entry **hint; /* room for every entry of the control file (at most 1024) */
    int n;
} hint_list;

/* Keeps a hint unless this MPI's info objects cannot hold its key or value (the registry's
 * limits fit MPICH's; another MPI may have smaller ones): then it is dropped, with one
 * warning per process. */
static void collect(void *ctx, const iot_entry *e)
{
    hint_list *l = ctx;
    if (strlen(e->name) > MPI_MAX_INFO_KEY || strlen(e->value.text) > MPI_MAX_INFO_VAL) {
        char where[96];
        if (iot_world_rank() == 0)
            iot_warn_once("info-limits",
                          "hint %s [%s] NOT applied: longer than this MPI's info keys (%d) or "
                          "values (%d) may be; later ones like it are dropped without a word",
                          e->name, iot_origin(e, where, sizeof where), MPI_MAX_INFO_KEY,
                          MPI_MAX_INFO_VAL);
        return;
    }
    l->hint[l->n++] = e;
}

/* The application's info with the control file's hints on top (the control file wins). */
static MPI_Info merged_info(const hint_list *l, MPI_Info app, char *notes, size_t nlen)
{
    MPI_Info info;
    if (app == MPI_INFO_NULL ? MPI_Info_create(&info) : MPI_Info_dup(app, &info))
        return MPI_INFO_NULL;
    size_t used = 0;
    for (int i = 0; i < l->n; i++) {
        char old[MPI_MAX_INFO_VAL + 1];
        int had = 0;
        if (app != MPI_INFO_NULL)
            MPI_Info_get(app, l->hint[i]->name, MPI_MAX_INFO_VAL, old, &had);
        if (had && strcmp(old, l->hint[i]->value.text) != 0 && used < nlen)
            used += (size_t)snprintf(notes + used, nlen - used,
                                     "\n%s=%s overrides the application's %s", l->hint[i]->name,
                                     l->hint[i]->value.text, old);
        MPI_Info_set(info, l->hint[i]->name, l->hint[i]->value.text);
    }
    return info;
}

/* Verbose report: each requested hint and what ROMIO actually kept. */
static void report_hints(const char *filename, MPI_File fh, const hint_list *l, const char *notes)
{
    char fs[64], line[8192];
    iot_fstype(filename, fs, sizeof fs);
    MPI_Info got = MPI_INFO_NULL;
    PMPI_File_get_info(fh, &got);
    size_t used = 0;
    for (int i = 0; i < l->n && used < sizeof line; i++) {
        const iot_entry *e = l->hint[i];
        char val[MPI_MAX_INFO_VAL + 1], where[96];
        int flag = 0;
        if (got != MPI_INFO_NULL)
            MPI_Info_get(got, e->name, MPI_MAX_INFO_VAL, val, &flag);
        const char *verdict = !flag                             ? "NOT in effect: dropped by MPI-IO"
                              : strcmp(val, e->value.text) == 0 ? "in effect"
                                                                : "NOT in effect: MPI-IO uses ";
        if (flag && e->layer == IOT_LAYER_FS && !iot_fs_stripes(fs) &&
            strncmp(e->name, "striping", 8) == 0)
            verdict = "echoed by MPI-IO but without effect on this file system";
        used += (size_t)snprintf(line + used, sizeof line - used, "%s%s=%s (%s%s) [%s]",
                                 i ? "\n" : "", e->name, e->value.text, verdict,
                                 flag && strcmp(val, e->value.text) != 0 ? val : "",
                                 iot_origin(e, where, sizeof where));
    }
    if (got != MPI_INFO_NULL)
        MPI_Info_free(&got);
    char header[1200];
    snprintf(header, sizeof header, "MPI_File_open %s on %s: mpi-io hints%s", filename, fs,
             l->n ? ":" : ": nothing to apply");
    if (used < sizeof line)
        snprintf(line + used, sizeof line - used, "%s", notes);
    iot_log_block(header, line);
}

static iot_idmap handles; /* MPI_File -> {capture record, access mode}; under the capture lock */

/* The hints in effect, read back with MPI_File_get_info, as "key=value\n" lines. */
static void read_hints(MPI_File fh, char *hints, size_t size)
{
    MPI_Info info;
    int nkeys = 0;
    if (PMPI_File_get_info(fh, &info) != MPI_SUCCESS)
        return;
    MPI_Info_get_nkeys(info, &nkeys);
    size_t used = 0;
    for (int i = 0; i < nkeys && used < size; i++) {
        char key[MPI_MAX_INFO_KEY + 1], val[MPI_MAX_INFO_VAL + 1];
        int flag = 0;
        MPI_Info_get_nthkey(info, i, key);
        MPI_Info_get(info, key, MPI_MAX_INFO_VAL, val, &flag);
        if (flag && !strchr(val, '\n'))
            used += (size_t)snprintf(hints + used, size - used, "%s=%s\n", key, val);
    }
    char *last = used >= size ? strrchr(hints, '\n') : NULL;
    if (used >= size) /* never keep half a line */
        *(last ? last : hints) = '\0';
    MPI_Info_free(&info);
}

/* Capture bookkeeping after an open: the record, and on the communicator's rank 0 the file
 * system type and the hints in effect. */
static void opened(MPI_Comm comm, const char *filename, MPI_File fh, double t, double dt, int outer)
{
    int rec = iot_rec_for(filename, IOT_L_MPIIO);
    int rank = 0, amode = 0;
    PMPI_Comm_rank(comm, &rank);
    PMPI_File_get_amode(fh, &amode);
    char fs[32] = "", hints[IOT_REC_HINTS] = "";
    if (rec >= 0 && rank == 0 && !iot_rec(rec)->hints[0]) { /* MPI calls outside the lock */
        iot_fstype(filename, fs, sizeof fs);
        read_hints(fh, hints, sizeof hints);
    }
    if (rec < 0 || !iot_lock())
        return;
    iot_file_rec *r = iot_rec(rec);
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

IOT_EXPORT int MPI_File_open(MPI_Comm comm, const char *filename, int amode, MPI_Info info,
                             MPI_File *fh)
{
    const iot_settings *s = filename ? iot_active() : NULL;
    if (!s && !iot_capture_on)
        return PMPI_File_open(comm, filename, amode, info, fh);
    hint_list l = {NULL, 0};
    if (s && (l.hint = malloc((size_t)s->count * sizeof *l.hint)))
        iot_settings_each_hint(s, filename, collect, &l);
    char notes[1024] = "";
    MPI_Info use = l.n ? merged_info(&l, info, notes, sizeof notes) : MPI_INFO_NULL;
    int outer = iot_depth++ == 0;
    double t = iot_now();
    int rc = PMPI_File_open(comm, filename, amode, use != MPI_INFO_NULL ? use : info, fh);
    double dt = iot_now() - t;
    iot_depth--;
    if (use != MPI_INFO_NULL)
        MPI_Info_free(&use);
    if (rc == MPI_SUCCESS && iot_capture_on)
        opened(comm, filename, *fh, t, dt, outer);
    int rank = 0;
    PMPI_Comm_rank(comm, &rank);
    if (rc == MPI_SUCCESS && s && iot_g.verbose && rank == 0)
        report_hints(filename, *fh, &l, notes);
    free(l.hint);
    return rc;
}

/* The record of a handle, or -1; the lock must be held. */
static int record_of(MPI_File fh)
{
    int *v = iot_idmap_get(&handles, (uint64_t)(uintptr_t)fh);
    return v ? v[0] : -1;
}

IOT_EXPORT int MPI_File_close(MPI_File *fh)
{
    if (!iot_capture_on)
        return PMPI_File_close(fh);
    int rec = -1;
    if (iot_lock()) { /* forgotten first: another thread may get the same handle at once */
        rec = record_of(*fh);
        iot_idmap_del(&handles, (uint64_t)(uintptr_t)*fh);
        iot_unlock();
    }
    int outer = iot_depth++ == 0;
    double t = iot_now();
    int rc = PMPI_File_close(fh);
    double end = iot_now();
    iot_depth--;
    if (rec >= 0 && iot_lock()) {
        iot_count_close(rec, IOT_L_MPIIO, "MPI_File_close", t, end, outer);
        iot_unlock();
    }
    return rc;
}

IOT_EXPORT int MPI_File_sync(MPI_File fh)
{
    if (!iot_capture_on)
        return PMPI_File_sync(fh);
    int outer = iot_depth++ == 0;
    double t = iot_now();
    int rc = PMPI_File_sync(fh);
    double dt = iot_now() - t;
    iot_depth--;
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

/* Traced with the displacement as offset and the file type's size as size. */
IOT_EXPORT int MPI_File_set_view(MPI_File fh, MPI_Offset disp, MPI_Datatype etype,
                                 MPI_Datatype filetype, const char *datarep, MPI_Info info)
{
    if (!iot_capture_on)
        return PMPI_File_set_view(fh, disp, etype, filetype, datarep, info);
    int outer = iot_depth++ == 0;
    double t = iot_now();
    int rc = PMPI_File_set_view(fh, disp, etype, filetype, datarep, info);
    double dt = iot_now() - t;
    iot_depth--;
    MPI_Count size = 0;
    if (iot_trace_on && rc == MPI_SUCCESS)
        PMPI_Type_size_x(filetype, &size);
    if (iot_lock()) {
        int rec = record_of(fh);
        if (rec >= 0)
            iot_rec(rec)->c[IOT_L_MPIIO].set_views++;
        iot_count_meta(rec, IOT_L_MPIIO, dt, outer);
        if (iot_trace_on && rec >= 0)
            iot_trace(IOT_L_MPIIO, "MPI_File_set_view", rec, size > 0 ? (uint64_t)size : 0,
                      disp >= 0 ? disp : -1, 0, t, dt);
        iot_unlock();
    }
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

/* Accounts one data call: bytes moved (or posted, for the nonblocking and split calls). */
static void accessed(MPI_File fh, const char *func, int is_write, int is_coll, int64_t offset,
                     uint64_t bytes, double t, double dt, int outer)
{
    if (!iot_lock())
        return;
    int rec = record_of(fh);
    iot_count_access(rec, IOT_L_MPIIO, is_write, offset, bytes, dt, outer);
    if (rec >= 0) {
        iot_counters *c = &iot_rec(rec)->c[IOT_L_MPIIO];
        if (is_write)
            is_coll ? c->coll_writes++ : c->indep_writes++;
        else
            is_coll ? c->coll_reads++ : c->indep_reads++;
        if (iot_trace_on)
            iot_trace(IOT_L_MPIIO, func, rec, bytes, offset, is_coll, t, dt);
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

/* The common body: BYTES is how the moved bytes are known once the call returned. */
#define IOT_MPIIO_BODY(fn, AT, ARGS, IS_WRITE, IS_COLL, BYTES)                                     \
    if (!iot_capture_on)                                                                           \
        return P##fn ARGS;                                                                         \
    int want = iot_trace_wanted();                                                                 \
    MPI_Offset pos = want ? IOT_AT_POS_##AT : -1;                                                  \
    int outer = iot_depth++ == 0;                                                                  \
    if (IS_COLL)                                                                                   \
        iot_coll_calls++;                                                                          \
    double t = iot_now();                                                                          \
    int rc = P##fn ARGS;                                                                           \
    double dt = iot_now() - t;                                                                     \
    iot_depth--;                                                                                   \
    int ok = rc == MPI_SUCCESS;                                                                    \
    accessed(fh, #fn, IS_WRITE, IS_COLL, ok &&want ? byte_offset(fh, pos) : -1, ok ? BYTES : 0, t, \
             dt, outer);                                                                           \
    return rc;

/* Blocking: bytes from the status (a local one when the application ignores it). */
#define IOT_MPIIO_BLOCKING(fn, AT, BUF, CNT, IS_WRITE, IS_COLL)                                    \
    IOT_EXPORT int fn(MPI_File fh, IOT_AT_PARAM_##AT BUF buf, CNT count, MPI_Datatype type,        \
                      MPI_Status *status)                                                          \
    {                                                                                              \
        MPI_Status mine;                                                                           \
        MPI_Status *st = status == MPI_STATUS_IGNORE && iot_capture_on ? &mine : status;           \
        IOT_MPIIO_BODY(fn, AT, (fh, IOT_AT_ARG_##AT buf, count, type, st), IS_WRITE, IS_COLL,      \
                       status_bytes(st, count, type))                                              \
    }

/* Nonblocking: bytes counted when posted (what completes is known only to MPI_Wait). */
#define IOT_MPIIO_POST(fn, AT, BUF, CNT, IS_WRITE, IS_COLL)                                        \
    IOT_EXPORT int fn(MPI_File fh, IOT_AT_PARAM_##AT BUF buf, CNT count, MPI_Datatype type,        \
                      MPI_Request *req)                                                            \
    {                                                                                              \
        IOT_MPIIO_BODY(fn, AT, (fh, IOT_AT_ARG_##AT buf, count, type, req), IS_WRITE, IS_COLL,     \
                       requested_bytes(count, type))                                               \
    }

/* Split collectives: the operation and its bytes at _begin, the rest of its time at _end. */
#define IOT_MPIIO_BEGIN(fn, AT, BUF, CNT, IS_WRITE)                                                \
    IOT_EXPORT int fn(MPI_File fh, IOT_AT_PARAM_##AT BUF buf, CNT count, MPI_Datatype type)        \
    {                                                                                              \
        IOT_MPIIO_BODY(fn, AT, (fh, IOT_AT_ARG_##AT buf, count, type), IS_WRITE, 1,                \
                       requested_bytes(count, type))                                               \
    }

#define IOT_MPIIO_END(fn, BUF, IS_WRITE)                                                           \
    IOT_EXPORT int fn(MPI_File fh, BUF buf, MPI_Status *status)                                    \
    {                                                                                              \
        if (!iot_capture_on)                                                                       \
            return P##fn(fh, buf, status);                                                         \
        int outer = iot_depth++ == 0;                                                              \
        double t = iot_now();                                                                      \
        int rc = P##fn(fh, buf, status);                                                           \
        double dt = iot_now() - t;                                                                 \
        iot_depth--;                                                                               \
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

IOT_EXPORT int MPI_Finalize(void)
{
    iot_capture_finish(MPI_COMM_WORLD);
    return PMPI_Finalize();
}
