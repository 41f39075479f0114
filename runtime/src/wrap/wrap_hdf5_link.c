/* H5Olink: an anonymous dataset (H5Dcreate_anon, h5py's f["a"] = data) gets its name: the
 * transfer mode resolved for the name, the trace's description, and the dataset rules its
 * creation could not reach said. An anonymous group (H5Gcreate_anon) gets its path: traced as
 * a group creation there (the trace names groups by path). Linked into an anonymous group, an
 * object's path is that group's, known when it is linked in turn. */
#include <stdio.h>
#include <stdlib.h>
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
static int anon_serial;

int iot_anon_next(void)
{
    return __atomic_add_fetch(&anon_serial, 1, __ATOMIC_RELAXED);
}

/* Anonymous groups linked into an anonymous group (IOT_ANON_NESTED): their number and the path
 * their members are traced under, "(anonymous group OUTER)/NAME" until the outer group's link
 * names it, then the path (HDF5's name of such a group is root-relative: "/NAME"); traced: its
 * creation traced (once the path is one). HDF5 calls are serialised: no lock of its own. */
typedef struct {
    int serial, traced;
    char prefix[1024];
} nested_group;
static nested_group *nested;
static int nnested, cap_nested;

static nested_group *nested_of(int serial)
{
    for (int i = 0; i < nnested; i++)
        if (nested[i].serial == serial)
            return &nested[i];
    return NULL;
}

/* The path an anonymous group's members are traced under: its nested one, or its stand-in. */
static void group_prefix(int serial, char *out, size_t len)
{
    const nested_group *g = nested_of(serial);
    if (g)
        snprintf(out, len, "%s", g->prefix);
    else
        snprintf(out, len, "(anonymous group %d)", serial);
}

static int is_group(const int *v)
{
    return v && (v[1] == IOT_ANON_GROUP || v[1] == IOT_ANON_NESTED);
}

void iot_anon_trace_path(hid_t loc, const char *rel, int anonymous, const char *path, char *out,
                         size_t len)
{
    int *v = anon.used && !anonymous && rel[0] && rel[0] != '/'
                 ? iot_idmap_get(&anon, (uint64_t)loc)
                 : NULL;
    char prefix[1024];
    if (anonymous)
        snprintf(out, len, "(anonymous %d)", iot_anon_next());
    else if (is_group(v)) {
        group_prefix(v[0], prefix, sizeof prefix);
        snprintf(out, len, "%s/%s", prefix, rel);
    } else
        snprintf(out, len, "%s", path);
}

/* A traced dataset that a stand-in path named (iot_anon_trace_path) gets its name: its entry
 * renamed; the trace's H5Olink call on the entry of that name (its dataset) gives the
 * stand-in's index (its dims: the same index, unless the name had an entry before). */
static void traced_named(int ds, const char *path, double t, double dt)
{
    int rec, named = iot_trace_dataset_rename(ds, path, &rec);
    uint64_t stand_in = (uint64_t)ds;
    if (named >= 0)
        iot_trace_h5("H5Olink", rec, named, 0, -1, 0, 1, &stand_in, t, dt);
}

typedef struct {
    const char *path;
    double t, dt;
} group_named;

static void member_named(int ds, const char *rest, void *ctx)
{
    const group_named *g = ctx;
    char path[2048];
    if (snprintf(path, sizeof path, "%s%s", g->path, rest) < (int)sizeof path)
        traced_named(ds, path, g->t, g->dt);
}

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
    char file[1024], path[1024], prefix[1024];
    dataset_names(real, loc, name, file, sizeof file, path, sizeof path);
    int *into = anon.used && name[0] != '/' ? iot_idmap_get(&anon, (uint64_t)loc) : NULL;
    if (is_group(into)) { /* linked into an anonymous group: named under its path */
        group_prefix(into[0], prefix, sizeof prefix);
        if (snprintf(path, sizeof path, "%s/%s", prefix, name) >= (int)sizeof path)
            return; /* longer than the trace's paths: left as it was traced */
    }
    const iot_settings *s = iot_active();
    if (!s && iot_adapt_on)
        s = &iot_g.settings;
    iot_file_info f = iot_files_lookup(file);
    if (s && f.tuned && path[0] == '/') { /* a stand-in path matches no dataset rule */
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
    if (rec < 0 || !iot_lock())
        return;
    iot_count_meta(rec, IOT_L_HDF5, dt, outer);
    int *v = iot_trace_on ? iot_idmap_get(&traced, (uint64_t)id) : NULL;
    if (v && v[0] >= 0) /* traced from its creation under a stand-in (iot_anon_trace_path) */
        traced_named(v[0], path, t, dt);
    iot_unlock();
}

