/* Interposed H5Fcreate and H5Fopen: the file's settings resolved and applied to its access
 * list, the fail-safe call, read-back and capture; H5Fflush, counted as HDF5's. */
#include <errno.h>
#include <stdio.h>
#include <unistd.h>

#include "adapt/adapt.h"
#include "apply/apply_hdf5.h"
#include "apply/effect_hdf5.h"
#include "apply/h5fallback.h"
#include "base/env.h"
#include "base/idmap.h"
#include "base/real.h"
#include "capture/capture.h"
#include "core/abi.h"
#include "core/core.h"
#include "trace/trace.h"
#include "wrap/wrap.h"
#include "wrap/wrap_hdf5.h"

typedef struct {
    int create;
    const char *name;
    unsigned flags;
    hid_t fcpl, fapl, tuned;
    hid_t tuned_fcpl; /* H5Fcreate: the creation list with the settings (or fcpl) */
    int existed;      /* H5Fcreate: the file existed before the call */
    int *refused;     /* set when the attempt with the settings failed */
} file_args;

static int file_exists(const char *name)
{
    int err = errno;
    int exists = access(iot_strip_romio_prefix(name), F_OK) == 0;
    errno = err;
    return exists;
}

/* A create refused with the settings may leave the file it made (0 bytes: the driver's open
 * came before HDF5's refusal), and the application's own exclusive create ('w-', 'x') would
 * then fail with "file exists". The file is removed when it did not exist before the call;
 * the ranks of an MPI-IO file all reach the retry's collective open after their removal. */
static void remove_refused_leftover(const file_args *a)
{
    if (!a->create || a->existed || !*a->refused || !file_exists(a->name))
        return;
    int err = errno;
    unlink(iot_strip_romio_prefix(a->name));
    errno = err;
}

/* IOTUNE_TEST_REFUSE=H5Fcreate (tests only): the attempt with the settings fails as a refusal
 * after the driver's open does, the file made and left empty. */
static hid_t refused_for_test(const file_args *a)
{
    FILE *made = iot_real_fopen(iot_strip_romio_prefix(a->name), "a");
    if (made)
        iot_real_fclose(made);
    *a->refused = 1;
    return H5I_INVALID_HID;
}

static hid_t file_call(const iot_h5_api *real, const void *args, int own)
{
    const file_args *a = args;
    hid_t fapl = own ? a->fapl : a->tuned;
    if (!own && a->create && iot_env.refuse_create)
        return refused_for_test(a);
    if (own)
        remove_refused_leftover(a);
    hid_t id = a->create ? real->H5Fcreate(a->name, a->flags, own ? a->fcpl : a->tuned_fcpl, fapl)
                         : real->H5Fopen(a->name, a->flags, fapl);
    if (!own && id < 0)
        *a->refused = 1;
    return id;
}

/* Outcomes the file system decides before any setting matters: opening a file that does not
 * exist, creating one exclusively that does. The application's own call is then made alone:
 * an attempt with settings would fail as well, and MPI libraries report every failed open. */
static int decided_by_existence(int create, int exists, unsigned flags)
{
    return create ? (flags & 0x0004u) && exists : !exists; /* H5F_ACC_EXCL, without H5open */
}

/* Adaptive mode: the settings the ranks of an MPI-IO file agreed on (adapt.h); the fapl's
 * communicator is asked for (a collective duplication, as the call we are inside is). */
static const iot_settings *agreed_settings(const iot_h5_api *real, const char *name, hid_t fapl,
                                           const iot_settings *s)
{
    if (!iot_adapt_on || fapl == H5P_DEFAULT || !iot_h5() || !iot_h5()->parallel ||
        (iot_mpi_state != IOT_MPI_OWN && iot_abi_settle() != IOT_MPI_OWN))
        return s;
    MPI_Comm comm = MPI_COMM_NULL;
    MPI_Info info = MPI_INFO_NULL;
    iot_h5_quiet quiet;
    iot_h5_quiet_begin(&quiet);
    int mpio = real->H5Pget_fapl_mpio(fapl, &comm, &info) >= 0;
    iot_h5_quiet_end(&quiet);
    if (!mpio)
        return s;
    const iot_settings *agreed = iot_adapt_file_settings(comm, name);
    MPI_Comm_free(&comm);
    if (info != MPI_INFO_NULL)
        MPI_Info_free(&info);
    return agreed;
}

