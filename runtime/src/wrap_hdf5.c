/* Interposed HDF5 calls: each applies the settings for its file or dataset, then calls the
 * real function. Without settings they cost one branch. */
#include <stdio.h>
#include <string.h>

#include "apply_hdf5.h"
#include "core.h"

/* Datasets whose transfers get a forced MPI-IO mode: an open-addressing table keyed by id,
 * consulted by H5Dwrite/H5Dread. Empty (and never consulted) unless transfer_mode is set. */
#define XFER_SLOTS 4096
static struct {
    hid_t id;
    int mode;
} xfer[XFER_SLOTS];
static int xfer_used;
static hid_t xfer_default[2] = {H5I_INVALID_HID, H5I_INVALID_HID};

static unsigned slot_of(hid_t id)
{
    return (unsigned)(((unsigned long long)id * 0x9E3779B97F4A7C15ull) >> 52) % XFER_SLOTS;
}

static void xfer_put(hid_t id, int mode)
{
    for (unsigned i = slot_of(id), n = 0; n < XFER_SLOTS; i = (i + 1) % XFER_SLOTS, n++)
        if (xfer[i].id <= 0 || xfer[i].id == id) {
            xfer[i].id = id;
            xfer[i].mode = mode;
            xfer_used = 1;
            return;
        }
    iot_warn_once("xfer-full",
                  "more than %d datasets open with transfer_mode; the rest keep "
                  "the application's mode",
                  XFER_SLOTS);
}

static int xfer_get(hid_t id)
{
    for (unsigned i = slot_of(id), n = 0; n < XFER_SLOTS && xfer[i].id != 0;
         i = (i + 1) % XFER_SLOTS, n++)
        if (xfer[i].id == id)
            return xfer[i].mode;
    return -1;
}

static void xfer_forget(hid_t id)
{
    for (unsigned i = slot_of(id), n = 0; n < XFER_SLOTS && xfer[i].id != 0;
         i = (i + 1) % XFER_SLOTS, n++)
        if (xfer[i].id == id) {
            xfer[i].id = -1; /* tombstone keeps probe chains intact */
            return;
        }
}

/* Where a dataset lives: the file's name and the dataset's full path. */
static void dataset_names(const iot_h5_api *h, hid_t loc, const char *name, char *file, size_t flen,
                          char *path, size_t plen)
{
    file[0] = '\0';
    if (h->H5Fget_name(loc, file, flen) < 0)
        file[0] = '\0';
    if (name[0] == '/') {
        snprintf(path, plen, "%s", name);
        return;
    }
    char group[1024] = "";
    if (h->H5Iget_name(loc, group, sizeof group) < 0)
        group[0] = '\0';
    int root = group[0] == '\0' || strcmp(group, "/") == 0;
    snprintf(path, plen, "%s/%s", root ? "" : group, name);
}

IOT_EXPORT hid_t H5Fcreate(const char *name, unsigned flags, hid_t fcpl, hid_t fapl)
{
    const iot_h5_api *real = iot_h5_real();
    const iot_settings *s = iot_active();
    if (!s || !iot_h5() || !name)
        return real->H5Fcreate(name, flags, fcpl, fapl);
    iot_file_info info;
    hid_t use = iot_apply_fapl(s, "H5Fcreate", name, fapl, &info);
    hid_t fid = real->H5Fcreate(name, flags, fcpl, use);
    if (use != fapl)
        real->H5Pclose(use);
    if (fid >= 0) {
        char actual[1024];
        iot_files_remember(real->H5Fget_name(fid, actual, sizeof actual) > 0 ? actual : name,
                           &info);
    }
    return fid;
}

