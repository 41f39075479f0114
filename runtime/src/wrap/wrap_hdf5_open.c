/* Interposed dataset and object opens (H5Dcreate1/2, H5Dcreate_anon, H5Dopen1/2, H5Oopen,
 * H5Oopen_by_idx, H5Oopen_by_token): the dataset's creation and access settings, the fail-safe
 * call, the forced transfer mode remembered, and capture (H5Olink, the name an anonymous
 * dataset gets: wrap_hdf5_link.c). */
#include <stdio.h>
#include <string.h>

#include "adapt/adapt.h"
#include "apply/apply_hdf5.h"
#include "apply/effect_hdf5.h"
#include "apply/h5fallback.h"
#include "apply/h5report.h"
#include "base/idmap.h"
#include "capture/capture.h"
#include "core/core.h"
#include "trace/trace.h"
#include "wrap/wrap.h"
#include "wrap/wrap_hdf5.h"

/* Every way to create or open a dataset shares everything but the real call. H5Oopen and
 * H5Oopen_by_idx open any object: it is followed only when it is a dataset. */
typedef enum {
    CREATE2,
    CREATE1,
    CREATE_ANON,
    OPEN2,
    OPEN1,
    OOPEN,
    OOPEN_BY_IDX,
    OOPEN_BY_TOKEN
} dataset_call;

typedef struct {
    hid_t loc, type, space, lcpl, dcpl, dapl;
    const char *name;
    /* H5Oopen_by_idx: the group name is name; the index */
    H5_index_t idx_type;
    H5_iter_order_t order;
    hsize_t n;
    const void *token; /* H5Oopen_by_token: the token's bytes */
} dataset_args;

typedef struct {
    unsigned char bytes[16]; /* H5O_MAX_TOKEN_SIZE of HDF5 1.12 */
} h5o_token;
static hid_t (*real_open_by_token)(hid_t, h5o_token);

typedef struct {
    dataset_call kind;
    const dataset_args *app, *tuned;
} dataset_attempt;

static hid_t real_dataset_call(const iot_h5_api *real, dataset_call kind, const dataset_args *a)
{
    /* the 1-versions take no access list: the 2-versions are the same calls with one */
    switch (kind) {
    case CREATE2:
        return real->H5Dcreate2(a->loc, a->name, a->type, a->space, a->lcpl, a->dcpl, a->dapl);
    case CREATE1:
        return a->dapl == H5P_DEFAULT
                   ? real->H5Dcreate1(a->loc, a->name, a->type, a->space, a->dcpl)
                   : real->H5Dcreate2(a->loc, a->name, a->type, a->space, H5P_DEFAULT, a->dcpl,
                                      a->dapl);
    case CREATE_ANON:
        return real->H5Dcreate_anon
                   ? real->H5Dcreate_anon(a->loc, a->type, a->space, a->dcpl, a->dapl)
                   : H5I_INVALID_HID;
    case OPEN2: return real->H5Dopen2(a->loc, a->name, a->dapl);
    case OPEN1:
        return a->dapl == H5P_DEFAULT ? real->H5Dopen1(a->loc, a->name)
                                      : real->H5Dopen2(a->loc, a->name, a->dapl);
    /* a dataset access list is a link access list too: HDF5 takes its chunk cache */
    case OOPEN: return real->H5Oopen(a->loc, a->name, a->dapl);
    case OOPEN_BY_IDX:
        return real->H5Oopen_by_idx(a->loc, a->name, a->idx_type, a->order, a->n, a->dapl);
    case OOPEN_BY_TOKEN: {
        h5o_token tok;
        memcpy(&tok, a->token, sizeof tok);
        return real_open_by_token ? real_open_by_token(a->loc, tok) : H5I_INVALID_HID;
    }
    }
    return H5I_INVALID_HID;
}

static hid_t dataset_attempt_call(const iot_h5_api *real, const void *args, int own)
{
    const dataset_attempt *a = args;
    return real_dataset_call(real, a->kind, own ? a->app : a->tuned);
}

/* Capture bookkeeping after H5Dcreate (space, type and creation list given) or H5Dopen (asked
 * of the dataset); the trace learns the dataset once (describe_dataset). */
