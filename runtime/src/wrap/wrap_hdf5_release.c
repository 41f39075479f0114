/* Interposed releases of HDF5 ids (H5Fclose, H5Dclose, H5Gclose, H5Oclose, H5Idec_ref): a
 * followed file or dataset is forgotten, and its close counted, once no reference holds it; the
 * time of a release in which HDF5 works on the application's behalf counts as I/O time. */

#include "apply/resolve.h"
#include "capture/capture.h"
#include "core/core.h"
#include "wrap/wrap.h"
#include "wrap/wrap_hdf5.h"

/* A followed file id: its capture record (-1 without capture), or -2 when not followed. */
static int followed_file(hid_t fid)
{
    int *v = iot_idmap_get(&files, (uint64_t)fid); /* lock-free read (idmap.h) */
    return v ? v[0] : -2;
}

/* After the file id fid was let go (H5Fclose, H5Idec_ref): if it is really gone, its
 * settings are forgotten (name: the file's, taken before the call) and its close counted. */
static void file_released(const iot_h5_api *real, hid_t fid, int rec, const char *name, double t,
                          double end, int outer, const char *func)
{
    iot_h5_quiet quiet;
    iot_h5_quiet_begin(&quiet);
    int still = real->H5Iis_valid ? real->H5Iis_valid(fid) > 0 : 0;
    iot_h5_quiet_end(&quiet);
    if (still)
        return; /* another reference holds it open */
    if (name[0])
        iot_files_forget(name);
    if (iot_lock()) {
        iot_idmap_del(&files, (uint64_t)fid);
        if (rec >= 0)
            iot_count_close(rec, IOT_L_HDF5, func, t, end, outer);
        iot_unlock();
    }
}

/* The name of a followed file id, before a call that may release it ("" when unknown). */
static void file_name(const iot_h5_api *real, hid_t fid, char *name, size_t len)
{
    iot_h5_quiet quiet;
    iot_h5_quiet_begin(&quiet);
    ssize_t n = real->H5Fget_name(fid, name, len);
    iot_h5_quiet_end(&quiet);
    if (n <= 0 || (size_t)n >= len)
        name[0] = '\0';
}

IOT_EXPORT herr_t H5Fclose(hid_t fid)
{
    const iot_h5_api *real = iot_h5_real();
    int rec = followed_file(fid);
    if (rec == -2)
        return real->H5Fclose(fid);
    char name[1024];
    file_name(real, fid, name, sizeof name);
    IOT_TIMED(real->H5Fclose(fid));
    if (rc >= 0)
        file_released(real, fid, rec, name, t, t + dt, outer, "H5Fclose");
    return rc;
}

/* After a successful call that let go of id (H5Dclose, H5Oclose, H5Idec_ref): a dataset the
 * runtime follows is forgotten once it is really closed (no other reference holds it). */
static void dataset_released(const iot_h5_api *real, hid_t id)
{
    if (!iot_idmap_get(&dsets, (uint64_t)id) && !iot_idmap_get(&traced, (uint64_t)id))
        return;
    iot_h5_quiet quiet;
    iot_h5_quiet_begin(&quiet);
    int still = real->H5Iis_valid ? real->H5Iis_valid(id) > 0 : 0;
    iot_h5_quiet_end(&quiet);
    if (still)
        return;
    iot_idmap_del(&dsets, (uint64_t)id);
    if (iot_lock()) {
        iot_idmap_del(&traced, (uint64_t)id);
        iot_unlock();
    }
}

int iot_h5_release(int (*fn)(hid_t), hid_t id)
{
    if (!iot_capture_on)
        return fn(id);
    int *v = iot_idmap_get(&dsets, (uint64_t)id); /* lock-free read (idmap.h) */
    int rec = v ? v[0] : -1, before = iot_inner_rec, wrote = iot_inner_wrote;
    iot_inner_rec = -1;
    iot_inner_wrote = 0;
    IOT_TIMED(fn(id));
    int hit = iot_inner_rec, wrote_here = iot_inner_wrote;
    iot_inner_rec = hit >= 0 ? hit : before; /* for a release inside another call */
    iot_inner_wrote = wrote_here | wrote;
    if (rec < 0)
        rec = hit;
    if (!outer || rec < 0 || !iot_lock())
        return rc;
    if (wrote_here) /* the writes an H5Dwrite left in a cache (or metadata): write time */
        iot_count_time(rec, IOT_L_HDF5, 1, dt, outer);
    else
        iot_count_meta(rec, IOT_L_HDF5, dt, outer);
    iot_unlock();
    return rc;
}

IOT_EXPORT herr_t H5Dclose(hid_t dset)
{
    const iot_h5_api *real = iot_h5_real();
    herr_t rc = iot_h5_release(real->H5Dclose, dset);
    if (rc >= 0 && (dsets.used || traced.used))
        dataset_released(real, dset);
    return rc;
}

IOT_EXPORT herr_t H5Oclose(hid_t id)
{
    const iot_h5_api *real = iot_h5_real();
    herr_t rc = iot_h5_release(real->H5Oclose, id);
    if (rc >= 0 && (dsets.used || traced.used))
        dataset_released(real, id);
    return rc;
}

IOT_EXPORT herr_t H5Gclose(hid_t group)
{
    __typeof__(&H5Gclose) real = IOT_H5_FN(H5Gclose);
    return real ? iot_h5_release(real, group) : -1;
}

/* h5py lets go of files and datasets this way: the last reference closes them. */
IOT_EXPORT int H5Idec_ref(hid_t id)
{
    const iot_h5_api *real = iot_h5_real();
    int rec = followed_file(id);
    if (rec == -2) {
        int left = iot_h5_release(real->H5Idec_ref, id);
        if (left == 0 && (dsets.used || traced.used))
            dataset_released(real, id);
        if (left == 0)
            iot_attr_closed(id);
        return left;
    }
    char name[1024];
    file_name(real, id, name, sizeof name);
    IOT_TIMED(real->H5Idec_ref(id));
    if (rc == 0)
        file_released(real, id, rec, name, t, t + dt, outer, "H5Fclose");
    return rc;
}
