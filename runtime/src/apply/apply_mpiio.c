#include "apply/apply_mpiio.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sys/stat.h>

#include "capture/capture.h"
#include "config/bounds.h"
#include "core/abi.h"
#include "core/core.h"
#include "platform/budget.h"
#include "platform/fstype.h"

static struct {
    char file[1024];
    int param;
} total_gone[32];
static int ntotal_gone;

void iot_mpiio_withdraw_total(const char *filename, int param)
{
    int at = ntotal_gone++ % 32;
    snprintf(total_gone[at].file, sizeof total_gone[at].file, "%s", filename);
    total_gone[at].param = param;
}

static int withdrawn_by_total(const char *filename, int param)
{
    for (int i = 0; i < (ntotal_gone < 32 ? ntotal_gone : 32); i++)
        if (total_gone[i].param == param && strcmp(total_gone[i].file, filename) == 0)
            return 1;
    return 0;
}

/* Keeps a hint unless this MPI's info objects cannot hold its key or value (the registry's
 * limits fit MPICH's; another MPI may have smaller ones): then it is dropped, with one
 * warning per process. */
static void collect(void *ctx, const iot_entry *e)
{
    iot_mpiio_hints *l = ctx;
    if (withdrawn_by_total(l->file, e->param))
        return; /* said and recorded where it was judged */
    if (strlen(e->name) > MPI_MAX_INFO_KEY || strlen(e->value.text) > MPI_MAX_INFO_VAL) {
        char where[96];
        if (iot_world_rank() == 0)
            iot_warn_once("info-limits",
                          "hint %s [%s] NOT applied: longer than this MPI's info keys (%d) or "
                          "values (%d) may be; later ones like it are dropped without a word",
                          e->name, iot_origin(e, where, sizeof where), MPI_MAX_INFO_KEY,
                          MPI_MAX_INFO_VAL);
        return;
    }
    /* a buffer larger than the machine allows is withdrawn before the open (the budget is the
     * same on every rank: budget.c agrees on it at MPI_Init) */
    char why[1536];
    iot_budget b = iot_limits_budget();
    if (iot_bounds_exceeds(e->param, e->name, e->value.text, iot_cost(e->param, &e->value, 1), &b,
                           why, sizeof why)) {
        char where[96], key[IOT_NAME_MAX + IOT_VALUE_TEXT_MAX + 16];
        snprintf(key, sizeof key, "bounds:%s=%s", e->name, e->value.text);
        if (iot_world_rank() == 0)
            iot_warn_once(key, "%s: %s [%s]", l->file, why, iot_origin(e, where, sizeof where));
        char brief[400];
        iot_rec_withdraw(l->file, IOT_L_MPIIO, e->name, e->value.text,
                         iot_bounds_brief(why, brief, sizeof brief));
        return;
    }
    l->hint[l->n++] = e;
}

/* The application's info with the control file's hints on top (the control file wins). */
static MPI_Info merged_info(iot_mpiio_hints *l, MPI_Info app)
{
    MPI_Info info;
    if (app == MPI_INFO_NULL ? MPI_Info_create(&info) : MPI_Info_dup(app, &info))
        return MPI_INFO_NULL;
    size_t used = 0, nlen = sizeof l->notes;
    for (int i = 0; i < l->n; i++) {
        char old[MPI_MAX_INFO_VAL + 1];
        int had = 0;
        if (app != MPI_INFO_NULL)
            MPI_Info_get(app, l->hint[i]->name, MPI_MAX_INFO_VAL, old, &had);
        if (had && strcmp(old, l->hint[i]->value.text) != 0 && used < nlen)
            used += (size_t)snprintf(l->notes + used, nlen - used,
                                     "\n%s=%s overrides the application's %s", l->hint[i]->name,
                                     l->hint[i]->value.text, old);
        MPI_Info_set(info, l->hint[i]->name, l->hint[i]->value.text);
    }
    return info;
}

MPI_Info iot_mpiio_merge(const iot_settings *s, const char *filename, MPI_Info app,
                         iot_mpiio_hints *h)
{
    h->hint = NULL;
    h->n = 0;
    h->file = filename;
    h->notes[0] = '\0';
    if (s && (h->hint = malloc((size_t)s->count * sizeof *h->hint)))
        iot_settings_each_hint(s, filename, collect, h);
    return h->n ? merged_info(h, app) : MPI_INFO_NULL;
}

void iot_mpiio_done(iot_mpiio_hints *h, MPI_Info *merged)
{
    if (*merged != MPI_INFO_NULL)
        MPI_Info_free(merged);
    free(h->hint);
    h->hint = NULL;
}