static void dataset_opened(const iot_h5_api *h, hid_t id, int rec, const char *path, hid_t space,
                           hid_t type, hid_t dcpl, double t, double dt, int outer)
{
    int creating = space != H5I_INVALID_HID;
    uint64_t dims[32], maxdims[32], chunks[32];
    iot_trace_dset_desc d = {0, dims, NULL, NULL, 0, -1, -1, -1, -1, 0, {0}, -1, -1};
    if (iot_trace_on) /* HDF5 calls outside the lock */
        describe_dataset(h, id, space, type, dcpl, &d, dims, maxdims, chunks);
    /* the layout in force (the tuned chunking too): a run with no chunked dataset has no use
     * for chunk cache settings (search/inert.py) */
    hid_t cp = h->H5Dget_create_plist(id);
    int chunked = cp >= 0 && h->H5Pget_layout(cp) == H5D_CHUNKED;
    if (cp >= 0)
        h->H5Pclose(cp);
    if (!iot_lock())
        return;
    if (creating)
        iot_rec(rec)->c[IOT_L_HDF5].dset_creates++;
    else
        iot_rec(rec)->c[IOT_L_HDF5].dset_opens++;
    iot_rec(rec)->c[IOT_L_HDF5].chunked_dsets += (uint64_t)chunked;
    iot_count_meta(rec, IOT_L_HDF5, dt, outer);
    if (iot_trace_on) { /* an anonymous dataset is described when it gets its name */
        int ds = path[0] ? iot_trace_dataset(rec, path, &d) : IOT_TRACE_UNNAMED;
        if (ds >= 0 || ds == IOT_TRACE_UNNAMED)
            iot_idmap_put(&traced, (uint64_t)id, ds, (int)d.type_size);
        if (ds != IOT_TRACE_UNNAMED) /* else its H5Olink stands for the creation */
            iot_trace_h5(creating ? "H5Dcreate" : "H5Dopen", rec, ds, 0, -1, 0, d.ndims, dims, t,
                         dt);
    }
    iot_unlock();
}

/* The path an H5Oopen* call opens, relative to its location, for matching dataset rules:
 * H5Oopen's name; for H5Oopen_by_idx the group's name and the n-th link's (asked before the
 * call, errors not printed); "" when unknown (H5Oopen_by_token: known only after). */
static void opened_name(const iot_h5_api *real, dataset_call kind, const dataset_args *a,
                        char *name, size_t len)
{
    name[0] = '\0';
    if (kind != OOPEN_BY_IDX) {
        snprintf(name, len, "%s", kind == OOPEN_BY_TOKEN ? "" : a->name);
        return;
    }
    char link[512];
    iot_h5_quiet quiet;
    iot_h5_quiet_begin(&quiet);
    ssize_t n = real->H5Lget_name_by_idx
                    ? real->H5Lget_name_by_idx(a->loc, a->name, a->idx_type, a->order, a->n, link,
                                               sizeof link, H5P_DEFAULT)
                    : -1;
    iot_h5_quiet_end(&quiet);
    if (n <= 0 || (size_t)n >= sizeof link)
        return;
    int here = strcmp(a->name, ".") == 0 || a->name[0] == '\0';
    snprintf(name, len, "%s%s%s", here ? "" : a->name, here ? "" : "/", link);
}

/* Can the application's access list of a dataset open or create carry a chunk cache?
 * H5P_DEFAULT (a new dataset access list) or a dataset access list (copied); a plain link
 * access list (Debian's h5py 3.7 opens f["name"] with H5Oopen and one) only once merged into
 * a dataset access list (lapl_as_dapl). */
static int takes_dapl(const iot_h5_api *real, dataset_call kind, hid_t list)
{
    if (kind == OOPEN_BY_TOKEN)
        return 0;
    if (list == H5P_DEFAULT)
        return 1;
    htri_t isa = IOT_H5_CALL(H5Pisa_class, list, real->cls_dapl);
    return isa > 0;
}

/* The link access properties of HDF5's API onto a dataset access list (whose class derives
 * from the link access one): soft link depth, external link prefix, file access list, access
 * flags and callback. Property-by-property copying (H5Pcopy_prop) leaves a list that HDF5
 * 1.10 cannot copy again. */
