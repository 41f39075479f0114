/* fill_time=never (H5Pset_fill_time(H5D_FILL_TIME_NEVER)) skips writing the fill value into a
 * dataset's storage: where the application writes every element that changes nothing, but
 * the elements it never writes then hold whatever the storage held. They still read back as
 * the default fill value (all-zero bytes) only when, measured on HDF5 1.10.8 (serial and
 * MPI-IO, docs/control-file.md, tests/python/test_fill_guard.py):
 * - the application defined no fill value of its own;
 * - the storage is allocated when the dataset is created: parallel HDF5 always does so;
 *   serial HDF5 allocates a chunked dataset's chunks as they are written (a contiguous one at
 *   its first write), and a read of storage never allocated leaves the reader's buffer as it
 *   was, instead of filling it (H5D__chunk_read skips missing chunks under fill time never);
 * - that space was never written: the file was created in this run (H5Fcreate: empty, space
 *   beyond its end reads as zeros) and nothing was freed in it since. After a deletion or a
 *   shrinking H5Dset_extent, HDF5 hands the freed space (or the end of the file it gave back)
 *   to the next allocation with its old bytes; a file opened may have such space too. HDF5
 *   frees space by itself when a filtered chunk is rewritten larger, so a filtered dataset
 *   made in the file counts as a deletion for the datasets made after it (wrap_hdf5_free.c);
 *   metadata HDF5 moves (groups, attributes, flushes: measured) frees no raw data space;
 * - the storage is chunked or contiguous, in the file (compact data live in the object
 *   header, virtual data in other datasets; external files hold what they held).
 * Filters change nothing here: a deflated dataset written in part, chunks partly written,
 * read back zeros in a new file (serial, early allocation, and 2 ranks). */
#include "apply/fill_guard.h"

const char *iot_fill_never_unsafe(const iot_file_info *f, const char *dset, hid_t dcpl)
{
    const iot_h5_api *h = iot_h5();
    H5D_fill_value_t fill = H5D_FILL_VALUE_DEFAULT;
    H5D_layout_t layout = H5D_CONTIGUOUS;
    H5D_alloc_time_t at = H5D_ALLOC_TIME_LATE;
    if (dcpl != H5P_DEFAULT) {
        if (h->H5Pfill_value_defined(dcpl, &fill) >= 0 && fill == H5D_FILL_VALUE_USER_DEFINED)
            return "the application defined a fill value (H5Pset_fill_value): elements never "
                   "written must read back as it";
        layout = h->H5Pget_layout(dcpl);
        if (layout != H5D_CHUNKED && layout != H5D_CONTIGUOUS)
            return "the dataset's storage is not chunked or contiguous; it applies only to those";
        if (h->H5Pget_external_count && h->H5Pget_external_count(dcpl) > 0)
            return "the dataset is stored in external files; it applies only to storage in the "
                   "file";
        if (IOT_H5_CALL(H5Pget_alloc_time, dcpl, &at) < 0)
            at = H5D_ALLOC_TIME_LATE;
    }
    const iot_entry *a = iot_resolved_for(f->rules, IOT_P_ALLOC_TIME, dset);
    if (a) /* the setting's, applied after fill_time (apply_hdf5_dataset.c's set_times) */
        at = a->value.v[0] == 1 ? H5D_ALLOC_TIME_EARLY : H5D_ALLOC_TIME_LATE;
    if (!f->mpio && at != H5D_ALLOC_TIME_EARLY)
        return "serial HDF5 allocates the dataset's storage as it is written, and elements "
               "never written would read back as whatever the reader's buffer held; it applies "
               "with allocation at creation: alloc_time=early";
    if (f->fresh < 0)
        return "space may have been freed in the file (an object deleted, a dataset shrunk, "
               "a filtered dataset made), which HDF5 hands out again with its old bytes; it "
               "applies only to the datasets made in a new file before such a call";
    if (f->fresh == 0)
        return "the file was opened, not created in this run: space HDF5 allocates in it may "
               "hold old bytes; it applies only in a file created in this run";
    return NULL;
}
