/* The adaptive mode's phase bookkeeping: a phase is followed from MPI_File_open (where the
 * ranks of the file agree on the rules in effect) to MPI_File_close (where its statistics are
 * agreed over the same ranks, its insights computed and the class learns or is judged). */
#include "adapt/adapt.h"

#include <stdlib.h>
#include <string.h>

#include "adapt/adapt_state.h"
#include "base/env.h"
#include "core/core.h"
#include "platform/fstype.h"

int iot_adapt_on;

#define MAX_OPEN 64

typedef struct {
    MPI_File fh;
    MPI_Comm comm; /* a duplicate: the phase's statistics are agreed on it at the close */
    int comm_size, rec, cls, index;
    int learning, fewer; /* iot_adapt_fit at the open: the class learns from it / other ranks */
    uint64_t applied;    /* the class's rules in effect at the open */
    double t0, cost, wait;
    char name[IOT_REC_NAME], fs[32], hints[IOT_REC_HINTS];
    int64_t sel[IOT_SEL_COUNT];
    iot_counters at[IOT_NLAYERS];
} open_phase;

pthread_mutex_t iot_adapt_lock = PTHREAD_MUTEX_INITIALIZER;
iot_adapt_class iot_adapt_classes[IOT_ADAPT_CLASSES];
int iot_adapt_nclasses;
iot_phase_log *iot_adapt_log[IOT_ADAPT_LOG];
int iot_adapt_nlog, iot_adapt_dropped;
static open_phase *open_phases[MAX_OPEN];
static __thread int open_agreed; /* from iot_adapt_opening to iot_adapt_opened: 0 not followed,
                                  * 1 followed without the rules, 2 with them */
static __thread double open_cost, open_wait;

void iot_adapt_init(void)
{
    iot_adapt_on = iot_env.adaptive && iot_capture_on && !iot_env.disabled;
    if (iot_adapt_on) { /* registered with the layers below, which call them */
        iot_g.in_effect = iot_adapt_settings;
        iot_capture_hooks.phase_begin = iot_adapt_phase_begin;
        iot_capture_hooks.call = iot_adapt_call;
        iot_capture_hooks.phase_end = iot_adapt_phase_end;
    }
    iot_adapt_guard_init();
}

static int find_class(const char *name)
{
    for (int i = 0; i < iot_adapt_nclasses; i++)
        if (strcmp(iot_adapt_classes[i].name, name) == 0)
            return i;
    return -1;
}

/* What this rank brings to the agreement at an open of class c (-1: none yet) on `size` ranks
 * (lock held): the class's rules in effect, or IOT_PLAIN_MASK when its learning phase had
 * another number of ranks (iot_adapt_fit): no rank then gives the file adaptive settings. */
static uint64_t class_mask(int c, int size)
{
    if (c < 0)
        return 0;
    const iot_adapt_class *k = &iot_adapt_classes[c];
    return iot_adapt_fit(k, size) == IOT_FIT_SAME ? iot_adapt_active(k) : IOT_PLAIN_MASK;
}

/* A rank's rules for a class come from its own history of the class: a rank that opened one
 * of its files alone (IOR asks a file's size on MPI_COMM_SELF) may have judged, and reverted,
 * where its peers did not. Parallel HDF5 needs the same file-access and dataset-creation lists
 * on every rank, and the runtime's own calls around H5Fcreate/H5Fopen are collective (the
 * driver's detection, the read-back): a rank with settings where another has none hangs them. */
const iot_settings *iot_adapt_file_settings(MPI_Comm comm, const char *filename)
{
    const iot_settings *s = iot_active();
    if (!iot_adapt_on)
        return s;
    char cls[IOT_CLASS_MAX];
    uint64_t mask = 0;
    int size = 1;
    PMPI_Comm_size(comm, &size);
    if (iot_phase_class(filename, cls, sizeof cls)) {
        pthread_mutex_lock(&iot_adapt_lock);
        mask = class_mask(find_class(cls), size);
        pthread_mutex_unlock(&iot_adapt_lock);
    }
    double mine[4] = {(double)(mask & 0xffffffffu), -(double)(mask & 0xffffffffu),
                      (double)(mask >> 32), -(double)(mask >> 32)};
    double all[4];
    if (size > 1)
        PMPI_Allreduce(mine, all, 4, MPI_DOUBLE, MPI_MAX, comm);
    else
        memcpy(all, mine, sizeof all);
    int same = all[0] == -all[1] && all[2] == -all[3];
    if (same && s && !(mask & IOT_PLAIN_MASK))
        return s;
    return &iot_g.settings; /* the control file's: the same on every rank (maybe empty) */
}

