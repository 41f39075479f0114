#include "adapt.h"

#include <stdlib.h>
#include <string.h>

#include "capture.h"
#include "core.h"
#include "env.h"
#include "fstype.h"
#include "grammar.h"
#include "h5api.h"
#include "json.h"
#include "phase.h"
#include "rules.h"

_Static_assert(IOT_RULE_COUNT <= 64, "a class keeps its rules as bits of one word");

int iot_adapt_on;

/* An optimised phase below this share of the learning phase's bytes/s reverts its rules. */
#define GUARD_RATIO 0.9
#define MAX_CLASSES 64
#define MAX_OPEN 64
#define MAX_LOG 256

/* the HDF5 selection counts kept per file record (below) */
enum { SEL_N, SEL_NONCONTIG, SEL_PAIRS, SEL_BACK, SEL_GAPS, SEL_COUNT };

typedef struct {
    char name[IOT_CLASS_MAX];
    int phases;       /* ended so far */
    double learn_bps; /* bytes/s of the learning phase */
    uint64_t fired;   /* online rules that held on the learning phase */
    uint64_t reverted;
} klass;

typedef struct {
    MPI_File fh;
    MPI_Comm comm; /* a duplicate: the phase's statistics are agreed on it at the close */
    int comm_size, rec, cls, index;
    uint64_t applied; /* the class's rules in effect at the open */
    double t0, cost;
    char name[IOT_REC_NAME], fs[32], hints[IOT_REC_HINTS];
    int64_t sel[SEL_COUNT];
    iot_counters at[IOT_NLAYERS];
} open_phase;

/* What the profile says of one phase (rank 0's view; a shared file's is every rank's). */
typedef struct {
    char cls[IOT_CLASS_MAX], file[IOT_REC_NAME];
    int index, ranks, agreed;
    double elapsed, transfer, bytes, ratio;
    uint64_t applied, fired, reverted;
    double extract_s, optimise_s;
    iot_insights in;
} phase_log;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static klass classes[MAX_CLASSES];
static int nclasses;
static open_phase *open_phases[MAX_OPEN];
static phase_log *log_entries[MAX_LOG];
static int nlog, dropped;
static const iot_settings *current; /* adaptive entries, then the control file's */
static int slow_rule = -1;          /* IOTUNE_TEST_SLOW_RULE: a rule whose phases look slower */
static double slow_factor = 1;
/* Per file record: HDF5 transfers looked at, noncontiguous ones, successive pairs, backward
 * steps, gaps; and the last transfer's dataset, first element and end (element indices). */
static int64_t selections[IOT_MAX_FILES][SEL_COUNT];
static int64_t last_step[IOT_MAX_FILES][3];
static pthread_mutex_t sel_lock = PTHREAD_MUTEX_INITIALIZER;
static __thread int open_agreed; /* from iot_adapt_opening to iot_adapt_opened: 0 not followed,
                                  * 1 followed without the rules, 2 with them */
static __thread double open_cost;

static int rule_index(const char *code)
{
    for (int i = 0; i < IOT_RULE_COUNT; i++)
        if (strcmp(iot_rules[i].code, code) == 0)
            return i;
    return -1;
}

void iot_adapt_init(void)
{
    iot_adapt_on = iot_env.adaptive && iot_capture_on && !iot_env.disabled;
    if (iot_env.slow_rule) { /* "CODE" or "CODE:FACTOR" */
        char code[32];
        snprintf(code, sizeof code, "%s", iot_env.slow_rule);
        char *colon = strchr(code, ':');
        if (colon) {
            *colon = '\0';
            slow_factor = atof(colon + 1);
        } else {
            slow_factor = 10;
        }
        slow_rule = rule_index(code);
        if (slow_rule < 0 || slow_factor <= 0)
            iot_warn_once("slow-rule", "IOTUNE_TEST_SLOW_RULE=%s: no such rule or factor; ignored",
                          iot_env.slow_rule);
    }
}

static int find_class(const char *name)
{
    for (int i = 0; i < nclasses; i++)
        if (strcmp(classes[i].name, name) == 0)
            return i;
    return -1;
}

