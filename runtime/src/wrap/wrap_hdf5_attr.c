/* Interposed attribute and group creations (H5Acreate2, H5Acreate_by_name, H5Gcreate2) and
 * the calls that find an attribute by name or read and write it (H5Aopen, H5Aopen_by_name,
 * H5Aexists, H5Aexists_by_name, H5Aread, H5Awrite): timed as HDF5 metadata time, and the
 * creations counted per file in the profile (hdf5.attribute_creates, hdf5.group_creates).
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

IOT_EXPORT hid_t H5Acreate2(hid_t loc, const char *name, hid_t type, hid_t space, hid_t acpl,
                            hid_t aapl)
{
    __typeof__(&H5Acreate2) real = IOT_H5_FN(H5Acreate2);
    if (!real)
        return H5I_INVALID_HID;
    if (!iot_capture_on)
        return real(loc, name, type, space, acpl, aapl);
    IOT_TIMED(real(loc, name, type, space, acpl, aapl));
    if (rc >= 0)
        count_call(loc, ATTRIBUTE, dt, outer);
    return rc;
}

IOT_EXPORT hid_t H5Acreate_by_name(hid_t loc, const char *obj_name, const char *attr_name,
                                   hid_t type, hid_t space, hid_t acpl, hid_t aapl, hid_t lapl)
{
    __typeof__(&H5Acreate_by_name) real = IOT_H5_FN(H5Acreate_by_name);
    if (!real)
        return H5I_INVALID_HID;
    if (!iot_capture_on)
        return real(loc, obj_name, attr_name, type, space, acpl, aapl, lapl);
    IOT_TIMED(real(loc, obj_name, attr_name, type, space, acpl, aapl, lapl));
    if (rc >= 0)
        count_call(loc, ATTRIBUTE, dt, outer);
    return rc;
}

/* Opening an attribute by name scans the object header in the earliest format: timed, not
 * counted. */
IOT_EXPORT hid_t H5Aopen(hid_t obj, const char *name, hid_t aapl)
{
    __typeof__(&H5Aopen) real = IOT_H5_FN(H5Aopen);
    if (!real)
        return H5I_INVALID_HID;
    if (!iot_capture_on)
        return real(obj, name, aapl);
    IOT_TIMED(real(obj, name, aapl));
    if (rc >= 0)
        count_call(obj, LOOKUP, dt, outer);
    return rc;
}

IOT_EXPORT hid_t H5Aopen_by_name(hid_t loc, const char *obj_name, const char *attr_name, hid_t aapl,
                                 hid_t lapl)
{
    __typeof__(&H5Aopen_by_name) real = IOT_H5_FN(H5Aopen_by_name);
    if (!real)
        return H5I_INVALID_HID;
    if (!iot_capture_on)
        return real(loc, obj_name, attr_name, aapl, lapl);
    IOT_TIMED(real(loc, obj_name, attr_name, aapl, lapl));
    if (rc >= 0)
        count_call(loc, LOOKUP, dt, outer);
    return rc;
}

IOT_EXPORT hid_t H5Gcreate2(hid_t loc, const char *name, hid_t lcpl, hid_t gcpl, hid_t gapl)
{
    __typeof__(&H5Gcreate2) real = IOT_H5_FN(H5Gcreate2);
    if (!real)
        return H5I_INVALID_HID;
    if (!iot_capture_on)
        return real(loc, name, lcpl, gcpl, gapl);
    IOT_TIMED(real(loc, name, lcpl, gcpl, gapl));
    if (rc >= 0)
        count_call(loc, GROUP, dt, outer);
    return rc;
}

/* An attribute's value written or read: in the earliest format, found in the object header. */
IOT_EXPORT herr_t H5Awrite(hid_t attr, hid_t type, const void *buf)
{
    __typeof__(&H5Awrite) real = IOT_H5_FN(H5Awrite);
    if (!real)
        return -1;
    if (!iot_capture_on)
        return real(attr, type, buf);
    IOT_TIMED(real(attr, type, buf));
    if (rc >= 0)
        count_call(attr, LOOKUP, dt, outer);
    return rc;
}

IOT_EXPORT herr_t H5Aread(hid_t attr, hid_t type, void *buf)
{
    __typeof__(&H5Aread) real = IOT_H5_FN(H5Aread);
    if (!real)
        return -1;
    if (!iot_capture_on)
        return real(attr, type, buf);
    IOT_TIMED(real(attr, type, buf));
    if (rc >= 0)
        count_call(attr, LOOKUP, dt, outer);
    return rc;
}

/* Whether an attribute of that name exists: a scan of the object header in the earliest
 * format (h5py asks before every attribute it sets). */
IOT_EXPORT htri_t H5Aexists(hid_t obj, const char *name)
{
    __typeof__(&H5Aexists) real = IOT_H5_FN(H5Aexists);
    if (!real)
        return -1;
    if (!iot_capture_on)
        return real(obj, name);
    IOT_TIMED(real(obj, name));
    if (rc >= 0)
        count_call(obj, LOOKUP, dt, outer);
    return rc;
}

IOT_EXPORT htri_t H5Aexists_by_name(hid_t loc, const char *obj_name, const char *attr_name,
                                    hid_t lapl)
{
    __typeof__(&H5Aexists_by_name) real = IOT_H5_FN(H5Aexists_by_name);
    if (!real)
        return -1;
    if (!iot_capture_on)
        return real(loc, obj_name, attr_name, lapl);
    IOT_TIMED(real(loc, obj_name, attr_name, lapl));
    if (rc >= 0)
        count_call(loc, LOOKUP, dt, outer);
    return rc;
}