/* The value of key in "key=value\n" lines, or NULL. */
static const char *lookup(const char *lines, const char *key, char *val, size_t len)
{
    size_t klen = strlen(key);
    for (const char *l = lines; l && *l;) {
        size_t n = strcspn(l, "\n");
        if (n > klen && strncmp(l, key, klen) == 0 && l[klen] == '=') {
            snprintf(val, len, "%.*s", (int)(n - klen - 1), l + klen + 1);
            return val;
        }
        l += n + (l[n] == '\n');
    }
    return NULL;
}

/* Why cb_nodes came out lower than asked: ROMIO caps it by the file's ranks (a file opened on
 * MPI_COMM_SELF has one aggregator whatever is asked) and by cb_config_list (LAB-NOTES). */
static void cb_nodes_cause(const char *readback, const char *got, int file_ranks, char *why,
                           size_t len)
{
    char cl[MPI_MAX_INFO_VAL + 1];
    if (file_ranks > 0 && atoll(got) >= file_ranks)
        snprintf(why, len, "MPI-IO uses %s: the file's communicator has %d rank%s", got, file_ranks,
                 file_ranks == 1 ? "" : "s");
    else if (!lookup(readback, "cb_config_list", cl, sizeof cl))
        snprintf(why, len, "MPI-IO uses %s", got);
    else if (strcmp(cl, "*:1") == 0)
        snprintf(why, len,
                 "MPI-IO uses %s: capped by cb_config_list=*:1 (the default, one aggregator per "
                 "host); cb_config_list=*:* lifts the cap",
                 got);
    else
        snprintf(why, len,
                 "MPI-IO uses %s: capped by cb_config_list=%s (aggregators allowed per host) "
                 "and the ranks there are",
                 got, cl);
}

static int is_striping(const char *key)
{
    return strncmp(key, "striping_", 9) == 0 || strcmp(key, "start_iodevice") == 0 ||
           strncmp(key, "romio_lustre_", 13) == 0;
}

const char *iot_effect_name(iot_effect e)
{
    return e == IOT_EFFECT_YES ? "yes" : e == IOT_EFFECT_NO ? "no" : "unverifiable";
}

iot_effect iot_mpiio_effect(const char *key, const char *requested, const char *readback,
                            const char *fs, int file_ranks, char *why, size_t len)
{
    char got[MPI_MAX_INFO_VAL + 1];
    int have = lookup(readback, key, got, sizeof got) != NULL;
    const iot_mpi_impl_t *mpi = &iot_mpi_impl;
    why[0] = '\0';
    if (!iot_mpiio_component_uses(key)) {
        snprintf(why, len, "not used by %s", mpi->io_name);
        return IOT_EFFECT_NO;
    }
    if (is_striping(key) && iot_fs_has_layouts(fs) && !iot_fs_stripes(fs)) {
        snprintf(why, len,
                 "MPI-IO does not stripe on %s: the file system's layout is set by "
                 "the runtime itself (see \"striping\")",
                 fs);
        return IOT_EFFECT_NO;
    }
    if (is_striping(key) && !iot_fs_stripes(fs)) {
        snprintf(why, len, "%s has no striping: %s", fs,
                 have ? "echoed by MPI-IO but without effect" : "dropped by MPI-IO");
        return IOT_EFFECT_NO;
    }
    if (mpi->echoes) {
        snprintf(why, len,
                 "not verifiable here: %s's MPI_File_get_info returns every hint it was given",
                 mpi->family);
        return IOT_EFFECT_UNVERIFIABLE;
    }
    if (!have) {
        snprintf(why, len, "dropped by MPI-IO");
        return IOT_EFFECT_NO;
    }
    if (strcmp(got, requested) == 0)
        return IOT_EFFECT_YES;
    if (strcmp(key, "cb_nodes") == 0 && atoll(got) < atoll(requested))
        cb_nodes_cause(readback, got, file_ranks, why, len);
    else
        snprintf(why, len, "MPI-IO uses %s", got);
    return IOT_EFFECT_NO;
}

void iot_mpiio_report(const char *filename, MPI_File fh, int file_ranks, const iot_mpiio_hints *l)
{
    char fs[64], line[8192], readback[IOT_REC_HINTS] = "";
    iot_fstype(filename, fs, sizeof fs);
    if (fh != MPI_FILE_NULL)
        iot_mpiio_read_hints(fh, readback, sizeof readback);
    size_t used = 0;
    for (int i = 0; i < l->n && used < sizeof line; i++) {
        const iot_entry *e = l->hint[i];
        char why[400], where[96], verdict[480];
        iot_effect v =
            iot_mpiio_effect(e->name, e->value.text, readback, fs, file_ranks, why, sizeof why);
        if (l->withdrawn && (!l->withdrawn_one || strcmp(e->name, l->withdrawn_one) == 0))
            snprintf(verdict, sizeof verdict, "WITHDRAWN: %s", l->withdrawn);
        else if (v == IOT_EFFECT_YES)
            snprintf(verdict, sizeof verdict, "in effect");
        else if (v == IOT_EFFECT_NO)
            snprintf(verdict, sizeof verdict, "NOT in effect: %s", why);
        else
            snprintf(verdict, sizeof verdict, "%s", why);
        used +=
            (size_t)snprintf(line + used, sizeof line - used, "%s%s=%s (%s) [%s]", i ? "\n" : "",
                             e->name, e->value.text, verdict, iot_origin(e, where, sizeof where));
    }
    char header[1200];
    snprintf(header, sizeof header, "MPI_File_open %s on %s: mpi-io hints%s", filename, fs,
             l->n ? ":" : ": nothing to apply");
    if (used < sizeof line && (!l->withdrawn || l->withdrawn_one))
        snprintf(line + used, sizeof line - used, "%s", l->notes);
    iot_log_block(header, line);
}