static int copy_link_access(hid_t lapl, hid_t dapl)
{
    size_t nlinks;
    if (IOT_H5_CALL(H5Pget_nlinks, lapl, &nlinks) < 0 ||
        IOT_H5_CALL(H5Pset_nlinks, dapl, nlinks) < 0)
        return -1;
    char prefix[4096];
    ssize_t n = IOT_H5_CALL(H5Pget_elink_prefix, lapl, prefix, sizeof prefix);
    if (n < 0 || (size_t)n >= sizeof prefix ||
        (n > 0 && IOT_H5_CALL(H5Pset_elink_prefix, dapl, prefix) < 0))
        return -1;
    unsigned flags;
    if (IOT_H5_CALL(H5Pget_elink_acc_flags, lapl, &flags) < 0 ||
        IOT_H5_CALL(H5Pset_elink_acc_flags, dapl, flags) < 0)
        return -1;
    H5L_elink_traverse_t cb;
    void *op_data;
    if (IOT_H5_CALL(H5Pget_elink_cb, lapl, &cb, &op_data) < 0 ||
        IOT_H5_CALL(H5Pset_elink_cb, dapl, cb, op_data) < 0)
        return -1;
    hid_t fapl = IOT_H5_CALL(H5Pget_elink_fapl, lapl);
    if (fapl < 0)
        return -1;
    int rc = fapl == H5P_DEFAULT ? 0 : IOT_H5_CALL(H5Pset_elink_fapl, dapl, fapl) < 0 ? -1 : 0;
    if (fapl != H5P_DEFAULT)
        iot_h5_real()->H5Pclose(fapl);
    return rc;
}

/* A dataset access list holding the application's link access properties, or
 * H5I_INVALID_HID when one cannot be carried over; nothing printed, the application's error
 * stack kept. */
static hid_t lapl_as_dapl(const iot_h5_api *real, hid_t lapl)
{
    iot_h5_quiet quiet;
    iot_h5_failure kept;
    iot_h5_failure_keep(&kept);
    iot_h5_quiet_begin(&quiet);
    hid_t dapl = real->H5Pcreate(real->cls_dapl); /* not a link access list: the gets fail */
    if (dapl >= 0 && copy_link_access(lapl, dapl) < 0) {
        real->H5Pclose(dapl);
        dapl = H5I_INVALID_HID;
    }
    iot_h5_quiet_end(&quiet);
    iot_h5_failure_give_back(&kept);
    return dapl;
}

/* The dataset access settings of path that an open could not carry: said (verbose) and noted
 * in the file's profile record, never silently dropped. */
static void note_unreached(const iot_file_info *f, const char *file, const char *path,
                           const char *why, iot_h5_outcome *out)
{
    char list[1024], line[2200];
    iot_describe_settings(f->rules, path, IOT_TARGET_DAPL, list, sizeof list);
    if (!list[0])
        return;
    snprintf(line, sizeof line, "%s: %s NOT applied: %s", path, list, why);
    if (out)
        iot_outcome_add(out->notes, sizeof out->notes, line);
    if (iot_g.verbose && f->leader)
        iot_log("dataset %s:%s", file, line);
}