static uint64_t active(const klass *k)
{
    return k->fired & ~k->reverted;
}

/* Does the control file set this parameter (or hint key) anywhere? Then the rules leave it. */
static int control_sets(const iot_settings *control, int param, const char *name)
{
    for (int i = 0; i < control->count; i++)
        if (control->entries[i].param == param && strcmp(control->entries[i].name, name) == 0)
            return 1;
    return 0;
}

/* Rebuilds the set (lock held). Old sets are kept: a thread may be reading one. */
static void rebuild(void)
{
    const iot_settings *control = &iot_g.settings;
    int n = 0;
    for (int c = 0; c < nclasses; c++)
        for (int r = 0; r < IOT_RULE_COUNT; r++)
            if (active(&classes[c]) >> r & 1)
                n += iot_rules[r].nsettings;
    iot_settings *s = calloc(1, sizeof *s);
    iot_entry *e = s ? calloc((size_t)(n + control->count) + 1, sizeof *e) : NULL;
    if (!e) {
        free(s);
        iot_warn_once("adapt-oom", "out of memory: adaptive settings not updated");
        return;
    }
    int k = 0;
    for (int c = 0; c < nclasses; c++)
        for (int r = 0; r < IOT_RULE_COUNT; r++) {
            if (!(active(&classes[c]) >> r & 1))
                continue;
            for (int j = 0; j < iot_rules[r].nsettings; j++) {
                const iot_rule_setting *rs = &iot_rules[r].settings[j];
                const iot_param_def *def = &iot_params[rs->param];
                char err[128];
                if (!rs->value || control_sets(control, rs->param, def->name) ||
                    iot_value_parse(def, rs->value, &e[k].value, err, sizeof err) != 0)
                    continue;
                e[k].param = rs->param;
                e[k].line = -1; /* iot_origin: "adaptive mode" */
                e[k].layer = def->layer;
                snprintf(e[k].name, sizeof e[k].name, "%s", def->name);
                _Static_assert(IOT_CLASS_MAX == IOT_PATTERN_MAX, "a class is a file pattern");
                memcpy(e[k].file_pat, classes[c].name, sizeof e[k].file_pat);
                k++;
            }
        }
    memcpy(e + k, control->entries, (size_t)control->count * sizeof *e);
    *s = *control;
    s->entries = e;
    s->count = k + control->count;
    __atomic_store_n(&current, s, __ATOMIC_RELEASE);
}

const iot_settings *iot_adapt_settings(const iot_settings *control)
{
    const iot_settings *s =
        iot_adapt_on && !iot_frozen ? __atomic_load_n(&current, __ATOMIC_ACQUIRE) : NULL;
    return s ? s : control;
}

