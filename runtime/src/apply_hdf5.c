#include "apply_hdf5.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"

/* One line of verbose report, built up setting by setting. */
typedef struct {
    char text[8192];
    size_t len;
    int items;
} report;

__attribute__((format(printf, 2, 3))) static void add(report *r, const char *fmt, ...)
{
    if (r->len >= sizeof r->text - 1)
        return;
    if (r->items++)
        r->len += (size_t)snprintf(r->text + r->len, sizeof r->text - r->len, "\n");
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(r->text + r->len, sizeof r->text - r->len, fmt, ap);
    va_end(ap);
    r->len = r->len + (size_t)n < sizeof r->text ? r->len + (size_t)n : sizeof r->text - 1;
}

static void add_entry(report *r, const iot_entry *e, herr_t rc)
{
    char where[96];
    if (rc >= 0)
        add(r, "%s=%s [%s]", e->name, e->value.text, iot_origin(e, where, sizeof where));
    else
        add(r, "%s=%s NOT applied: HDF5 refused it [%s]", e->name, e->value.text,
            iot_origin(e, where, sizeof where));
}

/* Copies (or creates) a property list the first time a setting needs changing it. */
static hid_t writable(hid_t *copy, hid_t orig, hid_t cls)
{
    const iot_h5_api *h = iot_h5();
    if (*copy < 0)
        *copy = orig == H5P_DEFAULT ? h->H5Pcreate(cls) : h->H5Pcopy(orig);
    return *copy;
}

static int detect_mpio(hid_t fapl, iot_file_info *info)
{
    const iot_h5_api *h = iot_h5();
    info->mpio = 0;
    info->leader = iot_world_rank() == 0;
    if (fapl == H5P_DEFAULT || !h->parallel)
        return 0;
    /* H5Pget_fapl_mpio fails for other drivers and duplicates the communicator for MPI-IO:
     * collective, but so is the H5Fcreate/H5Fopen we are inside. */
    MPI_Comm comm = MPI_COMM_NULL;
    MPI_Info info_obj = MPI_INFO_NULL;
    if (h->H5Pget_fapl_mpio(fapl, &comm, &info_obj) < 0)
        return 0;
    int rank = 0;
    PMPI_Comm_rank(comm, &rank);
    info->mpio = 1;
    info->leader = rank == 0;
    MPI_Comm_free(&comm);
    if (info_obj != MPI_INFO_NULL)
        MPI_Info_free(&info_obj);
    return 1;
}

static int is_mdc(int p)
{
    return p == IOT_P_MDC_INITIAL_SIZE || p == IOT_P_MDC_MIN_SIZE || p == IOT_P_MDC_MAX_SIZE;
}

/* The three metadata cache sizes go into one configuration. */
static herr_t set_mdc(const iot_file_settings *rules, hid_t fapl, report *r)
{
    const iot_entry *init = iot_resolved_file(rules, IOT_P_MDC_INITIAL_SIZE);
    const iot_entry *min = iot_resolved_file(rules, IOT_P_MDC_MIN_SIZE);
    const iot_entry *max = iot_resolved_file(rules, IOT_P_MDC_MAX_SIZE);
    H5AC_cache_config_t c;
    memset(&c, 0, sizeof c);
    c.version = H5AC__CURR_CACHE_CONFIG_VERSION;
    if (IOT_H5_CALL(H5Pget_mdc_config, fapl, &c) < 0)
        return -1;
    if (min)
        c.min_size = (size_t)min->value.v[0];
    if (max)
        c.max_size = (size_t)max->value.v[0];
    if (c.min_size > c.max_size) {
        add(r, "mdc_min_size=%zu > mdc_max_size=%zu: metadata cache settings NOT applied",
            c.min_size, c.max_size);
        return -1;
    }
    if (init) {
        c.set_initial_size = 1;
        c.initial_size = (size_t)init->value.v[0];
    }
    /* keep the initial size inside [min, max] so HDF5 accepts the configuration */
    if (c.initial_size < c.min_size)
        c.initial_size = c.min_size;
    if (c.initial_size > c.max_size)
        c.initial_size = c.max_size;
    c.set_initial_size = 1;
    herr_t rc = IOT_H5_CALL(H5Pset_mdc_config, fapl, &c);
    const iot_entry *list[] = {init, min, max};
    for (int i = 0; i < 3; i++)
        if (list[i])
            add_entry(r, list[i], rc);
    return rc;
}

