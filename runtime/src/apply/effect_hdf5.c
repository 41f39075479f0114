/* What of the HDF5 settings is in effect: read back from the open file's and dataset's
 * property lists and judged setting by setting, the application's own settings the control
 * file overrides, and the outcome lists (applied, notes) kept for the profile. */
#include "apply/effect_hdf5.h"

#include <stdio.h>
#include <string.h>

#include "core/core.h"

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

/* A file access (or, for the fcpl parameters, creation) parameter's value in a list: the
 * number of values (v[0], v[1]) or -1. */
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
    case IOT_P_PAGE_BUFFER_SIZE: {
        unsigned meta = 0, raw = 0;
        if (IOT_H5_CALL(H5Pget_page_buffer_size, fapl, &z, &meta, &raw) < 0)
            return -1;
        v[0] = (long long)z;
        return 1;
    }
    case IOT_P_LIBVER_LOW: {
        H5F_libver_t low, high;
        if (IOT_H5_CALL(H5Pget_libver_bounds, fapl, &low, &high) < 0)
            return -1;
        v[0] = (long long)low; /* the registry's choices, up to v200 (latest: see wanted) */
        return 1;
    }
    case IOT_P_EVICT_ON_CLOSE:
        if (IOT_H5_CALL(H5Pget_evict_on_close, fapl, &flag) < 0)
            return -1;
        v[0] = flag != 0;
        return 1;
    case IOT_P_MDC_IMAGE: {
        H5AC_cache_image_config_t im;
        memset(&im, 0, sizeof im);
        im.version = H5AC__CURR_CACHE_IMAGE_CONFIG_VERSION;
        if (IOT_H5_CALL(H5Pget_mdc_image_config, fapl, &im) < 0)
            return -1;
        v[0] = im.generate_image != 0;
        return 1;
    }
    case IOT_P_FILE_SPACE_STRATEGY: { /* a creation list's */
        H5F_fspace_strategy_t st;
        hbool_t persist;
        if (IOT_H5_CALL(H5Pget_file_space_strategy, fapl, &st, &persist, &a) < 0)
            return -1;
        v[0] = (long long)st;
        return 1;
    }
    case IOT_P_FILE_SPACE_PAGE_SIZE:
        if (IOT_H5_CALL(H5Pget_file_space_page_size, fapl, &a) < 0)
            return -1;
        v[0] = (long long)a;
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

/* Values as the control file writes them: an enum's choice by name, else the numbers. */
static void format_values(int p, const long long *v, int n, char *buf, size_t len)
{
    const char *c = iot_params[p].choices;
    for (long long i = 0; c && n == 1 && v[0] >= 0 && i < v[0] && *c; i++)
        c = strchr(c, '|') ? strchr(c, '|') + 1 : "";
    if (c && n == 1 && v[0] >= 0 && *c)
        snprintf(buf, len, "%.*s", (int)strcspn(c, "|"), c);
    else if (n == 2)
        snprintf(buf, len, "%lld,%lld", v[0], v[1]);
    else
        snprintf(buf, len, "%lld", v[0]);
}

/* The value HDF5 is asked for: libver_low's "latest" is the library's own newest format. */
static long long wanted(const iot_entry *e, int i)
{
    if (e->param == IOT_P_LIBVER_LOW && e->value.v[0] == 6)
        return iot_h5_latest_format();
    return e->value.v[i];
}

static int same_values(const iot_entry *e, const long long *v, int n)
{
    for (int i = 0; i < n; i++)
        if (wanted(e, i) != v[i])
            return 0;
    return n > 0;
}

/* The application's own file access settings the control file replaces: said once per
 * parameter (leader), and noted for the profile. */
void note_overrides(const iot_file_settings *rules, const char *name, hid_t fapl, int leader,
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
        char own[64], where[96], line[1024];
        format_values(p, app, n, own, sizeof own);
        snprintf(line, sizeof line, "%s=%s [%s] overrides the application's own %s=%s", e->name,
                 e->value.text, iot_origin(e, where, sizeof where), e->name, own);
        if (out)
            iot_outcome_add(out->notes, sizeof out->notes, line);
        if (leader)
            iot_warn_once(e->name, "%s: %s (%s)", name, line, iot_who_wins(e));
    }
    if (def >= 0)
        h->H5Pclose(def);
}

/* Settings of parallel HDF5 and MPI-IO: without meaning for a serial (sec2) file. */
int parallel_only(int p)
{
    return iot_params[p].builds == IOT_BUILDS_MPIO || iot_params[p].target == IOT_TARGET_HINT;
}

