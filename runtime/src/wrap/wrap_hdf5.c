/* Interposed HDF5 transfers (H5Dwrite, H5Dread): the forced transfer mode, withdrawn if HDF5
 * refuses it, and capture; and the tables and names every HDF5 wrapper shares (wrap_hdf5.h).
 * Without settings or capture a transfer costs one branch. */
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "adapt/adapt.h"
#include "apply/apply_hdf5.h"
#include "apply/h5fallback.h"
#include "apply/resolve.h"
#include "base/idmap.h"
#include "capture/capture.h"
#include "core/core.h"
#include "trace/trace.h"
#include "wrap/wrap.h"
#include "wrap/wrap_hdf5.h"

/* Open datasets the runtime follows: id -> {capture record, transfer code (iot_transfer_mode)
 * or -1}. Empty, and never consulted, unless transfer settings are set or capture is on. */
iot_idmap dsets;
static hid_t
    xfer_default[IOT_XFER_MAX]; /* the runtime's own transfer list per code, made on first use */

static int following(void)
{
    return dsets.used || iot_capture_on;
}

/* Where a dataset lives: the file's name and the dataset's full path. */
void dataset_names(const iot_h5_api *h, hid_t loc, const char *name, char *file, size_t flen,
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
int record_of(const iot_h5_api *h, hid_t obj, const char *known_name)
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

/* Open datasets of a traced run: id -> {index in the trace's dataset table, element size}. */
iot_idmap traced;

/* Open files the runtime follows (settings or capture): id -> {capture record or -1, unused}. */
iot_idmap files;

/* The collective options of a transfer combination put on a transfer list; the thresholds
 * read back through their properties' names where the library has them (no H5Pget_ call of
 * their own): a value the list does not hold is a refusal. */
static herr_t set_options(hid_t l, const iot_xfer *x)
{
    herr_t rc = 0;
    if (x->chunk_opt >= 0)
        rc |= IOT_H5_CALL(H5Pset_dxpl_mpio_chunk_opt, l, (H5FD_mpio_chunk_opt_t)x->chunk_opt);
    if (x->coll_opt >= 0)
        rc |= IOT_H5_CALL(H5Pset_dxpl_mpio_collective_opt, l,
                          (H5FD_mpio_collective_opt_t)x->coll_opt);
    static const char *const names[] = {"mpio_chunk_opt_num", "mpio_chunk_opt_ratio"};
    const long long want[] = {x->chunk_num, x->chunk_ratio};
    for (int i = 0; i < 2; i++) {
        if (want[i] < 0)
            continue;
        rc |= i ? IOT_H5_CALL(H5Pset_dxpl_mpio_chunk_opt_ratio, l, (unsigned)want[i])
                : IOT_H5_CALL(H5Pset_dxpl_mpio_chunk_opt_num, l, (unsigned)want[i]);
        unsigned got = 0;
        if (IOT_H5_CALL(H5Pexist, l, names[i]) > 0 &&
            (IOT_H5_CALL(H5Pget, l, names[i], &got) < 0 || got != (unsigned)want[i]))
            rc = -1;
    }
    return rc;
}

/* The transfer list for a transfer code: our own list for H5P_DEFAULT; otherwise the
 * application's list set in place (and restored after the call), so that what HDF5 records
 * on it, e.g. H5Pget_mpio_actual_io_mode, stays visible to the application; with collective
 * options (which HDF5 cannot read back to restore) a copy of it, closed after the call (*made). */
static hid_t transfer_list(const iot_h5_api *h, int code, hid_t dxpl, H5FD_mpio_xfer_t *saved,
                           hid_t *made)
{
    const iot_xfer *x = iot_xfer_of(code);
    int mode = x ? x->mode : -1;
    *saved = (H5FD_mpio_xfer_t)-1;
    *made = H5I_INVALID_HID;
    if (dxpl == H5P_DEFAULT) {
        if (!x)
            return dxpl;
        if (xfer_default[code] == 0) { /* 0: not made yet, -1: could not be */
            hid_t l = h->H5Pcreate(h->cls_dxpl);
            if (l >= 0 && ((mode >= 0 && h->H5Pset_dxpl_mpio(l, (H5FD_mpio_xfer_t)mode) < 0) ||
                           set_options(l, x) < 0)) {
                h->H5Pclose(l);
                l = H5I_INVALID_HID;
            }
            xfer_default[code] = l;
        }
        return xfer_default[code] > 0 ? xfer_default[code] : dxpl;
    }
    if (x && (x->chunk_opt >= 0 || x->coll_opt >= 0 || x->chunk_num >= 0 || x->chunk_ratio >= 0)) {
        hid_t l = h->H5Pcopy(dxpl);
        if (l >= 0 && ((mode >= 0 && h->H5Pset_dxpl_mpio(l, (H5FD_mpio_xfer_t)mode) < 0) ||
                       set_options(l, x) < 0)) {
            h->H5Pclose(l);
            l = H5I_INVALID_HID;
        }
        *made = l;
        return l >= 0 ? l : dxpl;
    }
    H5FD_mpio_xfer_t cur;
    if (mode >= 0 && h->H5Pget_dxpl_mpio(dxpl, &cur) >= 0 && cur != (H5FD_mpio_xfer_t)mode &&
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
 * byte offset in the dataset (row-major over the extent, elem bytes per element). The extent of
 * a dataset that cannot grow is the trace's (given once, at its open), else HDF5's. Returns the
 * number of dimensions, 0 when unknown. */
static int selection_box(const iot_h5_api *h, hid_t dset, hid_t fspace, int ds, size_t elem,
                         uint64_t *box, int64_t *offset)
{
    uint64_t dims[H5S_MAX_RANK];
    hsize_t start[H5S_MAX_RANK] = {0}, end[H5S_MAX_RANK];
    int n = iot_trace_fixed_extent(ds, dims);
    hid_t space = fspace != H5S_ALL ? fspace : n ? H5I_INVALID_HID : h->H5Dget_space(dset);
    if (!n && space < 0)
        return 0;
    if (!n) { /* the rank comes with the extent: HDF5's rank is at most H5S_MAX_RANK */
        hsize_t cur[H5S_MAX_RANK];
        n = h->H5Sget_simple_extent_dims(space, cur, NULL);
        for (int d = 0; d < n; d++)
            dims[d] = cur[d];
    }
    int ok = n > 0;
    if (ok && fspace == H5S_ALL) {
        for (int d = 0; d < n; d++)
            end[d] = dims[d] - 1;
    } else if (ok) {
        /* only called for a transfer that moved bytes: the selection is not empty, so it has
         * bounds and HDF5 has no error to print */
        ok = h->H5Sget_select_bounds && h->H5Sget_select_bounds(space, start, end) >= 0;
    }
    if (fspace == H5S_ALL && space >= 0)
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

/* For the trace, before a read: is its destination, bytes at buf, memory never touched yet (a
 * new NumPy array's), so that the read faults its pages in? One mincore over at most 64 pages
 * after the first (where an allocator writes its header): 1 when none of them is resident.
 * Asked of reads of 256 KiB or more only: a mincore costs 1.5-2 us here (bench/README.md,
 * "Cost of the preloaded runtime per intercepted call"), little beside such a read. */
static int fresh_memory(const void *buf, uint64_t bytes)
{
    static long page;
    if (!page)
        page = sysconf(_SC_PAGESIZE);
    if (!buf || page <= 0 || bytes < 64 * (uint64_t)page)
        return 0;
    uintptr_t first = ((uintptr_t)buf / (uintptr_t)page + 1) * (uintptr_t)page;
    uintptr_t end = ((uintptr_t)buf + bytes) / (uintptr_t)page * (uintptr_t)page;
    size_t n = end > first ? (end - first) / (size_t)page : 0;
    unsigned char vec[64];
    n = n < sizeof vec ? n : sizeof vec;
    if (!n || mincore((void *)first, n * (size_t)page, vec) != 0)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (vec[i] & 1)
            return 0;
    return 1;
}

/* Capture bookkeeping of a transfer; fresh: a read into untouched memory (the trace's mode bit
 * 2, docs/profile.md). */
static void transferred(const iot_h5_api *h, int is_write, hid_t dset, int rec, int coll, int fresh,
                        uint64_t bytes, hid_t fspace, double t, double dt, int outer)
{
    int *v = iot_trace_on ? iot_idmap_get(&traced, (uint64_t)dset) : NULL;
    int ds = v ? v[0] : -1, ndims = 0;
    int unnamed = ds == IOT_TRACE_UNNAMED; /* counted, not traced (wrap_hdf5.h) */
    uint64_t box[32];
    int64_t offset = -1;
    if (iot_trace_wanted() && bytes && !unnamed) /* HDF5 calls outside the lock */
        ndims = selection_box(h, dset, fspace, ds, v ? (size_t)v[1] : 0, box, &offset);
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
    if (iot_trace_on && !unnamed)
        iot_trace_h5(is_write ? "H5Dwrite" : "H5Dread", rec, ds, bytes, offset, coll | fresh << 1,
                     ndims, box, t, dt);
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
    char list[512];
    iot_describe_settings(f.rules, path, IOT_TARGET_DXPL, list, sizeof list);
    say_withdrawn(is_write ? "H5Dwrite" : "H5Dread", file, path, list, why, f.leader, rec);
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
    hid_t made = H5I_INVALID_HID;
    hid_t use = mode >= 0 ? transfer_list(real, mode, dxpl, &saved, &made) : dxpl;
    transfer_args args = {is_write, dset, mtype, mspace, fspace, dxpl, use, buf, mode, &saved};
    int injected = use != dxpl || saved != (H5FD_mpio_xfer_t)-1;
    uint64_t coll_before = iot_coll_calls;
    int fresh = 0, known = 0; /* a traced read's bytes are found before it (and kept) */
    uint64_t want = 0;
    if (!is_write && iot_capture_on && iot_trace_wanted()) {
        iot_h5_quiet quiet; /* before the application's call: its arguments' errors are its own */
        iot_h5_quiet_begin(&quiet);
        want = selected_bytes(real, dset, mtype, mspace, fspace);
        iot_h5_quiet_end(&quiet);
        fresh = fresh_memory(buf, want);
        known = 1;
    }
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
    close_copies(real, rc, &made, 1);
    if (why[0])
        transfer_withdrawn(real, is_write, dset, rec, why);
    if (iot_capture_on) {
        iot_adapt_transfer(rec, dset, fspace, is_write && rc >= 0); /* failed: nothing written */
        uint64_t bytes = rc < 0  ? 0
                         : known ? want
                                 : selected_bytes(real, dset, mtype, mspace, fspace);
        /* the mode HDF5 really used shows in the MPI-IO calls it made (H5Pget_mpio_actual_io_mode
         * would need the application's transfer list, and H5P_DEFAULT has none to ask) */
        int coll = iot_coll_calls != coll_before;
        transferred(real, is_write, dset, rec, coll, fresh, bytes, fspace, t, dt, outer);
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

/* The fill value the creation list cp sets (HDF5's default list: time ifset, no value): its time,
 * and its bytes in the dataset's type ty when the application set one that fits. */
static void describe_fill(const iot_h5_api *h, hid_t cp, hid_t ty, iot_trace_dset_desc *d)
{
    H5D_fill_time_t when = H5D_FILL_TIME_IFSET;
    H5D_fill_value_t state = H5D_FILL_VALUE_DEFAULT;
    if (cp != H5P_DEFAULT && (cp < 0 || IOT_H5_CALL(H5Pget_fill_time, cp, &when) < 0 ||
                              h->H5Pfill_value_defined(cp, &state) < 0))
        return;
    d->fill_time = when;
    size_t size = ty >= 0 ? h->H5Tget_size(ty) : 0;
    if (state == H5D_FILL_VALUE_USER_DEFINED && size > 0 && size <= IOT_TRACE_FILL_MAX &&
        IOT_H5_CALL(H5Pget_fill_value, cp, ty, d->fill) >= 0)
        d->fill_len = (int)size;
}

/* What an object's creation list cp says of its header (HDF5's default list: times recorded,
 * attribute creation order not tracked): *track 1 or 0, *order the creation order's flags; -1
 * each when unknown. */
void describe_header(hid_t cp, int *track, int *order)
{
    hbool_t t = 1;
    unsigned flags = 0;
    *track = *order = -1;
    if (cp != H5P_DEFAULT && (cp < 0 || IOT_H5_CALL(H5Pget_obj_track_times, cp, &t) < 0 ||
                              IOT_H5_CALL(H5Pget_attr_creation_order, cp, &flags) < 0))
        return;
    *track = t ? 1 : 0;
    *order = (int)flags;
}

/* The trace's description of a dataset (HDF5 calls, outside the lock): space, type and creation
 * list are the application's own when it creates the dataset (what it asked for, not the tuned
 * chunking), else the dataset's. */
void describe_dataset(const iot_h5_api *h, hid_t id, hid_t space, hid_t type, hid_t dcpl,
                      iot_trace_dset_desc *d, uint64_t *dims, uint64_t *maxdims, uint64_t *chunks)
{
    int creating = space != H5I_INVALID_HID;
    hid_t sp = creating ? space : h->H5Dget_space(id);
    hid_t ty = creating ? type : h->H5Dget_type(id);
    hid_t cp = creating ? dcpl : h->H5Dget_create_plist(id);
    hsize_t cur[32], max[32], ch[32];
    int n = sp >= 0 ? h->H5Sget_simple_extent_ndims(sp) : -1;
    if (n < 0 || n > 32 || h->H5Sget_simple_extent_dims(sp, cur, max) != n)
        n = 0;
    for (int i = 0; i < n; i++) {
        dims[i] = cur[i];
        maxdims[i] = max[i] == H5S_UNLIMITED ? UINT64_MAX : max[i];
    }
    int chunked = n > 0 && cp >= 0 && cp != H5P_DEFAULT && h->H5Pget_layout(cp) == H5D_CHUNKED &&
                  IOT_H5_CALL(H5Pget_chunk, cp, n, ch) == n;
    for (int i = 0; chunked && i < n; i++)
        chunks[i] = ch[i];
    int cls = ty >= 0 ? IOT_H5_CALL(H5Tget_class, ty) : -1;
    int sign = cls == H5T_INTEGER ? IOT_H5_CALL(H5Tget_sign, ty) : -1;
    int order = cls == H5T_INTEGER || cls == H5T_FLOAT ? IOT_H5_CALL(H5Tget_order, ty) : -1;
    *d = (iot_trace_dset_desc){n,
                               dims,
                               n ? maxdims : NULL,
                               chunked ? chunks : NULL,
                               ty >= 0 ? h->H5Tget_size(ty) : 0,
                               cls,
                               sign == H5T_SGN_2      ? 1
                               : sign == H5T_SGN_NONE ? 0
                                                      : -1,
                               order == H5T_ORDER_LE || order == H5T_ORDER_BE ? order : -1,
                               -1,
                               0,
                               {0},
                               -1,
                               -1};
    describe_fill(h, cp, ty, d);
    describe_header(cp, &d->track_times, &d->attr_order);
    if (!creating && sp >= 0)
        h->H5Sclose(sp);
    if (!creating && ty >= 0)
        h->H5Tclose(ty);
    if (!creating && cp >= 0)
        h->H5Pclose(cp);
}