void iot_outcome_add(char *list, size_t size, const char *line)
{
    static const char more[] = "(more left out)";
    size_t used = strlen(list), n = strlen(line);
    for (const char *at = list; (at = strstr(at, line)); at += n)
        if ((at == list || at[-1] == '\n') && (at[n] == '\n' || at[n] == '\0'))
            return;
    if (used >= sizeof more && strcmp(list + used - (sizeof more - 1), more) == 0)
        return; /* full already */
    if (used + n + 2 + sizeof more < size)
        snprintf(list + used, size - used, "%s%s", used ? "\n" : "", line);
    else if (used + sizeof more + 1 < size)
        snprintf(list + used, size - used, "%s%s", used ? "\n" : "", more);
}

/* Copies the report's "NOT applied" lines (settings held back, and why) into notes. */
static void keep_refusals(const report *r, iot_h5_outcome *out)
{
    if (!out)
        return;
    for (const char *line = r->text; *line;) {
        size_t len = strcspn(line, "\n");
        char one[512];
        snprintf(one, sizeof one, "%.*s", (int)len, line);
        if (strstr(one, "NOT applied"))
            iot_outcome_add(out->notes, sizeof out->notes, one);
        line += len + (line[len] == '\n');
    }
}

/* A file access parameter's value in a list: the number of values (v[0], v[1]) or -1. */
static int get_fapl(int p, hid_t fapl, long long *v)
{
    hsize_t a = 0, b = 0;
    size_t z = 0;
    hbool_t flag = 0;
    H5AC_cache_config_t c;
    switch (p) {
    case IOT_P_ALIGNMENT:
        if (IOT_H5_CALL(H5Pget_alignment, fapl, &a, &b) < 0)
            return -1;
        v[0] = (long long)a;
        v[1] = (long long)b;
        return 2;
    case IOT_P_SIEVE_BUF_SIZE:
        if (IOT_H5_CALL(H5Pget_sieve_buf_size, fapl, &z) < 0)
            return -1;
        v[0] = (long long)z;
        return 1;
    case IOT_P_META_BLOCK_SIZE:
        if (IOT_H5_CALL(H5Pget_meta_block_size, fapl, &a) < 0)
            return -1;
        v[0] = (long long)a;
        return 1;
    case IOT_P_SMALL_DATA_BLOCK_SIZE:
        if (IOT_H5_CALL(H5Pget_small_data_block_size, fapl, &a) < 0)
            return -1;
        v[0] = (long long)a;
        return 1;
    case IOT_P_COLL_METADATA_READ:
        if (IOT_H5_CALL(H5Pget_all_coll_metadata_ops, fapl, &flag) < 0)
            return -1;
        v[0] = flag != 0;
        return 1;
    case IOT_P_COLL_METADATA_WRITE:
        if (IOT_H5_CALL(H5Pget_coll_metadata_write, fapl, &flag) < 0)
            return -1;
        v[0] = flag != 0;
        return 1;
    case IOT_P_MDC_INITIAL_SIZE:
    case IOT_P_MDC_MIN_SIZE:
    case IOT_P_MDC_MAX_SIZE:
        memset(&c, 0, sizeof c);
        c.version = H5AC__CURR_CACHE_CONFIG_VERSION;
        if (IOT_H5_CALL(H5Pget_mdc_config, fapl, &c) < 0)
            return -1;
        v[0] = (long long)(p == IOT_P_MDC_MIN_SIZE   ? c.min_size
                           : p == IOT_P_MDC_MAX_SIZE ? c.max_size
                                                     : c.initial_size);
        return 1;
    default: return -1;
    }
}

static void format_values(const long long *v, int n, char *buf, size_t len)
{
    if (n == 2)
        snprintf(buf, len, "%lld,%lld", v[0], v[1]);
    else
        snprintf(buf, len, "%lld", v[0]);
}

static int same_values(const iot_entry *e, const long long *v, int n)
{
    for (int i = 0; i < n; i++)
        if (e->value.v[i] != v[i])
            return 0;
    return n > 0;
}

/* The application's own file access settings the control file replaces: said once per
 * parameter (leader), and noted for the profile. */
