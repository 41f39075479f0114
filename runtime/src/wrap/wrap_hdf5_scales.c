/* Dimension scales (the high-level library's H5DSset_scale, H5DSattach_scale,
 * H5DSdetach_scale; netCDF-4 makes one per dimension): interposed when the application loads
 * libhdf5_hl, traced so that a skeleton makes the same scales (their CLASS, NAME,
 * DIMENSION_LIST and REFERENCE_LIST attributes are HDF5's own work inside these calls). The
 * attribute calls they make inside count as they do for the application. In the trace:
 * H5DSset_scale on the scale's dataset, size the bytes of its name with the NUL (0 without
 * one); H5DSattach_scale and H5DSdetach_scale on the dataset, dims [the scale's dataset index
 * in the trace], mode the dimension. The lookups netCDF-4 makes at every open (H5DSis_scale,
 * H5DSget_num_scales, H5DSiterate_scales in wrap_hdf5_lookup.c: they read DIMENSION_LIST, whose
 * references live in the file's global heap) are timed as HDF5 metadata and traced on their
 * dataset, mode the dimension (0 for H5DSis_scale). Without capture a call costs one branch. */
#include "capture/capture.h"
#include "core/core.h"
#include "trace/trace.h"
#include "wrap/wrap.h"
#include "wrap/wrap_hdf5.h"

#include <string.h>

/* hdf5_hl.h's, declared here: the runtime has no link-time dependency on HDF5 */
herr_t H5DSset_scale(hid_t dsid, const char *dimname);
herr_t H5DSattach_scale(hid_t did, hid_t dsid, unsigned int idx);
herr_t H5DSdetach_scale(hid_t did, hid_t dsid, unsigned int idx);
htri_t H5DSis_scale(hid_t did);
int H5DSget_num_scales(hid_t did, unsigned int dim);

/* The trace's index of open dataset id, or -1 (not followed, or anonymous). */
static int traced_index(hid_t id)
{
    int *tv = iot_idmap_get(&traced, (uint64_t)id);
    return tv && tv[0] >= 0 ? tv[0] : -1;
}

/* One scale call on dataset did (traced index ds) of the application's. */
static void trace_scale(const char *func, hid_t did, int ds, uint64_t size, int ndims,
                        const uint64_t *box, int mode, double t, double dt)
{
    if (ds < 0 || !iot_lock())
        return;
    int *v = iot_idmap_get(&dsets, (uint64_t)did);
    iot_trace_h5(func, v ? v[0] : -1, ds, size, -1, mode, ndims, box, t, dt);
    iot_unlock();
}

IOT_EXPORT herr_t H5DSset_scale(hid_t dsid, const char *dimname)
{
    __typeof__(&H5DSset_scale) real = IOT_H5_FN(H5DSset_scale);
    if (!real)
        return -1;
    if (!iot_trace_on)
        return real(dsid, dimname);
    int wanted = iot_trace_wanted();
    IOT_TIMED(real(dsid, dimname));
    (void)outer; /* attribute work: its calls inside count themselves */
    if (wanted && rc >= 0)
        trace_scale("H5DSset_scale", dsid, traced_index(dsid), dimname ? strlen(dimname) + 1 : 0, 0,
                    NULL, 0, t, dt);
    return rc;
}

static herr_t attach_or_detach(const char *func, __typeof__(&H5DSattach_scale) real, hid_t did,
                               hid_t dsid, unsigned int idx)
{
    if (!real)
        return -1;
    if (!iot_trace_on)
        return real(did, dsid, idx);
    int wanted = iot_trace_wanted();
    IOT_TIMED(real(did, dsid, idx));
    (void)outer;
    int scale = traced_index(dsid);
    if (wanted && rc >= 0 && scale >= 0 && idx < 0x7fffffffu) {
        uint64_t box[1] = {(uint64_t)scale};
        trace_scale(func, did, traced_index(did), 0, 1, box, (int)idx, t, dt);
    }
    return rc;
}

IOT_EXPORT herr_t H5DSattach_scale(hid_t did, hid_t dsid, unsigned int idx)
{
    return attach_or_detach("H5DSattach_scale", IOT_H5_FN(H5DSattach_scale), did, dsid, idx);
}

IOT_EXPORT herr_t H5DSdetach_scale(hid_t did, hid_t dsid, unsigned int idx)
{
    return attach_or_detach("H5DSdetach_scale", IOT_H5_FN(H5DSdetach_scale), did, dsid, idx);
}

void iot_trace_scale_lookup(const char *func, hid_t did, int dim, double t, double dt)
{
    trace_scale(func, did, traced_index(did), 0, 0, NULL, dim, t, dt);
}

IOT_EXPORT htri_t H5DSis_scale(hid_t did)
{
    __typeof__(&H5DSis_scale) real = IOT_H5_FN(H5DSis_scale);
    if (!real)
        return -1;
    if (!iot_capture_on)
        return real(did);
    int wanted = iot_trace_wanted();
    IOT_TIMED(real(did));
    if (rc >= 0)
        iot_h5_lookup_done(did, dt, outer);
    if (rc >= 0 && wanted)
        iot_trace_scale_lookup("H5DSis_scale", did, 0, t, dt);
    return rc;
}

IOT_EXPORT int H5DSget_num_scales(hid_t did, unsigned int dim)
{
    __typeof__(&H5DSget_num_scales) real = IOT_H5_FN(H5DSget_num_scales);
    if (!real)
        return -1;
    if (!iot_capture_on)
        return real(did, dim);
    int wanted = iot_trace_wanted() && dim < 0x7fffffffu;
    IOT_TIMED(real(did, dim));
    if (rc >= 0)
        iot_h5_lookup_done(did, dt, outer);
    if (rc >= 0 && wanted)
        iot_trace_scale_lookup("H5DSget_num_scales", did, (int)dim, t, dt);
    return rc;
}
