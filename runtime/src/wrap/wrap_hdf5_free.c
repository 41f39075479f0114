/* Interposed calls that free space in an HDF5 file (H5Ldelete, H5Ldelete_by_idx, H5Gunlink,
 * H5Odecr_refcount; the attribute deletions of wrap_hdf5_attrtrace.c and a shrinking
 * H5Dset_extent call iot_h5_space_freed too): HDF5 hands freed space to the next allocation
 * with the bytes it held, so the file is no longer one where fill_time=never keeps the data
 * (apply/fill_guard.c). HDF5 frees space by itself when a filtered chunk is rewritten larger
 * (measured), so a file where a filtered dataset is created is marked as well, once that
 * dataset has its settings (iot_h5_frees_by_itself). (Free raw data sections, H5Fget_free_
 * sections, cannot tell: alignment leaves never-written gaps there too.) The file is marked
 * before the call: a call that fails half-way may have freed space already. */
#include "apply/resolve.h"
#include "core/core.h"
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

IOT_FREES(herr_t, H5Ldelete, (hid_t loc, const char *name, hid_t lapl), (loc, name, lapl), loc)
IOT_FREES(herr_t, H5Ldelete_by_idx,
          (hid_t loc, const char *group, H5_index_t idx_type, H5_iter_order_t order, hsize_t n,
           hid_t lapl),
          (loc, group, idx_type, order, n, lapl), loc)
IOT_FREES(herr_t, H5Gunlink, (hid_t loc, const char *name), (loc, name), loc)
IOT_FREES(herr_t, H5Odecr_refcount, (hid_t obj), (obj), obj)