/* A serial file opted in: the settings it matches that have no meaning for it, said once per
 * run (leader) and noted for the profile. */
void note_meaningless(const iot_file_settings *rules, const char *name, int leader,
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

/* Whether a setting was withdrawn before the call (too costly: apply_hdf5.c): it was never
 * asked for, so its read-back says nothing. */
static int was_withdrawn(const iot_h5_outcome *out, const char *name)
{
    size_t n = strlen(name);
    for (const char *l = out->withdrawn; *l; l += strcspn(l, "\n") + (l[strcspn(l, "\n")] != 0))
        if (strncmp(l, name, n) == 0 && (l[n] == '\n' || l[n] == '\0'))
            return 1;
    return 0;
}

void iot_readback_file(const iot_file_settings *rules, hid_t fid, int created, hid_t taken,
                       iot_h5_outcome *out)
{
    const iot_h5_api *h = iot_h5();
    iot_h5_quiet quiet;
    iot_h5_quiet_begin(&quiet);
    hid_t fapl = IOT_H5_CALL(H5Fget_access_plist, fid);
    hid_t fcpl = created ? IOT_H5_CALL(H5Fget_create_plist, fid) : H5I_INVALID_HID;
    for (int p = 0; fapl >= 0 && p < IOT_P_COUNT; p++) {
        const iot_entry *e = iot_resolved_file(rules, p);
        long long v[2];
        int t = iot_params[p].target;
        if (!e || (t != IOT_TARGET_FAPL && (t != IOT_TARGET_FCPL || !created)) ||
            was_withdrawn(out, e->name))
            continue; /* creation settings: only a file created now has them */
        /* evict_on_close: HDF5 (1.10 to 2.0) keeps it with the open file and leaves it off the
         * file's list; the list the open took says it (a serial build: a parallel one refuses
         * it, withdrawn before the call) */
        hid_t from = t == IOT_TARGET_FCPL ? fcpl : p == IOT_P_EVICT_ON_CLOSE ? taken : fapl;
        int n = get_fapl(p, from, v);
        char line[1024], got[64], where[96];
        if (same_values(e, v, n)) {
            snprintf(line, sizeof line, "%s=%s", e->name, e->value.text);
            iot_outcome_add(out->applied, sizeof out->applied, line);
            continue;
        }
        format_values(p, v, n, got, sizeof got);
        snprintf(line, sizeof line, "%s=%s NOT in effect: HDF5 uses %s [%s]", e->name,
                 e->value.text, n < 0 ? "?" : got, iot_origin(e, where, sizeof where));
        iot_outcome_add(out->notes, sizeof out->notes, line);
    }
    if (fapl >= 0)
        h->H5Pclose(fapl);
    if (fcpl >= 0)
        h->H5Pclose(fcpl);
    iot_h5_quiet_end(&quiet);
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
    char line[1024], where[96];
    if (was_withdrawn(out, e->name))
        return;
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
        unsigned opts = 0;
        if ((e = iot_resolved_for(rules, IOT_P_FILTER_PARTIAL_CHUNKS, dset)) &&
            layout == H5D_CHUNKED && IOT_H5_CALL(H5Pget_chunk_opts, c, &opts) >= 0)
            judge(dset, e, !(opts & H5D_CHUNK_DONT_FILTER_PARTIAL_CHUNKS) == (e->value.v[0] != 0),
                  opts & H5D_CHUNK_DONT_FILTER_PARTIAL_CHUNKS ? "false" : "true", out);
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
    /* the transfer list is made at each transfer: what the open can say is what will be set */
    static const int xfer[] = {IOT_P_TRANSFER_MODE, IOT_P_MPIO_CHUNK_OPT, IOT_P_MPIO_COLLECTIVE_OPT,
                               IOT_P_MPIO_CHUNK_OPT_NUM, IOT_P_MPIO_CHUNK_OPT_RATIO};
    const iot_xfer *x = iot_xfer_of(mode);
    const long long set[] = {x ? x->mode : -1, x ? x->chunk_opt : -1, x ? x->coll_opt : -1,
                             x ? x->chunk_num : -1, x ? x->chunk_ratio : -1};
    for (int i = 0; x && i < 5; i++)
        if (set[i] >= 0 && (e = iot_resolved_for(rules, xfer[i], dset)))
            judge(dset, e, 1, "", out);
    iot_h5_quiet_end(&quiet);
}