/* The format a created file was asked for, for the trace (H5Fcreate's dims): its format bounds
 * (H5F_libver_t low, high), whether object headers record times, the link and attribute
 * creation order flags of its root group, from the application's own lists (fapl, fcpl; HDF5's
 * defaults for H5P_DEFAULT; an H5Fopen has no fcpl). 0 when unknown. */
static int asked_format(hid_t fcpl, hid_t fapl, uint64_t *f)
{
    H5F_libver_t low = H5F_LIBVER_EARLIEST, high = H5F_LIBVER_LATEST;
    int track = 1, order = 0;
    unsigned links = 0;
    iot_h5_quiet quiet;
    iot_h5_quiet_begin(&quiet);
    int ok = fapl == H5P_DEFAULT || IOT_H5_CALL(H5Pget_libver_bounds, fapl, &low, &high) >= 0;
    ok = ok && (fcpl == H5P_DEFAULT || IOT_H5_CALL(H5Pget_link_creation_order, fcpl, &links) >= 0);
    if (ok)
        describe_header(fcpl, &track, &order);
    iot_h5_quiet_end(&quiet);
    if (!ok || track < 0 || order < 0 || (int)low < 0 || (int)high < 0)
        return 0;
    f[0] = (uint64_t)low, f[1] = (uint64_t)high, f[2] = (uint64_t)track, f[3] = links;
    f[4] = (uint64_t)order;
    return 5;
}

/* H5Fcreate and H5Fopen: settings for the file, the real call, then bookkeeping. */
static hid_t open_file(int create, const char *name, unsigned flags, hid_t fcpl, hid_t fapl)
{
    const iot_h5_api *real = iot_h5_real();
    const iot_settings *s = iot_active();
    if ((!s && !iot_capture_on) || !name || !real->H5Fcreate || !real->H5Fopen)
        return create ? real->H5Fcreate(name, flags, fcpl, fapl) : real->H5Fopen(name, flags, fapl);
    /* the agreement waits mostly for the slowest rank, which the call itself waits for without
     * the mode: its time counts as the call's, or the mode's I/O time is biased low */
    double agree = iot_now();
    s = agreed_settings(real, name, fapl, s);
    agree = iot_now() - agree;
    const char *how = create ? "H5Fcreate" : "H5Fopen";
    iot_file_info info = {0, 1, NULL, 0, 0};
    iot_h5_outcome out = {"", "", ""};
    int existed = file_exists(name), refused = 0;
    hid_t use = s && iot_h5() && !decided_by_existence(create, existed, flags)
                    ? iot_apply_fapl(s, how, name, fapl, &info, iot_capture_on ? &out : NULL)
                    : fapl;
    hid_t use_fcpl = create && info.tuned
                         ? iot_apply_fcpl(&info, name, fcpl, use != fapl ? use : H5I_INVALID_HID,
                                          iot_capture_on ? &out : NULL)
                         : fcpl;
    file_args args = {create, name, flags, fcpl, fapl, use, use_fcpl, existed, &refused};
    char why[512];
    IOT_TIMED(
        with_fallback(real, file_call, &args, use != fapl || use_fcpl != fcpl, why, sizeof why));
    hid_t fid = rc;
    hid_t copies[2] = {use != fapl ? use : H5I_INVALID_HID,
                       use_fcpl != fcpl ? use_fcpl : H5I_INVALID_HID};
    if (fid < 0) {
        close_copies(real, fid, copies, 2);
        iot_resolved_free(info.rules);
        return fid;
    }
    uint64_t format[5];
    int nformat = iot_trace_on ? asked_format(create ? fcpl : H5P_DEFAULT, fapl, format) : 0;
    char actual[1024];
    const char *known = real->H5Fget_name(fid, actual, sizeof actual) > 0 ? actual : name;
    int rec = record_of(real, fid, known);
    const char *driver = iot_capture_on ? iot_h5_driver(fapl) : ""; /* the application's */
    if (why[0]) {
        char list[1024];
        iot_describe_settings(info.rules, NULL, IOT_TARGET_FAPL, list, sizeof list);
        say_withdrawn(how, known, NULL, list, why, info.leader, rec);
    } else if ((use != fapl || use_fcpl != fcpl || (iot_adapt_on && info.mpio)) && rec >= 0) {
        iot_readback_file(info.rules, fid, create, use,
                          &out); /* collective for MPI-IO, as the open is */
    }
    close_copies(real, fid, copies, 2);
    keep_outcome(rec, &out);
    info.fresh = create; /* H5Fcreate truncates or makes the file: empty */
    if (s)
        iot_files_remember(known, &info); /* it keeps info.rules */
    if (iot_lock()) {
        iot_idmap_put(&files, (uint64_t)fid, rec, 0);
        if (rec >= 0) {
            iot_file_rec *r = iot_rec(rec);
            snprintf(r->h5driver, sizeof r->h5driver, "%s", driver);
            if (create)
                r->c[IOT_L_HDF5].creates++;
            else
                r->c[IOT_L_HDF5].opens++;
            iot_mark_open(rec, t);
            iot_count_meta(rec, IOT_L_HDF5, dt + agree, outer);
            if (iot_trace_on) /* dims: the format asked (an open: its bounds) */
                iot_trace_h5(how, rec, -1, 0, -1, (int)flags, nformat, format, t, dt);
        }
        iot_unlock();
    }
    return fid;
}

