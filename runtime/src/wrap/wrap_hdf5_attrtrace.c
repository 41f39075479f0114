/* Attributes in the trace (IOTUNE_TRACE), so that a skeleton makes the same attributes with the
 * same calls: their creations (H5Acreate1, H5Acreate2, H5Acreate_by_name), opens (H5Aopen,
 * H5Aopen_by_name, H5Aopen_idx, H5Aopen_by_idx), writes and reads (H5Awrite, H5Aread), lookups
 * (H5Aexists, H5Aexists_by_name, H5Aiterate2), renames (H5Arename, H5Arename_by_name) and
 * deletions (H5Adelete, H5Adelete_by_name, H5Adelete_by_idx), on the object they are attached
 * to (the wrappers are in wrap_hdf5_attr.c, wrap_hdf5_lookup.c and here). In the trace: funcs
 * H5Acreate, H5Aopen, H5Awrite, H5Aread, H5Aexists, H5Aiterate, H5Arename, H5Adelete, whose dataset
 * column is the attribute's index in the trace's attribute table (iot_trace_attribute: a creation
 * or open describes its dataspace and type, the others give the object and name; H5Aiterate's has
 * no name); size: the bytes an H5Acreate, H5Awrite or H5Aread stores or moves (a variable-length
 * string's: its characters); H5Arename's dims: [the new name's entry]. Group creations
 * (H5Gcreate2) too, as H5Gcreate whose entry is the group's path without a name, and link
 * deletions (H5Ldelete, H5Gunlink) as H5Ldelete on the path deleted.
 *
 * Everything here runs after the application's call succeeded and asks HDF5 only what it holds
 * in memory for ids the application holds (names, types, extents): no file access, no error
 * printed, nothing the application gets back changes. An object without a name (anonymous) or
 * a name that is not UTF-8 text is not traced. Without tracing each wrapper costs one branch. */
#include <stdlib.h>
#include <string.h>

#include "base/idmap.h"
#include "capture/capture.h"
#include "core/core.h"
#include "platform/h5api.h"
#include "trace/trace.h"
#include "wrap/wrap.h"
#include "wrap/wrap_hdf5.h"

/* Attributes the application holds open, opened or created by a traced call: id -> {index in
 * the trace's attribute table, capture record of the file}. Updated under the capture lock. */
static iot_idmap open_attrs;

/* The path of the object loc (obj: a path relative to it; NULL, "" or ".": loc itself) into
 * path; 0 when it has none (anonymous) or it does not fit. */
static int object_path(const iot_h5_api *h, hid_t loc, const char *obj, char *path, size_t len)
{
    if (obj && obj[0] == '/')
        return (size_t)snprintf(path, len, "%s", obj) < len;
    char here[1024];
    iot_h5_quiet quiet;
    iot_h5_quiet_begin(&quiet);
    ssize_t n = h->H5Iget_name ? h->H5Iget_name(loc, here, sizeof here) : -1;
    if (n <= 0 && IOT_H5_CALL(H5Iget_type, loc) == H5I_FILE) /* a file: its root group */
        n = (ssize_t)snprintf(here, sizeof here, "/");
    iot_h5_quiet_end(&quiet);
    if (n <= 0 || (size_t)n >= sizeof here)
        return 0;
    if (!obj || !obj[0] || strcmp(obj, ".") == 0)
        return (size_t)snprintf(path, len, "%s", here) < len;
    int root = strcmp(here, "/") == 0;
    return (size_t)snprintf(path, len, "%s/%s", root ? "" : here, obj) < len;
}

