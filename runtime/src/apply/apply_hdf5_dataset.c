/* Settings to an HDF5 dataset's creation and access lists and its transfer mode
 * (apply_hdf5.h). */
#include "apply/apply_hdf5.h"

#include <stdio.h>
#include <string.h>

#include "apply/fill_guard.h"
#include "apply/h5report.h"
#include "apply/h5support.h"
#include "base/printable.h"
#include "config/bounds.h"
#include "core/core.h"

/* Chunk dimensions of about target bytes: whole fastest-varying dimensions first, so that a
 * chunk stays contiguous in memory order. A dimension is bounded by its maximum size, not its
 * current one (an extendible dataset often starts empty); an unlimited one takes whatever
 * the target still leaves. */
static void chunk_for_size(int ndims, const hsize_t *maxdims, size_t elem, long long target,
                           hsize_t *chunk)
{
    hsize_t remaining = (hsize_t)(target / (long long)(elem ? elem : 1));
    if (remaining < 1)
        remaining = 1;
    for (int i = ndims - 1; i >= 0; i--) {
        hsize_t extent = maxdims[i] == H5S_UNLIMITED ? remaining : maxdims[i] ? maxdims[i] : 1;
        chunk[i] = extent < remaining ? extent : remaining;
        remaining /= chunk[i];
        if (remaining < 1)
            remaining = 1;
    }
}

static void format_dims(int ndims, const hsize_t *dims, char *text, size_t size)
{
    int n = 0;
    text[0] = '\0';
    for (int i = 0; i < ndims && n < (int)size - 24; i++)
        n +=
            snprintf(text + n, size - (size_t)n, i ? ",%llu" : "%llu", (unsigned long long)dims[i]);
}

/* The application set a creation setting of its own (other than HDF5's default) and the control
 * file's replaces it: said once per run and parameter (the leader; iot_warn_once: rank 0 of the
 * run, one process of a session) and noted for the profile, as for file settings
 * (note_overrides). name: the parameter as said (chunk_size sets "chunk"). */
static void note_own(const iot_entry *e, const char *name, const char *value, const char *own,
                     const char *file, int leader, iot_h5_outcome *out)
{
    char where[96], line[1024], key[80];
    snprintf(line, sizeof line, "%s=%s [%s] overrides the application's own %s=%s", name, value,
             iot_origin(e, where, sizeof where), name, own);
    if (out)
        iot_outcome_add(out->notes, sizeof out->notes, line);
    snprintf(key, sizeof key, "own-dataset:%s", name); /* never a file's name (profile_build.c) */
    if (leader)
        iot_warn_once(key, "%s: %s (%s)", file, line, iot_who_wins(e));
}