/* Collective over comm: is yes true on every rank (op MPI_MIN) or on any (MPI_MAX)? (Open's
 * communicator is an intracommunicator; for anything else this rank's answer stands.) */
static int across(MPI_Comm comm, int yes, MPI_Op op)
{
    int inter = 1, all = yes;
    if (comm == MPI_COMM_NULL || PMPI_Comm_test_inter(comm, &inter) != MPI_SUCCESS || inter)
        return yes;
    PMPI_Allreduce(&yes, &all, 1, MPI_INT, op, comm);
    return all;
}

static int all_succeeded(MPI_Comm comm, int ok)
{
    return across(comm, ok, MPI_MIN);
}

/* Whether an MPI_File_open error is of a class no hint can cause. */
static int not_caused_by_hints(int rc)
{
    int cls = MPI_ERR_OTHER;
    if (PMPI_Error_class(rc, &cls) != MPI_SUCCESS)
        return 0;
    return cls == MPI_ERR_NO_SUCH_FILE || cls == MPI_ERR_FILE_EXISTS || cls == MPI_ERR_ACCESS ||
           cls == MPI_ERR_AMODE || cls == MPI_ERR_BAD_FILE || cls == MPI_ERR_READ_ONLY ||
           cls == MPI_ERR_NO_SPACE || cls == MPI_ERR_QUOTA || cls == MPI_ERR_FILE_IN_USE;
}

/* Whether cb_config_list ("host:n,*:n,...", ROMIO's syntax) names an aggregator on a host of
 * comm: ROMIO matches each entry against the ranks' processor names (collective). */
static int cb_config_list_matches(MPI_Comm comm, const char *list)
{
    char mine[MPI_MAX_PROCESSOR_NAME] = "";
    int len = 0, size = 1, matches = 0;
    PMPI_Get_processor_name(mine, &len);
    PMPI_Comm_size(comm, &size);
    char *all = calloc((size_t)size, sizeof mine);
    if (!all)
        return 1; /* cannot tell: leave it to MPI */
    PMPI_Allgather(mine, (int)sizeof mine, MPI_CHAR, all, (int)sizeof mine, MPI_CHAR, comm);
    for (const char *e = list; *e && !matches; e += strcspn(e, ",") + (e[strcspn(e, ",")] != 0)) {
        size_t n = strcspn(e, ","), name = strcspn(e, ":,");
        const char *count = name < n ? e + name + 1 : "1";
        if (atoi(count) == 0 && count[0] != '*')
            continue; /* no aggregator there */
        for (int r = 0; r < size && !matches; r++) {
            const char *host = all + (size_t)r * sizeof mine;
            matches =
                (name == 1 && e[0] == '*') || (strlen(host) == name && strncmp(host, e, name) == 0);
        }
    }
    free(all);
    return matches;
}

/* Open MPI's ROMIO (romio321) aborts the job inside MPI_File_open on a cb_config_list that
 * matches no host (its error path frees a null pointer): there the hint is checked before
 * the call and withdrawn. Elsewhere the failing open returns and the retry handles it. */
static int precheck(MPI_Comm comm, MPI_Info merged, MPI_Info app, iot_mpiio_hints *h)
{
    char list[MPI_MAX_INFO_VAL + 1];
    int has = 0;
    if (strcmp(iot_mpi_impl.io, "romio321") != 0)
        return 0;
    MPI_Info_get(merged, "cb_config_list", MPI_MAX_INFO_VAL, list, &has);
    if (!has || cb_config_list_matches(comm, list))
        return 0;
    snprintf(h->why, sizeof h->why,
             "matches no host of this job (Open MPI's ROMIO would abort the open)");
    h->withdrawn = h->why;
    h->withdrawn_one = "cb_config_list";
    char own[MPI_MAX_INFO_VAL + 1];
    int app_has = 0;
    if (app != MPI_INFO_NULL)
        MPI_Info_get(app, "cb_config_list", MPI_MAX_INFO_VAL, own, &app_has);
    if (app_has)
        MPI_Info_set(merged, "cb_config_list", own);
    else
        MPI_Info_delete(merged, "cb_config_list");
    return 1;
}