static void note_overrides(const iot_file_settings *rules, const char *name, hid_t fapl, int leader,
                           iot_h5_outcome *out)
{
    const iot_h5_api *h = iot_h5();
    if (fapl == H5P_DEFAULT)
        return;
    hid_t def = h->H5Pcreate(h->cls_fapl);
    for (int p = 0; def >= 0 && p < IOT_P_COUNT; p++) {
        const iot_entry *e = iot_resolved_file(rules, p);
        long long app[2], dflt[2];
        if (!e || iot_params[p].target != IOT_TARGET_FAPL)
            continue;
        int n = get_fapl(p, fapl, app);
        if (n < 0 || get_fapl(p, def, dflt) != n || !memcmp(app, dflt, sizeof(long long) * n) ||
            same_values(e, app, n))
            continue;
        char own[64], where[96], line[512];
        format_values(app, n, own, sizeof own);
        snprintf(line, sizeof line, "%s=%s [%s] overrides the application's own %s=%s", e->name,
                 e->value.text, iot_origin(e, where, sizeof where), e->name, own);
        if (out)
            iot_outcome_add(out->notes, sizeof out->notes, line);
        if (leader)
            iot_warn_once(e->name, "%s: %s (the control file wins; docs/control-file.md)", name,
                          line);
    }
    if (def >= 0)
        h->H5Pclose(def);
}

/* The driver of a file access list, named for a note. */
static const char *driver_name(hid_t fapl)
{
    if (fapl == H5P_DEFAULT)
        return "sec2";
    hid_t d = IOT_H5_CALL(H5Pget_driver, fapl);
    if (d >= 0 && d == IOT_H5_CALL(H5FD_sec2_init))
        return "sec2";
    if (d >= 0 && d == IOT_H5_CALL(H5FD_core_init))
        return "core";
    return "another driver than MPI-IO";
}

void iot_readback_file(const iot_file_settings *rules, hid_t fid, iot_h5_outcome *out)
{
    const iot_h5_api *h = iot_h5();
    iot_h5_quiet quiet;
    iot_h5_quiet_begin(&quiet);
    hid_t fapl = IOT_H5_CALL(H5Fget_access_plist, fid);
    for (int p = 0; fapl >= 0 && p < IOT_P_COUNT; p++) {
        const iot_entry *e = iot_resolved_file(rules, p);
        long long v[2];
        if (!e || iot_params[p].target != IOT_TARGET_FAPL)
            continue;
        int n = get_fapl(p, fapl, v);
        char line[512], got[64], where[96];
        if (same_values(e, v, n)) {
            snprintf(line, sizeof line, "%s=%s", e->name, e->value.text);
            iot_outcome_add(out->applied, sizeof out->applied, line);
            continue;
        }
        format_values(v, n, got, sizeof got);
        snprintf(line, sizeof line, "%s=%s NOT in effect: HDF5 uses %s [%s]", e->name,
                 e->value.text, n < 0 ? "?" : got, iot_origin(e, where, sizeof where));
        iot_outcome_add(out->notes, sizeof out->notes, line);
    }
    if (fapl >= 0)
        h->H5Pclose(fapl);
    iot_h5_quiet_end(&quiet);
}

/* One file access setting onto fapl. A new file access parameter is one params.tsv row and
 * one case here (IOT_H5_CALL finds any HDF5 function). */
static herr_t set_fapl(int p, hid_t fapl, const iot_entry *e)
{
    const long long *v = e->value.v;
    switch (p) {
    case IOT_P_ALIGNMENT: return IOT_H5_CALL(H5Pset_alignment, fapl, (hsize_t)v[0], (hsize_t)v[1]);
    case IOT_P_SIEVE_BUF_SIZE: return IOT_H5_CALL(H5Pset_sieve_buf_size, fapl, (size_t)v[0]);
    case IOT_P_META_BLOCK_SIZE: return IOT_H5_CALL(H5Pset_meta_block_size, fapl, (hsize_t)v[0]);
    case IOT_P_SMALL_DATA_BLOCK_SIZE:
        return IOT_H5_CALL(H5Pset_small_data_block_size, fapl, (hsize_t)v[0]);
    case IOT_P_COLL_METADATA_READ:
        return IOT_H5_CALL(H5Pset_all_coll_metadata_ops, fapl, (hbool_t)v[0]);
    case IOT_P_COLL_METADATA_WRITE:
        return IOT_H5_CALL(H5Pset_coll_metadata_write, fapl, (hbool_t)v[0]);
    default: return -1; /* a parameter of the table without a case: said as refused */
    }
}

