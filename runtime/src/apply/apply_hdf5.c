#include "apply/apply_hdf5.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "apply/apply_mpiio.h"
#include "apply/effect_hdf5.h"
#include "capture/capture.h"
#include "config/bounds.h"
#include "core/abi.h"
#include "core/core.h"
#include "platform/budget.h"

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

static int detect_mpio(hid_t fapl, iot_file_info *info, MPI_Comm *file_comm)
{
    const iot_h5_api *h = iot_h5();
    *file_comm = MPI_COMM_NULL;
    info->mpio = 0;
    info->leader = iot_world_rank() == 0;
    if (fapl == H5P_DEFAULT || !h->parallel)
        return 0;
    /* parallel HDF5 brought its MPI: the runtime calls it only if it is the family built for
     * (known by now, unless the program started MPI without passing through MPI_Init) */
    if (iot_mpi_state != IOT_MPI_OWN && iot_abi_settle() != IOT_MPI_OWN)
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
    *file_comm = comm; /* the caller frees it */
    if (info_obj != MPI_INFO_NULL)
        MPI_Info_free(&info_obj);
    return 1;
}

/* A setting that costs more than the machine allows (bounds.h): withdrawn before the call,
 * said once per run (by the file's leader) and kept in the file's profile record. */
static void withdraw_costly(const iot_entry *e, const char *file, const char *why, int leader,
                            report *r, iot_h5_outcome *out)
{
    char where[96], key[IOT_NAME_MAX + IOT_VALUE_TEXT_MAX + 16], brief[400];
    snprintf(key, sizeof key, "bounds:%s=%s", e->name, e->value.text);
    if (leader)
        iot_warn_once(key, "%s: %s [%s]", file, why, iot_origin(e, where, sizeof where));
    iot_rec_withdraw(file, IOT_L_HDF5, e->name, e->value.text,
                     iot_bounds_brief(why, brief, sizeof brief));
    if (out) { /* not read back as "NOT in effect": it was never asked for */
        char line[IOT_NAME_MAX + 1];
        snprintf(line, sizeof line, "%s", e->name);
        iot_outcome_add(out->withdrawn, sizeof out->withdrawn, line);
    }
    add(r, "%s=%s WITHDRAWN: too costly for this machine [%s]", e->name, e->value.text,
        iot_origin(e, where, sizeof where));
}

/* A dataset setting's cost judged against this process's memory (agreed over the job's ranks
 * at MPI_Init, so that a collective H5Dcreate's ranks judge alike): 1 when withdrawn. */
static int too_costly(const iot_entry *e, double cost, const char *file, int leader, report *r,
                      iot_h5_outcome *out)
{
    char why[1536];
    iot_budget b = iot_limits_budget();
    if (!iot_bounds_exceeds(e->param, e->name, e->value.text, cost, &b, why, sizeof why))
        return 0;
    withdraw_costly(e, file, why, leader, r, out);
    return 1;
}

static int is_mdc(int p)
{
    return p == IOT_P_MDC_INITIAL_SIZE || p == IOT_P_MDC_MIN_SIZE || p == IOT_P_MDC_MAX_SIZE;
}

typedef struct {
    const iot_entry *e[2 * IOT_P_COUNT];
    int n;
} cost_list;

static void gather_hint(void *ctx, const iot_entry *e)
{
    cost_list *l = ctx;
    const iot_cost_def *c = iot_cost_of(e->param);
    if (c && c->resource == IOT_RES_MEMORY && l->n < 2 * IOT_P_COUNT)
        l->e[l->n++] = e;
}

/* What the buffers of l cost together (the three metadata cache sizes are one cache: the
 * largest counts); *largest: the costliest one. */
static double file_total(const cost_list *l, int *largest)
{
    double sum = 0, mdc = 0, top = -1;
    *largest = -1;
    for (int i = 0; i < l->n; i++) {
        double c = iot_cost(l->e[i]->param, &l->e[i]->value, 1);
        if (is_mdc(l->e[i]->param))
            mdc = c > mdc ? c : mdc;
        else
            sum += c;
        if (c > top) {
            top = c;
            *largest = i;
        }
    }
    return sum + mdc;
}

/* The file's buffers together (file access settings still in force and the MPI-IO hints HDF5's
 * MPI_File_open will get, each under its own limit): while they cost more than
 * 1/IOT_FILE_TOTAL_SHARE of the memory budget, the costliest is withdrawn, one message each.
 * The budget is agreed at MPI_Init and the settings are the same on every rank of the file,
 * so every rank withdraws alike. */
