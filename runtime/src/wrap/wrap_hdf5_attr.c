/* Interposed attribute and group creations (H5Acreate2, H5Acreate_by_name, H5Gcreate2): only
 * counted, per file, in the profile (hdf5.attribute_creates, hdf5.group_creates). Thousands of
 * attributes on one object are where the file format bounds (libver_low) matter: in the
 * earliest format every attribute lives in the object header and each creation or lookup by
 * name scans them all; from 1.8's format on, HDF5 indexes them past 8 (iotune tune searches
 * libver_low when the baseline shows many, src/iotune/search/inert.py). Without capture a
 * creation costs one branch; nothing is ever set here. */
#include "capture/capture.h"
#include "core/core.h"
#include "platform/h5api.h"
#include "wrap/wrap.h"
#include "wrap/wrap_hdf5.h"

typedef enum { ATTRIBUTE, GROUP } created_kind;

/* One more attribute or group created in loc's file (the created object's id is valid). */
static void count_created(hid_t loc, created_kind kind)
{
    const iot_h5_api *h = iot_h5_real();
    if (!h || !h->H5Fget_name)
        return;
    int rec = record_of(h, loc, NULL);
    if (rec < 0 || !iot_lock())
        return;
    if (kind == ATTRIBUTE)
        iot_rec(rec)->c[IOT_L_HDF5].attr_creates++;
    else
        iot_rec(rec)->c[IOT_L_HDF5].group_creates++;
    iot_unlock();
}

IOT_EXPORT hid_t H5Acreate2(hid_t loc, const char *name, hid_t type, hid_t space, hid_t acpl,
                            hid_t aapl)
{
    __typeof__(&H5Acreate2) real = IOT_H5_FN(H5Acreate2);
    if (!real)
        return H5I_INVALID_HID;
    hid_t id = real(loc, name, type, space, acpl, aapl);
    if (id >= 0 && iot_capture_on)
        count_created(loc, ATTRIBUTE);
    return id;
}

IOT_EXPORT hid_t H5Acreate_by_name(hid_t loc, const char *obj_name, const char *attr_name,
                                   hid_t type, hid_t space, hid_t acpl, hid_t aapl, hid_t lapl)
{
    __typeof__(&H5Acreate_by_name) real = IOT_H5_FN(H5Acreate_by_name);
    if (!real)
        return H5I_INVALID_HID;
    hid_t id = real(loc, obj_name, attr_name, type, space, acpl, aapl, lapl);
    if (id >= 0 && iot_capture_on)
        count_created(loc, ATTRIBUTE);
    return id;
}

IOT_EXPORT hid_t H5Gcreate2(hid_t loc, const char *name, hid_t lcpl, hid_t gcpl, hid_t gapl)
{
    __typeof__(&H5Gcreate2) real = IOT_H5_FN(H5Gcreate2);
    if (!real)
        return H5I_INVALID_HID;
    hid_t id = real(loc, name, lcpl, gcpl, gapl);
    if (id >= 0 && iot_capture_on)
        count_created(loc, GROUP);
    return id;
}