/* The dataspace and element type of an attribute, as the trace describes them. */
static void describe(const iot_h5_api *h, hid_t type, hid_t space, iot_trace_attr_desc *a,
                     uint64_t *dims)
{
    int cls = IOT_H5_CALL(H5Tget_class, type);
    int sign = cls == H5T_INTEGER ? IOT_H5_CALL(H5Tget_sign, type) : -1;
    int order = cls == H5T_INTEGER || cls == H5T_FLOAT ? IOT_H5_CALL(H5Tget_order, type) : -1;
    size_t size = h->H5Tget_size(type);
    a->type_size = size;
    a->type_class = cls;
    a->type_signed = sign == H5T_SGN_2 ? 1 : sign == H5T_SGN_NONE ? 0 : -1;
    a->type_order = order == H5T_ORDER_LE || order == H5T_ORDER_BE ? order : -1;
    a->str_pad = a->str_cset = a->str_variable = -1;
    if (cls == H5T_STRING) {
        a->str_pad = IOT_H5_CALL(H5Tget_strpad, type);
        a->str_cset = IOT_H5_CALL(H5Tget_cset, type);
        a->str_variable = IOT_H5_CALL(H5Tis_variable_str, type) > 0;
    }
    a->space = IOT_H5_CALL(H5Sget_simple_extent_type, space);
    a->ndims = 0;
    if (a->space == H5S_SIMPLE) {
        hsize_t cur[32];
        int n = h->H5Sget_simple_extent_ndims(space);
        if (n < 1 || n > 32 || h->H5Sget_simple_extent_dims(space, cur, NULL) != n)
            return;
        for (int i = 0; i < n; i++)
            dims[i] = cur[i];
        a->ndims = n;
    }
    a->described = cls >= 0 && (a->space == H5S_SCALAR || a->space == H5S_NULL || a->ndims > 0);
}

/* One attribute call of loc's file in the trace; to: a rename's new name; attr: the id to
 * remember for its writes and reads (or H5I_INVALID_HID). */
static void trace_attr(const char *func, hid_t loc, const iot_trace_attr_desc *a,
                       const iot_trace_attr_desc *to, hid_t attr, uint64_t size, double t,
                       double dt)
{
    const iot_h5_api *h = iot_h5_real();
    int rec = record_of(h, loc, NULL);
    if (rec < 0 || !iot_lock())
        return;
    int idx = iot_trace_attribute(a);
    uint64_t box[1] = {0};
    if (to && idx >= 0) {
        int j = iot_trace_attribute(to);
        idx = j >= 0 ? idx : -1;
        box[0] = (uint64_t)j;
    }
    if (idx >= 0)
        iot_trace_h5(func, rec, idx, size, -1, 0, to ? 1 : 0, box, t, dt);
    if (idx >= 0 && attr >= 0)
        iot_idmap_put(&open_attrs, (uint64_t)attr, idx, rec);
    iot_unlock();
}

/* The elements of an attribute's dataspace (0 when unknown or null). */
static uint64_t elements(const iot_h5_api *h, hid_t attr)
{
    hid_t space = IOT_H5_CALL(H5Aget_space, attr);
    if (space < 0)
        return 0;
    hssize_t n = h->H5Sget_simple_extent_npoints(space);
    h->H5Sclose(space);
    return n > 0 ? (uint64_t)n : 0;
}

void iot_attr_made(const char *func, hid_t loc, const char *obj, const char *name, hid_t type,
                   hid_t space, hid_t attr, double t, double dt)
{
    const iot_h5_api *h = iot_h5_real();
    char path[1024], own[1024];
    uint64_t dims[32];
    iot_trace_attr_desc a = {path, name, 0, -1, 0, dims, 0, -1, -1, -1, -1, -1, -1};
    if (!h || !h->H5Fget_name || !object_path(h, loc, obj, path, sizeof path))
        return;
    iot_h5_quiet quiet;
    iot_h5_quiet_begin(&quiet);
    if (!name) { /* opened by index: its name */
        ssize_t n = IOT_H5_CALL(H5Aget_name, attr, sizeof own, own);
        a.name = n > 0 && (size_t)n < sizeof own ? own : NULL;
    }
    int asked = type == H5I_INVALID_HID; /* an open: its type and dataspace asked of it */
    hid_t ty = asked ? IOT_H5_CALL(H5Aget_type, attr) : type;
    hid_t sp = asked ? IOT_H5_CALL(H5Aget_space, attr) : space;
    if (ty >= 0 && sp >= 0)
        describe(h, ty, sp, &a, dims);
    uint64_t size = a.str_variable > 0 ? 0 : elements(h, attr) * a.type_size;
    if (asked && ty >= 0)
        h->H5Tclose(ty);
    if (asked && sp >= 0)
        h->H5Sclose(sp);
    iot_h5_quiet_end(&quiet);
    if (a.name && a.described)
        trace_attr(func, loc, &a, NULL, attr, size, t, dt);
}

