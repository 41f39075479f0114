/* Interposed calls that free space in an HDF5 file (H5Ldelete, H5Ldelete_by_idx, H5Gunlink,
 * H5Odecr_refcount; the attribute deletions of wrap_hdf5_attrtrace.c and a shrinking
 * H5Dset_extent call iot_h5_space_freed too): HDF5 hands freed space to the next allocation
 * with the bytes it held, so the file is no longer one where fill_time=never keeps the data
 * (apply/fill_guard.c). HDF5 frees space by itself when a filtered chunk is rewritten larger
 * (measured), so a file where a filtered dataset is created is marked as well, once that
 * dataset has its settings (iot_h5_frees_by_itself). (Free raw data sections, H5Fget_free_
 * sections, cannot tell: alignment leaves never-written gaps there too.) The file is marked
 * before the call: a call that fails half-way may have freed space already. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "apply/resolve.h"
#include "core/core.h"
#include "trace/trace.h"
#include "wrap/wrap.h"
#include "wrap/wrap_hdf5.h"

void iot_h5_space_freed(hid_t loc)
{
    (void)loc; /* not only its file: every file open (apply/resolve.h) */
    iot_files_space_freed();
}

void iot_h5_extent_shrinks(hid_t dset, const hsize_t *size)
{
    const iot_h5_api *real = iot_h5_real();
    if (!real || !size)
        return;
    hsize_t dims[H5S_MAX_RANK];
    iot_h5_quiet quiet;
    iot_h5_quiet_begin(&quiet);
    hid_t space = real->H5Dget_space(dset);
    int n = space >= 0 ? real->H5Sget_simple_extent_ndims(space) : -1;
    if (n > 0 && n <= H5S_MAX_RANK && real->H5Sget_simple_extent_dims(space, dims, NULL) < 0)
        n = -1;
    if (space >= 0)
        real->H5Sclose(space);
    iot_h5_quiet_end(&quiet);
    int shrinks = n < 0; /* not known: as if it did */
    for (int d = 0; d < n && d < H5S_MAX_RANK && !shrinks; d++)
        shrinks = size[d] < dims[d];
    if (shrinks)
        iot_h5_space_freed(dset);
}

int iot_h5_frees_by_itself(hid_t dcpl)
{
    const iot_h5_api *h = iot_h5();
    if (dcpl == H5P_DEFAULT)
        return 0;
    iot_h5_quiet quiet;
    iot_h5_quiet_begin(&quiet);
    int n = h ? h->H5Pget_nfilters(dcpl) : -1;
    iot_h5_quiet_end(&quiet);
    return n != 0; /* not known: as if it did */
}

#define IOT_FREES(ret, fn, params, args, loc)                                                      \
    IOT_EXPORT ret fn params                                                                       \
    {                                                                                              \
        __typeof__(&fn) real = IOT_H5_FN(fn);                                                      \
        if (!real)                                                                                 \
            return -1;                                                                             \
        iot_h5_space_freed(loc);                                                                   \
        return real args;                                                                          \
    }

/* A link deletion: timed as HDF5 metadata and traced (iot_link_deleted) on the path it
 * named; H5Ldelete_by_idx's name is asked before the link is gone (only when traced). */
#define IOT_UNLINKS(fn, params, args, loc, name_of, owned)                                         \
    IOT_EXPORT herr_t fn params                                                                    \
    {                                                                                              \
        __typeof__(&fn) real = IOT_H5_FN(fn);                                                      \
        if (!real)                                                                                 \
            return -1;                                                                             \
        iot_h5_space_freed(loc);                                                                   \
        if (!iot_capture_on)                                                                       \
            return real args;                                                                      \
        int wanted = iot_trace_wanted();                                                           \
        char *name = wanted ? name_of : NULL;                                                      \
        IOT_TIMED(real args);                                                                      \
        if (rc >= 0)                                                                               \
            iot_h5_lookup_done(loc, dt, outer);                                                    \
        if (rc >= 0 && name)                                                                       \
            iot_link_deleted(loc, name, t, dt);                                                    \
        if (owned)                                                                                 \
            free(name);                                                                            \
        return rc;                                                                                 \
    }

/* The name of group's link n in that order, asked before it is deleted (malloc'd), or NULL. */
static char *link_name_by_idx(hid_t loc, const char *group, H5_index_t idx_type,
                              H5_iter_order_t order, hsize_t n, hid_t lapl)
{
    const iot_h5_api *h = iot_h5_real();
    char link[1024], *out = NULL;
    if (!h || !h->H5Lget_name_by_idx || !group)
        return NULL;
    iot_h5_quiet quiet;
    iot_h5_quiet_begin(&quiet);
    ssize_t len = h->H5Lget_name_by_idx(loc, group, idx_type, order, n, link, sizeof link, lapl);
    iot_h5_quiet_end(&quiet);
    if (len <= 0 || (size_t)len >= sizeof link)
        return NULL;
    int dot = strcmp(group, ".") == 0 || !group[0];
    size_t need = strlen(group) + (size_t)len + 2;
    if ((out = malloc(need)))
        snprintf(out, need, "%s%s%s", dot ? "" : group, dot ? "" : "/", link);
    return out;
}

IOT_UNLINKS(H5Ldelete, (hid_t loc, const char *named, hid_t lapl), (loc, named, lapl), loc,
            (char *)named, 0)
IOT_UNLINKS(H5Ldelete_by_idx,
            (hid_t loc, const char *group, H5_index_t idx_type, H5_iter_order_t order, hsize_t n,
             hid_t lapl),
            (loc, group, idx_type, order, n, lapl), loc,
            link_name_by_idx(loc, group, idx_type, order, n, lapl), 1)
IOT_UNLINKS(H5Gunlink, (hid_t loc, const char *named), (loc, named), loc, (char *)named, 0)
IOT_FREES(herr_t, H5Odecr_refcount, (hid_t obj), (obj), obj)