static void judge_total(iot_file_settings *rules, const char *name, int leader, int *gone,
                        report *r, iot_h5_outcome *out)
{
    iot_budget b = iot_limits_budget();
    cost_list l = {.n = 0};
    for (int p = 0; p < IOT_P_COUNT; p++) {
        const iot_entry *e = iot_resolved_file(rules, p);
        const iot_cost_def *c = iot_cost_of(p);
        if (e && !gone[p] && iot_params[p].target == IOT_TARGET_FAPL && c &&
            c->resource == IOT_RES_MEMORY)
            l.e[l.n++] = e;
    }
    int nfapl = l.n;
    iot_settings_each_hint(&iot_g.settings, name, gather_hint, &l);
    for (int i = nfapl; i < l.n; i++) /* one over its own limit goes by itself at the open */
        if (iot_bounds_exceeds(l.e[i]->param, l.e[i]->name, l.e[i]->value.text,
                               iot_cost(l.e[i]->param, &l.e[i]->value, 1), &b, NULL, 0)) {
            memmove(&l.e[i], &l.e[i + 1], (size_t)(l.n - i - 1) * sizeof l.e[0]);
            l.n--;
            i--;
        }
    int at;
    double total;
    char why[1536];
    while ((total = file_total(&l, &at)) > 0 && at >= 0) {
        const iot_entry *e = l.e[at];
        if (!iot_bounds_total_exceeds(e->name, e->value.text, iot_cost(e->param, &e->value, 1),
                                      total, &b, why, sizeof why))
            break;
        if (at < nfapl) {
            withdraw_costly(e, name, why, leader, r, out);
            gone[e->param] = 1;
            rules->file[e->param] = NULL;
            nfapl--;
        } else {
            char where[96], key[IOT_NAME_MAX + IOT_VALUE_TEXT_MAX + 16];
            snprintf(key, sizeof key, "total:%s=%s", e->name, e->value.text);
            if (leader)
                iot_warn_once(key, "%s: %s [%s]", name, why, iot_origin(e, where, sizeof where));
            iot_rec_withdraw(name, IOT_L_MPIIO, e->name, e->value.text, why);
            iot_mpiio_withdraw_total(name, e->param);
        }
        /* in order: the first of equal costs goes first, as iotune.costs.file_total */
        memmove(&l.e[at], &l.e[at + 1], (size_t)(l.n - at - 1) * sizeof l.e[0]);
        l.n--;
    }
}

/* Marks in gone[] the file access settings that cost more than the machine allows, judged
 * alike on every rank of the file (comm; MPI_COMM_NULL for a serial file): the file access
 * list must be the same on all of them. They are taken out of the file's resolved settings:
 * nothing later (notes on the application's own values, read-back) takes them for asked. */
static void judge_fapl(iot_file_settings *rules, const char *name, MPI_Comm comm, int leader,
                       int *gone, report *r, iot_h5_outcome *out)
{
    iot_budget b = iot_limits_budget();
    int mine[IOT_P_COUNT] = {0}, any = 0;
    for (int p = 0; p < IOT_P_COUNT; p++) {
        const iot_entry *e = iot_resolved_file(rules, p);
        if (!e || iot_params[p].target != IOT_TARGET_FAPL || !iot_cost_of(p))
            continue;
        if (!any++)
            iot_limits_disk(name, &b);
        mine[p] =
            iot_bounds_exceeds(p, e->name, e->value.text, iot_cost(p, &e->value, 1), &b, NULL, 0);
    }
    memcpy(gone, mine, sizeof mine);
    /* every rank has the same settings for the file: all of them reduce, or none */
    if (any && comm != MPI_COMM_NULL)
        PMPI_Allreduce(mine, gone, IOT_P_COUNT, MPI_INT, MPI_MAX, comm);
    for (int p = 0; p < IOT_P_COUNT; p++) {
        const iot_entry *e = iot_resolved_file(rules, p);
        char why[1536];
        if (!gone[p] || !e)
            continue;
        if (!iot_bounds_exceeds(p, e->name, e->value.text, iot_cost(p, &e->value, 1), &b, why,
                                sizeof why))
            snprintf(why, sizeof why,
                     "%s=%s costs more than another rank of the file can afford: withdrawn",
                     e->name, e->value.text);
        withdraw_costly(e, name, why, leader, r, out);
        rules->file[p] = NULL;
    }
}