const iot_settings *iot_adapt_opening(MPI_Comm comm, const char *filename)
{
    open_agreed = 0;
    if (!iot_adapt_on)
        return iot_active();
    double t = iot_now();
    char cls[IOT_CLASS_MAX];
    uint64_t mask = 0;
    int can = iot_phase_class(filename, cls, sizeof cls);
    pthread_mutex_lock(&lock);
    int c = can ? find_class(cls) : -1;
    if (c >= 0)
        mask = active(&classes[c]);
    int room = 0;
    for (int i = 0; i < MAX_OPEN; i++)
        room += !open_phases[i];
    pthread_mutex_unlock(&lock);
    /* the ranks of the file agree to follow it and on the rules in effect: a rank that saw
     * another history of the class (another communicator) must not open with other hints */
    double mine[6] = {can && room,
                      -(double)(can && room),
                      (double)(mask & 0xffffffffu),
                      -(double)(mask & 0xffffffffu),
                      (double)(mask >> 32),
                      -(double)(mask >> 32)};
    double all[6];
    int size = 1;
    PMPI_Comm_size(comm, &size);
    if (size > 1)
        PMPI_Allreduce(mine, all, 6, MPI_DOUBLE, MPI_MAX, comm);
    else
        memcpy(all, mine, sizeof all);
    int follow = all[0] == 1 && all[1] == -1;
    int same = all[2] == -all[3] && all[4] == -all[5];
    open_agreed = follow ? 1 + same : 0;
    open_cost = iot_now() - t;
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
    if (size > 1)
        PMPI_Comm_dup(comm, &dup); /* collective: every rank of comm, whatever ok was */
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
    if (rec >= 0 && rec < IOT_MAX_FILES) {
        pthread_mutex_lock(&sel_lock);
        memcpy(p->sel, selections[rec], sizeof p->sel);
        pthread_mutex_unlock(&sel_lock);
    }
    pthread_mutex_lock(&lock);
    int c = find_class(cls);
    if (c < 0 && nclasses < MAX_CLASSES) {
        c = nclasses++;
        snprintf(classes[c].name, sizeof classes[c].name, "%s", cls);
    }
    p->cls = c;
    p->index = c >= 0 ? classes[c].phases : 0;
    p->applied = c >= 0 && agreed == 2 ? active(&classes[c]) : 0;
    int slot = -1;
    for (int i = 0; i < MAX_OPEN && slot < 0; i++)
        if (!open_phases[i])
            slot = i;
    if (slot >= 0)
        open_phases[slot] = p;
    pthread_mutex_unlock(&lock);
    if (slot < 0) { /* the room agreed at the opening was taken by another thread meanwhile */
        if (dup != MPI_COMM_NULL)
            PMPI_Comm_free(&dup);
        free(p);
        return;
    }
    p->cost = open_cost + iot_now() - t1;
}

/* The class learns from its first phase, the guard judges the later ones (lock held). */
/* The measure is bytes per second of transfer time (the slowest rank's): the open of the first
 * phase also pays one-time costs (HDF5 and MPI-IO set-up) that would flatter later phases. */
static void judge(klass *k, open_phase *p, phase_log *lg, double bytes, double seconds)
{
    double bps = seconds > 0 ? bytes / seconds : 0;
    if (p->index == 0) {
        k->learn_bps = bps;
        for (int r = 0; r < IOT_RULE_COUNT; r++)
            if (iot_rules[r].online && iot_rules[r].kind == IOT_RULE_SETTING &&
                iot_rules[r].nsettings > 0 && iot_rule_holds(&iot_rules[r], &lg->in))
                k->fired |= (uint64_t)1 << r;
        lg->fired = k->fired;
    } else if (p->applied && k->learn_bps > 0) {
        lg->ratio = bps / k->learn_bps;
        if (lg->ratio < GUARD_RATIO) {
            lg->reverted = p->applied & ~k->reverted;
            k->reverted |= p->applied;
        }
    }
    k->phases++;
}

