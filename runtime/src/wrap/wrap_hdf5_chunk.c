/* Direct chunk transfers and extents. H5Dwrite_chunk (which the high-level H5DOwrite_chunk calls,
 * e.g. h5py's write_direct_chunk) and H5Dread_chunk move a chunk as stored, past the filters and
 * selections. Counted as independent HDF5 transfers of the chunk's stored bytes, and traced
 * (a skeleton makes the same chunks): size the stored bytes, offset the chunk's first element
 * as a byte offset in the dataset (row-major over the extent, as a transfer's), box the
 * chunk's dimensions clipped to the extent, mode the filter mask. H5Dset_extent is traced with
 * the new extent as its box (a skeleton extends its datasets before writing past their extent).
 * Without capture they cost one branch. */
#include "capture/capture.h"
#include "core/core.h"
#include "trace/trace.h"
#include "wrap/wrap.h"
#include "wrap/wrap_hdf5.h"

/* For the trace (HDF5 calls, outside the lock): where chunk `at` of dataset dset is, as
 * selection_box in wrap_hdf5.c gives a transfer's. Returns the number of dimensions, 0 when
 * unknown. */
static int chunk_box(const iot_h5_api *h, hid_t dset, int ds, size_t elem, const hsize_t *at,
                     uint64_t *box, int64_t *offset)
{
    uint64_t dims[H5S_MAX_RANK];
    hsize_t chunk[H5S_MAX_RANK];
    int n = iot_trace_fixed_extent(ds, dims);
    iot_h5_quiet quiet;
    iot_h5_quiet_begin(&quiet);
    if (!n) {
        hid_t space = h->H5Dget_space(dset);
        hsize_t cur[H5S_MAX_RANK];
        n = space >= 0 ? h->H5Sget_simple_extent_dims(space, cur, NULL) : 0;
        for (int d = 0; d < n; d++)
            dims[d] = cur[d];
        if (space >= 0)
            h->H5Sclose(space);
    }
    hid_t dcpl = n > 0 ? h->H5Dget_create_plist(dset) : H5I_INVALID_HID;
    if (dcpl < 0 || IOT_H5_CALL(H5Pget_chunk, dcpl, n, chunk) != n)
        n = 0;
    if (dcpl >= 0)
        h->H5Pclose(dcpl);
    iot_h5_quiet_end(&quiet);
    uint64_t first = 0;
    for (int d = 0; d < n; d++) {
        if (at[d] >= dims[d])
            return 0; /* HDF5 refused it: the call moved nothing */
        first = first * dims[d] + at[d];
        box[d] = dims[d] - at[d] < chunk[d] ? dims[d] - at[d] : chunk[d];
    }
    *offset = elem ? (int64_t)(first * elem) : -1;
    return n > 0 ? n : 0;
}

static void chunk_done(const iot_h5_api *h, int is_write, hid_t dset, uint32_t filters,
                       const hsize_t *at, uint64_t bytes, double t, double dt, int outer)
{
    int *v = iot_idmap_get(&dsets, (uint64_t)dset);
    int rec = v ? v[0] : -1;
    int *tv = iot_trace_on ? iot_idmap_get(&traced, (uint64_t)dset) : NULL;
    int ds = tv ? tv[0] : -1, ndims = 0;
    uint64_t box[H5S_MAX_RANK];
    int64_t offset = -1;
    if (iot_trace_wanted() && bytes && at && ds != IOT_TRACE_UNNAMED)
        ndims = chunk_box(h, dset, ds, tv ? (size_t)tv[1] : 0, at, box, &offset);
    if (!iot_lock())
        return;
    iot_count_access(rec, IOT_L_HDF5, is_write, -1, bytes, dt, outer);
    if (rec >= 0) {
        iot_counters *c = &iot_rec(rec)->c[IOT_L_HDF5];
        is_write ? c->indep_writes++ : c->indep_reads++;
    }
    if (iot_trace_on && bytes && ds != IOT_TRACE_UNNAMED)
        iot_trace_h5(is_write ? "H5Dwrite_chunk" : "H5Dread_chunk", rec, ds, bytes, offset,
                     (int)(filters & 0x7fffffffu), ndims, box, t, dt);
    iot_unlock();
}

IOT_EXPORT herr_t H5Dwrite_chunk(hid_t dset, hid_t dxpl, uint32_t filters, const hsize_t *offset,
                                 size_t size, const void *buf)
{
    const iot_h5_api *real = iot_h5_real();
    if (!iot_capture_on)
        return real->H5Dwrite_chunk(dset, dxpl, filters, offset, size, buf);
    IOT_TIMED(real->H5Dwrite_chunk(dset, dxpl, filters, offset, size, buf));
    chunk_done(real, 1, dset, filters, offset, rc >= 0 ? size : 0, t, dt, outer);
    return rc;
}

IOT_EXPORT herr_t H5Dread_chunk(hid_t dset, hid_t dxpl, const hsize_t *offset, uint32_t *filters,
                                void *buf)
{
    const iot_h5_api *real = iot_h5_real();
    if (!iot_capture_on)
        return real->H5Dread_chunk(dset, dxpl, offset, filters, buf);
    IOT_TIMED(real->H5Dread_chunk(dset, dxpl, offset, filters, buf));
    hsize_t size = 0;
    if (rc >= 0 && real->H5Dget_chunk_storage_size) {
        iot_h5_quiet quiet;
        iot_h5_quiet_begin(&quiet);
        if (real->H5Dget_chunk_storage_size(dset, offset, &size) < 0)
            size = 0;
        iot_h5_quiet_end(&quiet);
    }
    chunk_done(real, 0, dset, rc >= 0 && filters ? *filters : 0, offset, size, t, dt, outer);
    return rc;
}

IOT_EXPORT herr_t H5Dset_extent(hid_t dset, const hsize_t size[])
{
    const iot_h5_api *real = iot_h5_real();
    iot_h5_extent_shrinks(dset, size); /* fill_time=never's guard (wrap_hdf5_free.c) */
    if (!iot_trace_on)
        return real->H5Dset_extent(dset, size);
    int wanted = iot_trace_wanted();
    IOT_TIMED(real->H5Dset_extent(dset, size));
    (void)outer; /* not a transfer: counts toward no I/O time */
    int *tv = iot_idmap_get(&traced, (uint64_t)dset);
    int ds = tv ? tv[0] : -1, n = 0;
    uint64_t box[H5S_MAX_RANK];
    if (ds >= 0)
        iot_trace_extent_changed(ds); /* even when it failed: HDF5 may have changed it */
    if (wanted && rc >= 0 && ds >= 0 && size) {
        iot_h5_quiet quiet;
        iot_h5_quiet_begin(&quiet);
        hid_t space = real->H5Dget_space(dset);
        n = space >= 0 ? real->H5Sget_simple_extent_ndims(space) : 0;
        n = n > 0 && n <= H5S_MAX_RANK ? n : 0;
        if (space >= 0)
            real->H5Sclose(space);
        iot_h5_quiet_end(&quiet);
        for (int d = 0; d < n; d++)
            box[d] = size[d];
    }
    if (!n || !iot_lock())
        return rc;
    int *v = iot_idmap_get(&dsets, (uint64_t)dset);
    iot_trace_h5("H5Dset_extent", v ? v[0] : -1, ds, 0, -1, 0, n, box, t, dt);
    iot_unlock();
    return rc;
}