/* The three metadata cache sizes go into one configuration. */
static herr_t set_mdc(const iot_file_settings *rules, const int *gone, hid_t fapl, report *r)
{
    const iot_entry *init =
        gone[IOT_P_MDC_INITIAL_SIZE] ? NULL : iot_resolved_file(rules, IOT_P_MDC_INITIAL_SIZE);
    const iot_entry *min =
        gone[IOT_P_MDC_MIN_SIZE] ? NULL : iot_resolved_file(rules, IOT_P_MDC_MIN_SIZE);
    const iot_entry *max =
        gone[IOT_P_MDC_MAX_SIZE] ? NULL : iot_resolved_file(rules, IOT_P_MDC_MAX_SIZE);
    if (!init && !min && !max)
        return 0;
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

const char *iot_h5_driver(hid_t fapl)
{
    if (fapl == H5P_DEFAULT)
        return "sec2";
    iot_h5_quiet quiet;
    iot_h5_quiet_begin(&quiet);
    hid_t d = IOT_H5_CALL(H5Pget_driver, fapl);
    const char *name = d < 0 ? "unknown" : "other";
    if (d >= 0 && d == IOT_H5_CALL(H5FD_sec2_init))
        name = "sec2";
    else if (d >= 0 && d == IOT_H5_CALL(H5FD_core_init))
        name = "core";
    else if (d >= 0 && iot_h5() && iot_h5()->parallel && d == IOT_H5_CALL(H5FD_mpio_init))
        name = "mpio";
    iot_h5_quiet_end(&quiet);
    return name;
}

/* The driver of a file access list (not MPI-IO), named for a note. */
static const char *driver_name(hid_t fapl)
{
    const char *d = iot_h5_driver(fapl);
    return strcmp(d, "sec2") == 0 || strcmp(d, "core") == 0 ? d : "another driver than MPI-IO";
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

hid_t iot_apply_fapl(const iot_settings *s, const char *how, const char *name, hid_t fapl,
                     iot_file_info *info, iot_h5_outcome *out)
{
    const iot_h5_api *h = iot_h5();
    info->rules = NULL;
    iot_h5_quiet quiet;
    iot_h5_quiet_begin(&quiet);
    MPI_Comm comm;
    int mpio = detect_mpio(fapl, info, &comm);
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
        if (comm != MPI_COMM_NULL)
            MPI_Comm_free(&comm);
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
    report r = {.len = 0};
    int gone[IOT_P_COUNT];
    judge_fapl(rules, name, comm, info->leader, gone, &r, out);
    judge_total(rules, name, info->leader, gone, &r, out);
    if (comm != MPI_COMM_NULL)
        MPI_Comm_free(&comm);
    if (serial)
        note_meaningless(rules, name, info->leader, out);
    note_overrides(rules, name, fapl, info->leader, out);
    hid_t copy = H5I_INVALID_HID;
    for (int p = 0, mdc_done = 0; p < IOT_P_COUNT; p++) {
        const iot_entry *e = iot_resolved_file(rules, p);
        if (iot_params[p].target != IOT_TARGET_FAPL || (!e && !is_mdc(p)) ||
            (serial && parallel_only(p)) || gone[p])
            continue;
        if (is_mdc(p)) {
            int any = (iot_resolved_file(rules, IOT_P_MDC_INITIAL_SIZE) &&
                       !gone[IOT_P_MDC_INITIAL_SIZE]) ||
                      (iot_resolved_file(rules, IOT_P_MDC_MIN_SIZE) && !gone[IOT_P_MDC_MIN_SIZE]) ||
                      (iot_resolved_file(rules, IOT_P_MDC_MAX_SIZE) && !gone[IOT_P_MDC_MAX_SIZE]);
            if (any && !mdc_done++)
                set_mdc(rules, gone, writable(&copy, fapl, h->cls_fapl), &r);
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

static void set_chunk(const iot_file_info *f, const char *file, const char *dset, hid_t type,
                      hid_t space, hid_t dcpl, hid_t *copy, report *r, iot_h5_outcome *out)
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
    if (too_costly(e, bytes, file, f->leader, r, out))
        return;
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
    set_chunk(f, file, dset, type, space, dcpl, &copy, &r, out);
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
    report r = {.len = 0};
    if (bytes &&
        too_costly(bytes, iot_cost(bytes->param, &bytes->value, 1), file, f->leader, &r, out))
        bytes = NULL;
    if (slots &&
        too_costly(slots, iot_cost(slots->param, &slots->value, 1), file, f->leader, &r, out))
        slots = NULL;
    if (!bytes && !slots && !w0) {
        if (iot_g.verbose && f->leader && r.items) {
            char header[2200];
            snprintf(header, sizeof header, "dataset %s:%s: hdf5 dataset access:", file, dset);
            iot_log_block(header, r.text);
        }
        return dapl;
    }
    iot_h5_quiet quiet;
    iot_h5_quiet_begin(&quiet);
    hid_t copy = H5I_INVALID_HID;
    /* unset fields keep the file's defaults */
    herr_t rc = IOT_H5_CALL(H5Pset_chunk_cache, writable(&copy, dapl, h->cls_dapl),
                            slots ? (size_t)slots->value.v[0] : H5D_CHUNK_CACHE_NSLOTS_DEFAULT,
                            bytes ? (size_t)bytes->value.v[0] : H5D_CHUNK_CACHE_NBYTES_DEFAULT,
                            w0 ? w0->value.d : H5D_CHUNK_CACHE_W0_DEFAULT);
    iot_h5_quiet_end(&quiet);
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