/* One line and the profile's records for hints withdrawn from filename. */
static void withdrawn(MPI_Comm comm, const char *filename, iot_mpiio_hints *h, int only_cb_list)
{
    char list[1024];
    size_t used = 0;
    for (int i = 0; i < h->n && used < sizeof list; i++) {
        char where[96];
        if (only_cb_list && strcmp(h->hint[i]->name, "cb_config_list") != 0)
            continue;
        used += (size_t)snprintf(list + used, sizeof list - used, "%s%s=%s [%s]", used ? ", " : "",
                                 h->hint[i]->name, h->hint[i]->value.text,
                                 iot_origin(h->hint[i], where, sizeof where));
        iot_rec_withdraw(filename, IOT_L_MPIIO, h->hint[i]->name, h->hint[i]->value.text, h->why);
    }
    char key[600];
    int rank = 0;
    PMPI_Comm_rank(comm, &rank);
    snprintf(key, sizeof key, "withdrawn:%s", filename);
    if (rank == 0 && iot_run_first(key))
        iot_log("MPI_File_open %s: %s (%s): %s; withdrawn: %s", filename,
                only_cb_list ? "a hint cannot work" : "failed with the control file's hints",
                h->why, only_cb_list ? "opened without it" : "opened with the application's own",
                list);
}

int iot_mpiio_open(MPI_Comm comm, const char *filename, int amode, MPI_Info app, MPI_Info merged,
                   MPI_File *fh, iot_mpiio_hints *h)
{
    h->withdrawn = h->withdrawn_one = NULL;
    if (merged == MPI_INFO_NULL)
        return PMPI_File_open(comm, filename, amode, app, fh);
    if (precheck(comm, merged, app, h))
        withdrawn(comm, filename, h, 1);
    struct stat st;
    int existed = (amode & MPI_MODE_EXCL) && stat(iot_strip_romio_prefix(filename), &st) == 0;
    int rc = PMPI_File_open(comm, filename, amode, merged, fh);
    if (all_succeeded(comm, rc == MPI_SUCCESS))
        return rc;
    if (rc == MPI_SUCCESS) /* some ranks opened it: closing needs all of them; MPI's answer */
        return rc;         /* stands (no MPI seen here does this: open errors are collective) */
    /* every rank failed. Errors no hint can cause (the file is missing, exists, may not be
     * written, ...) are the application's own already: calling again would only add MPI error
     * entries of the runtime's (MPICH prints them at exit), so the error is returned as is.
     * One rank's such error is enough: under a deferred open (romio_no_indep_rw) only the
     * aggregators touch the file, and the others get a generic I/O error for a missing one */
    if (across(comm, not_caused_by_hints(rc), MPI_MAX))
        return rc;
    /* the application's own call, as it would have run without the runtime (a file that open
     * made before failing is removed first, so that MPI_MODE_EXCL holds) */
    int rank = 0;
    PMPI_Comm_rank(comm, &rank);
    if ((amode & MPI_MODE_EXCL) && !existed) {
        if (rank == 0 && stat(iot_strip_romio_prefix(filename), &st) == 0)
            PMPI_File_delete(filename, MPI_INFO_NULL);
        PMPI_Barrier(comm);
    }
    int own = PMPI_File_open(comm, filename, amode, app, fh);
    if (own != MPI_SUCCESS)
        return own; /* the application's own error, unchanged */
    int n = 0;
    PMPI_Error_string(rc, h->why, &n);
    for (char *c = h->why; *c; c++)
        if (*c == '\n' || *c == '\t')
            *c = ' ';
    h->withdrawn = h->why;
    h->withdrawn_one = NULL;
    withdrawn(comm, filename, h, 0);
    return own;
}

void iot_mpiio_read_hints(MPI_File fh, char *hints, size_t size)
{
    MPI_Info info;
    int nkeys = 0;
    if (PMPI_File_get_info(fh, &info) != MPI_SUCCESS)
        return;
    MPI_Info_get_nkeys(info, &nkeys);
    size_t used = 0;
    for (int i = 0; i < nkeys && used < size; i++) {
        char key[MPI_MAX_INFO_KEY + 1], val[MPI_MAX_INFO_VAL + 1];
        int flag = 0;
        MPI_Info_get_nthkey(info, i, key);
        MPI_Info_get(info, key, MPI_MAX_INFO_VAL, val, &flag);
        if (flag && !strchr(val, '\n'))
            used += (size_t)snprintf(hints + used, size - used, "%s=%s\n", key, val);
    }
    char *last = used >= size ? strrchr(hints, '\n') : NULL;
    if (used >= size) /* never keep half a line */
        *(last ? last : hints) = '\0';
    MPI_Info_free(&info);
}
