/* Interposed attribute and group creations (H5Acreate1, H5Acreate2, H5Acreate_by_name,
 * H5Gcreate1, H5Gcreate2, H5Gcreate_anon) and the calls that find an attribute by name or index
 * or read and write it (H5Aopen, H5Aopen_by_name, H5Aopen_by_idx, H5Aopen_idx, H5Aexists,
 * H5Aexists_by_name, H5Aread, H5Awrite): timed as HDF5 metadata time, the creations counted per
 * file in the profile (hdf5.attribute_creates, hdf5.group_creates), and the attribute calls and
 * group creations traced (wrap_hdf5_attrtrace.c).
 * Thousands of attributes on one object are where the file format bounds (libver_low) matter:
 * in the earliest format every attribute lives in the object header and each creation or
 * lookup by name scans them all; from 1.8's format on, HDF5 indexes them past 8 (iotune tune
 * searches libver_low when the baseline shows many, src/iotune/search/inert.py). Without
 * capture a call costs one branch; nothing is ever set here. */
#include "capture/capture.h"
#include "core/core.h"
#include "platform/h5api.h"
#include "wrap/wrap.h"
#include "wrap/wrap_hdf5.h"

typedef enum { ATTRIBUTE, GROUP, LOOKUP } attr_call;

/* One attribute or group call in loc's file: its time is HDF5 metadata time (the run's I/O
 * time, which tune's default objective reads, so a format that makes these calls cheaper
 * shows), and creations are counted. */
static void count_call(hid_t loc, attr_call kind, double dt, int outer)
{
    const iot_h5_api *h = iot_h5_real();
    if (!h || !h->H5Fget_name)
        return;
    int rec = record_of(h, loc, NULL);
    if (rec < 0 || !iot_lock())
        return;
    if (kind == ATTRIBUTE)
        iot_rec(rec)->c[IOT_L_HDF5].attr_creates++;
    else if (kind == GROUP)
        iot_rec(rec)->c[IOT_L_HDF5].group_creates++;
    iot_count_meta(rec, IOT_L_HDF5, dt, outer);
    iot_unlock();
}

void iot_h5_lookup_done(hid_t loc, double dt, int outer)
{
    count_call(loc, LOOKUP, dt, outer);
}

/* One call that makes or opens an object: the real fn (result rc), timed; counted as kind in
 * loc's file; when traced, `made` (an expression of rc, t and dt) records it. */
#define IOT_MADE_BY(fn, args, loc, kind, made)                                                     \
    __typeof__(&fn) real = IOT_H5_FN(fn);                                                          \
    if (!real)                                                                                     \
        return H5I_INVALID_HID;                                                                    \
    if (!iot_capture_on)                                                                           \
        return real args;                                                                          \
    int wanted = iot_trace_wanted();                                                               \
    IOT_TIMED(real args);                                                                          \
    if (rc >= 0)                                                                                   \
        count_call(loc, kind, dt, outer);                                                          \
    if (rc >= 0 && wanted)                                                                         \
        made;                                                                                      \
    return rc

/* One creation or open of an attribute: traced as func, the attribute's object loc (obj: a
 * path from it, or NULL), its name (NULL: asked of it), its type and dataspace
 * (H5I_INVALID_HID: asked of it). */
#define IOT_ATTR_OPEN(expr, args, kind, func, loc, obj, name, type, space)                         \
    IOT_MADE_BY(expr, args, loc, kind, iot_attr_made(func, loc, obj, name, type, space, rc, t, dt))

#ifndef H5_NO_DEPRECATED_SYMBOLS
IOT_EXPORT hid_t H5Acreate1(hid_t loc, const char *name, hid_t type, hid_t space, hid_t acpl)
{
    IOT_ATTR_OPEN(H5Acreate1, (loc, name, type, space, acpl), ATTRIBUTE, "H5Acreate", loc, NULL,
                  name, type, space);
}

IOT_EXPORT hid_t H5Aopen_idx(hid_t loc, unsigned idx)
{
    IOT_ATTR_OPEN(H5Aopen_idx, (loc, idx), LOOKUP, "H5Aopen", loc, NULL, NULL, H5I_INVALID_HID,
                  H5I_INVALID_HID);
}
#endif

IOT_EXPORT hid_t H5Acreate2(hid_t loc, const char *name, hid_t type, hid_t space, hid_t acpl,
                            hid_t aapl)
{
    IOT_ATTR_OPEN(H5Acreate2, (loc, name, type, space, acpl, aapl), ATTRIBUTE, "H5Acreate", loc,
                  NULL, name, type, space);
}

IOT_EXPORT hid_t H5Acreate_by_name(hid_t loc, const char *obj_name, const char *attr_name,
                                   hid_t type, hid_t space, hid_t acpl, hid_t aapl, hid_t lapl)
{
    IOT_ATTR_OPEN(H5Acreate_by_name, (loc, obj_name, attr_name, type, space, acpl, aapl, lapl),
                  ATTRIBUTE, "H5Acreate", loc, obj_name, attr_name, type, space);
}

/* Opening an attribute by name scans the object header in the earliest format: timed, not
 * counted. */
IOT_EXPORT hid_t H5Aopen(hid_t obj, const char *name, hid_t aapl)
{
    IOT_ATTR_OPEN(H5Aopen, (obj, name, aapl), LOOKUP, "H5Aopen", obj, NULL, name, H5I_INVALID_HID,
                  H5I_INVALID_HID);
}