/* Settings of parallel HDF5 and MPI-IO: without meaning for a serial (sec2) file. */
static int parallel_only(int p)
{
    return p == IOT_P_COLL_METADATA_READ || p == IOT_P_COLL_METADATA_WRITE ||
           p == IOT_P_TRANSFER_MODE || iot_params[p].target == IOT_TARGET_HINT;
}

/* A serial file opted in: the settings it matches that have no meaning for it, said once per
 * run (leader) and noted for the profile. */
static void note_meaningless(const iot_file_settings *rules, const char *name, int leader,
                             iot_h5_outcome *out)
{
    char list[1024] = "";
    size_t used = 0;
    for (int p = 0; p < IOT_P_COUNT && used < sizeof list; p++) {
        int any = iot_resolved_file(rules, p) != NULL;
        for (int i = 0; !any && rules && i < rules->set.count; i++)
            any = rules->set.entries[i].param == p;
        if (any && parallel_only(p))
            used += (size_t)snprintf(list + used, sizeof list - used, "%s%s", used ? ", " : "",
                                     iot_params[p].name);
    }
    if (!list[0])
        return;
    char line[1200];
    snprintf(line, sizeof line,
             "serial file (sec2 driver): %s have no meaning here and are left out", list);
    if (out)
        iot_outcome_add(out->notes, sizeof out->notes, line);
    if (leader)
        iot_warn_once("serial-meaningless", "%s: %s", name, line);
}

hid_t iot_apply_fapl(const iot_settings *s, const char *how, const char *name, hid_t fapl,
                     iot_file_info *info, iot_h5_outcome *out)
{
    const iot_h5_api *h = iot_h5();
    info->rules = NULL;
    iot_h5_quiet quiet;
    iot_h5_quiet_begin(&quiet);
    int mpio = detect_mpio(fapl, info);
    const char *driver = mpio ? "MPI-IO" : driver_name(fapl);
    /* the one match of the file's name: its datasets are served from the same set */
    iot_file_settings *rules = iot_resolve(s, name);
    const iot_entry *opt_in = iot_resolved_file(rules, IOT_P_SERIAL_FILES);
    int serial = !mpio && strcmp(driver, "sec2") == 0 && opt_in && opt_in->value.v[0];
    if (!mpio && !serial) {
        /* serial programs and tools (h5repack, ...) keep their own settings unless the
         * control file opts their files in */
        iot_h5_quiet_end(&quiet);
        iot_resolved_free(rules);
        if (out) {
            char line[256];
            snprintf(line, sizeof line,
                     "no HDF5 settings: opened with the %s driver (they reach files opened with "
                     "the MPI-IO driver%s)",
                     driver,
                     strcmp(driver, "sec2") == 0 ? ", and sec2 ones with serial_files" : "");
            iot_outcome_add(out->notes, sizeof out->notes, line);
        }
        if (iot_g.verbose && info->leader)
            iot_log("%s %s (%s driver): no settings applied to this file, its datasets or "
                    "transfers",
                    how, name, driver);
        return fapl;
    }
    info->rules = rules;
    info->tuned = 1;
    if (serial)
        note_meaningless(rules, name, info->leader, out);
    note_overrides(rules, name, fapl, info->leader, out);
    hid_t copy = H5I_INVALID_HID;
    report r = {.len = 0};
    for (int p = 0, mdc_done = 0; p < IOT_P_COUNT; p++) {
        const iot_entry *e = iot_resolved_file(rules, p);
        if (iot_params[p].target != IOT_TARGET_FAPL || (!e && !is_mdc(p)) ||
            (serial && parallel_only(p)))
            continue;
        if (is_mdc(p)) {
            int any = iot_resolved_file(rules, IOT_P_MDC_INITIAL_SIZE) ||
                      iot_resolved_file(rules, IOT_P_MDC_MIN_SIZE) ||
                      iot_resolved_file(rules, IOT_P_MDC_MAX_SIZE);
            if (any && !mdc_done++)
                set_mdc(rules, writable(&copy, fapl, h->cls_fapl), &r);
            continue;
        }
        add_entry(&r, e, set_fapl(p, writable(&copy, fapl, h->cls_fapl), e));
    }
    iot_h5_quiet_end(&quiet);
    keep_refusals(&r, out);
    if (iot_g.verbose && info->leader) {
        char header[1200];
        snprintf(header, sizeof header, "%s %s (%s driver): hdf5 file access%s", how, name, driver,
                 r.items ? ":" : ": nothing to apply");
        iot_log_block(header, r.text);
    }
    return copy >= 0 ? copy : fapl;
}

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