static void set_chunk(const iot_file_info *f, const char *file, const char *dset, hid_t type,
                      hid_t space, hid_t dcpl, hid_t *copy, iot_h5_report *r, iot_h5_outcome *out)
{
    const iot_file_settings *rules = f->rules;
    const iot_h5_api *h = iot_h5();
    const iot_entry *dims_e = iot_resolved_for(rules, IOT_P_CHUNK, dset);
    const iot_entry *size_e = iot_resolved_for(rules, IOT_P_CHUNK_SIZE, dset);
    const iot_entry *e = dims_e ? dims_e : size_e;
    if (!e)
        return;
    hsize_t dims[H5S_MAX_RANK], maxdims[H5S_MAX_RANK], chunk[H5S_MAX_RANK];
    int ndims = h->H5Sget_simple_extent_ndims(space);
    if (ndims <= 0 || h->H5Sget_simple_extent_dims(space, dims, maxdims) < 0) {
        iot_h5_report_add(r, "%s NOT applied: scalar or null dataspace cannot be chunked", e->name);
        return;
    }
    if (dcpl != H5P_DEFAULT) {
        /* chunking a virtual dataset would replace its mappings with empty storage; compact
         * and external storage are the application's choice too */
        H5D_layout_t layout = h->H5Pget_layout(dcpl);
        if ((layout != H5D_CONTIGUOUS && layout != H5D_CHUNKED) ||
            (h->H5Pget_external_count && h->H5Pget_external_count(dcpl) > 0)) {
            iot_h5_report_add(r, "%s NOT applied: the application asked for %s storage", e->name,
                              layout == H5D_COMPACT   ? "compact"
                              : layout == H5D_VIRTUAL ? "virtual"
                              : layout == H5D_CHUNKED || layout == H5D_CONTIGUOUS
                                  ? "external"
                                  : "another kind of");
            return;
        }
    }
    if (e == dims_e && e->value.n != ndims) {
        iot_h5_report_add(r, "chunk=%s NOT applied: %d dimensions for a dataset of rank %d",
                          e->value.text, e->value.n, ndims);
        return;
    }
    size_t elem = h->H5Tget_size(type);
    if (e == dims_e)
        for (int i = 0; i < ndims; i++)
            chunk[i] = (hsize_t)e->value.v[i];
    else
        chunk_for_size(ndims, maxdims, elem, e->value.v[0], chunk);
    double bytes = (double)elem;
    for (int i = 0; i < ndims; i++) {
        if (maxdims[i] != H5S_UNLIMITED && chunk[i] > maxdims[i])
            chunk[i] = maxdims[i]; /* HDF5 refuses chunks larger than a fixed dimension */
        if (chunk[i] == 0) {
            iot_h5_report_add(r, "%s NOT applied: the dataset has a fixed dimension of size 0",
                              e->name);
            return;
        }
        bytes *= (double)chunk[i];
    }
    if (bytes >= 4294967296.0) {
        iot_h5_report_add(r, "%s NOT applied: a chunk must be smaller than 4 GiB", e->name);
        return;
    }
    if (iot_h5_too_costly(e, bytes, file, f->leader, r, out))
        return;
    hsize_t own[H5S_MAX_RANK];
    int app_chunked = dcpl != H5P_DEFAULT && h->H5Pget_layout(dcpl) == H5D_CHUNKED &&
                      IOT_H5_CALL(H5Pget_chunk, dcpl, ndims, own) == ndims &&
                      memcmp(own, chunk, sizeof(hsize_t) * (size_t)ndims) != 0;
    herr_t rc = h->H5Pset_chunk(iot_h5_writable(copy, dcpl, h->cls_dcpl), ndims, chunk);
    char where[96], text[256];
    format_dims(ndims, chunk, text, sizeof text);
    if (app_chunked && rc >= 0) {
        char mine[256];
        format_dims(ndims, own, mine, sizeof mine);
        note_own(e, "chunk", text, mine, file, f->leader, out);
    }
    iot_h5_report_add(r, "chunk=%s%s%s%s [%s]", text, e == size_e ? " (from chunk_size=" : "",
                      e == size_e ? e->value.text : "", e == size_e ? ")" : "",
                      iot_origin(e, where, sizeof where));
    if (rc < 0)
        iot_h5_report_add(r, "chunk NOT applied: HDF5 refused it");
}

/* filter_partial_chunks: H5Pset_chunk_opts on a chunked dataset's list (chunked by the
 * application or by the chunk settings above), the other option bits kept. */
