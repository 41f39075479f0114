/* Interposed HDF5 calls: each applies the settings for its file or dataset, then calls the
 * real function. Without settings they cost one branch. */
#include <stdio.h>
#include <string.h>

#include "apply_hdf5.h"
#include "capture.h"
#include "core.h"
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
    if (h->H5Fget_name(loc, file, flen) < 0)
        file[0] = '\0';
    if (name[0] == '/') {
        snprintf(path, plen, "%s", name);
        return;
    }
    char group[1024] = "";
    if (h->H5Iget_name(loc, group, sizeof group) < 0)
        group[0] = '\0';
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

static iot_idmap files; /* file id -> {capture record, unused} */

/* H5Fcreate and H5Fopen: settings for the file, the real call, then bookkeeping. */
static hid_t open_file(int create, const char *name, unsigned flags, hid_t fcpl, hid_t fapl)
{
    const iot_h5_api *real = iot_h5_real();
    const iot_settings *s = iot_active();
    if ((!s && !iot_capture_on) || !name || !real->H5Fcreate || !real->H5Fopen)
        return create ? real->H5Fcreate(name, flags, fcpl, fapl) : real->H5Fopen(name, flags, fapl);
    iot_file_info info = {0, 1, NULL};
    hid_t use = s && iot_h5()
                    ? iot_apply_fapl(s, create ? "H5Fcreate" : "H5Fopen", name, fapl, &info)
                    : fapl;
    IOT_TIMED(create ? real->H5Fcreate(name, flags, fcpl, use) : real->H5Fopen(name, flags, use));
    hid_t fid = rc;
    if (use != fapl)
        real->H5Pclose(use);
    if (fid < 0) {
        iot_resolved_free(info.rules);
        return fid;
    }
    char actual[1024];
    const char *known = real->H5Fget_name(fid, actual, sizeof actual) > 0 ? actual : name;
    if (s)
        iot_files_remember(known, &info); /* it keeps info.rules */
    int rec = record_of(real, fid, known);
    if (rec >= 0 && iot_lock()) {
        iot_file_rec *r = iot_rec(rec);
        if (create)
            r->c[IOT_L_HDF5].creates++;
        else
            r->c[IOT_L_HDF5].opens++;
        iot_mark_open(rec, t);
        iot_idmap_put(&files, (uint64_t)fid, rec, 0);
        iot_count_meta(rec, IOT_L_HDF5, dt, outer);
        if (iot_trace_on)
            iot_trace(IOT_L_HDF5, create ? "H5Fcreate" : "H5Fopen", rec, 0, -1, (int)flags, t, dt);
        iot_unlock();
    }
    return fid;
}

/* The file's entry in the table of files with settings loses one open (H5Fget_name is local;
 * HDF5's error printing stays off for an id that is not a file). */
static void forget_file(const iot_h5_api *real, hid_t fid)
{
    char name[1024];
    iot_h5_quiet quiet;
    iot_h5_quiet_begin(&quiet);
    ssize_t n = real->H5Fget_name(fid, name, sizeof name);
    iot_h5_quiet_end(&quiet);
    if (n > 0 && (size_t)n < sizeof name)
        iot_files_forget(name);
}

IOT_EXPORT hid_t H5Fcreate(const char *name, unsigned flags, hid_t fcpl, hid_t fapl)
{
    return open_file(1, name, flags, fcpl, fapl);
}

IOT_EXPORT hid_t H5Fopen(const char *name, unsigned flags, hid_t fapl)
{
    return open_file(0, name, flags, H5P_DEFAULT, fapl);
}

IOT_EXPORT herr_t H5Fclose(hid_t fid)
{
    const iot_h5_api *real = iot_h5_real();
    if (iot_active() && iot_h5())
        forget_file(real, fid);
    if (!iot_capture_on)
        return real->H5Fclose(fid);
    int rec = -1;
    if (iot_lock()) {
        int *v = iot_idmap_get(&files, (uint64_t)fid);
        rec = v ? v[0] : -1;
        iot_unlock();
    }
    IOT_TIMED(real->H5Fclose(fid));
    if (rec >= 0 && iot_lock()) {
        iot_idmap_del(&files, (uint64_t)fid);
        iot_count_close(rec, IOT_L_HDF5, "H5Fclose", t, t + dt, outer);
        iot_unlock();
    }
    return rc;
}

/* The four ways to create or open a dataset share everything but the real call. */
typedef enum { CREATE2, CREATE1, OPEN2, OPEN1 } dataset_call;

typedef struct {
    hid_t loc, type, space, lcpl, dcpl, dapl;
    const char *name;
} dataset_args;