void iot_attr_io(const char *func, hid_t attr, hid_t mtype, const void *buf, double t, double dt)
{
    int *v = iot_idmap_get(&open_attrs, (uint64_t)attr);
    const iot_h5_api *h = iot_h5_real();
    if (!v || !h)
        return;
    int idx = v[0], rec = v[1];
    iot_h5_quiet quiet;
    iot_h5_quiet_begin(&quiet);
    uint64_t n = elements(h, attr), size = 0;
    if (IOT_H5_CALL(H5Tis_variable_str, mtype) > 0) { /* its characters */
        const char *const *s = buf;
        for (uint64_t i = 0; s && i < n; i++)
            size += s[i] ? strlen(s[i]) : 0;
    } else {
        hid_t ty = IOT_H5_CALL(H5Aget_type, attr);
        size = ty >= 0 ? n * h->H5Tget_size(ty) : 0;
        if (ty >= 0)
            h->H5Tclose(ty);
    }
    iot_h5_quiet_end(&quiet);
    if (!iot_lock())
        return;
    iot_trace_h5(func, rec, idx, size, -1, 0, 0, NULL, t, dt);
    iot_unlock();
}

void iot_attr_named(const char *func, hid_t loc, const char *obj, const char *name,
                    const char *new_name, double t, double dt)
{
    const iot_h5_api *h = iot_h5_real();
    char path[1024];
    iot_trace_attr_desc a = {path, name, 0, -1, 0, NULL, 0, -1, -1, -1, -1, -1, -1};
    iot_trace_attr_desc to = a;
    to.name = new_name;
    if (!h || !h->H5Fget_name || (!name && strcmp(func, "H5Aiterate") != 0) ||
        !object_path(h, loc, obj, path, sizeof path))
        return;
    trace_attr(func, loc, &a, new_name ? &to : NULL, H5I_INVALID_HID, 0, t, dt);
}

/* A group created (H5Gcreate1, H5Gcreate2; H5Gcreate_anon when H5Olink names it): traced as
 * H5Gcreate on the group's path (an attribute entry without a name), so that a skeleton makes
 * it in the session of its file where the application made it (a group made after the file was
 * opened again was made at the file's creation). */
void iot_group_made(hid_t loc, const char *name, double t, double dt)
{
    const iot_h5_api *h = iot_h5_real();
    char path[1024];
    iot_trace_attr_desc a = {path, NULL, 0, -1, 0, NULL, 0, -1, -1, -1, -1, -1, -1};
    if (!h || !h->H5Fget_name || !object_path(h, loc, name, path, sizeof path))
        return;
    trace_attr("H5Gcreate", loc, &a, NULL, H5I_INVALID_HID, 0, t, dt);
}

/* A link deleted (H5Ldelete, H5Gunlink): traced as H5Ldelete on the path it named (an
 * attribute entry without a name, as a group creation's), whether or not the trace saw the
 * object, so that a skeleton deletes it at the same point. */
void iot_link_deleted(hid_t loc, const char *name, double t, double dt)
{
    const iot_h5_api *h = iot_h5_real();
    char path[1024];
    iot_trace_attr_desc a = {path, NULL, 0, -1, 0, NULL, 0, -1, -1, -1, -1, -1, -1};
    if (!h || !h->H5Fget_name || !name || !name[0] || !object_path(h, loc, name, path, sizeof path))
        return;
    trace_attr("H5Ldelete", loc, &a, NULL, H5I_INVALID_HID, 0, t, dt);
}

void iot_attr_closed(hid_t attr)
{
    if (open_attrs.used && iot_idmap_get(&open_attrs, (uint64_t)attr) && iot_lock()) {
        iot_idmap_del(&open_attrs, (uint64_t)attr);
        iot_unlock();
    }
}