static void set_partial_chunks(const iot_file_info *f, const char *file, const char *dset,
                               hid_t dcpl, hid_t *copy, iot_h5_report *r, iot_h5_outcome *out)
{
    const iot_h5_api *h = iot_h5();
    const iot_entry *e = iot_resolved_for(f->rules, IOT_P_FILTER_PARTIAL_CHUNKS, dset);
    if (!e || iot_h5_skip_unsupported(e, f->mpio, file, f->leader, r, out))
        return;
    hid_t now = *copy >= 0 ? *copy : dcpl;
    unsigned opts = 0;
    char where[96];
    if (now == H5P_DEFAULT || h->H5Pget_layout(now) != H5D_CHUNKED) {
        iot_h5_report_add(r,
                          "filter_partial_chunks=%s NOT applied: the dataset is not chunked [%s]",
                          e->value.text, iot_origin(e, where, sizeof where));
        return;
    }
    if (IOT_H5_CALL(H5Pget_chunk_opts, now, &opts) < 0)
        opts = 0;
    if (e->value.v[0])
        opts &= ~(unsigned)H5D_CHUNK_DONT_FILTER_PARTIAL_CHUNKS;
    else
        opts |= H5D_CHUNK_DONT_FILTER_PARTIAL_CHUNKS;
    iot_h5_report_entry(
        r, e, IOT_H5_CALL(H5Pset_chunk_opts, iot_h5_writable(copy, dcpl, h->cls_dcpl), opts));
}

/* The fill time (alloc 0) or allocation time (alloc 1) of a creation list, as its index in the
 * parameter's choices (fill_time: ifset, alloc, never; alloc_time: default, early, incr,
 * late), or -1. */
static int time_of(hid_t dcpl, int alloc)
{
    static const int fill_index[] = {
        [H5D_FILL_TIME_ALLOC] = 1, [H5D_FILL_TIME_NEVER] = 2, [H5D_FILL_TIME_IFSET] = 0};
    static const int alloc_index[] = {[H5D_ALLOC_TIME_DEFAULT] = 0,
                                      [H5D_ALLOC_TIME_EARLY] = 1,
                                      [H5D_ALLOC_TIME_LATE] = 3,
                                      [H5D_ALLOC_TIME_INCR] = 2};
    H5D_fill_time_t ft;
    H5D_alloc_time_t at;
    if (alloc)
        return IOT_H5_CALL(H5Pget_alloc_time, dcpl, &at) >= 0 && at >= 0 && at <= 3
                   ? alloc_index[at]
                   : -1;
    return IOT_H5_CALL(H5Pget_fill_time, dcpl, &ft) >= 0 && ft >= 0 && ft <= 2 ? fill_index[ft]
                                                                               : -1;
}

/* The application's own fill or allocation time: its list's, when that differs from what
 * HDF5 gives a new list of the same layout (the default allocation time depends on the
 * layout); else -1 (a value equal to the default cannot be told from no value). */
static int own_time(hid_t dcpl, int alloc)
{
    const iot_h5_api *h = iot_h5();
    if (dcpl == H5P_DEFAULT)
        return -1;
    int mine = time_of(dcpl, alloc), dflt = -1;
    hid_t fresh = h->H5Pcreate(h->cls_dcpl);
    H5D_layout_t layout = h->H5Pget_layout(dcpl);
    if (fresh >= 0 && (!alloc || (layout >= 0 && IOT_H5_CALL(H5Pset_layout, fresh, layout) >= 0)))
        dflt = time_of(fresh, alloc);
    if (fresh >= 0)
        h->H5Pclose(fresh);
    return dflt < 0 || mine == dflt ? -1 : mine;
}

/* The choice of index i of parameter p, as the control file writes it. */
static void choice_name(int p, int i, char *buf, size_t len)
{
    const char *c = iot_params[p].choices;
    for (; i > 0 && c && strchr(c, '|'); i--)
        c = strchr(c, '|') + 1;
    snprintf(buf, len, "%.*s", c ? (int)strcspn(c, "|") : 0, c ? c : "");
}

