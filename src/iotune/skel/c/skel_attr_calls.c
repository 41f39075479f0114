/* The application's attribute calls replayed in its order (the descriptor's `attribute:`
 * entries among a file's writes): H5Acreate2, H5Awrite, H5Aread, H5Aopen, H5Aexists,
 * H5Aiterate2, H5Arename, H5Adelete on the object the application made them on, so that the
 * skeleton's file has the same attributes (names, types, extents; their values are zeros) and
 * HDF5 reads and writes the same object headers. The attribute last created or opened stays
 * open for the calls on it that follow (as the application holds it between H5Acreate and
 * H5Awrite), and is closed at the next attribute call on another or at the file's close. */
#define _GNU_SOURCE
#include "skel_internal.h"

#include <stdlib.h>
#include <string.h>

static int applies(skel_file_t *f)
{
    return skel_is_hdf5(f) && f->api == SKEL_HDF5 && !f->s->sizing;
}

void skel_attr_release(skel_file_t *f)
{
    if (f->attr > 0)
        H5Aclose(f->attr);
    f->attr = 0;
    f->attr_key[0] = '\0';
}

/* The object at path: an open dataset of the file, the file itself for its root, else the group
 * (or, failing that, any object) opened here (*opened: close it after). */
static hid_t object_of(skel_file_t *f, const char *path, int *opened)
{
    *opened = 0;
    if (strcmp(path, "/") == 0)
        return f->h5;
    for (int k = f->ndsets - 1; k >= 0; k--)
        if (f->dsets[k].id > 0 && strcmp(f->dsets[k].name, path) == 0)
            return f->dsets[k].id;
    hid_t id;
    H5E_BEGIN_TRY
    {
        id = H5Gopen2(f->h5, path, H5P_DEFAULT);
    }
    H5E_END_TRY
    if (id < 0)
        id = H5Oopen(f->h5, path, H5P_DEFAULT);
    if (id < 0)
        skel_die(f->s, "an attribute's object is neither a group nor a dataset of the file");
    *opened = 1;
    return id;
}

static void done_with(hid_t obj, int opened)
{
    if (opened)
        H5Oclose(obj);
}

void skel_attr_create(skel_file_t *f, const char *on, long long step, const char *name, hid_t t,
                      int nd, const long long *dims)
{
    if (!applies(f)) {
        skel_close_attr_type(t);
        return;
    }
    char path[1024];
    skel_format_name(path, sizeof path, on, step, f->s->rank);
    skel_attr_release(f);
    double t0 = skel_now();
    int opened;
    hid_t obj = object_of(f, path, &opened);
    /* a file open over all steps whose attribute the first step made (on an object of no step) */
    if (step > 0 && H5Aexists(obj, name) > 0) {
        done_with(obj, opened);
        skel_close_attr_type(t);
        return;
    }
    hsize_t d[32];
    for (int i = 0; i < nd && i < 32; i++)
        d[i] = (hsize_t)dims[i];
    hid_t space = nd < 0    ? H5Screate(H5S_NULL)
                  : nd == 0 ? H5Screate(H5S_SCALAR)
                            : H5Screate_simple(nd < 32 ? nd : 32, d, NULL);
    hid_t a = H5Acreate2(obj, name, t, space, H5P_DEFAULT, H5P_DEFAULT);
    if (a < 0)
        skel_die(f->s, "H5Acreate failed");
    H5Sclose(space);
    done_with(obj, opened);
    skel_close_attr_type(t);
    f->attr = a;
    snprintf(f->attr_key, sizeof f->attr_key, "%s%c%s", path, '\x1f', name);
    skel_add(f->s, T_WRITE, t0);
}

/* The attribute's whole value written (zeros; size characters of variable-length strings
 * spread over its elements) or read, in its own type. */