static hid_t dataset_call_with_settings(dataset_call kind, dataset_args a)
{
    const iot_h5_api *real = iot_h5_real();
    const iot_settings *s = iot_active();
    if (!s && iot_adapt_on) /* the file's agreed rules decide (adapt.h), not this rank's */
        s = &iot_g.settings;
    int by_object = kind == OOPEN || kind == OOPEN_BY_IDX || kind == OOPEN_BY_TOKEN;
    if ((!s && !iot_capture_on) || !a.name || !iot_h5() || (by_object && !real->H5Iget_type))
        return real_dataset_call(real, kind, &a);
    char file[1024], path[1024], rel[1024];
    opened_name(real, kind, &a, rel, sizeof rel);
    dataset_names(real, a.loc, rel, file, sizeof file, path, sizeof path);
    if (kind == CREATE_ANON) /* no name yet (H5Olink gives it): file-wide settings only */
        path[0] = '\0';
    iot_file_info f = iot_files_lookup(file);
    dataset_args use = a;
    int creating = kind == CREATE1 || kind == CREATE2 || kind == CREATE_ANON;
    iot_h5_outcome out = {"", "", ""}, *keep = iot_capture_on ? &out : NULL;
    if (s && f.tuned && creating) { /* MPI-IO files, and sec2 ones with serial_files */
        use.dcpl = iot_apply_dcpl(&f, file, path, a.type, a.space, a.dcpl, keep);
        if (f.fresh > 0 && iot_h5_frees_by_itself(a.dcpl))
            iot_files_space_freed(); /* for fill_time=never's guard (apply/fill_guard.c) */
    }
    hid_t merged = H5I_INVALID_HID; /* the application's link access list as a dapl */
    if (s && f.tuned && (rel[0] || kind == CREATE_ANON)) {
        if (kind != OOPEN_BY_TOKEN && !takes_dapl(real, kind, a.dapl))
            merged = lapl_as_dapl(real, a.dapl);
        if (by_object) /* its report waits until the object is known to be a dataset */
            iot_h5_defer_reports();
        if (merged >= 0 || takes_dapl(real, kind, a.dapl))
            use.dapl = iot_apply_dapl(&f, file, path, merged >= 0 ? merged : a.dapl, keep);
        else if (kind != OOPEN_BY_TOKEN)
            note_unreached(&f, file, path,
                           "opened with an access list that is neither a dataset nor a link "
                           "access list",
                           keep);
        if (use.dapl == merged) /* nothing to set after all: the application's own list */
            use.dapl = a.dapl;
    }
    dataset_attempt attempt = {kind, &a, &use};
    char why[512];
    int injected = use.dcpl != a.dcpl || use.dapl != a.dapl;
    IOT_TIMED(with_fallback(real, dataset_attempt_call, &attempt, injected, why, sizeof why));
    hid_t id = rc;
    hid_t copies[2] = {use.dcpl != a.dcpl ? use.dcpl : H5I_INVALID_HID,
                       use.dapl != a.dapl ? use.dapl : H5I_INVALID_HID};
    close_copies(real, id, copies, 2);
    if (merged >= 0)
        close_copies(real, id, &merged, 1);
    if (by_object)
        iot_h5_end_deferral(id >= 0 && real->H5Iget_type(id) == H5I_DATASET);
    if (id < 0)
        return id;
    if (by_object && real->H5Iget_type(id) != H5I_DATASET)
        return id;                /* a group or a named datatype */
    if (kind == OOPEN_BY_TOKEN) { /* its name is known now */
        ssize_t n = real->H5Iget_name(id, path, sizeof path);
        if (n <= 0 || (size_t)n >= sizeof path)
            path[0] = '\0';
    }
    int rec = record_of(real, a.loc, file[0] ? file : NULL);
    if (why[0]) {
        char list[1024];
        iot_describe_settings(f.rules, path, creating ? -1 : IOT_TARGET_DAPL, list, sizeof list);
        say_withdrawn(creating ? "H5Dcreate" : "H5Dopen", file, path, list, why, f.leader, rec);
    }
    int mode = s ? iot_transfer_mode(&f, file, path, id) : -1;
    if (rec >= 0 && s && f.tuned) {
        iot_readback_dataset(f.rules, path, id, !why[0] && use.dcpl != a.dcpl,
                             !why[0] && use.dapl != a.dapl, mode, &out);
        keep_outcome(rec, &out);
        keep_dataset_counts(rec, f.rules, path, creating, &out);
    }
    if (rec >= 0 && iot_adapt_on)
        iot_adapt_dataset(rec, id, path);
    char traced_path[1100]; /* an anonymous dataset's, or one in an anonymous group: a stand-in */
    if (rec >= 0 && iot_trace_on)
        iot_anon_trace_path(a.loc, rel, kind == CREATE_ANON, path, traced_path, sizeof traced_path);
    if (rec >= 0)
        dataset_opened(real, id, rec, iot_trace_on ? traced_path : path,
                       creating ? a.space : H5I_INVALID_HID, creating ? a.type : H5I_INVALID_HID,
                       a.dcpl, t, dt, outer);
    if ((mode >= 0 || rec >= 0) && iot_idmap_put(&dsets, (uint64_t)id, rec, mode) < 0)
        iot_warn_once("dsets-oom", "out of memory: a dataset and later ones are not followed");
    if (kind == CREATE_ANON && iot_idmap_put(&anon, (uint64_t)id, rec, 0) < 0)
        iot_warn_once("anon-oom", "out of memory: an anonymous dataset's name is not learnt");
    return id;
}