/* Anonymous group serial linked as name at loc (into anonymous group outer, or -1): its
 * members, and the groups nested in it, traced under its new path; its creation and theirs
 * traced once that path is the file's. */
static void group_linked(const iot_h5_api *real, int serial, int outer, hid_t loc, const char *name,
                         double t, double dt)
{
    char old[1024], path[1024], file[1024];
    group_prefix(serial, old, sizeof old);
    if (outer >= 0) {
        char base[1024];
        group_prefix(outer, base, sizeof base);
        if (snprintf(path, sizeof path, "%s/%s", base, name) >= (int)sizeof path)
            return; /* longer than the trace's paths: its members keep their stand-in */
    } else
        dataset_names(real, loc, name, file, sizeof file, path, sizeof path);
    if (path[0] == '/')
        iot_group_made(loc, name, t, dt);
    group_named g = {path, t, dt}; /* the datasets made in it get their names */
    if (iot_trace_on && iot_lock()) {
        iot_trace_datasets_under(old, member_named, &g);
        iot_unlock();
    }
    size_t n = strlen(old);
    for (int i = 0; i < nnested; i++) { /* the groups nested in it: under its new path */
        nested_group *x = &nested[i];
        if (strncmp(x->prefix, old, n) != 0 || x->prefix[n] != '/')
            continue;
        char moved[1024], rel[1100];
        if (snprintf(moved, sizeof moved, "%s%s", path, x->prefix + n) >= (int)sizeof moved)
            continue;
        memcpy(x->prefix, moved, sizeof moved);
        if (path[0] == '/' && !x->traced) { /* made where the application made it */
            snprintf(rel, sizeof rel, "%s%s", name, moved + strlen(path));
            iot_group_made(loc, rel, t, dt);
            x->traced = 1;
        }
    }
    nested_group *self = nested_of(serial);
    if (!self && outer >= 0 && nnested == cap_nested) {
        int cap = cap_nested ? 2 * cap_nested : 16;
        nested_group *grown = realloc(nested, (size_t)cap * sizeof *grown);
        if (!grown) {
            iot_warn_once("anon-oom", "out of memory: an anonymous group's name is not learnt");
            return;
        }
        nested = grown;
        cap_nested = cap;
    }
    if (!self && outer >= 0)
        self = &nested[nnested++];
    if (self) {
        self->serial = serial;
        self->traced = path[0] == '/';
        snprintf(self->prefix, sizeof self->prefix, "%s", path);
    }
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
    if (v[1] == IOT_ANON_NESTED) /* linked before: its first name is the one it is known by */
        return rc;
    int rec = v[0], group = v[1] == IOT_ANON_GROUP;
    int *into = group && new_name[0] != '/' ? iot_idmap_get(&anon, (uint64_t)new_loc) : NULL;
    if (is_group(into)) /* into an anonymous group: still traced under a prefix (nested) */
        v[1] = IOT_ANON_NESTED;
    else
        iot_idmap_del(&anon, (uint64_t)obj); /* its first name is the one it is known by */
    iot_h5_quiet quiet;
    iot_h5_failure kept;
    iot_h5_failure_keep(&kept);
    iot_h5_quiet_begin(&quiet);
    if (group) { /* H5Gcreate_anon + H5Olink: a group made at that path, as by H5Gcreate2 */
        iot_h5_lookup_done(new_loc, dt, outer); /* HDF5 metadata time */
        group_linked(real, rec, is_group(into) ? into[0] : -1, new_loc, new_name, t, dt);
    } else
        dataset_named(real, obj, rec, new_loc, new_name, t, dt, outer);
    iot_h5_quiet_end(&quiet);
    iot_h5_failure_give_back(&kept);
    return rc;
}