/* fill_time and alloc_time; the application's own value they replace said (note_own). */
static void set_times(const iot_file_info *f, const char *file, const char *dset, hid_t dcpl,
                      hid_t *copy, iot_h5_report *r, iot_h5_outcome *out)
{
    const iot_h5_api *h = iot_h5();
    static const H5D_fill_time_t fill_times[] = {H5D_FILL_TIME_IFSET, H5D_FILL_TIME_ALLOC,
                                                 H5D_FILL_TIME_NEVER};
    static const H5D_alloc_time_t alloc_times[] = {H5D_ALLOC_TIME_DEFAULT, H5D_ALLOC_TIME_EARLY,
                                                   H5D_ALLOC_TIME_INCR, H5D_ALLOC_TIME_LATE};
    char where[96];
    for (int alloc = 0; alloc < 2; alloc++) {
        const iot_entry *e =
            iot_resolved_for(f->rules, alloc ? IOT_P_ALLOC_TIME : IOT_P_FILL_TIME, dset);
        if (!e)
            continue;
        /* unwritten elements must keep reading as they would without it (fill_guard.c) */
        const char *unsafe = alloc || fill_times[e->value.v[0]] != H5D_FILL_TIME_NEVER
                                 ? NULL
                                 : iot_fill_never_unsafe(f, dset, *copy >= 0 ? *copy : dcpl);
        if (unsafe) { /* the line names the dataset: the profile's note is per file */
            char fp[IOT_PRINTABLE_MAX(1024)], dp[IOT_PRINTABLE_MAX(1024)];
            iot_h5_report_add(r, "%s:%s: fill_time=never NOT applied: %s [%s]",
                              iot_printable(file, fp, sizeof fp),
                              iot_printable(dset, dp, sizeof dp), unsafe,
                              iot_origin(e, where, sizeof where));
            if (out) /* left out, not refused: its read-back would say it again */
                iot_outcome_add(out->withdrawn, sizeof out->withdrawn, e->name);
            continue;
        }
        int own = own_time(dcpl, alloc);
        hid_t list = iot_h5_writable(copy, dcpl, h->cls_dcpl);
        herr_t rc = alloc ? IOT_H5_CALL(H5Pset_alloc_time, list, alloc_times[e->value.v[0]])
                          : IOT_H5_CALL(H5Pset_fill_time, list, fill_times[e->value.v[0]]);
        iot_h5_report_entry(r, e, rc);
        int now = rc >= 0 ? time_of(list, alloc) : -1;
        if (own >= 0 && now >= 0 && now != own) { /* alloc_time=default: the layout's */
            char mine[32];
            choice_name(e->param, own, mine, sizeof mine);
            note_own(e, e->name, e->value.text, mine, file, f->leader, out);
        }
        if (alloc && f->mpio && e->value.v[0] >= 2)
            iot_h5_report_add(r,
                              "note: parallel HDF5 allocates space early whatever alloc_time says");
    }
}

hid_t iot_apply_dcpl(const iot_file_info *f, const char *file, const char *dset, hid_t type,
                     hid_t space, hid_t dcpl, iot_h5_outcome *out)
{
    iot_h5_quiet quiet;
    iot_h5_quiet_begin(&quiet);
    hid_t copy = H5I_INVALID_HID;
    iot_h5_report r = {.len = 0};
    set_chunk(f, file, dset, type, space, dcpl, &copy, &r, out);
    set_times(f, file, dset, dcpl, &copy, &r, out);
    set_partial_chunks(f, file, dset, dcpl, &copy, &r, out);
    iot_h5_quiet_end(&quiet);
    iot_h5_keep_refusals(&r, out);
    if (iot_g.verbose && f->leader && r.items) {
        char header[2200];
        snprintf(header, sizeof header, "H5Dcreate %s:%s: hdf5 dataset creation:", file, dset);
        iot_log_block(header, r.text);
    }
    return copy >= 0 ? copy : dcpl;
}