static void transfer(skel_file_t *f, hid_t a, int is_write, long long size)
{
    hid_t t = H5Aget_type(a), sp = H5Aget_space(a);
    hssize_t n = sp >= 0 ? H5Sget_simple_extent_npoints(sp) : -1;
    int vlen = H5Tis_variable_str(t) > 0;
    size_t esize = vlen ? sizeof(char *) : H5Tget_size(t);
    if (t < 0 || n < 0 || esize == 0)
        skel_die(f->s, "an attribute's type or extent could not be read");
    size_t count = n > 0 ? (size_t)n : 1, chars = size > 0 ? (size_t)size : 0;
    char *buf = calloc(count, esize), *text = NULL;
    if (vlen && is_write) { /* element i: chars / n characters, the first ones one more */
        text = malloc(chars + count);
        if (!text)
            skel_die(f->s, "no memory for an attribute");
        char *p = text;
        for (size_t i = 0; buf && i < count; i++) {
            size_t len = chars / count + (i < chars % count);
            memset(p, 'x', len);
            p[len] = '\0';
            ((char **)buf)[i] = p;
            p += len + 1;
        }
    }
    if (!buf)
        skel_die(f->s, "no memory for an attribute");
    herr_t rc = is_write ? H5Awrite(a, t, buf) : H5Aread(a, t, buf);
    if (rc < 0)
        skel_die(f->s, is_write ? "H5Awrite failed" : "H5Aread failed");
    if (vlen && !is_write && n > 0)
#if H5_VERSION_GE(1, 12, 0)
        H5Treclaim(t, sp, H5P_DEFAULT, buf);
#else
        H5Dvlen_reclaim(t, sp, H5P_DEFAULT, buf);
#endif
    free(text);
    free(buf);
    H5Sclose(sp);
    H5Tclose(t);
}

static herr_t no_visit(hid_t loc, const char *name, const H5A_info_t *info, void *data)
{
    (void)loc, (void)name, (void)info, (void)data;
    return 0;
}

void skel_attr_call(skel_file_t *f, enum skel_attr_call call, const char *on, long long step,
                    const char *name, const char *to, long long size, int active)
{
    if (!applies(f) || !active)
        return;
    char path[1024], key[sizeof f->attr_key];
    skel_format_name(path, sizeof path, on, step, f->s->rank);
    snprintf(key, sizeof key, "%s%c%s", path, '\x1f', name ? name : "");
    int held = f->attr > 0 && strcmp(f->attr_key, key) == 0;
    if (!held && call != SKEL_ATTR_EXISTS && call != SKEL_ATTR_ITERATE)
        skel_attr_release(f); /* the application closed it before another call */
    if (held && (call == SKEL_ATTR_RENAME || call == SKEL_ATTR_DELETE || call == SKEL_ATTR_OPEN))
        skel_attr_release(f), held = 0;
    double t0 = skel_now();
    int opened = 0, uses_held = held && (call == SKEL_ATTR_WRITE || call == SKEL_ATTR_READ);
    hid_t obj = uses_held ? -1 : object_of(f, path, &opened);
    herr_t rc = 0;
    switch (call) {
    case SKEL_ATTR_WRITE:
    case SKEL_ATTR_READ:
    case SKEL_ATTR_OPEN:
        if (!uses_held) {
            f->attr = H5Aopen(obj, name, H5P_DEFAULT);
            if (f->attr < 0)
                skel_die(f->s, "H5Aopen failed");
            snprintf(f->attr_key, sizeof f->attr_key, "%s", key);
        }
        if (call != SKEL_ATTR_OPEN)
            transfer(f, f->attr, call == SKEL_ATTR_WRITE, size);
        break;
    case SKEL_ATTR_EXISTS: rc = H5Aexists(obj, name); break;
    case SKEL_ATTR_ITERATE:
        rc = H5Aiterate2(obj, H5_INDEX_NAME, H5_ITER_INC, NULL, no_visit, NULL);
        break;
    case SKEL_ATTR_RENAME: rc = H5Arename(obj, name, to); break;
    case SKEL_ATTR_DELETE: rc = H5Adelete(obj, name); break;
    }
    if (rc < 0)
        skel_die(f->s, "an attribute call failed (H5Aexists, H5Aiterate2, H5Arename, H5Adelete)");
    if (!uses_held)
        done_with(obj, opened);
    int looks = call != SKEL_ATTR_WRITE && call != SKEL_ATTR_RENAME && call != SKEL_ATTR_DELETE;
    skel_add(f->s, looks ? T_READ : T_WRITE, t0);
}
