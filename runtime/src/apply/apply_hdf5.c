/* Settings to an HDF5 file access list (apply_hdf5.h); datasets: apply_hdf5_dataset.c. */
#include "apply/apply_hdf5.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "apply/effect_hdf5.h"
#include "apply/h5bounds.h"
#include "apply/h5report.h"
#include "apply/h5support.h"
#include "core/abi.h"
#include "core/core.h"

static int detect_mpio(hid_t fapl, iot_file_info *info, MPI_Comm *file_comm)
{
    const iot_h5_api *h = iot_h5();
    info->mpio = 0;
    info->leader = iot_world_rank() == 0;
    /* MPI_COMM_NULL is read from the program's MPI (Open MPI: an object's address), known only
     * once the ABI has settled: it is read after, or a serial file of a program that never
     * started MPI (Debian's h5py-mpi without mpi4py) got a stale null that the callers took for
     * a communicator to reduce over and free, before MPI_Init (Open MPI aborts the program) */
    if (fapl == H5P_DEFAULT || !h->parallel) {
        *file_comm = MPI_COMM_NULL;
        return 0;
    }
    /* parallel HDF5 brought its MPI: the runtime calls it only if it is the family built for
     * (known by now, unless the program started MPI without passing through MPI_Init) */
    int own = iot_mpi_state == IOT_MPI_OWN || iot_abi_settle() == IOT_MPI_OWN;
    *file_comm = MPI_COMM_NULL;
    if (!own)
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

/* The three metadata cache sizes go into one configuration. */
static herr_t set_mdc(const iot_file_settings *rules, const int *gone, hid_t fapl, iot_h5_report *r)
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
        iot_h5_report_add(
            r, "mdc_min_size=%zu > mdc_max_size=%zu: metadata cache settings NOT applied",
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
            iot_h5_report_entry(r, list[i], rc);
    return rc;
}

const char *iot_h5_driver(hid_t fapl)
{
    if (fapl == H5P_DEFAULT)
        return "sec2";
    iot_h5_quiet quiet;
    iot_h5_quiet_begin(&quiet);
    const char *name = iot_h5_driver_name(IOT_H5_CALL(H5Pget_driver, fapl));
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
    case IOT_P_PAGE_BUFFER_SIZE:
        return IOT_H5_CALL(H5Pset_page_buffer_size, fapl, (size_t)v[0], 0u, 0u);
    case IOT_P_LIBVER_LOW: {
        char why[256];
        int low = iot_h5_libver(e, why, sizeof why);
        return low < 0 ? -1
                       : IOT_H5_CALL(H5Pset_libver_bounds, fapl, (H5F_libver_t)low,
                                     (H5F_libver_t)iot_h5_latest_format());
    }
    case IOT_P_EVICT_ON_CLOSE: return IOT_H5_CALL(H5Pset_evict_on_close, fapl, (hbool_t)v[0]);
    case IOT_P_MDC_IMAGE: {
        H5AC_cache_image_config_t c;
        memset(&c, 0, sizeof c);
        c.version = H5AC__CURR_CACHE_IMAGE_CONFIG_VERSION;
        c.generate_image = (hbool_t)v[0];
        c.entry_ageout = H5AC__CACHE_IMAGE__ENTRY_AGEOUT__NONE;
        return IOT_H5_CALL(H5Pset_mdc_image_config, fapl, &c);
    }
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
        if (mpio)
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
    iot_h5_report r = {.len = 0};
    int gone[IOT_P_COUNT];
    iot_h5_judge_fapl(rules, name, comm, info->leader, gone, &r, out);
    iot_h5_judge_total(rules, name, info->leader, gone, &r, out);
    if (mpio)
        MPI_Comm_free(&comm);
    if (serial)
        note_meaningless(rules, name, info->leader, out);
    note_overrides(rules, name, fapl, info->leader, out);
    hid_t copy = H5I_INVALID_HID;
    for (int p = 0, mdc_done = 0; p < IOT_P_COUNT; p++) {
        const iot_entry *e = iot_resolved_file(rules, p);
        if (iot_params[p].target != IOT_TARGET_FAPL || (!e && !iot_h5_is_mdc(p)) ||
            (serial && parallel_only(p)) || gone[p])
            continue;
        if (e && iot_h5_skip_unsupported(e, mpio, name, info->leader, &r, out))
            continue; /* this HDF5 lacks it, or refuses it here: said once */
        if (iot_h5_is_mdc(p)) {
            int any = (iot_resolved_file(rules, IOT_P_MDC_INITIAL_SIZE) &&
                       !gone[IOT_P_MDC_INITIAL_SIZE]) ||
                      (iot_resolved_file(rules, IOT_P_MDC_MIN_SIZE) && !gone[IOT_P_MDC_MIN_SIZE]) ||
                      (iot_resolved_file(rules, IOT_P_MDC_MAX_SIZE) && !gone[IOT_P_MDC_MAX_SIZE]);
            if (any && !mdc_done++)
                set_mdc(rules, gone, iot_h5_writable(&copy, fapl, h->cls_fapl), &r);
            continue;
        }
        iot_h5_report_entry(&r, e, set_fapl(p, iot_h5_writable(&copy, fapl, h->cls_fapl), e));
    }
    iot_h5_quiet_end(&quiet);
    iot_h5_keep_refusals(&r, out);
    if (iot_g.verbose && info->leader) {
        char header[1200];
        snprintf(header, sizeof header, "%s %s (%s driver): hdf5 file access%s", how, name, driver,
                 r.items ? ":" : ": nothing to apply");
        iot_log_block(header, r.text);
    }
    return copy >= 0 ? copy : fapl;
}

/* The file space strategy of a creation list (H5F_FSPACE_STRATEGY_*), or -1. */
static int strategy_of(hid_t fcpl)
{
    H5F_fspace_strategy_t st;
    hbool_t persist;
    hsize_t threshold;
    if (fcpl == H5P_DEFAULT)
        return H5F_FSPACE_STRATEGY_FSM_AGGR;
    return IOT_H5_CALL(H5Pget_file_space_strategy, fcpl, &st, &persist, &threshold) < 0 ? -1
                                                                                        : (int)st;
}

/* Page buffering needs a paged file at creation (HDF5 refuses the create otherwise): a page
 * buffer the control file put on the access list of a file created without paging is taken
 * off again, said once. */
static void page_buffer_needs_paging(const iot_file_info *info, const char *name, hid_t fcpl,
                                     hid_t fapl, iot_h5_report *r, iot_h5_outcome *out)
{
    const iot_entry *e = iot_resolved_file(info->rules, IOT_P_PAGE_BUFFER_SIZE);
    size_t size = 0;
    unsigned meta = 0, raw = 0;
    if (!e || !e->value.v[0] || strategy_of(fcpl) == H5F_FSPACE_STRATEGY_PAGE ||
        IOT_H5_CALL(H5Pget_page_buffer_size, fapl, &size, &meta, &raw) < 0 ||
        size != (size_t)e->value.v[0])
        return;
    IOT_H5_CALL(H5Pset_page_buffer_size, fapl, (size_t)0, 0u, 0u);
    iot_h5_withdraw(e, name,
                    "page_buffer_size: only for files created with file_space_strategy=page",
                    info->leader, r, out);
}

hid_t iot_apply_fcpl(const iot_file_info *info, const char *name, hid_t fcpl, hid_t fapl,
                     iot_h5_outcome *out)
{
    const iot_h5_api *h = iot_h5();
    if (!info->tuned || !info->rules)
        return fcpl;
    iot_h5_quiet quiet;
    iot_h5_quiet_begin(&quiet);
    iot_h5_report r = {.len = 0};
    hid_t copy = H5I_INVALID_HID;
    const iot_entry *st = iot_resolved_file(info->rules, IOT_P_FILE_SPACE_STRATEGY);
    const iot_entry *ps = iot_resolved_file(info->rules, IOT_P_FILE_SPACE_PAGE_SIZE);
    if (st && !iot_h5_skip_unsupported(st, info->mpio, name, info->leader, &r, out)) {
        H5F_fspace_strategy_t cur;
        hbool_t persist = 0;
        hsize_t threshold = 1;
        if (fcpl != H5P_DEFAULT)
            IOT_H5_CALL(H5Pget_file_space_strategy, fcpl, &cur, &persist, &threshold);
        iot_h5_report_entry(&r, st,
                            IOT_H5_CALL(H5Pset_file_space_strategy,
                                        iot_h5_writable(&copy, fcpl, h->cls_fcpl),
                                        (H5F_fspace_strategy_t)st->value.v[0], persist, threshold));
    }
    if (ps && !iot_h5_skip_unsupported(ps, info->mpio, name, info->leader, &r, out))
        iot_h5_report_entry(&r, ps,
                            IOT_H5_CALL(H5Pset_file_space_page_size,
                                        iot_h5_writable(&copy, fcpl, h->cls_fcpl),
                                        (hsize_t)ps->value.v[0]));
    page_buffer_needs_paging(info, name, copy >= 0 ? copy : fcpl, fapl, &r, out);
    iot_h5_quiet_end(&quiet);
    iot_h5_keep_refusals(&r, out);
    if (iot_g.verbose && info->leader && r.items) {
        char header[1200];
        snprintf(header, sizeof header, "H5Fcreate %s: hdf5 file creation:", name);
        iot_log_block(header, r.text);
    }
    return copy >= 0 ? copy : fcpl;
}
