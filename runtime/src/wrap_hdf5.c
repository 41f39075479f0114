/* Interposed HDF5 calls: each applies the settings for its file or dataset, then calls the
 * real function. Without settings they cost one branch. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "apply_hdf5.h"
#include "capture.h"
#include "core.h"
#include "effect_hdf5.h"
#include "idmap.h"
#include "trace.h"
#include "wrap.h"

/* Open datasets the runtime follows: id -> {capture record, forced transfer mode or -1}.
 * Empty, and never consulted, unless transfer_mode is set or capture is on. */
static iot_idmap dsets;
static hid_t xfer_default[2] = {H5I_INVALID_HID, H5I_INVALID_HID};

static int following(void)
{
    return dsets.used || iot_capture_on;
}

/* Where a dataset lives: the file's name and the dataset's full path. */
static void dataset_names(const iot_h5_api *h, hid_t loc, const char *name, char *file, size_t flen,
                          char *path, size_t plen)
{
    file[0] = '\0';
    iot_h5_quiet quiet; /* before the application's call: an invalid loc is its call's error */
    iot_h5_quiet_begin(&quiet);
    if (h->H5Fget_name(loc, file, flen) < 0)
        file[0] = '\0';
    char group[1024] = "";
    if (name[0] != '/' && h->H5Iget_name(loc, group, sizeof group) < 0)
        group[0] = '\0';
    iot_h5_quiet_end(&quiet);
    if (name[0] == '/') {
        snprintf(path, plen, "%s", name);
        return;
    }
    if (strcmp(name, ".") == 0) { /* the object loc itself */
        snprintf(path, plen, "%s", group);
        return;
    }
    int root = group[0] == '\0' || strcmp(group, "/") == 0;
    snprintf(path, plen, "%s/%s", root ? "" : group, name);
}

/* The capture record of an HDF5 object's file (by the file's name). */
static int record_of(const iot_h5_api *h, hid_t obj, const char *known_name)
{
    if (!iot_capture_on)
        return -1;
    char name[1024];
    if (!known_name) {
        if (h->H5Fget_name(obj, name, sizeof name) < 0)
            return -1;
        known_name = name;
    }
    return iot_rec_for(known_name, IOT_L_HDF5);
}

/* Open files the runtime follows (settings or capture): id -> {capture record or -1, unused}. */
static iot_idmap files;

/* A call made first with the control file's lists and, if HDF5 refuses it, once more with the
 * application's own (own = 1). */
typedef hid_t (*h5_call)(const iot_h5_api *real, const void *args, int own);

/* The fail-safe of every call a setting reaches: with settings injected, the attempt is made
 * with HDF5's error printing off (its failure is the runtime's, not the application's); if it
 * fails, the application's own call follows, and its outcome, error stack and errno are what
 * the application sees. why receives HDF5's reason when the settings were withdrawn and the
 * application's call succeeded; it stays empty otherwise. */
static hid_t with_fallback(const iot_h5_api *real, h5_call call, const void *args, int injected,
                           char *why, size_t wlen)
{
    why[0] = '\0';
    if (!injected)
        return call(real, args, 1);
    int err = errno;
    iot_h5_quiet quiet;
    iot_h5_quiet_begin(&quiet);
    hid_t id = call(real, args, 0);
    iot_h5_quiet_end(&quiet);
    if (id >= 0)
        return id;
    iot_h5_failure first;
    iot_h5_failure_keep(&first);
    iot_h5_failure_describe_and_drop(&first, why, wlen);
    errno = err;
    id = call(real, args, 1);
    if (id < 0)
        why[0] = '\0'; /* not the settings: the application's own call fails as well */
    else
        errno = err;
    return id;
}

/* Closes the runtime's copies of property lists; after a failed call its error stack and
 * errno survive the H5Pclose calls. */
static void close_copies(const iot_h5_api *real, hid_t result, const hid_t *copies, int n)
{
    int any = 0;
    for (int i = 0; i < n; i++)
        any |= copies[i] >= 0;
    if (!any)
        return;
    iot_h5_failure kept;
    if (result < 0)
        iot_h5_failure_keep(&kept);
    for (int i = 0; i < n; i++)
        if (copies[i] >= 0)
            real->H5Pclose(copies[i]);
    if (result < 0)
        iot_h5_failure_give_back(&kept);
}