static void set_chunk(const iot_file_settings *rules, const char *dset, hid_t type, hid_t space,
                      hid_t dcpl, hid_t *copy, report *r)
{
    const iot_h5_api *h = iot_h5();
    const iot_entry *dims_e = iot_resolved_for(rules, IOT_P_CHUNK, dset);
    const iot_entry *size_e = iot_resolved_for(rules, IOT_P_CHUNK_SIZE, dset);
    const iot_entry *e = dims_e ? dims_e : size_e;
    if (!e)
        return;
    hsize_t dims[H5S_MAX_RANK], maxdims[H5S_MAX_RANK], chunk[H5S_MAX_RANK];
    int ndims = h->H5Sget_simple_extent_ndims(space);
    if (ndims <= 0 || h->H5Sget_simple_extent_dims(space, dims, maxdims) < 0) {
        add(r, "%s NOT applied: scalar or null dataspace cannot be chunked", e->name);
        return;
    }
    if (dcpl != H5P_DEFAULT) {
        /* chunking a virtual dataset would replace its mappings with empty storage; compact
         * and external storage are the application's choice too */
        H5D_layout_t layout = h->H5Pget_layout(dcpl);
        if ((layout != H5D_CONTIGUOUS && layout != H5D_CHUNKED) ||
            (h->H5Pget_external_count && h->H5Pget_external_count(dcpl) > 0)) {
            add(r, "%s NOT applied: the application asked for %s storage", e->name,
                layout == H5D_COMPACT                               ? "compact"
                : layout == H5D_VIRTUAL                             ? "virtual"
                : layout == H5D_CHUNKED || layout == H5D_CONTIGUOUS ? "external"
                                                                    : "another kind of");
            return;
        }
    }
    if (e == dims_e && e->value.n != ndims) {
        add(r, "chunk=%s NOT applied: %d dimensions for a dataset of rank %d", e->value.text,
            e->value.n, ndims);
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
            add(r, "%s NOT applied: the dataset has a fixed dimension of size 0", e->name);
            return;
        }
        bytes *= (double)chunk[i];
    }
    if (bytes >= 4294967296.0) {
        add(r, "%s NOT applied: a chunk must be smaller than 4 GiB", e->name);
        return;
    }
    herr_t rc = h->H5Pset_chunk(writable(copy, dcpl, h->cls_dcpl), ndims, chunk);
    char where[96], text[256];
    int n = 0;
    for (int i = 0; i < ndims && n < (int)sizeof text - 24; i++)
        n += snprintf(text + n, sizeof text - (size_t)n, i ? ",%llu" : "%llu",
                      (unsigned long long)chunk[i]);
    add(r, "chunk=%s%s%s%s [%s]", text, e == size_e ? " (from chunk_size=" : "",
        e == size_e ? e->value.text : "", e == size_e ? ")" : "",
        iot_origin(e, where, sizeof where));
    if (rc < 0)
        add(r, "chunk NOT applied: HDF5 refused it");
}