/* The close's one reduction: sums then maxima (and the phase index), one element of a
 * contiguous type so that MPI never splits it between the two kinds. */
enum {
    STATS_NSUM = IOT_S_COUNT + IOT_LAYOUT_NSUM,
    STATS_NMAX = IOT_M_COUNT + IOT_LAYOUT_NMAX + 1,
    STATS_N = STATS_NSUM + STATS_NMAX
};

static void stats_op(void *in, void *inout, int *len, MPI_Datatype *type)
{
    (void)type;
    const double *a = in;
    double *b = inout;
    for (int e = 0; e < *len; e++, a += STATS_N, b += STATS_N) {
        for (int i = 0; i < STATS_NSUM; i++)
            b[i] += a[i];
        for (int i = STATS_NSUM; i < STATS_N; i++)
            b[i] = a[i] > b[i] ? a[i] : b[i];
    }
}

static pthread_once_t stats_once = PTHREAD_ONCE_INIT;
static MPI_Datatype stats_type; /* valid when stats_ok */
static MPI_Op stats_opv;
static int stats_ok;

static void stats_make(void)
{
    stats_ok = PMPI_Type_contiguous(STATS_N, MPI_DOUBLE, &stats_type) == MPI_SUCCESS &&
               PMPI_Type_commit(&stats_type) == MPI_SUCCESS &&
               PMPI_Op_create(stats_op, 1, &stats_opv) == MPI_SUCCESS;
}

/* The datatype and operation, freed before MPI_Finalize's real call (MPICH's yaksa reports
 * every handle left at the end). Local calls; nothing when they were never made. */
void iot_adapt_release(void)
{
    if (!stats_ok)
        return;
    stats_ok = 0;
    PMPI_Op_free(&stats_opv);
    PMPI_Type_free(&stats_type);
}

/* Made at the first open (local calls); a phase is followed only when every rank has them
 * (agreed at its open), so the close's reduction is reached by all or none. */
static int stats_ready(void)
{
    pthread_once(&stats_once, stats_make);
    return stats_ok;
}

const iot_settings *iot_adapt_opening(MPI_Comm comm, const char *filename)
{
    open_agreed = 0;
    if (!iot_adapt_on)
        return iot_active();
    double t = iot_now();
    char cls[IOT_CLASS_MAX];
    uint64_t mask = 0;
    int can = iot_phase_class(filename, cls, sizeof cls) && stats_ready();
    int size = 1;
    PMPI_Comm_size(comm, &size);
    pthread_mutex_lock(&iot_adapt_lock);
    mask = class_mask(can ? find_class(cls) : -1, size);
    int room = 0;
    for (int i = 0; i < MAX_OPEN; i++)
        room += !open_phases[i];
    pthread_mutex_unlock(&iot_adapt_lock);
    /* the ranks of the file agree to follow it and on the rules in effect: a rank that saw
     * another history of the class (another communicator) must not open with other hints */
    double mine[6] = {can && room,
                      -(double)(can && room),
                      (double)(mask & 0xffffffffu),
                      -(double)(mask & 0xffffffffu),
                      (double)(mask >> 32),
                      -(double)(mask >> 32)};
    double all[6];
    double w = iot_now();
    if (size > 1)
        PMPI_Allreduce(mine, all, 6, MPI_DOUBLE, MPI_MAX, comm);
    else
        memcpy(all, mine, sizeof all);
    open_wait = iot_now() - w; /* mostly waiting for the slowest rank to reach its open */
    int follow = all[0] == 1 && all[1] == -1;
    int same = all[2] == -all[3] && all[4] == -all[5] && !(mask & IOT_PLAIN_MASK);
    open_agreed = follow ? 1 + same : 0;
    open_cost = iot_now() - t - open_wait;
    return same ? iot_active() : (iot_g.settings.count ? &iot_g.settings : NULL);
}