hid_t iot_apply_dapl(const iot_file_info *f, const char *file, const char *dset, hid_t dapl,
                     iot_h5_outcome *out)
{
    const iot_h5_api *h = iot_h5();
    const iot_entry *bytes = iot_resolved_for(f->rules, IOT_P_CHUNK_CACHE_BYTES, dset);
    const iot_entry *slots = iot_resolved_for(f->rules, IOT_P_CHUNK_CACHE_SLOTS, dset);
    const iot_entry *w0 = iot_resolved_for(f->rules, IOT_P_CHUNK_CACHE_W0, dset);
    iot_h5_report r = {.len = 0};
    if (bytes && iot_h5_too_costly(bytes, iot_cost(bytes->param, &bytes->value, 1), file, f->leader,
                                   &r, out))
        bytes = NULL;
    if (slots && iot_h5_too_costly(slots, iot_cost(slots->param, &slots->value, 1), file, f->leader,
                                   &r, out))
        slots = NULL;
    if (!bytes && !slots && !w0) {
        if (iot_g.verbose && f->leader && r.items) {
            char header[2200];
            snprintf(header, sizeof header, "dataset %s:%s: hdf5 dataset access:", file, dset);
            iot_h5_report_log(header, r.text);
        }
        return dapl;
    }
    iot_h5_quiet quiet;
    iot_h5_quiet_begin(&quiet);
    hid_t copy = H5I_INVALID_HID;
    /* unset fields keep the file's defaults */
    herr_t rc = IOT_H5_CALL(H5Pset_chunk_cache, iot_h5_writable(&copy, dapl, h->cls_dapl),
                            slots ? (size_t)slots->value.v[0] : H5D_CHUNK_CACHE_NSLOTS_DEFAULT,
                            bytes ? (size_t)bytes->value.v[0] : H5D_CHUNK_CACHE_NBYTES_DEFAULT,
                            w0 ? w0->value.d : H5D_CHUNK_CACHE_W0_DEFAULT);
    iot_h5_quiet_end(&quiet);
    const iot_entry *list[] = {bytes, slots, w0};
    for (int i = 0; i < 3; i++)
        if (list[i])
            iot_h5_report_entry(&r, list[i], rc);
    iot_h5_keep_refusals(&r, out);
    if (iot_g.verbose && f->leader) {
        char header[2200];
        snprintf(header, sizeof header, "dataset %s:%s: hdf5 dataset access:", file, dset);
        iot_h5_report_log(header, r.text);
    }
    return copy >= 0 ? copy : dapl;
}

/* Does the dataset have filters (deflate, ...; chunked: whether it is chunked instead)? Reads
 * its creation list: local, no I/O. */
static int filtered_or_chunked(hid_t id, int chunked)
{
    const iot_h5_api *h = iot_h5();
    iot_h5_quiet quiet;
    iot_h5_quiet_begin(&quiet);
    hid_t dcpl = h->H5Dget_create_plist(id);
    int n = dcpl < 0  ? 0
            : chunked ? h->H5Pget_layout(dcpl) == H5D_CHUNKED
                      : h->H5Pget_nfilters(dcpl);
    if (dcpl >= 0)
        h->H5Pclose(dcpl);
    iot_h5_quiet_end(&quiet);
    return n > 0;
}
#define filtered(id) filtered_or_chunked(id, 0)

/* The forced transfer mode: H5FD_MPIO_COLLECTIVE / H5FD_MPIO_INDEPENDENT, or -1. */
static int forced_mode(const iot_file_info *f, const char *file, const char *dset, hid_t id)
{
    const iot_entry *e = iot_resolved_for(f->rules, IOT_P_TRANSFER_MODE, dset);
    if (!e)
        return -1;
    char where[96];
    if (e->value.v[0] != 0 && filtered(id)) {
        /* parallel HDF5 writes filtered datasets collectively only: forcing independent
         * would make every H5Dwrite fail */
        if (f->leader)
            iot_warn_once("independent-filtered",
                          "%s:%s: transfer_mode=independent NOT applied to filtered datasets "
                          "(parallel HDF5 writes them collectively only) [%s]",
                          file, dset, iot_origin(e, where, sizeof where));
        return -1;
    }
    if (iot_g.verbose && f->leader)
        iot_log("%s:%s: hdf5 transfer: transfer_mode=%s [%s]", file, dset, e->value.text,
                iot_origin(e, where, sizeof where));
    return e->value.v[0] == 0 ? H5FD_MPIO_COLLECTIVE : H5FD_MPIO_INDEPENDENT;
}