hid_t iot_apply_dcpl(const iot_file_info *f, const char *file, const char *dset, hid_t type,
                     hid_t space, hid_t dcpl, iot_h5_outcome *out)
{
    const iot_h5_api *h = iot_h5();
    iot_h5_quiet quiet;
    iot_h5_quiet_begin(&quiet);
    hid_t copy = H5I_INVALID_HID;
    report r = {.len = 0};
    set_chunk(f->rules, dset, type, space, dcpl, &copy, &r);
    static const H5D_fill_time_t fill_times[] = {H5D_FILL_TIME_IFSET, H5D_FILL_TIME_ALLOC,
                                                 H5D_FILL_TIME_NEVER};
    static const H5D_alloc_time_t alloc_times[] = {H5D_ALLOC_TIME_DEFAULT, H5D_ALLOC_TIME_EARLY,
                                                   H5D_ALLOC_TIME_INCR, H5D_ALLOC_TIME_LATE};
    const iot_entry *e;
    H5D_fill_value_t fill = H5D_FILL_VALUE_DEFAULT;
    char where[96];
    if ((e = iot_resolved_for(f->rules, IOT_P_FILL_TIME, dset)) &&
        fill_times[e->value.v[0]] == H5D_FILL_TIME_NEVER && dcpl != H5P_DEFAULT &&
        h->H5Pfill_value_defined(dcpl, &fill) >= 0 && fill == H5D_FILL_VALUE_USER_DEFINED)
        /* unwritten elements must keep reading as the application's own fill value */
        add(&r, "fill_time=never NOT applied: the application defined a fill value [%s]",
            iot_origin(e, where, sizeof where));
    else if (e)
        add_entry(&r, e,
                  IOT_H5_CALL(H5Pset_fill_time, writable(&copy, dcpl, h->cls_dcpl),
                              fill_times[e->value.v[0]]));
    if ((e = iot_resolved_for(f->rules, IOT_P_ALLOC_TIME, dset))) {
        add_entry(&r, e,
                  IOT_H5_CALL(H5Pset_alloc_time, writable(&copy, dcpl, h->cls_dcpl),
                              alloc_times[e->value.v[0]]));
        if (f->mpio && e->value.v[0] >= 2)
            add(&r, "note: parallel HDF5 allocates space early whatever alloc_time says");
    }
    iot_h5_quiet_end(&quiet);
    keep_refusals(&r, out);
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
    if (!bytes && !slots && !w0)
        return dapl;
    iot_h5_quiet quiet;
    iot_h5_quiet_begin(&quiet);
    hid_t copy = H5I_INVALID_HID;
    /* unset fields keep the file's defaults */
    herr_t rc = IOT_H5_CALL(H5Pset_chunk_cache, writable(&copy, dapl, h->cls_dapl),
                            slots ? (size_t)slots->value.v[0] : H5D_CHUNK_CACHE_NSLOTS_DEFAULT,
                            bytes ? (size_t)bytes->value.v[0] : H5D_CHUNK_CACHE_NBYTES_DEFAULT,
                            w0 ? w0->value.d : H5D_CHUNK_CACHE_W0_DEFAULT);
    iot_h5_quiet_end(&quiet);
    report r = {.len = 0};
    const iot_entry *list[] = {bytes, slots, w0};
    for (int i = 0; i < 3; i++)
        if (list[i])
            add_entry(&r, list[i], rc);
    keep_refusals(&r, out);
    if (iot_g.verbose && f->leader) {
        char header[2200];
        snprintf(header, sizeof header, "dataset %s:%s: hdf5 dataset access:", file, dset);
        iot_log_block(header, r.text);
    }
    return copy >= 0 ? copy : dapl;
}

/* Does the dataset have filters (deflate, ...)? Reads its creation list: local, no I/O. */
static int filtered(hid_t id)
{
    const iot_h5_api *h = iot_h5();
    iot_h5_quiet quiet;
    iot_h5_quiet_begin(&quiet);
    hid_t dcpl = h->H5Dget_create_plist(id);
    int n = dcpl >= 0 ? h->H5Pget_nfilters(dcpl) : 0;
    if (dcpl >= 0)
        h->H5Pclose(dcpl);
    iot_h5_quiet_end(&quiet);
    return n > 0;
}

int iot_transfer_mode(const iot_file_info *f, const char *file, const char *dset, hid_t id)
{
    const iot_entry *e = iot_resolved_for(f->rules, IOT_P_TRANSFER_MODE, dset);
    if (!e || !f->mpio)
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

void iot_describe_settings(const iot_file_settings *rules, const char *dset, int target, char *buf,
                           size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int p = 0; p < IOT_P_COUNT && used < len; p++) {
        int t = iot_params[p].target;
        if (target >= 0 ? t != target : t != IOT_TARGET_DCPL && t != IOT_TARGET_DAPL)
            continue;
        const iot_entry *e = dset ? iot_resolved_for(rules, p, dset) : iot_resolved_file(rules, p);
        if (e)
            used += (size_t)snprintf(buf + used, len - used, "%s%s=%s", used ? ", " : "", e->name,
                                     e->value.text);
    }
    if (!buf[0])
        snprintf(buf, len, "settings");
}

/* One dataset setting read back: in effect (applied) or not (a note with HDF5's value). */
static void judge(const char *dset, const iot_entry *e, int in_effect, const char *got,
                  iot_h5_outcome *out)
{
    char line[512], where[96];
    if (in_effect) {
        snprintf(line, sizeof line, "%s=%s", e->name, e->value.text);
        iot_outcome_add(out->applied, sizeof out->applied, line);
        return;
    }
    snprintf(line, sizeof line, "%s: %s=%s NOT in effect: HDF5 uses %s [%s]", dset, e->name,
             e->value.text, got, iot_origin(e, where, sizeof where));
    iot_outcome_add(out->notes, sizeof out->notes, line);
}

