/* H5Olink: an anonymous dataset (H5Dcreate_anon, h5py's f["a"] = data) gets its name: the
 * transfer mode resolved for the name, the trace's description, and the dataset rules its
 * creation could not reach said. An anonymous group (H5Gcreate_anon) gets its path: traced as
 * a group creation there (the trace names groups by path). */
#include <stdio.h>
#include <string.h>

#include "adapt/adapt.h"
#include "apply/apply_hdf5.h"
#include "apply/effect_hdf5.h"
#include "apply/h5fallback.h"
#include "base/idmap.h"
#include "capture/capture.h"
#include "core/core.h"
#include "trace/trace.h"
#include "wrap/wrap.h"
#include "wrap/wrap_hdf5.h"

iot_idmap anon;

/* The dataset rules of path that its anonymous creation could not reach (the creation and
 * access lists were fixed before the name was known): said and noted, never dropped silently. */
static void note_named_late(const iot_file_info *f, const char *file, const char *path,
                            iot_h5_outcome *out)
{
    char named[1024], nameless[1024], missed[1024] = "", line[2400];
    iot_describe_settings(f->rules, path, -1, named, sizeof named);
    iot_describe_settings(f->rules, "", -1, nameless, sizeof nameless);
    /* the items ("name=value", separated by ", "; a value may hold a comma, never ", ") of
     * the name's that the nameless lack */
    size_t used = 0;
    for (const char *item = named; *item;) {
        const char *end = strstr(item, ", ");
        size_t len = end ? (size_t)(end - item) : strlen(item);
        int found = 0;
        for (const char *at = nameless; *at && !found;) {
            const char *stop = strstr(at, ", ");
            size_t alen = stop ? (size_t)(stop - at) : strlen(at);
            found = alen == len && strncmp(at, item, len) == 0;
            at += alen + (stop ? 2 : 0);
        }
        if (!found && used + len + 3 < sizeof missed)
            used += (size_t)snprintf(missed + used, sizeof missed - used, "%s%.*s",
                                     used ? ", " : "", (int)len, item);
        item += len + (end ? 2 : 0);
    }
    if (!missed[0])
        return;
    snprintf(line, sizeof line,
             "%s: created without a name, linked after (H5Dcreate_anon + H5Olink, h5py's "
             "f[name] = data): %s NOT applied (a dataset rule cannot reach a creation list "
             "fixed before the name; the file-wide settings were)",
             path, missed);
    iot_outcome_add(out->notes, sizeof out->notes, line);
    if (f->leader)
        iot_warn_once(line, "%s:%s", file, line);
}

/* An anonymous dataset gets its name: the transfer mode resolved for the name, the link's
 * time counted, the trace's description (its creation traced now, under the name), and the
 * dataset rules its creation missed said. */
static void dataset_named(const iot_h5_api *real, hid_t id, int rec, hid_t loc, const char *name,
                          double t, double dt, int outer)
{
    char file[1024], path[1024];
    dataset_names(real, loc, name, file, sizeof file, path, sizeof path);
    const iot_settings *s = iot_active();
    if (!s && iot_adapt_on)
        s = &iot_g.settings;
    iot_file_info f = iot_files_lookup(file);
    if (s && f.tuned) {
        int mode = iot_transfer_mode(&f, file, path, id);
        int *v = iot_idmap_get(&dsets, (uint64_t)id);
        if (v)
            v[1] = mode;
        else if (mode >= 0)
            iot_idmap_put(&dsets, (uint64_t)id, -1, mode);
        iot_h5_outcome out = {"", "", ""};
        note_named_late(&f, file, path, &out);
        keep_outcome(rec, &out);
    }
    uint64_t dims[32], maxdims[32], chunks[32];
    iot_trace_dset_desc d = {0, dims, NULL, NULL, 0, -1, -1, -1, -1, 0, {0}, -1, -1};
    if (rec >= 0 && iot_trace_on)
        describe_dataset(real, id, H5I_INVALID_HID, H5I_INVALID_HID, H5I_INVALID_HID, &d, dims,
                         maxdims, chunks);
    if (rec < 0 || !iot_lock())
        return;
    iot_count_meta(rec, IOT_L_HDF5, dt, outer);
    if (iot_trace_on) {
        int ds = iot_trace_dataset(rec, path, &d);
        if (ds >= 0)
            iot_idmap_put(&traced, (uint64_t)id, ds, (int)d.type_size);
        else
            iot_idmap_del(&traced, (uint64_t)id);
        iot_trace_h5("H5Dcreate", rec, ds, 0, -1, 0, d.ndims, dims, t, dt);
    }
    iot_unlock();
}

IOT_EXPORT herr_t H5Olink(hid_t obj, hid_t new_loc, const char *new_name, hid_t lcpl, hid_t lapl)
{
    const iot_h5_api *real = iot_h5_real();
    if (!real->H5Olink)
        return -1;
    if (!anon.used) /* no anonymous dataset was ever followed */
        return real->H5Olink(obj, new_loc, new_name, lcpl, lapl);
    IOT_TIMED(real->H5Olink(obj, new_loc, new_name, lcpl, lapl));
    int *v = rc >= 0 && new_name ? iot_idmap_get(&anon, (uint64_t)obj) : NULL;
    if (!v)
        return rc;
    int rec = v[0], group = v[1] == IOT_ANON_GROUP;
    iot_idmap_del(&anon, (uint64_t)obj); /* its first name is the one it is known by */
    iot_h5_quiet quiet;
    iot_h5_failure kept;
    iot_h5_failure_keep(&kept);
    iot_h5_quiet_begin(&quiet);
    if (group) { /* H5Gcreate_anon + H5Olink: a group made at that path, as by H5Gcreate2 */
        iot_h5_lookup_done(new_loc, dt, outer); /* HDF5 metadata time */
        iot_group_made(new_loc, new_name, t, dt);
    } else
        dataset_named(real, obj, rec, new_loc, new_name, t, dt, outer);
    iot_h5_quiet_end(&quiet);
    iot_h5_failure_give_back(&kept);
    return rc;
}
