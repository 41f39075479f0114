/* The adaptive mode's view of HDF5 selections: for each transfer, whether its file selection is
 * one run of elements, and the steps between successive transfers of a dataset (backward,
 * skipping), counted per capture record for the phase's access pattern; and for an MPI-IO
 * application's own transfers (the outermost layer's, as the trace's) the steps between them
 * and whether each went through a noncontiguous file view. */
#include <pthread.h>
#include <string.h>

#include "adapt/adapt.h"
#include "adapt/adapt_state.h"
#include "platform/h5api.h"

/* Per file record: HDF5 transfers (or the application's MPI-IO ones) looked at, noncontiguous
 * ones, successive pairs, backward steps, gaps; and the last transfer's dataset, first element
 * and end (element indices). */
static int64_t selections[IOT_MAX_FILES][IOT_SEL_COUNT];
static int64_t last_step[IOT_MAX_FILES][3];
static pthread_mutex_t sel_lock = PTHREAD_MUTEX_INITIALIZER;

void iot_adapt_selections(int rec, int64_t out[IOT_SEL_COUNT])
{
    if (rec < 0 || rec >= IOT_MAX_FILES) {
        memset(out, 0, IOT_SEL_COUNT * sizeof *out);
        return;
    }
    pthread_mutex_lock(&sel_lock);
    memcpy(out, selections[rec], IOT_SEL_COUNT * sizeof *out);
    pthread_mutex_unlock(&sel_lock);
}

void iot_adapt_transfer(int rec, int64_t dset, int64_t fspace, int is_write)
{
    if (!iot_adapt_on || rec < 0 || rec >= IOT_MAX_FILES)
        return;
    const iot_h5_api *h = iot_h5_real();
    if (!h->H5Sget_select_bounds)
        return;
    iot_h5_quiet quiet; /* an id the application got wrong prints nothing more */
    iot_h5_quiet_begin(&quiet);
    hid_t space = fspace == H5S_ALL ? h->H5Dget_space(dset) : fspace;
    hsize_t dims[32], start[32], end[32];
    int n = space >= 0 ? h->H5Sget_simple_extent_ndims(space) : -1;
    hssize_t points = n > 0 ? h->H5Sget_select_npoints(space) : 0;
    int ok = n > 0 && n <= 32 && points > 0 &&
             h->H5Sget_simple_extent_dims(space, dims, NULL) == n &&
             h->H5Sget_select_bounds(space, start, end) >= 0;
    if (fspace == H5S_ALL && space >= 0)
        h->H5Sclose(space);
    iot_h5_quiet_end(&quiet);
    if (!ok) { /* a write whose selection cannot be read: its dataset's coverage is unknown */
        if (is_write)
            iot_adapt_layout_write(rec, dset, 0, NULL, NULL, 0, 0);
        return;
    }
    /* one run in row-major order: after the first dimension that selects more than one
     * element every later one is whole, and every element of the box is selected */
    double volume = 1;
    int many = 0, contiguous = 1;
    int64_t first = 0;
    for (int d = 0; d < n; d++) {
        hsize_t count = end[d] - start[d] + 1;
        volume *= (double)count;
        if (many && count != dims[d])
            contiguous = 0;
        many |= count > 1;
        first = first * (int64_t)dims[d] + (int64_t)start[d];
    }
    if (volume != (double)points)
        contiguous = 0;
    if (is_write) {
        uint64_t lo[32], hi[32];
        for (int d = 0; d < n; d++)
            lo[d] = start[d], hi[d] = end[d];
        iot_adapt_layout_write(rec, dset, n, lo, hi, (double)points, volume == (double)points);
    }
    pthread_mutex_lock(&sel_lock);
    int64_t *x = selections[rec], *last = last_step[rec];
    x[IOT_SEL_N]++;
    x[IOT_SEL_NONCONTIG] += !contiguous;
    if (x[IOT_SEL_N] > 1 && last[0] == dset) { /* steps within a dataset, as iotune.insights */
        x[IOT_SEL_PAIRS]++;
        x[IOT_SEL_BACK] += first < last[1];
        x[IOT_SEL_GAPS] += first > last[2];
    }
    last[0] = dset;
    last[1] = first;
    last[2] = first + points;
    pthread_mutex_unlock(&sel_lock);
}

/* Per file record: the application's last MPI-IO transfer in this phase (offset, end, whether
 * there was one): the steps between its own transfers, as the trace's (iotune.trace_insights
 * locality, a stream per open of the file); and the file view's shape (has its filetype holes,
 * and its size when its instances leave gaps between them, else 0): an open's view is the
 * default, contiguous one. */
static int64_t io_last[IOT_MAX_FILES][3];
static int64_t io_view[IOT_MAX_FILES][2];

void iot_adapt_steps_restart(int rec)
{
    if (rec < 0 || rec >= IOT_MAX_FILES)
        return;
    pthread_mutex_lock(&sel_lock);
    io_last[rec][2] = 0;
    io_view[rec][0] = io_view[rec][1] = 0;
    pthread_mutex_unlock(&sel_lock);
}

void iot_adapt_view(int rec, MPI_Datatype filetype)
{
    MPI_Count size = 0, lb = 0, extent = 0, tlb = 0, textent = 0;
    if (!iot_adapt_on || rec < 0 || rec >= IOT_MAX_FILES ||
        PMPI_Type_size_x(filetype, &size) != MPI_SUCCESS ||
        PMPI_Type_get_extent_x(filetype, &lb, &extent) != MPI_SUCCESS ||
        PMPI_Type_get_true_extent_x(filetype, &tlb, &textent) != MPI_SUCCESS)
        return;
    pthread_mutex_lock(&sel_lock);
    io_view[rec][0] = textent > size; /* iotune.trace_insights.view_noncontiguous */
    io_view[rec][1] = extent != size ? (int64_t)size : 0;
    pthread_mutex_unlock(&sel_lock);
}

void iot_adapt_io_step(int rec, int64_t offset, uint64_t bytes, int posted)
{
    if (!iot_adapt_on || rec < 0 || rec >= IOT_MAX_FILES)
        return;
    pthread_mutex_lock(&sel_lock);
    int64_t *x = selections[rec], *last = io_last[rec], *view = io_view[rec];
    x[IOT_SEL_POSTED] += posted != 0;
    x[IOT_SEL_N]++; /* through a view: one run of the file, or not */
    x[IOT_SEL_NONCONTIG] += view[0] || (view[1] && bytes > (uint64_t)view[1]);
    if (offset < 0) {
        pthread_mutex_unlock(&sel_lock);
        return;
    }
    if (last[2]) {
        x[IOT_SEL_PAIRS]++;
        x[IOT_SEL_BACK] += offset < last[0];
        x[IOT_SEL_GAPS] += offset > last[1];
    }
    last[0] = offset;
    last[1] = offset + (int64_t)bytes;
    last[2] = 1;
    pthread_mutex_unlock(&sel_lock);
}

/* ---------------------------------------------------------------- prediction (Sequitur) */

#define PREDICT_MAX 4096 /* calls predicted per phase */
#define MAX_PREDICTIONS 256