/* A collective transfer option (mpio_chunk_opt, mpio_collective_opt): its choice's index, the
 * H5FD_mpio_chunk_opt_t / H5FD_mpio_collective_opt_t value, or -1. */
static int transfer_option(const iot_file_info *f, const char *file, const char *dset, hid_t id,
                           int p)
{
    const iot_entry *e = iot_resolved_for(f->rules, p, dset);
    char where[96];
    if (!e)
        return -1;
    if (p == IOT_P_MPIO_COLLECTIVE_OPT && e->value.v[0] == H5FD_MPIO_INDIVIDUAL_IO &&
        filtered_or_chunked(id, 1)) {
        /* measured: a collective H5Dwrite of a chunked dataset with it never returns (HDF5
         * 1.10.8, MPICH 4.0) */
        if (f->leader)
            iot_warn_once("individual-chunked",
                          "%s:%s: mpio_collective_opt=individual_io NOT applied to chunked "
                          "datasets (parallel HDF5 1.10.8 hangs in their collective transfers) "
                          "[%s]",
                          file, dset, iot_origin(e, where, sizeof where));
        return -1;
    }
    if (iot_g.verbose && f->leader)
        iot_log("%s:%s: hdf5 transfer: %s=%s [%s]", file, dset, e->name, e->value.text,
                iot_origin(e, where, sizeof where));
    return (int)e->value.v[0];
}

/* A chunk optimisation threshold (mpio_chunk_opt_num, mpio_chunk_opt_ratio), or -1. */
static long long threshold(const iot_file_info *f, const char *file, const char *dset, int p)
{
    const iot_entry *e = iot_resolved_for(f->rules, p, dset);
    char where[96];
    if (!e)
        return -1;
    if (iot_g.verbose && f->leader)
        iot_log("%s:%s: hdf5 transfer: %s=%s [%s]", file, dset, e->name, e->value.text,
                iot_origin(e, where, sizeof where));
    return e->value.v[0];
}

/* The run's distinct transfer combinations: a code is an index here. */
static iot_xfer xfers[IOT_XFER_MAX];
static int xfer_count;

const iot_xfer *iot_xfer_of(int code)
{
    return code >= 0 && code < xfer_count ? &xfers[code] : NULL;
}

int iot_transfer_mode(const iot_file_info *f, const char *file, const char *dset, hid_t id)
{
    if (!f->mpio)
        return -1;
    iot_xfer x = {forced_mode(f, file, dset, id),
                  transfer_option(f, file, dset, id, IOT_P_MPIO_CHUNK_OPT),
                  transfer_option(f, file, dset, id, IOT_P_MPIO_COLLECTIVE_OPT),
                  threshold(f, file, dset, IOT_P_MPIO_CHUNK_OPT_NUM),
                  threshold(f, file, dset, IOT_P_MPIO_CHUNK_OPT_RATIO)};
    if (x.mode < 0 && x.chunk_opt < 0 && x.coll_opt < 0 && x.chunk_num < 0 && x.chunk_ratio < 0)
        return -1;
    for (int i = 0; i < xfer_count; i++)
        if (!memcmp(&xfers[i], &x, sizeof x))
            return i;
    if (xfer_count == IOT_XFER_MAX) { /* more distinct combinations than any control file has */
        if (f->leader)
            iot_warn_once("xfer-table",
                          "%s:%s: more than %d different transfer settings: "
                          "these transfers keep the application's own",
                          file, dset, IOT_XFER_MAX);
        return -1;
    }
    xfers[xfer_count] = x;
    return xfer_count++;
}