IOT_EXPORT hid_t H5Dcreate2(hid_t loc, const char *name, hid_t type, hid_t space, hid_t lcpl,
                            hid_t dcpl, hid_t dapl)
{
    return dataset_call_with_settings(
        CREATE2, (dataset_args){loc, type, space, lcpl, dcpl, dapl, name, 0, 0, 0, NULL});
}

IOT_EXPORT hid_t H5Dcreate1(hid_t loc, const char *name, hid_t type, hid_t space, hid_t dcpl)
{
    return dataset_call_with_settings(CREATE1, (dataset_args){loc, type, space, H5P_DEFAULT, dcpl,
                                                              H5P_DEFAULT, name, 0, 0, 0, NULL});
}

/* h5py's f["a"] = data: the dataset is created without a name, written, then linked
 * (H5Olink). It gets the file-wide settings (a dataset rule cannot reach a creation list fixed
 * before the name is known: H5Olink says so) and is followed from here. */
IOT_EXPORT hid_t H5Dcreate_anon(hid_t loc, hid_t type, hid_t space, hid_t dcpl, hid_t dapl)
{
    return dataset_call_with_settings(
        CREATE_ANON, (dataset_args){loc, type, space, H5P_DEFAULT, dcpl, dapl, "", 0, 0, 0, NULL});
}

IOT_EXPORT hid_t H5Dopen2(hid_t loc, const char *name, hid_t dapl)
{
    return dataset_call_with_settings(OPEN2, (dataset_args){loc, H5I_INVALID_HID, H5I_INVALID_HID,
                                                            H5P_DEFAULT, H5P_DEFAULT, dapl, name, 0,
                                                            0, 0, NULL});
}

IOT_EXPORT hid_t H5Dopen1(hid_t loc, const char *name)
{
    return dataset_call_with_settings(OPEN1, (dataset_args){loc, H5I_INVALID_HID, H5I_INVALID_HID,
                                                            H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT,
                                                            name, 0, 0, 0, NULL});
}

IOT_EXPORT hid_t H5Oopen(hid_t loc, const char *name, hid_t lapl)
{
    return dataset_call_with_settings(OOPEN, (dataset_args){loc, H5I_INVALID_HID, H5I_INVALID_HID,
                                                            H5P_DEFAULT, H5P_DEFAULT, lapl, name, 0,
                                                            0, 0, NULL});
}

IOT_EXPORT hid_t H5Oopen_by_idx(hid_t loc, const char *group, H5_index_t idx_type,
                                H5_iter_order_t order, hsize_t n, hid_t lapl)
{
    return dataset_call_with_settings(
        OOPEN_BY_IDX, (dataset_args){loc, H5I_INVALID_HID, H5I_INVALID_HID, H5P_DEFAULT,
                                     H5P_DEFAULT, lapl, group, idx_type, order, n, NULL});
}

/* HDF5 1.12 and later: found at run time (this build may have older headers). The token's
 * name is known only after the open, so it gets the transfer mode and is counted, but no
 * access list. */
IOT_EXPORT hid_t H5Oopen_by_token(hid_t loc, h5o_token token);
IOT_EXPORT hid_t H5Oopen_by_token(hid_t loc, h5o_token token)
{
    static int looked;
    if (!__atomic_load_n(&looked, __ATOMIC_ACQUIRE)) {
        real_open_by_token = (hid_t(*)(hid_t, h5o_token))iot_find_symbol("H5Oopen_by_token");
        __atomic_store_n(&looked, 1, __ATOMIC_RELEASE);
    }
    return dataset_call_with_settings(
        OOPEN_BY_TOKEN, (dataset_args){loc, H5I_INVALID_HID, H5I_INVALID_HID, H5P_DEFAULT,
                                       H5P_DEFAULT, H5P_DEFAULT, "", 0, 0, 0, &token});
}