void iot_adapt_closing(MPI_File fh)
{
    if (!iot_adapt_on)
        return;
    open_phase *p = NULL;
    pthread_mutex_lock(&lock);
    for (int i = 0; i < MAX_OPEN && !p; i++)
        if (open_phases[i] && open_phases[i]->fh == fh) {
            p = open_phases[i];
            open_phases[i] = NULL;
        }
    pthread_mutex_unlock(&lock);
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
        static const int slot[SEL_COUNT] = {IOT_S_SELECTIONS, IOT_S_NONCONTIG, IOT_S_H5_PAIRS,
                                            IOT_S_H5_BACKWARD, IOT_S_H5_GAPS};
        pthread_mutex_lock(&sel_lock);
        for (int i = 0; i < SEL_COUNT; i++)
            local.sum[slot[i]] = (double)(selections[p->rec][i] - p->sel[i]);
        pthread_mutex_unlock(&sel_lock);
    }
    local.max[IOT_M_ELAPSED] = t1 - p->t0;
    if (slow_rule >= 0 && (p->applied >> slow_rule & 1)) /* test only: see env.c */
        local.max[IOT_M_TRANSFER] *= slow_factor;
    all = local;
    if (p->comm != MPI_COMM_NULL) { /* every rank of the file is in this close */
        PMPI_Allreduce(local.sum, all.sum, IOT_S_COUNT, MPI_DOUBLE, MPI_SUM, p->comm);
        PMPI_Allreduce(local.max, all.max, IOT_M_COUNT, MPI_DOUBLE, MPI_MAX, p->comm);
        PMPI_Comm_free(&p->comm);
    }
    int world = 1;
    PMPI_Comm_size(MPI_COMM_WORLD, &world);
    phase_log *lg = calloc(1, sizeof *lg);
    if (!lg) {
        free(p);
        return;
    }
    iot_phase_insights(&lg->in, &all, p->comm_size, world, p->fs);
    double t2 = iot_now();
    pthread_mutex_lock(&lock);
    if (p->cls >= 0) {
        klass *k = &classes[p->cls];
        uint64_t before = active(k);
        judge(k, p, lg, iot_phase_bytes(&all), all.max[IOT_M_TRANSFER]);
        if (active(k) != before)
            rebuild();
        snprintf(lg->cls, sizeof lg->cls, "%s", k->name);
    }
    snprintf(lg->file, sizeof lg->file, "%s", p->name);
    lg->index = p->index;
    lg->ranks = p->comm_size;
    lg->agreed = 1;
    lg->elapsed = all.max[IOT_M_ELAPSED];
    lg->transfer = all.max[IOT_M_TRANSFER];
    lg->bytes = iot_phase_bytes(&all);
    lg->applied = p->applied;
    lg->extract_s = t2 - t1;
    lg->optimise_s = p->cost + (iot_now() - t2);
    if (nlog < MAX_LOG)
        log_entries[nlog++] = lg;
    else
        dropped++, free(lg);
    pthread_mutex_unlock(&lock);
    free(p);
}

void iot_adapt_transfer(int rec, int64_t dset, int64_t fspace)
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
    if (!ok)
        return;
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
    pthread_mutex_lock(&sel_lock);
    int64_t *x = selections[rec], *last = last_step[rec];
    x[SEL_N]++;
    x[SEL_NONCONTIG] += !contiguous;
    if (x[SEL_N] > 1 && last[0] == dset) { /* steps within a dataset, as iotune.insights */
        x[SEL_PAIRS]++;
        x[SEL_BACK] += first < last[1];
        x[SEL_GAPS] += first > last[2];
    }
    last[0] = dset;
    last[1] = first;
    last[2] = first + points;
    pthread_mutex_unlock(&sel_lock);
}

/* ---------------------------------------------------------------- prediction (Sequitur) */

#define PREDICT_MAX 4096 /* calls predicted per phase */
#define MAX_PREDICTIONS 256

/* The prediction of a phase in progress, per capture record (capture lock held). */
typedef struct {
    uint32_t pred[PREDICT_MAX];
    size_t n, pos;
    uint64_t matched, actual;
    uint32_t close_sig;
    char cls[IOT_CLASS_MAX];
} prediction;

typedef struct {
    char cls[IOT_CLASS_MAX], file[IOT_REC_NAME];
    uint64_t predicted, actual, matched;
} prediction_log;

static iot_grammar *grammar; /* this rank's call stream */
static prediction *predictions[IOT_MAX_FILES];
static prediction_log *pred_log[MAX_PREDICTIONS];
static int npred_log;
static double predict_s; /* time in the grammar and the predictions */
static uint64_t stream_calls;