/* One line on stderr (rank 0 of the file's communicator) and a note in the file's profile
 * record: which settings were withdrawn from a call and why. */
static void say_withdrawn(const char *call, const char *file, const char *object,
                          const char *settings, const char *why, int leader, int rec)
{
    char line[1024];
    snprintf(line, sizeof line,
             "%s %s%s%s: HDF5 refused it with the control file's %s (%s): withdrawn, the "
             "application's own settings used",
             call, file, object ? ":" : "", object ? object : "", settings, why);
    if (leader)
        iot_warn_once(line, "%s", line);
    if (rec < 0)
        return;
    /* the profile's record, as for MPI-IO hints: one entry per setting of the list
     * ("name=value, name=value" or a bare name) */
    char reason[640], names[1024];
    snprintf(reason, sizeof reason, "%s%s%s: %s", call, object ? " " : "", object ? object : "",
             why);
    snprintf(names, sizeof names, "%s", settings);
    char *save = NULL;
    for (char *item = strtok_r(names, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
        item += strspn(item, " ");
        char *eq = strchr(item, '=');
        if (eq)
            *eq = '\0';
        iot_rec_withdraw_at(rec, item, eq ? eq + 1 : "", reason);
    }
}

/* Lines of an outcome into a list of the file's record, once each. */
static void merge_lines(char *into, size_t size, const char *lines)
{
    for (const char *line = lines; *line;) {
        size_t len = strcspn(line, "\n");
        char one[1024];
        snprintf(one, sizeof one, "%.*s", (int)len, line);
        iot_outcome_add(into, size, one);
        line += len + (line[len] == '\n');
    }
}

/* What reached a file or dataset (and what did not), kept in the file's profile record. */
static void keep_outcome(int rec, const iot_h5_outcome *out)
{
    if (rec < 0 || (!out->applied[0] && !out->notes[0]) || !iot_lock())
        return;
    iot_file_rec *r = iot_rec(rec);
    merge_lines(r->h5applied, sizeof r->h5applied, out->applied);
    merge_lines(r->h5notes, sizeof r->h5notes, out->notes);
    iot_unlock();
}

typedef struct {
    int create;
    const char *name;
    unsigned flags;
    hid_t fcpl, fapl, tuned;
} file_args;

static hid_t file_call(const iot_h5_api *real, const void *args, int own)
{
    const file_args *a = args;
    hid_t fapl = own ? a->fapl : a->tuned;
    return a->create ? real->H5Fcreate(a->name, a->flags, a->fcpl, fapl)
                     : real->H5Fopen(a->name, a->flags, fapl);
}

/* Outcomes the file system decides before any setting matters: opening a file that does not
 * exist, creating one exclusively that does. The application's own call is then made alone:
 * an attempt with settings would fail as well, and MPI libraries report every failed open. */
static int decided_by_existence(int create, const char *name, unsigned flags)
{
    int err = errno;
    int exists = access(iot_strip_romio_prefix(name), F_OK) == 0;
    errno = err;
    return create ? (flags & 0x0004u) && exists : !exists; /* H5F_ACC_EXCL, without H5open */
}

/* H5Fcreate and H5Fopen: settings for the file, the real call, then bookkeeping. */
static hid_t open_file(int create, const char *name, unsigned flags, hid_t fcpl, hid_t fapl)
{
    const iot_h5_api *real = iot_h5_real();
    const iot_settings *s = iot_active();
    if ((!s && !iot_capture_on) || !name || !real->H5Fcreate || !real->H5Fopen)
        return create ? real->H5Fcreate(name, flags, fcpl, fapl) : real->H5Fopen(name, flags, fapl);
    const char *how = create ? "H5Fcreate" : "H5Fopen";
    iot_file_info info = {0, 1, NULL, 0};
    iot_h5_outcome out = {"", ""};
    hid_t use = s && iot_h5() && !decided_by_existence(create, name, flags)
                    ? iot_apply_fapl(s, how, name, fapl, &info, iot_capture_on ? &out : NULL)
                    : fapl;
    file_args args = {create, name, flags, fcpl, fapl, use};
    char why[512];
    IOT_TIMED(with_fallback(real, file_call, &args, use != fapl, why, sizeof why));
    hid_t fid = rc;
    hid_t copy = use != fapl ? use : H5I_INVALID_HID;
    close_copies(real, fid, &copy, 1);
    if (fid < 0) {
        iot_resolved_free(info.rules);
        return fid;
    }
    char actual[1024];
    const char *known = real->H5Fget_name(fid, actual, sizeof actual) > 0 ? actual : name;
    int rec = record_of(real, fid, known);
    if (why[0]) {
        char list[1024];
        iot_describe_settings(info.rules, NULL, IOT_TARGET_FAPL, list, sizeof list);
        say_withdrawn(how, known, NULL, list, why, info.leader, rec);
    } else if (use != fapl && rec >= 0) {
        iot_readback_file(info.rules, fid, &out); /* collective for MPI-IO, as the open is */
    }
    keep_outcome(rec, &out);
    if (s)
        iot_files_remember(known, &info); /* it keeps info.rules */
    if (iot_lock()) {
        iot_idmap_put(&files, (uint64_t)fid, rec, 0);
        if (rec >= 0) {
            iot_file_rec *r = iot_rec(rec);
            if (create)
                r->c[IOT_L_HDF5].creates++;
            else
                r->c[IOT_L_HDF5].opens++;
            iot_mark_open(rec, t);
            iot_count_meta(rec, IOT_L_HDF5, dt, outer);
            if (iot_trace_on)
                iot_trace(IOT_L_HDF5, how, rec, 0, -1, (int)flags, t, dt);
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

/* A followed file id: its capture record (-1 without capture), or -2 when not followed. */
static int followed_file(hid_t fid)
{
    int *v = iot_idmap_get(&files, (uint64_t)fid); /* lock-free read (idmap.h) */
    return v ? v[0] : -2;
}

/* After the file id fid was let go (H5Fclose, H5Idec_ref): if it is really gone, its
 * settings are forgotten (name: the file's, taken before the call) and its close counted. */
static void file_released(const iot_h5_api *real, hid_t fid, int rec, const char *name, double t,
                          double end, int outer, const char *func)
{
    iot_h5_quiet quiet;
    iot_h5_quiet_begin(&quiet);
    int still = real->H5Iis_valid ? real->H5Iis_valid(fid) > 0 : 0;
    iot_h5_quiet_end(&quiet);
    if (still)
        return; /* another reference holds it open */
    if (name[0])
        iot_files_forget(name);
    if (iot_lock()) {
        iot_idmap_del(&files, (uint64_t)fid);
        if (rec >= 0)
            iot_count_close(rec, IOT_L_HDF5, func, t, end, outer);
        iot_unlock();
    }
}

/* The name of a followed file id, before a call that may release it ("" when unknown). */
static void file_name(const iot_h5_api *real, hid_t fid, char *name, size_t len)
{
    iot_h5_quiet quiet;
    iot_h5_quiet_begin(&quiet);
    ssize_t n = real->H5Fget_name(fid, name, len);
    iot_h5_quiet_end(&quiet);
    if (n <= 0 || (size_t)n >= len)
        name[0] = '\0';
}

IOT_EXPORT herr_t H5Fclose(hid_t fid)
{
    const iot_h5_api *real = iot_h5_real();
    int rec = followed_file(fid);
    if (rec == -2)
        return real->H5Fclose(fid);
    char name[1024];
    file_name(real, fid, name, sizeof name);
    IOT_TIMED(real->H5Fclose(fid));
    if (rc >= 0)
        file_released(real, fid, rec, name, t, t + dt, outer, "H5Fclose");
    return rc;
}

/* Every way to create or open a dataset shares everything but the real call. H5Oopen and
 * H5Oopen_by_idx open any object: it is followed only when it is a dataset. */
typedef enum { CREATE2, CREATE1, OPEN2, OPEN1, OOPEN, OOPEN_BY_IDX, OOPEN_BY_TOKEN } dataset_call;

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

/* Open datasets of a traced run: id -> {index in the trace's dataset table, element size}. */
static iot_idmap traced;

/* Capture bookkeeping after H5Dcreate (space and type given) or H5Dopen (asked of the
 * dataset); the trace learns the dataset's name, extent and element size. */
static void dataset_opened(const iot_h5_api *h, hid_t id, int rec, const char *path, hid_t space,
                           hid_t type, double t, double dt, int outer)
{
    int creating = space != H5I_INVALID_HID;
    hsize_t dims[32];
    uint64_t extent[32];
    int ndims = 0;
    size_t elem = 0;
    if (iot_trace_on) { /* HDF5 calls outside the lock */
        hid_t sp = creating ? space : h->H5Dget_space(id);
        hid_t ty = creating ? type : h->H5Dget_type(id);
        ndims = sp >= 0 ? h->H5Sget_simple_extent_ndims(sp) : -1;
        if (ndims < 0 || ndims > 32 || h->H5Sget_simple_extent_dims(sp, dims, NULL) != ndims)
            ndims = 0;
        for (int d = 0; d < ndims; d++)
            extent[d] = dims[d];
        elem = ty >= 0 ? h->H5Tget_size(ty) : 0;
        if (!creating && sp >= 0)
            h->H5Sclose(sp);
        if (!creating && ty >= 0)
            h->H5Tclose(ty);
    }
    if (!iot_lock())
        return;
    if (creating)
        iot_rec(rec)->c[IOT_L_HDF5].dset_creates++;
    else
        iot_rec(rec)->c[IOT_L_HDF5].dset_opens++;
    iot_count_meta(rec, IOT_L_HDF5, dt, outer);
    if (iot_trace_on) {
        int ds = iot_trace_dataset(rec, path, ndims, extent, elem);
        if (ds >= 0)
            iot_idmap_put(&traced, (uint64_t)id, ds, (int)elem);
        iot_trace_h5(creating ? "H5Dcreate" : "H5Dopen", rec, ds, 0, -1, 0, ndims, extent, t, dt);
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

/* Can the application's access list of an H5Oopen* call carry a chunk cache? H5P_DEFAULT
 * (a new dataset access list) or a dataset access list (copied); a plain link access list
 * keeps its own properties, so the settings are left out. */
static int takes_dapl(const iot_h5_api *real, dataset_call kind, hid_t lapl)
{
    if (kind == OOPEN_BY_TOKEN)
        return 0;
    if (kind != OOPEN && kind != OOPEN_BY_IDX)
        return 1;
    if (lapl == H5P_DEFAULT)
        return 1;
    htri_t isa = IOT_H5_CALL(H5Pisa_class, lapl, real->cls_dapl);
    return isa > 0;
}

static hid_t dataset_call_with_settings(dataset_call kind, dataset_args a)
{
    const iot_h5_api *real = iot_h5_real();
    const iot_settings *s = iot_active();
    int by_object = kind == OOPEN || kind == OOPEN_BY_IDX || kind == OOPEN_BY_TOKEN;
    if ((!s && !iot_capture_on) || !a.name || !iot_h5() || (by_object && !real->H5Iget_type))
        return real_dataset_call(real, kind, &a);
    char file[1024], path[1024], rel[1024];
    opened_name(real, kind, &a, rel, sizeof rel);
    dataset_names(real, a.loc, rel, file, sizeof file, path, sizeof path);
    iot_file_info f = iot_files_lookup(file);
    dataset_args use = a;
    int creating = kind == CREATE1 || kind == CREATE2;
    iot_h5_outcome out = {"", ""}, *keep = iot_capture_on ? &out : NULL;
    if (s && f.tuned && creating) /* MPI-IO files, and sec2 ones with serial_files */
        use.dcpl = iot_apply_dcpl(&f, file, path, a.type, a.space, a.dcpl, keep);
    if (s && f.tuned && rel[0] && takes_dapl(real, kind, a.dapl))
        use.dapl = iot_apply_dapl(&f, file, path, a.dapl, keep);
    dataset_attempt attempt = {kind, &a, &use};
    char why[512];
    int injected = use.dcpl != a.dcpl || use.dapl != a.dapl;
    IOT_TIMED(with_fallback(real, dataset_attempt_call, &attempt, injected, why, sizeof why));
    hid_t id = rc;
    hid_t copies[2] = {use.dcpl != a.dcpl ? use.dcpl : H5I_INVALID_HID,
                       use.dapl != a.dapl ? use.dapl : H5I_INVALID_HID};
    close_copies(real, id, copies, 2);
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
    }
    if (rec >= 0)
        dataset_opened(real, id, rec, path, creating ? a.space : H5I_INVALID_HID,
                       creating ? a.type : H5I_INVALID_HID, t, dt, outer);
    if ((mode >= 0 || rec >= 0) && iot_idmap_put(&dsets, (uint64_t)id, rec, mode) < 0)
        iot_warn_once("dsets-oom", "out of memory: a dataset and later ones are not followed");
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

/* The transfer list for a forced mode: our own list for H5P_DEFAULT; otherwise the
 * application's list set in place (and restored after the call), so that what HDF5 records
 * on it, e.g. H5Pget_mpio_actual_io_mode, stays visible to the application. */
static hid_t transfer_list(const iot_h5_api *h, int mode, hid_t dxpl, H5FD_mpio_xfer_t *saved)
{
    *saved = (H5FD_mpio_xfer_t)-1;
    if (dxpl == H5P_DEFAULT) {
        int k = mode == H5FD_MPIO_COLLECTIVE;
        if (xfer_default[k] < 0) {
            hid_t l = h->H5Pcreate(h->cls_dxpl);
            if (l >= 0 && h->H5Pset_dxpl_mpio(l, (H5FD_mpio_xfer_t)mode) >= 0)
                xfer_default[k] = l;
        }
        return xfer_default[k] >= 0 ? xfer_default[k] : dxpl;
    }
    H5FD_mpio_xfer_t cur;
    if (h->H5Pget_dxpl_mpio(dxpl, &cur) >= 0 && cur != (H5FD_mpio_xfer_t)mode &&
        h->H5Pset_dxpl_mpio(dxpl, (H5FD_mpio_xfer_t)mode) >= 0)
        *saved = cur;
    return dxpl;
}

/* Bytes a transfer moves: the selected points times the memory type's size. */
static uint64_t selected_bytes(const iot_h5_api *h, hid_t dset, hid_t mtype, hid_t mspace,
                               hid_t fspace)
{
    hssize_t n;
    if (mspace != H5S_ALL) {
        n = h->H5Sget_select_npoints(mspace);
    } else if (fspace != H5S_ALL) {
        n = h->H5Sget_select_npoints(fspace);
    } else {
        hid_t space = h->H5Dget_space(dset);
        n = space >= 0 ? h->H5Sget_simple_extent_npoints(space) : 0;
        if (space >= 0)
            h->H5Sclose(space);
    }
    size_t size = h->H5Tget_size(mtype);
    return n > 0 ? (uint64_t)n * size : 0;
}

/* For the trace: the bounding box of the selection in the file and its first element as a
 * byte offset in the dataset (row-major over the extent, elem bytes per element). Returns the
 * number of dimensions, 0 when unknown. */
static int selection_box(const iot_h5_api *h, hid_t dset, hid_t fspace, size_t elem, uint64_t *box,
                         int64_t *offset)
{
    hid_t space = fspace == H5S_ALL ? h->H5Dget_space(dset) : fspace;
    if (space < 0)
        return 0;
    hsize_t dims[32], start[32] = {0}, end[32];
    int n = h->H5Sget_simple_extent_ndims(space);
    int ok = n > 0 && n <= 32 && h->H5Sget_simple_extent_dims(space, dims, NULL) == n;
    if (ok && fspace == H5S_ALL) {
        for (int d = 0; d < n; d++)
            end[d] = dims[d] - 1;
    } else if (ok) {
        /* only called for a transfer that moved bytes: the selection is not empty, so it has
         * bounds and HDF5 has no error to print */
        ok = h->H5Sget_select_bounds && h->H5Sget_select_bounds(space, start, end) >= 0;
    }
    if (fspace == H5S_ALL)
        h->H5Sclose(space);
    if (!ok)
        return 0;
    uint64_t first = 0;
    for (int d = 0; d < n; d++) {
        first = first * dims[d] + start[d];
        box[d] = end[d] - start[d] + 1;
    }
    *offset = elem ? (int64_t)(first * elem) : -1;
    return n;
}

/* Capture bookkeeping of a transfer. */
static void transferred(const iot_h5_api *h, int is_write, hid_t dset, int rec, int coll,
                        uint64_t bytes, hid_t fspace, double t, double dt, int outer)
{
    int *v = iot_trace_on ? iot_idmap_get(&traced, (uint64_t)dset) : NULL;
    int ds = v ? v[0] : -1, ndims = 0;
    uint64_t box[32];
    int64_t offset = -1;
    if (iot_trace_wanted() && bytes) /* HDF5 calls outside the lock */
        ndims = selection_box(h, dset, fspace, v ? (size_t)v[1] : 0, box, &offset);
    if (!iot_lock())
        return;
    iot_count_access(rec, IOT_L_HDF5, is_write, -1, bytes, dt, outer);
    if (rec >= 0) {
        iot_counters *c = &iot_rec(rec)->c[IOT_L_HDF5];
        if (is_write)
            coll ? c->coll_writes++ : c->indep_writes++;
        else
            coll ? c->coll_reads++ : c->indep_reads++;
    }
    if (iot_trace_on)
        iot_trace_h5(is_write ? "H5Dwrite" : "H5Dread", rec, ds, bytes, offset, coll, ndims, box, t,
                     dt);
    iot_unlock();
}

/* A forced transfer mode HDF5 refused: said once per dataset name, and the dataset keeps
 * the application's own mode from now on. */
static void transfer_withdrawn(const iot_h5_api *real, int is_write, hid_t dset, int rec,
                               const char *why)
{
    char file[1024], path[1024];
    dataset_names(real, dset, ".", file, sizeof file, path, sizeof path);
    int *v = iot_idmap_get(&dsets, (uint64_t)dset);
    if (v)
        v[1] = -1;
    iot_file_info f = iot_files_lookup(file);
    say_withdrawn(is_write ? "H5Dwrite" : "H5Dread", file, path, "transfer_mode", why, f.leader,
                  rec);
}

typedef struct {
    int is_write;
    hid_t dset, mtype, mspace, fspace, dxpl, tuned;
    void *buf;
    int mode;                /* forced mode, or -1 */
    H5FD_mpio_xfer_t *saved; /* the application's own mode of its list, set back for its call */
} transfer_args;

static hid_t transfer_call(const iot_h5_api *real, const void *args, int own)
{
    const transfer_args *a = args;
    if (own && *a->saved != (H5FD_mpio_xfer_t)-1) {
        real->H5Pset_dxpl_mpio(a->dxpl, *a->saved);
        *a->saved = (H5FD_mpio_xfer_t)-1;
    }
    hid_t use = own ? a->dxpl : a->tuned;
    return a->is_write ? real->H5Dwrite(a->dset, a->mtype, a->mspace, a->fspace, use, a->buf)
                       : real->H5Dread(a->dset, a->mtype, a->mspace, a->fspace, use, a->buf);
}

/* H5Dwrite and H5Dread: forced transfer mode (withdrawn if HDF5 refuses the call with it) and
 * capture. */
static herr_t transfer(int is_write, hid_t dset, hid_t mtype, hid_t mspace, hid_t fspace,
                       hid_t dxpl, void *buf)
{
    const iot_h5_api *real = iot_h5_real();
    int *v = iot_idmap_get(&dsets, (uint64_t)dset);
    int rec = v ? v[0] : -1, mode = v ? v[1] : -1;
    H5FD_mpio_xfer_t saved = (H5FD_mpio_xfer_t)-1;
    hid_t use = mode >= 0 ? transfer_list(real, mode, dxpl, &saved) : dxpl;
    transfer_args args = {is_write, dset, mtype, mspace, fspace, dxpl, use, buf, mode, &saved};
    int injected = use != dxpl || saved != (H5FD_mpio_xfer_t)-1;
    uint64_t coll_before = iot_coll_calls;
    char why[512];
    IOT_TIMED((herr_t)with_fallback(real, transfer_call, &args, injected, why, sizeof why));
    if (saved != (H5FD_mpio_xfer_t)-1) { /* the application's list as it gave it */
        iot_h5_failure kept;
        if (rc < 0)
            iot_h5_failure_keep(&kept);
        real->H5Pset_dxpl_mpio(dxpl, saved);
        if (rc < 0)
            iot_h5_failure_give_back(&kept);
    }
    if (why[0])
        transfer_withdrawn(real, is_write, dset, rec, why);
    if (iot_capture_on) {
        iot_adapt_transfer(rec, dset, fspace);
        uint64_t bytes = rc >= 0 ? selected_bytes(real, dset, mtype, mspace, fspace) : 0;
        /* the mode HDF5 really used shows in the MPI-IO calls it made (H5Pget_mpio_actual_io_mode
         * would need the application's transfer list, and H5P_DEFAULT has none to ask) */
        int coll = iot_coll_calls != coll_before;
        transferred(real, is_write, dset, rec, coll, bytes, fspace, t, dt, outer);
    }
    return rc;
}

IOT_EXPORT herr_t H5Dwrite(hid_t dset, hid_t mtype, hid_t mspace, hid_t fspace, hid_t dxpl,
                           const void *buf)
{
    if (!following())
        return iot_h5_real()->H5Dwrite(dset, mtype, mspace, fspace, dxpl, buf);
    return transfer(1, dset, mtype, mspace, fspace, dxpl, (void *)buf);
}

IOT_EXPORT herr_t H5Dread(hid_t dset, hid_t mtype, hid_t mspace, hid_t fspace, hid_t dxpl,
                          void *buf)
{
    if (!following())
        return iot_h5_real()->H5Dread(dset, mtype, mspace, fspace, dxpl, buf);
    return transfer(0, dset, mtype, mspace, fspace, dxpl, buf);
}

/* After a successful call that let go of id (H5Dclose, H5Oclose, H5Idec_ref): a dataset the
 * runtime follows is forgotten once it is really closed (no other reference holds it). */
static void dataset_released(const iot_h5_api *real, hid_t id)
{
    if (!iot_idmap_get(&dsets, (uint64_t)id) && !iot_idmap_get(&traced, (uint64_t)id))
        return;
    iot_h5_quiet quiet;
    iot_h5_quiet_begin(&quiet);
    int still = real->H5Iis_valid ? real->H5Iis_valid(id) > 0 : 0;
    iot_h5_quiet_end(&quiet);
    if (still)
        return;
    iot_idmap_del(&dsets, (uint64_t)id);
    if (iot_lock()) {
        iot_idmap_del(&traced, (uint64_t)id);
        iot_unlock();
    }
}

IOT_EXPORT herr_t H5Dclose(hid_t dset)
{
    const iot_h5_api *real = iot_h5_real();
    herr_t rc = real->H5Dclose(dset);
    if (rc >= 0 && (dsets.used || traced.used))
        dataset_released(real, dset);
    return rc;
}

IOT_EXPORT herr_t H5Oclose(hid_t id)
{
    const iot_h5_api *real = iot_h5_real();
    herr_t rc = real->H5Oclose(id);
    if (rc >= 0 && (dsets.used || traced.used))
        dataset_released(real, id);
    return rc;
}

/* h5py lets go of files and datasets this way: the last reference closes them. */
IOT_EXPORT int H5Idec_ref(hid_t id)
{
    const iot_h5_api *real = iot_h5_real();
    int rec = followed_file(id);
    if (rec == -2) {
        int left = real->H5Idec_ref(id);
        if (left == 0 && (dsets.used || traced.used))
            dataset_released(real, id);
        return left;
    }
    char name[1024];
    file_name(real, id, name, sizeof name);
    IOT_TIMED(real->H5Idec_ref(id));
    if (rc == 0)
        file_released(real, id, rec, name, t, t + dt, outer, "H5Fclose");
    return rc;
}