IOT_EXPORT hid_t H5Fcreate(const char *name, unsigned flags, hid_t fcpl, hid_t fapl)
{
    return open_file(1, name, flags, fcpl, fapl);
}

IOT_EXPORT hid_t H5Fopen(const char *name, unsigned flags, hid_t fapl)
{
    return open_file(0, name, flags, H5P_DEFAULT, fapl);
}

/* The capture record of the file an H5Fflush names (a file or any object in it), or -1: the
 * followed ids first; else the object's file by name, asked without printing an error (an id
 * that is not valid fails the flush itself, with its own message). */
static int flushed_record(const iot_h5_api *real, hid_t obj)
{
    int *v = iot_idmap_get(&files, (uint64_t)obj);
    if (!v)
        v = iot_idmap_get(&dsets, (uint64_t)obj);
    if (v)
        return v[0];
    iot_h5_quiet quiet;
    iot_h5_quiet_begin(&quiet);
    int rec = record_of(real, obj, NULL);
    iot_h5_quiet_end(&quiet);
    return rec;
}

/* H5Fflush writes the metadata HDF5 holds through MPI-IO or POSIX: its time is the HDF5
 * layer's, and the calls it makes are HDF5's, not the application's (trace, outermost layer). */
IOT_EXPORT herr_t H5Fflush(hid_t obj, H5F_scope_t scope)
{
    const iot_h5_api *real = iot_h5_real();
    if (!iot_capture_on || !real->H5Fflush)
        return real->H5Fflush ? real->H5Fflush(obj, scope) : -1;
    int rec = flushed_record(real, obj);
    if (rec < 0)
        return real->H5Fflush(obj, scope);
    IOT_TIMED(real->H5Fflush(obj, scope));
    if (iot_lock()) {
        iot_count_meta(rec, IOT_L_HDF5, dt, outer);
        if (iot_trace_on)
            iot_trace(IOT_L_HDF5, "H5Fflush", rec, 0, -1, (int)scope, t, dt);
        iot_unlock();
    }
    return rc;
}