static hid_t real_dataset_call(const iot_h5_api *real, dataset_call kind, const dataset_args *a)
{
    switch (kind) {
    case CREATE2:
        return real->H5Dcreate2(a->loc, a->name, a->type, a->space, a->lcpl, a->dcpl, a->dapl);
    case CREATE1: return real->H5Dcreate1(a->loc, a->name, a->type, a->space, a->dcpl);
    case OPEN2: return real->H5Dopen2(a->loc, a->name, a->dapl);
    case OPEN1: return real->H5Dopen1(a->loc, a->name);
    }
    return H5I_INVALID_HID;
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

static hid_t dataset_call_with_settings(dataset_call kind, dataset_args a)
{
    const iot_h5_api *real = iot_h5_real();
    const iot_settings *s = iot_active();
    if ((!s && !iot_capture_on) || !a.name || !iot_h5())
        return real_dataset_call(real, kind, &a);
    char file[1024], path[1024];
    dataset_names(real, a.loc, a.name, file, sizeof file, path, sizeof path);
    iot_file_info f = iot_files_lookup(file);
    dataset_args use = a;
    int creating = kind == CREATE1 || kind == CREATE2;
    if (s && f.mpio && creating) /* files of other drivers get no settings */
        use.dcpl = iot_apply_dcpl(&f, file, path, a.type, a.space, a.dcpl);
    if (s && f.mpio && (kind == CREATE2 || kind == OPEN2)) /* 1-versions: no access list */
        use.dapl = iot_apply_dapl(&f, file, path, a.dapl);
    IOT_TIMED(real_dataset_call(real, kind, &use));
    hid_t id = rc;
    if (use.dcpl != a.dcpl)
        real->H5Pclose(use.dcpl);
    if (use.dapl != a.dapl)
        real->H5Pclose(use.dapl);
    if (id < 0)
        return id;
    int mode = s ? iot_transfer_mode(&f, file, path, id) : -1;
    int rec = record_of(real, a.loc, file[0] ? file : NULL);
    if (rec >= 0)
        dataset_opened(real, id, rec, path, creating ? a.space : H5I_INVALID_HID,
                       creating ? a.type : H5I_INVALID_HID, t, dt, outer);
    if ((mode >= 0 || rec >= 0) && iot_idmap_put(&dsets, (uint64_t)id, rec, mode) < 0)
        iot_warn_once("dsets-full", "more than %d datasets open: the rest are not followed",
                      IOT_IDMAP_SLOTS);
    return id;
}

IOT_EXPORT hid_t H5Dcreate2(hid_t loc, const char *name, hid_t type, hid_t space, hid_t lcpl,
                            hid_t dcpl, hid_t dapl)
{
    return dataset_call_with_settings(CREATE2,
                                      (dataset_args){loc, type, space, lcpl, dcpl, dapl, name});
}

IOT_EXPORT hid_t H5Dcreate1(hid_t loc, const char *name, hid_t type, hid_t space, hid_t dcpl)
{
    return dataset_call_with_settings(
        CREATE1, (dataset_args){loc, type, space, H5P_DEFAULT, dcpl, H5P_DEFAULT, name});
}

IOT_EXPORT hid_t H5Dopen2(hid_t loc, const char *name, hid_t dapl)
{
    return dataset_call_with_settings(OPEN2, (dataset_args){loc, H5I_INVALID_HID, H5I_INVALID_HID,
                                                            H5P_DEFAULT, H5P_DEFAULT, dapl, name});
}

IOT_EXPORT hid_t H5Dopen1(hid_t loc, const char *name)
{
    return dataset_call_with_settings(OPEN1,
                                      (dataset_args){loc, H5I_INVALID_HID, H5I_INVALID_HID,
                                                     H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT, name});
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

/* H5Dwrite and H5Dread: forced transfer mode and capture. */
static herr_t transfer(int is_write, hid_t dset, hid_t mtype, hid_t mspace, hid_t fspace,
                       hid_t dxpl, void *buf)
{
    const iot_h5_api *real = iot_h5_real();
    int *v = iot_idmap_get(&dsets, (uint64_t)dset);
    int rec = v ? v[0] : -1, mode = v ? v[1] : -1;
    H5FD_mpio_xfer_t saved = (H5FD_mpio_xfer_t)-1;
    hid_t use = mode >= 0 ? transfer_list(real, mode, dxpl, &saved) : dxpl;
    uint64_t coll_before = iot_coll_calls;
    IOT_TIMED(is_write ? real->H5Dwrite(dset, mtype, mspace, fspace, use, buf)
                       : real->H5Dread(dset, mtype, mspace, fspace, use, buf));
    if (saved != (H5FD_mpio_xfer_t)-1)
        real->H5Pset_dxpl_mpio(dxpl, saved);
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

IOT_EXPORT herr_t H5Dclose(hid_t dset)
{
    iot_idmap_del(&dsets, (uint64_t)dset);
    if (iot_trace_on && iot_lock()) {
        iot_idmap_del(&traced, (uint64_t)dset);
        iot_unlock();
    }
    return iot_h5_real()->H5Dclose(dset);
}