IOT_EXPORT hid_t H5Aopen_by_name(hid_t loc, const char *obj_name, const char *attr_name, hid_t aapl,
                                 hid_t lapl)
{
    IOT_ATTR_OPEN(H5Aopen_by_name, (loc, obj_name, attr_name, aapl, lapl), LOOKUP, "H5Aopen", loc,
                  obj_name, attr_name, H5I_INVALID_HID, H5I_INVALID_HID);
}

IOT_EXPORT hid_t H5Aopen_by_idx(hid_t loc, const char *obj_name, H5_index_t idx_type,
                                H5_iter_order_t order, hsize_t n, hid_t aapl, hid_t lapl)
{
    IOT_ATTR_OPEN(H5Aopen_by_idx, (loc, obj_name, idx_type, order, n, aapl, lapl), LOOKUP,
                  "H5Aopen", loc, obj_name, NULL, H5I_INVALID_HID, H5I_INVALID_HID);
}

/* A group created by name: counted, traced on its path (iot_group_made). */
#define IOT_GROUP_CREATE(fn, args, loc)                                                            \
    IOT_MADE_BY(fn, args, loc, GROUP, iot_group_made(rc, NULL, t, dt))

IOT_EXPORT hid_t H5Gcreate2(hid_t loc, const char *name, hid_t lcpl, hid_t gcpl, hid_t gapl)
{
    IOT_GROUP_CREATE(H5Gcreate2, (loc, name, lcpl, gcpl, gapl), loc);
}

#ifndef H5_NO_DEPRECATED_SYMBOLS
IOT_EXPORT hid_t H5Gcreate1(hid_t loc, const char *name, size_t size_hint)
{
    IOT_GROUP_CREATE(H5Gcreate1, (loc, name, size_hint), loc);
}
#endif

/* A group created without a name: counted now, traced when H5Olink gives it its path
 * (wrap_hdf5_link.c: anonymous objects are remembered in `anon`, groups with IOT_ANON_GROUP). */
IOT_EXPORT hid_t H5Gcreate_anon(hid_t loc, hid_t gcpl, hid_t gapl)
{
    __typeof__(&H5Gcreate_anon) real = IOT_H5_FN(H5Gcreate_anon);
    if (!real)
        return H5I_INVALID_HID;
    if (!iot_capture_on)
        return real(loc, gcpl, gapl);
    int wanted = iot_trace_wanted();
    IOT_TIMED(real(loc, gcpl, gapl));
    if (rc >= 0)
        count_call(loc, GROUP, dt, outer);
    if (rc >= 0 && wanted &&
        iot_idmap_put(&anon, (uint64_t)rc, iot_anon_next(), IOT_ANON_GROUP) < 0)
        iot_warn_once("anon-oom", "out of memory: an anonymous group's name is not learnt");
    return rc;
}

/* An attribute's value written or read: in the earliest format, found in the object header. */
static herr_t transfer(int is_write, hid_t attr, hid_t type, void *buf)
{
    __typeof__(&H5Awrite) wr = is_write ? IOT_H5_FN(H5Awrite) : NULL;
    __typeof__(&H5Aread) rd = is_write ? NULL : IOT_H5_FN(H5Aread);
    if (!wr && !rd)
        return -1;
    if (!iot_capture_on)
        return wr ? wr(attr, type, buf) : rd(attr, type, buf);
    int wanted = iot_trace_wanted();
    IOT_TIMED(wr ? wr(attr, type, buf) : rd(attr, type, buf));
    if (rc >= 0)
        count_call(attr, LOOKUP, dt, outer);
    if (rc >= 0 && wanted)
        iot_attr_io(is_write ? "H5Awrite" : "H5Aread", attr, type, buf, t, dt);
    return rc;
}

IOT_EXPORT herr_t H5Awrite(hid_t attr, hid_t type, const void *buf)
{
    return transfer(1, attr, type, (void *)buf);
}

IOT_EXPORT herr_t H5Aread(hid_t attr, hid_t type, void *buf)
{
    return transfer(0, attr, type, buf);
}

/* Whether an attribute of that name exists: a scan of the object header in the earliest
 * format (h5py asks before every attribute it sets). */
#define IOT_ATTR_EXISTS(real_call, loc, obj, name)                                                 \
    if (!real)                                                                                     \
        return -1;                                                                                 \
    if (!iot_capture_on)                                                                           \
        return real_call;                                                                          \
    int wanted = iot_trace_wanted();                                                               \
    IOT_TIMED(real_call);                                                                          \
    if (rc >= 0)                                                                                   \
        count_call(loc, LOOKUP, dt, outer);                                                        \
    if (rc >= 0 && wanted)                                                                         \
        iot_attr_named("H5Aexists", loc, obj, name, NULL, t, dt);                                  \
    return rc

IOT_EXPORT htri_t H5Aexists(hid_t obj, const char *name)
{
    __typeof__(&H5Aexists) real = IOT_H5_FN(H5Aexists);
    IOT_ATTR_EXISTS(real(obj, name), obj, NULL, name);
}

IOT_EXPORT htri_t H5Aexists_by_name(hid_t loc, const char *obj_name, const char *attr_name,
                                    hid_t lapl)
{
    __typeof__(&H5Aexists_by_name) real = IOT_H5_FN(H5Aexists_by_name);
    IOT_ATTR_EXISTS(real(loc, obj_name, attr_name, lapl), loc, obj_name, attr_name);
}