static uint32_t signature(const char *what, const char *cls, uint64_t a, uint64_t b)
{
    uint64_t h = 1469598103934665603ULL;
    for (const char *s = what; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    for (const char *s = cls; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    h = (h ^ a) * 1099511628211ULL;
    h = (h ^ b) * 1099511628211ULL;
    return (uint32_t)(h ^ (h >> 32)) & 0x7fffffffu;
}

static void stream_add(uint32_t sig)
{
    if (!grammar && !(grammar = iot_grammar_new()))
        return;
    stream_calls++;
    iot_grammar_add(grammar, sig); /* a full grammar stops growing; predictions go on */
}

/* The phase's calls after sig: the most used rule that starts with the current symbol,
 * expanded, then again from its last symbol, until the close or PREDICT_MAX. */
static size_t predict_phase(uint32_t sig, uint32_t close_sig, uint32_t *out)
{
    size_t n = 0;
    uint32_t cur = sig;
    for (int round = 0; round < 64 && n < PREDICT_MAX; round++) {
        size_t k = iot_grammar_predict(grammar, cur, out + n, PREDICT_MAX - n);
        if (!k)
            break;
        for (size_t i = 0; i < k; i++)
            if (out[n + i] == close_sig)
                return n + i + 1;
        n += k;
        cur = out[n - 1];
    }
    return n;
}

void iot_adapt_phase_begin(int rec, const char *name)
{
    double t = iot_now();
    char cls[IOT_CLASS_MAX];
    if (rec < 0 || rec >= IOT_MAX_FILES || !iot_phase_class(name, cls, sizeof cls))
        return;
    uint32_t sig = signature("open", cls, 0, 0);
    stream_add(sig);
    prediction *p = predictions[rec];
    if (!p && !(p = predictions[rec] = malloc(sizeof *p)))
        return;
    p->pos = p->matched = p->actual = 0;
    p->close_sig = signature("close", cls, 0, 0);
    memcpy(p->cls, cls, sizeof cls);
    p->n = grammar ? predict_phase(sig, p->close_sig, p->pred) : 0;
    predict_s += iot_now() - t;
}

static void compare(prediction *p, uint32_t sig)
{
    if (p->pos < p->n)
        p->matched += p->pred[p->pos++] == sig;
    p->actual++;
}

void iot_adapt_call(int rec, int layer, int is_write, uint64_t bytes)
{
    double t = iot_now();
    uint32_t sig = signature(is_write ? "write" : "read", "", (uint64_t)layer, bytes);
    stream_add(sig);
    if (rec >= 0 && rec < IOT_MAX_FILES && predictions[rec])
        compare(predictions[rec], sig);
    predict_s += iot_now() - t;
}

void iot_adapt_phase_end(int rec)
{
    if (rec < 0 || rec >= IOT_MAX_FILES || !predictions[rec])
        return;
    double t = iot_now();
    prediction *p = predictions[rec];
    stream_add(p->close_sig);
    compare(p, p->close_sig);
    prediction_log *lg = npred_log < MAX_PREDICTIONS ? calloc(1, sizeof *lg) : NULL;
    if (lg) {
        memcpy(lg->cls, p->cls, sizeof lg->cls);
        snprintf(lg->file, sizeof lg->file, "%s", iot_rec(rec)->name);
        lg->predicted = p->n;
        lg->actual = p->actual;
        lg->matched = p->matched;
        pred_log[npred_log++] = lg;
    }
    free(p);
    predictions[rec] = NULL;
    predict_s += iot_now() - t;
}

static void write_predictions(FILE *f)
{
    fprintf(f, ", \"prediction\": {\"calls\": %llu, \"seconds\": %.9f, ",
            (unsigned long long)stream_calls, predict_s);
    fprintf(f, "\"grammar\": {\"symbols\": %zu, \"rules\": %d, \"full\": %s}, \"phases\": [",
            grammar ? iot_grammar_symbols(grammar) : 0, grammar ? iot_grammar_rules(grammar) : 0,
            grammar && iot_grammar_full(grammar) ? "true" : "false");
    for (int i = 0; i < npred_log; i++) {
        const prediction_log *lg = pred_log[i];
        fputs(i ? ", {\"class\": " : "{\"class\": ", f);
        iot_json_string(f, lg->cls);
        fputs(", \"file\": ", f);
        iot_json_string(f, lg->file);
        fprintf(f, ", \"predicted\": %llu, \"actual\": %llu, \"matched\": %llu, \"accuracy\": ",
                (unsigned long long)lg->predicted, (unsigned long long)lg->actual,
                (unsigned long long)lg->matched);
        if (lg->predicted)
            fprintf(f, "%.4f}", lg->actual ? (double)lg->matched / (double)lg->actual : 0.0);
        else
            fputs("null}", f);
    }
    fputs("]}", f);
}

static void write_codes(FILE *f, uint64_t mask)
{
    fputc('[', f);
    for (int r = 0, n = 0; r < IOT_RULE_COUNT; r++)
        if (mask >> r & 1) {
            fputs(n++ ? ", " : "", f);
            iot_json_string(f, iot_rules[r].code);
        }
    fputc(']', f);
}

static void write_insights(FILE *f, const iot_insights *in)
{
    fputc('{', f);
    for (int i = 0; i < IOT_I_COUNT; i++) {
        fputs(i ? ", " : "", f);
        iot_json_string(f, iot_insight_names[i]);
        fputs(": ", f);
        if (!in->v[i].known)
            fputs("null", f);
        else if (in->v[i].word)
            iot_json_string(f, in->v[i].word);
        else
            fprintf(f, "%.17g", in->v[i].number);
    }
    fputc('}', f);
}

/* The settings a phase's rules gave it (those a control file left to the rules). */
static void write_applied(FILE *f, const phase_log *lg)
{
    fputc('[', f);
    int n = 0;
    for (int r = 0; r < IOT_RULE_COUNT; r++) {
        if (!(lg->applied >> r & 1))
            continue;
        for (int j = 0; j < iot_rules[r].nsettings; j++) {
            const iot_rule_setting *s = &iot_rules[r].settings[j];
            const char *name = iot_params[s->param].name;
            if (!s->value || control_sets(&iot_g.settings, s->param, name))
                continue;
            fputs(n++ ? ", " : "", f);
            fputs("{\"rule\": ", f);
            iot_json_string(f, iot_rules[r].code);
            fputs(", \"name\": ", f);
            iot_json_string(f, name);
            fputs(", \"value\": ", f);
            iot_json_string(f, s->value);
            fputc('}', f);
        }
    }
    fputc(']', f);
}

void iot_adapt_write_json(FILE *f)
{
    if (!iot_adapt_on)
        return;
    pthread_mutex_lock(&lock);
    fprintf(f,
            "\"adaptive\": {\"mode\": \"adaptive\", \"insights_version\": %d, \"guard_ratio\": "
            "%.2f, \"dropped_phases\": %d, \"phases\": [",
            IOT_INSIGHTS_VERSION, GUARD_RATIO, dropped);
    for (int i = 0; i < nlog; i++) {
        const phase_log *lg = log_entries[i];
        double bps = lg->transfer > 0 ? lg->bytes / lg->transfer : 0;
        fputs(i ? ", {\"class\": " : "{\"class\": ", f);
        iot_json_string(f, lg->cls);
        fputs(", \"file\": ", f);
        iot_json_string(f, lg->file);
        fprintf(f,
                ", \"index\": %d, \"role\": \"%s\", \"ranks\": %d, \"elapsed_s\": %.9f, "
                "\"transfer_s\": %.9f, "
                "\"bytes\": %.0f, \"bytes_per_s\": %.1f, \"fired\": ",
                lg->index,
                lg->index == 0 ? "learning"
                : lg->applied  ? "optimised"
                               : "default",
                lg->ranks, lg->elapsed, lg->transfer, lg->bytes, bps);
        write_codes(f, lg->fired);
        fputs(", \"applied\": ", f);
        write_applied(f, lg);
        fputs(", \"guard\": ", f);
        if (lg->index > 0 && lg->applied) {
            fprintf(f, "{\"ratio\": %.4f, \"reverted\": ", lg->ratio);
            write_codes(f, lg->reverted);
            fputc('}', f);
        } else {
            fputs("null", f);
        }
        fprintf(f, ", \"overhead_s\": {\"extraction\": %.9f, \"optimisation\": %.9f}",
                lg->extract_s, lg->optimise_s);
        fputs(", \"insights\": ", f);
        write_insights(f, &lg->in);
        fputc('}', f);
    }
    fputc(']', f);
    write_predictions(f);
    fputs("}, ", f);
    pthread_mutex_unlock(&lock);
}