IOT_EXPORT hid_t H5Fopen(const char *name, unsigned flags, hid_t fapl)
{
    const iot_h5_api *real = iot_h5_real();
    const iot_settings *s = iot_active();
    if (!s || !iot_h5() || !name)
        return real->H5Fopen(name, flags, fapl);
    iot_file_info info;
    hid_t use = iot_apply_fapl(s, "H5Fopen", name, fapl, &info);
    hid_t fid = real->H5Fopen(name, flags, use);
    if (use != fapl)
        real->H5Pclose(use);
    if (fid >= 0) {
        char actual[1024];
        iot_files_remember(real->H5Fget_name(fid, actual, sizeof actual) > 0 ? actual : name,
                           &info);
    }
    return fid;
}

/* Shared by H5Dcreate2/H5Dcreate1/H5Dopen2/H5Dopen1: settings for the dataset, then the
 * real call through open_fn. */
typedef struct {
    hid_t dcpl, dapl;
} dataset_lists;

static void dataset_settings(const iot_settings *s, hid_t loc, const char *name, hid_t type,
                             hid_t space, dataset_lists *in, dataset_lists *use, char *file,
                             char *path, iot_file_info *f)
{
    const iot_h5_api *h = iot_h5();
    dataset_names(h, loc, name, file, 1024, path, 1024);
    *f = iot_files_lookup(file);
    use->dcpl = space >= 0 ? iot_apply_dcpl(s, f, file, path, type, space, in->dcpl) : in->dcpl;
    use->dapl = in->dapl >= 0 ? iot_apply_dapl(s, f, file, path, in->dapl) : in->dapl;
}

static hid_t dataset_done(hid_t id, const iot_settings *s, dataset_lists *in, dataset_lists *use,
                          const char *file, const char *path, const iot_file_info *f)
{
    const iot_h5_api *h = iot_h5();
    if (use->dcpl != in->dcpl)
        h->H5Pclose(use->dcpl);
    if (use->dapl != in->dapl)
        h->H5Pclose(use->dapl);
    if (id >= 0) {
        int mode = iot_transfer_mode(s, f, file, path);
        if (mode >= 0)
            xfer_put(id, mode);
    }
    return id;
}

IOT_EXPORT hid_t H5Dcreate2(hid_t loc, const char *name, hid_t type, hid_t space, hid_t lcpl,
                            hid_t dcpl, hid_t dapl)
{
    const iot_h5_api *real = iot_h5_real();
    const iot_settings *s = iot_active();
    if (!s || !iot_h5() || !name)
        return real->H5Dcreate2(loc, name, type, space, lcpl, dcpl, dapl);
    char file[1024], path[1024];
    iot_file_info f;
    dataset_lists in = {dcpl, dapl}, use;
    dataset_settings(s, loc, name, type, space, &in, &use, file, path, &f);
    hid_t id = real->H5Dcreate2(loc, name, type, space, lcpl, use.dcpl, use.dapl);
    return dataset_done(id, s, &in, &use, file, path, &f);
}

IOT_EXPORT hid_t H5Dcreate1(hid_t loc, const char *name, hid_t type, hid_t space, hid_t dcpl)
{
    const iot_h5_api *real = iot_h5_real();
    const iot_settings *s = iot_active();
    if (!s || !iot_h5() || !name)
        return real->H5Dcreate1(loc, name, type, space, dcpl);
    char file[1024], path[1024];
    iot_file_info f;
    dataset_lists in = {dcpl, H5I_INVALID_HID}, use; /* H5Dcreate1 takes no access list */
    dataset_settings(s, loc, name, type, space, &in, &use, file, path, &f);
    hid_t id = real->H5Dcreate1(loc, name, type, space, use.dcpl);
    return dataset_done(id, s, &in, &use, file, path, &f);
}

IOT_EXPORT hid_t H5Dopen2(hid_t loc, const char *name, hid_t dapl)
{
    const iot_h5_api *real = iot_h5_real();
    const iot_settings *s = iot_active();
    if (!s || !iot_h5() || !name)
        return real->H5Dopen2(loc, name, dapl);
    char file[1024], path[1024];
    iot_file_info f;
    dataset_lists in = {H5I_INVALID_HID, dapl}, use;
    dataset_settings(s, loc, name, H5I_INVALID_HID, H5I_INVALID_HID, &in, &use, file, path, &f);
    hid_t id = real->H5Dopen2(loc, name, use.dapl);
    return dataset_done(id, s, &in, &use, file, path, &f);
}