void iot_readback_dataset(const iot_file_settings *rules, const char *dset, hid_t id, int dcpl,
                          int dapl, int mode, iot_h5_outcome *out)
{
    const iot_h5_api *h = iot_h5();
    iot_h5_quiet quiet;
    iot_h5_quiet_begin(&quiet);
    const iot_entry *e;
    static const char *const fill_names[] = {"alloc", "never", "ifset"};
    static const char *const alloc_names[] = {"default", "early", "late", "incr"};
    hid_t c = dcpl || dapl ? h->H5Dget_create_plist(id) : H5I_INVALID_HID;
    H5D_layout_t layout = c >= 0 ? h->H5Pget_layout(c) : H5D_LAYOUT_ERROR;
    if (c >= 0 && dcpl) {
        e = iot_resolved_for(rules, IOT_P_CHUNK, dset);
        if (!e)
            e = iot_resolved_for(rules, IOT_P_CHUNK_SIZE, dset);
        if (e)
            judge(dset, e, layout == H5D_CHUNKED, "another layout", out);
        H5D_fill_time_t ft;
        static const H5D_fill_time_t fill_times[] = {H5D_FILL_TIME_IFSET, H5D_FILL_TIME_ALLOC,
                                                     H5D_FILL_TIME_NEVER};
        if ((e = iot_resolved_for(rules, IOT_P_FILL_TIME, dset)) &&
            IOT_H5_CALL(H5Pget_fill_time, c, &ft) >= 0)
            judge(dset, e, ft == fill_times[e->value.v[0]],
                  ft >= 0 && ft <= 2 ? fill_names[ft] : "another fill time", out);
        H5D_alloc_time_t at;
        static const H5D_alloc_time_t alloc_times[] = {H5D_ALLOC_TIME_DEFAULT, H5D_ALLOC_TIME_EARLY,
                                                       H5D_ALLOC_TIME_INCR, H5D_ALLOC_TIME_LATE};
        if ((e = iot_resolved_for(rules, IOT_P_ALLOC_TIME, dset)) &&
            IOT_H5_CALL(H5Pget_alloc_time, c, &at) >= 0)
            judge(dset, e, at == alloc_times[e->value.v[0]],
                  at >= 0 && at <= 3 ? alloc_names[at] : "another time", out);
    }
    if (c >= 0)
        h->H5Pclose(c);
    if (dapl && layout != H5D_CHUNKED) { /* a chunk cache serves chunked datasets only */
        char line[512];
        snprintf(line, sizeof line, "%s: chunk cache settings without effect: the dataset is %s",
                 dset, layout == H5D_CONTIGUOUS ? "contiguous" : "not chunked");
        iot_outcome_add(out->notes, sizeof out->notes, line);
        dapl = 0;
    }
    hid_t a = dapl ? IOT_H5_CALL(H5Dget_access_plist, id) : H5I_INVALID_HID;
    size_t slots = 0, bytes = 0;
    double w0 = 0;
    if (a >= 0 && IOT_H5_CALL(H5Pget_chunk_cache, a, &slots, &bytes, &w0) >= 0) {
        char got[64];
        if ((e = iot_resolved_for(rules, IOT_P_CHUNK_CACHE_BYTES, dset))) {
            snprintf(got, sizeof got, "%zu", bytes);
            judge(dset, e, (long long)bytes == e->value.v[0], got, out);
        }
        if ((e = iot_resolved_for(rules, IOT_P_CHUNK_CACHE_SLOTS, dset))) {
            snprintf(got, sizeof got, "%zu", slots);
            judge(dset, e, (long long)slots == e->value.v[0], got, out);
        }
        if ((e = iot_resolved_for(rules, IOT_P_CHUNK_CACHE_W0, dset))) {
            snprintf(got, sizeof got, "%g", w0);
            judge(dset, e, w0 == e->value.d, got, out);
        }
    }
    if (a >= 0)
        h->H5Pclose(a);
    if (mode >= 0 && (e = iot_resolved_for(rules, IOT_P_TRANSFER_MODE, dset)))
        judge(dset, e, 1, "", out);
    iot_h5_quiet_end(&quiet);
}
