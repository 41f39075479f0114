/* Interposed HDF5 lookups an application makes to find its way in a file it opened (netCDF-4 at
 * every open: H5Gopen2, H5Literate over the links, H5Gget_objinfo, H5Aiterate2,
 * H5Aget_num_attrs over the attributes (H5Aopen_idx: wrap_hdf5_attr.c), the high-level
 * H5DSiterate_scales, traced as wrap_hdf5_scales.c traces H5DSis_scale and H5DSget_num_scales):
 * timed as HDF5 metadata time, as the attribute lookups of wrap_hdf5_attr.c. Without them the
 * object headers these calls read came through as MPI-IO or POSIX reads of no followed HDF5 call,
 * and a trace put them beside the application's own raw reads. Without capture a call costs one
 * branch; nothing is ever set here. */
#include "capture/capture.h"
#include "core/core.h"
#include "platform/h5api.h"
#include "trace/trace.h"
#include "wrap/wrap.h"
#include "wrap/wrap_hdf5.h"

#include <stdint.h>

/* hdf5_hl.h's, declared here: the runtime has no link-time dependency on HDF5 */
typedef herr_t (*iot_h5ds_visit)(hid_t dset, unsigned dim, hid_t scale, void *data);
herr_t H5DSiterate_scales(hid_t did, unsigned int dim, int *idx, iot_h5ds_visit visitor,
                          void *data);

/* One wrapper: real call fn(args), timed; loc: the object whose file it counts in; fail: what
 * to return when this HDF5 lacks fn. */
#define IOT_LOOKUP(ret, fn, params, args, loc, fail)                                               \
    IOT_EXPORT ret fn params                                                                       \
    {                                                                                              \
        __typeof__(&fn) real = IOT_H5_FN(fn);                                                      \
        if (!real)                                                                                 \
            return fail;                                                                           \
        if (!iot_capture_on)                                                                       \
            return real args;                                                                      \
        IOT_TIMED(real args);                                                                      \
        if (rc >= 0)                                                                               \
            iot_h5_lookup_done(loc, dt, outer);                                                    \
        return rc;                                                                                 \
    }

IOT_LOOKUP(hid_t, H5Gopen2, (hid_t loc, const char *name, hid_t gapl), (loc, name, gapl), loc,
           H5I_INVALID_HID)
#ifndef H5_NO_DEPRECATED_SYMBOLS
IOT_LOOKUP(herr_t, H5Gget_objinfo, (hid_t loc, const char *name, hbool_t follow, H5G_stat_t *info),
           (loc, name, follow, info), loc, -1)
IOT_LOOKUP(int, H5Aget_num_attrs, (hid_t loc), (loc), loc, -1)
#endif

/* The iterations call the application back: its calls there are its own (an H5Dopen2 inside
 * H5Literate's callback is traced as netCDF-4 made it), so the callback runs at the depth of
 * the iteration's caller, and its time is not the iteration's. */
typedef struct {
    void *op, *data;
    int depth;    /* iot_depth outside the iteration */
    double inner; /* seconds spent in the callback */
} iteration;

#define IOT_CALLBACK(it, call)                                                                     \
    __extension__({                                                                                \
        int inside_ = iot_depth;                                                                   \
        iot_depth = (it)->depth;                                                                   \
        double t0_ = iot_now();                                                                    \
        herr_t r_ = (call);                                                                        \
        (it)->inner += iot_now() - t0_;                                                            \
        iot_depth = inside_;                                                                       \
        r_;                                                                                        \
    })

static herr_t link_visit(hid_t grp, const char *name, const H5L_info_t *info, void *data)
{
    iteration *it = data;
    return IOT_CALLBACK(it, ((H5L_iterate_t)it->op)(grp, name, info, it->data));
}

static herr_t attr_visit(hid_t loc, const char *name, const H5A_info_t *info, void *data)
{
    iteration *it = data;
    return IOT_CALLBACK(it, ((H5A_operator2_t)it->op)(loc, name, info, it->data));
}

static herr_t scale_visit(hid_t did, unsigned dim, hid_t scale, void *data)
{
    iteration *it = data;
    return IOT_CALLBACK(it, ((iot_h5ds_visit)it->op)(did, dim, scale, it->data));
}

/* An iteration: real call expr, with the callback (op) wrapped when there is one; scale_dim
 * >= 0: a dimension scale iteration, traced (dimension scale_dim of dataset loc); -2: an
 * iteration over loc's attributes, traced (H5Aiterate, wrap_hdf5_attrtrace.c). */
#define IOT_ITERATE(fn, loc, op, data, expr_wrapped, expr_plain, scale_dim)                        \
    __typeof__(&fn) real = IOT_H5_FN(fn);                                                          \
    if (!real)                                                                                     \
        return -1;                                                                                 \
    if (!iot_capture_on || !(op))                                                                  \
        return expr_plain;                                                                         \
    int wanted = (scale_dim) != -1 && iot_trace_wanted();                                          \
    iteration it = {(void *)(uintptr_t)(op), (data), iot_depth, 0.0};                              \
    IOT_TIMED(expr_wrapped);                                                                       \
    if (rc >= 0)                                                                                   \
        iot_h5_lookup_done(loc, dt - it.inner, outer);                                             \
    if (rc >= 0 && wanted && (scale_dim) >= 0)                                                     \
        iot_trace_scale_lookup(#fn, loc, (scale_dim), t, dt - it.inner);                           \
    if (rc >= 0 && wanted && (scale_dim) == -2)                                                    \
        iot_attr_named("H5Aiterate", loc, NULL, NULL, NULL, t, dt - it.inner);                     \
    return rc

IOT_EXPORT herr_t H5Literate(hid_t grp, H5_index_t type, H5_iter_order_t order, hsize_t *idx,
                             H5L_iterate_t op, void *data)
{
    IOT_ITERATE(H5Literate, grp, op, data, real(grp, type, order, idx, link_visit, &it),
                real(grp, type, order, idx, op, data), -1);
}

IOT_EXPORT herr_t H5Aiterate2(hid_t loc, H5_index_t type, H5_iter_order_t order, hsize_t *idx,
                              H5A_operator2_t op, void *data)
{
    IOT_ITERATE(H5Aiterate2, loc, op, data, real(loc, type, order, idx, attr_visit, &it),
                real(loc, type, order, idx, op, data), -2);
}

IOT_EXPORT herr_t H5DSiterate_scales(hid_t did, unsigned int dim, int *idx, iot_h5ds_visit visitor,
                                     void *data)
{
    IOT_ITERATE(H5DSiterate_scales, did, visitor, data, real(did, dim, idx, scale_visit, &it),
                real(did, dim, idx, visitor, data), dim < 0x7fffffffu ? (int)dim : -1);
}