IOT_EXPORT hid_t H5Dopen1(hid_t loc, const char *name)
{
    const iot_h5_api *real = iot_h5_real();
    const iot_settings *s = iot_active();
    if (!s || !iot_h5() || !name)
        return real->H5Dopen1(loc, name);
    char file[1024], path[1024];
    iot_file_info f;
    dataset_lists in = {H5I_INVALID_HID, H5I_INVALID_HID}, use;
    dataset_settings(s, loc, name, H5I_INVALID_HID, H5I_INVALID_HID, &in, &use, file, path, &f);
    hid_t id = real->H5Dopen1(loc, name);
    return dataset_done(id, s, &in, &use, file, path, &f);
}

/* The transfer list for a forced mode: our own list for H5P_DEFAULT; otherwise the
 * application's list set in place (and restored after the call), so that what HDF5 records
 * on it, e.g. H5Pget_mpio_actual_io_mode, stays visible to the application. */
static hid_t transfer_list(const iot_h5_api *h, int mode, hid_t dxpl, H5FD_mpio_xfer_t *saved)
{
    *saved = (H5FD_mpio_xfer_t)-1;
    if (dxpl == H5P_DEFAULT) {
        int k = mode == H5FD_MPIO_COLLECTIVE;
        if (xfer_default[k] < 0) {
            hid_t l = h->H5Pcreate(h->cls_dxpl);
            if (l >= 0 && h->H5Pset_dxpl_mpio(l, (H5FD_mpio_xfer_t)mode) >= 0)
                xfer_default[k] = l;
        }
        return xfer_default[k] >= 0 ? xfer_default[k] : dxpl;
    }
    H5FD_mpio_xfer_t cur;
    if (h->H5Pget_dxpl_mpio(dxpl, &cur) >= 0 && cur != (H5FD_mpio_xfer_t)mode &&
        h->H5Pset_dxpl_mpio(dxpl, (H5FD_mpio_xfer_t)mode) >= 0)
        *saved = cur;
    return dxpl;
}

IOT_EXPORT herr_t H5Dwrite(hid_t dset, hid_t mtype, hid_t mspace, hid_t fspace, hid_t dxpl,
                           const void *buf)
{
    const iot_h5_api *real = iot_h5_real();
    int mode = xfer_used ? xfer_get(dset) : -1;
    if (mode < 0)
        return real->H5Dwrite(dset, mtype, mspace, fspace, dxpl, buf);
    H5FD_mpio_xfer_t saved;
    hid_t use = transfer_list(real, mode, dxpl, &saved);
    herr_t rc = real->H5Dwrite(dset, mtype, mspace, fspace, use, buf);
    if (saved != (H5FD_mpio_xfer_t)-1)
        real->H5Pset_dxpl_mpio(dxpl, saved);
    return rc;
}

IOT_EXPORT herr_t H5Dread(hid_t dset, hid_t mtype, hid_t mspace, hid_t fspace, hid_t dxpl,
                          void *buf)
{
    const iot_h5_api *real = iot_h5_real();
    int mode = xfer_used ? xfer_get(dset) : -1;
    if (mode < 0)
        return real->H5Dread(dset, mtype, mspace, fspace, dxpl, buf);
    H5FD_mpio_xfer_t saved;
    hid_t use = transfer_list(real, mode, dxpl, &saved);
    herr_t rc = real->H5Dread(dset, mtype, mspace, fspace, use, buf);
    if (saved != (H5FD_mpio_xfer_t)-1)
        real->H5Pset_dxpl_mpio(dxpl, saved);
    return rc;
}

IOT_EXPORT herr_t H5Dclose(hid_t dset)
{
    if (xfer_used)
        xfer_forget(dset);
    return iot_h5_real()->H5Dclose(dset);
}