/* Renames and deletions: timed as HDF5 metadata (they rewrite the object header), traced. */
#define IOT_ATTR_CHANGE(ret, fn, params, args, func, loc, obj, name, new_name)                     \
    IOT_EXPORT ret fn params                                                                       \
    {                                                                                              \
        __typeof__(&fn) real = IOT_H5_FN(fn);                                                      \
        if (!real)                                                                                 \
            return -1;                                                                             \
        if (!(new_name))                                                                           \
            iot_h5_space_freed(loc); /* a deletion (wrap_hdf5_free.c) */                           \
        if (!iot_capture_on)                                                                       \
            return real args;                                                                      \
        int wanted = iot_trace_wanted();                                                           \
        IOT_TIMED(real args);                                                                      \
        if (rc >= 0)                                                                               \
            iot_h5_lookup_done(loc, dt, outer);                                                    \
        if (rc >= 0 && wanted)                                                                     \
            iot_attr_named(func, loc, obj, name, new_name, t, dt);                                 \
        return rc;                                                                                 \
    }

IOT_ATTR_CHANGE(herr_t, H5Arename, (hid_t loc, const char *old_name, const char *new_name),
                (loc, old_name, new_name), "H5Arename", loc, NULL, old_name, new_name)
IOT_ATTR_CHANGE(herr_t, H5Arename_by_name,
                (hid_t loc, const char *obj, const char *old_name, const char *new_name,
                 hid_t lapl),
                (loc, obj, old_name, new_name, lapl), "H5Arename", loc, obj, old_name, new_name)
IOT_ATTR_CHANGE(herr_t, H5Adelete, (hid_t loc, const char *name), (loc, name), "H5Adelete", loc,
                NULL, name, NULL)
IOT_ATTR_CHANGE(herr_t, H5Adelete_by_name,
                (hid_t loc, const char *obj, const char *name, hid_t lapl), (loc, obj, name, lapl),
                "H5Adelete", loc, obj, name, NULL)

/* A deletion by index: the attribute's name is asked before it is gone (only when traced), so
 * the skeleton deletes the same attribute by name. */
static char *name_by_idx(hid_t loc, const char *obj, H5_index_t idx_type, H5_iter_order_t order,
                         hsize_t n, hid_t lapl)
{
    iot_h5_quiet quiet;
    iot_h5_quiet_begin(&quiet);
    char *name = NULL;
    ssize_t len = IOT_H5_CALL(H5Aget_name_by_idx, loc, obj, idx_type, order, n, NULL, 0, lapl);
    if (len > 0 && len < 65536 && (name = malloc((size_t)len + 1)) &&
        IOT_H5_CALL(H5Aget_name_by_idx, loc, obj, idx_type, order, n, name, (size_t)len + 1,
                    lapl) != len) {
        free(name);
        name = NULL;
    }
    iot_h5_quiet_end(&quiet);
    return name;
}

IOT_EXPORT herr_t H5Adelete_by_idx(hid_t loc, const char *obj, H5_index_t idx_type,
                                   H5_iter_order_t order, hsize_t n, hid_t lapl)
{
    __typeof__(&H5Adelete_by_idx) real = IOT_H5_FN(H5Adelete_by_idx);
    if (!real)
        return -1;
    iot_h5_space_freed(loc); /* wrap_hdf5_free.c */
    if (!iot_capture_on)
        return real(loc, obj, idx_type, order, n, lapl);
    int wanted = iot_trace_wanted();
    char *name = wanted && obj ? name_by_idx(loc, obj, idx_type, order, n, lapl) : NULL;
    IOT_TIMED(real(loc, obj, idx_type, order, n, lapl));
    if (rc >= 0)
        iot_h5_lookup_done(loc, dt, outer);
    if (rc >= 0 && name)
        iot_attr_named("H5Adelete", loc, obj, name, NULL, t, dt);
    free(name);
    return rc;
}

IOT_EXPORT herr_t H5Aclose(hid_t attr)
{
    __typeof__(&H5Aclose) real = IOT_H5_FN(H5Aclose);
    if (!real)
        return -1;
    herr_t rc = iot_h5_release(real, attr);
    if (rc >= 0 && open_attrs.used)
        iot_attr_closed(attr);
    return rc;
}