void iot_adapt_opened(MPI_Comm comm, const char *filename, int rec, MPI_File fh, int ok, double t)
{
    int agreed = open_agreed;
    open_agreed = 0;
    if (!iot_adapt_on || !agreed)
        return;
    double t1 = iot_now();
    MPI_Comm dup = MPI_COMM_NULL;
    int size = 1;
    PMPI_Comm_size(comm, &size);
    double d = iot_now();
    if (size > 1)
        PMPI_Comm_dup(comm, &dup); /* collective: every rank of comm, whatever ok was */
    d = iot_now() - d; /* a collective's time: mostly the ranks' skew after the real open */
    open_phase *p = ok ? calloc(1, sizeof *p) : NULL;
    if (!p) {
        if (dup != MPI_COMM_NULL)
            PMPI_Comm_free(&dup);
        /* the other ranks free theirs at the close: a rank whose open failed has no close */
        return;
    }
    p->fh = fh;
    p->comm = dup;
    p->comm_size = size;
    p->rec = rec;
    p->t0 = t;
    snprintf(p->name, sizeof p->name, "%s", filename);
    char cls[IOT_CLASS_MAX];
    iot_phase_class(filename, cls, sizeof cls);
    iot_fstype(filename, p->fs, sizeof p->fs);
    MPI_Info info;
    if (PMPI_File_get_info(fh, &info) == MPI_SUCCESS) {
        int nkeys = 0;
        size_t used = 0;
        MPI_Info_get_nkeys(info, &nkeys);
        for (int i = 0; i < nkeys && used + 1 < sizeof p->hints; i++) {
            char key[MPI_MAX_INFO_KEY + 1], val[MPI_MAX_INFO_VAL + 1];
            int flag = 0;
            MPI_Info_get_nthkey(info, i, key);
            MPI_Info_get(info, key, MPI_MAX_INFO_VAL, val, &flag);
            if (flag)
                used +=
                    (size_t)snprintf(p->hints + used, sizeof p->hints - used, "%s=%s\n", key, val);
        }
        MPI_Info_free(&info);
    }
    if (rec >= 0 && iot_lock()) {
        memcpy(p->at, iot_rec(rec)->c, sizeof p->at);
        iot_unlock();
    } else {
        for (int l = 0; l < IOT_NLAYERS; l++)
            iot_counters_init(&p->at[l]);
    }
    iot_adapt_selections(rec, p->sel);
    iot_adapt_steps_restart(rec);
    iot_adapt_layout_reset(rec);
    pthread_mutex_lock(&iot_adapt_lock);
    int c = find_class(cls);
    if (c < 0 && iot_adapt_nclasses < IOT_ADAPT_CLASSES) {
        c = iot_adapt_nclasses++;
        snprintf(iot_adapt_classes[c].name, sizeof iot_adapt_classes[c].name, "%s", cls);
        iot_adapt_classes[c].kb_entry = -1;
    }
    int fit = c >= 0 ? iot_adapt_fit(&iot_adapt_classes[c], size) : IOT_FIT_SAME;
    p->cls = c;
    p->index = c >= 0 ? iot_adapt_classes[c].phases : 0;
    p->learning = p->index == 0 || fit == IOT_FIT_MORE;
    p->fewer = fit == IOT_FIT_FEWER;
    p->applied =
        c >= 0 && agreed == 2 && fit == IOT_FIT_SAME ? iot_adapt_active(&iot_adapt_classes[c]) : 0;
    int slot = -1;
    for (int i = 0; i < MAX_OPEN && slot < 0; i++)
        if (!open_phases[i])
            slot = i;
    if (slot >= 0)
        open_phases[slot] = p;
    pthread_mutex_unlock(&iot_adapt_lock);
    if (slot < 0) { /* the room agreed at the opening was taken by another thread meanwhile */
        if (dup != MPI_COMM_NULL)
            PMPI_Comm_free(&dup);
        free(p);
        return;
    }
    p->cost = open_cost + iot_now() - t1 - d;
    p->wait = open_wait + d;
}
void iot_adapt_closing(MPI_File fh)
{
    if (!iot_adapt_on)
        return;
    open_phase *p = NULL;
    pthread_mutex_lock(&iot_adapt_lock);
    for (int i = 0; i < MAX_OPEN && !p; i++)
        if (open_phases[i] && open_phases[i]->fh == fh) {
            p = open_phases[i];
            open_phases[i] = NULL;
        }
    pthread_mutex_unlock(&iot_adapt_lock);
    if (!p)
        return;
    double t1 = iot_now();
    iot_phase_stats local, all;
    iot_counters now[IOT_NLAYERS];
    if (p->rec >= 0 && iot_lock()) {
        memcpy(now, iot_rec(p->rec)->c, sizeof now);
        iot_unlock();
    } else {
        memcpy(now, p->at, sizeof now);
    }
    iot_phase_local(&local, now, p->at);
    iot_phase_hints(&local, p->hints, p->fs);
    if (p->rec >= 0 && p->rec < IOT_MAX_FILES) {
        static const int slot[IOT_SEL_COUNT] = {IOT_S_SELECTIONS,  IOT_S_NONCONTIG, IOT_S_H5_PAIRS,
                                                IOT_S_H5_BACKWARD, IOT_S_H5_GAPS,   IOT_S_POSTED};
        int64_t sel[IOT_SEL_COUNT];
        iot_adapt_selections(p->rec, sel);
        for (int i = 0; i < IOT_SEL_COUNT; i++)
            local.sum[slot[i]] = (double)(sel[i] - p->sel[i]);
    }
    local.max[IOT_M_ELAPSED] = t1 - p->t0;
    local.max[IOT_M_BUSY] = iot_adapt_test_seconds(p->applied, local.max[IOT_M_BUSY]);
    /* the phase's statistics and its layout's, and whether it is not the class's learning
     * phase (the largest over the ranks: 0 only when it is on every one), in one reduction */
    double v[STATS_N], all_v[STATS_N];
    double *sum = v, *max = v + STATS_NSUM;
    memcpy(sum, local.sum, sizeof local.sum);
    memcpy(max, local.max, sizeof local.max);
    max[STATS_NMAX - 1] = !p->learning;
    void *layout = iot_adapt_layout_begin(p->rec, sum + IOT_S_COUNT, max + IOT_M_COUNT);
    memcpy(all_v, v, sizeof v);
    double w = iot_now(), close_wait = 0;
    if (p->comm != MPI_COMM_NULL) { /* every rank of the file is in this close */
        PMPI_Allreduce(v, all_v, 1, stats_type, stats_opv, p->comm); /* made: agreed at open */
        close_wait = iot_now() - w; /* mostly waiting for the slowest rank */
    }
    const double *asum = all_v, *amax = all_v + STATS_NSUM;
    memcpy(all.sum, asum, sizeof all.sum);
    memcpy(all.max, amax, sizeof all.max);
    int world = 1;
    PMPI_Comm_size(MPI_COMM_WORLD, &world);
    iot_insights in;
    iot_phase_insights(&in, &all, p->comm_size, world, p->fs);
    /* collective too when fully_written needs every rank's boxes: all ranks decide alike */
    iot_adapt_layout_end(layout, asum + IOT_S_COUNT, amax + IOT_M_COUNT, p->comm,
                         amax[STATS_NMAX - 1] == 0, &in);
    if (p->comm != MPI_COMM_NULL)
        PMPI_Comm_free(&p->comm);
    iot_phase_log *lg = calloc(1, sizeof *lg);
    if (!lg) {
        free(p);
        return;
    }
    iot_insights_copy(&lg->in, &in);
    double t2 = iot_now();
    pthread_mutex_lock(&iot_adapt_lock);
    if (p->cls >= 0) {
        iot_adapt_class *k = &iot_adapt_classes[p->cls];
        uint64_t before = iot_adapt_active(k);
        lg->learning = p->learning;
        lg->fewer = p->fewer;
        lg->ranks = p->comm_size;
        lg->posted = all.sum[IOT_S_POSTED] > 0;
        iot_adapt_judge(k, p->applied, lg, iot_phase_bytes(&all), all.max[IOT_M_BUSY]);
        if (iot_adapt_active(k) != before)
            iot_adapt_rebuild();
        snprintf(lg->cls, sizeof lg->cls, "%s", k->name);
    }
    snprintf(lg->file, sizeof lg->file, "%s", p->name);
    lg->index = p->index;
    lg->ranks = p->comm_size;
    lg->agreed = 1;
    lg->elapsed = all.max[IOT_M_ELAPSED];
    lg->transfer = all.max[IOT_M_TRANSFER];
    lg->busy = all.max[IOT_M_BUSY];
    lg->bytes = iot_phase_bytes(&all);
    lg->applied = p->applied;
    lg->extract_s = t2 - t1 - close_wait;
    lg->wait_s = p->wait + close_wait;
    lg->optimise_s = p->cost + (iot_now() - t2);
    if (iot_adapt_nlog < IOT_ADAPT_LOG)
        iot_adapt_log[iot_adapt_nlog++] = lg;
    else
        iot_adapt_dropped++, free(lg);
    pthread_mutex_unlock(&iot_adapt_lock);
    free(p);
}
