#include "trace.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "env.h"
#include "hash.h"
#include "json.h"
#include "real.h"

int iot_trace_on;

/* A signature: everything about a call but its time. Repeats of one signature in a row make
 * one event; the table is found through a hash, so each call costs O(1) however many distinct
 * signatures a run has (random offsets make one per call). */
typedef struct {
    const char *func; /* a literal: compared by address */
    int64_t step;     /* offset minus the previous one (same file, layer); has_step 0: none */
    uint64_t size;
    int32_t rec, dset, dims, mode; /* dims: interned "[n, m]" text, or -1 */
    int32_t layer, has_step;
} trace_sig;

/* A run: count calls of one signature in one stream (layer and file), merged even when calls of
 * other streams come between them, as long as their place in the rank's call sequence (seq) and
 * their start times are regular: call k of the run is call seq + k * stride of the rank, and it
 * started within tol of start + k * period, for any period in [p_lo, p_hi]. */
typedef struct {
    uint32_t sig, count;
    uint64_t last; /* the seq of the run's last call (the first is last - (count - 1) * stride) */
    uint32_t stride;
    float tol;
    double start, busy, end; /* first call's start, summed durations, last call's end */
    double p_lo, p_hi;
} trace_event;

/* Interned strings: dims texts, and dataset keys "rec\x1fpath". */
typedef struct {
    char **s;
    uint32_t n, cap;
    iot_index index;
} strtab;

typedef struct {
    int rec, dims;
    uint64_t type_size;
} trace_dataset;

#define DEFAULT_MAX_EVENTS (1u << 20) /* 64 MiB of runs */
#define MAX_SIGNATURES (1u << 18)     /* 12 MiB of signatures */

static trace_sig *sigs;
static uint32_t nsigs, cap_sigs, max_sigs = MAX_SIGNATURES;
static iot_index sig_index_tab;
static trace_event *events;
static size_t nevents, cap_events, max_events = DEFAULT_MAX_EVENTS;
static uint64_t dropped;                    /* calls not recorded once a limit was reached */
static uint64_t ncalls;                     /* traced calls so far: the next call's seq */
static uint32_t (*open_run)[IOT_NLAYERS];   /* per record + 1 and layer: its last run + 1 */
static int64_t (*last_offset)[IOT_NLAYERS]; /* per record and layer */
static strtab dims_tab, dset_tab;
static trace_dataset *dsets;
static uint32_t cap_dsets;

void iot_trace_init(void)
{
    iot_trace_on = iot_env.trace;
    if (!iot_trace_on)
        return;
    /* per file and layer: the last offset (for steps) and the open run (calls without a
     * followed file, rec -1, share row 0); without them no call is recorded */
    last_offset = calloc(IOT_MAX_FILES, sizeof *last_offset);
    open_run = calloc(IOT_MAX_FILES + 1, sizeof *open_run);
    long long n = iot_env.trace_limit;
    if (n > 0 && n < (1ll << 31)) {
        max_events = (size_t)n;
        max_sigs = n < MAX_SIGNATURES ? (uint32_t)n : MAX_SIGNATURES;
    }
}

static uint64_t mix(uint64_t h, uint64_t v)
{
    h = (h ^ v) * 0x9E3779B97F4A7C15ull;
    return h ^ (h >> 29);
}

static uint64_t sig_hash(const trace_sig *s)
{
    uint64_t h = mix(0, (uint64_t)(uintptr_t)s->func);
    h = mix(h, (uint64_t)s->step);
    h = mix(h, s->size);
    h = mix(h, ((uint64_t)(uint32_t)s->rec << 32) | (uint32_t)s->dset);
    h = mix(h, ((uint64_t)(uint32_t)s->dims << 32) | (uint32_t)s->mode);
    return mix(h, ((uint64_t)(uint32_t)s->layer << 32) | (uint32_t)s->has_step);
}

static int sig_equal(const trace_sig *a, const trace_sig *b)
{
    return a->func == b->func && a->step == b->step && a->size == b->size && a->rec == b->rec &&
           a->dset == b->dset && a->dims == b->dims && a->mode == b->mode && a->layer == b->layer &&
           a->has_step == b->has_step;
}

static uint64_t sig_hash_of(uint32_t i)
{
    return sig_hash(&sigs[i]);
}

static int sig_is(uint32_t i, const void *key)
{
    return sig_equal(&sigs[i], key);
}

static int sig_index(const trace_sig *s)
{
    uint64_t h = sig_hash(s);
    uint32_t found = iot_index_find(&sig_index_tab, h, sig_is, s);
    if (found)
        return (int)found - 1;
    if (nsigs >= max_sigs)
        return -1;
    if (nsigs == cap_sigs) {
        uint32_t cap = cap_sigs ? 2 * cap_sigs : 256;
        trace_sig *grown = realloc(sigs, (size_t)cap * sizeof *grown);
        if (!grown)
            return -1;
        sigs = grown;
        cap_sigs = cap;
    }
    if (!iot_index_add(&sig_index_tab, nsigs, h, sig_hash_of))
        return -1;
    sigs[nsigs] = *s;
    return (int)nsigs++;
}

/* The string table being searched or grown (the index's callbacks take no context). */
static strtab *cur_tab;

static uint64_t str_hash_of(uint32_t i)
{
    return iot_fnv1a(cur_tab->s[i]);
}

static int str_is(uint32_t i, const void *key)
{
    return strcmp(cur_tab->s[i], key) == 0;
}

static int strtab_id(strtab *t, const char *s)
{
    cur_tab = t;
    uint64_t h = iot_fnv1a(s);
    uint32_t found = iot_index_find(&t->index, h, str_is, s);
    if (found)
        return (int)found - 1;
    if (t->n >= max_sigs)
        return -1;
    if (t->n == t->cap) {
        uint32_t cap = t->cap ? 2 * t->cap : 64;
        char **grown = realloc(t->s, cap * sizeof *grown);
        if (!grown)
            return -1;
        t->s = grown;
        t->cap = cap;
    }
    char *copy = strdup(s);
    if (!copy || !iot_index_add(&t->index, t->n, h, str_hash_of)) {
        free(copy);
        return -1;
    }
    t->s[t->n] = copy;
    return (int)t->n++;
}

static int dims_text_id(int ndims, const uint64_t *dims)
{
    char text[32 * 24] = "[";
    size_t used = 1;
    for (int d = 0; d < ndims && d < 32 && used < sizeof text; d++)
        used += (size_t)snprintf(text + used, sizeof text - used, "%s%llu", d ? ", " : "",
                                 (unsigned long long)dims[d]);
    if (used + 2 > sizeof text)
        return -1;
    text[used] = ']';
    text[used + 1] = '\0';
    return strtab_id(&dims_tab, text);
}

/* "[n, m, ...]", interned. Consecutive calls mostly repeat the same box: the last one is
 * remembered, so the formatting and the table lookup run only when it changes. */
static int dims_id(int ndims, const uint64_t *dims)
{
    static int last_n = -1, last_id = -1;
    static uint64_t last[32];
    if (ndims <= 0)
        return -1;
    if (ndims == last_n && ndims <= 32 && memcmp(dims, last, (size_t)ndims * sizeof *dims) == 0)
        return last_id;
    int id = dims_text_id(ndims, dims);
    if (id >= 0 && ndims <= 32) {
        memcpy(last, dims, (size_t)ndims * sizeof *dims);
        last_n = ndims;
        last_id = id;
    }
    return id;
}

int iot_trace_dataset(int rec, const char *path, int ndims, const uint64_t *dims,
                      uint64_t type_size)
{
    char key[IOT_REC_NAME + 1100];
    if (snprintf(key, sizeof key, "%d\x1f%s", rec, path) >= (int)sizeof key)
        return -1;
    if (dset_tab.n == cap_dsets) { /* room first: a key is never kept without its data */
        uint32_t cap = cap_dsets ? 2 * cap_dsets : 64;
        trace_dataset *grown = realloc(dsets, cap * sizeof *grown);
        if (!grown)
            return -1;
        dsets = grown;
        cap_dsets = cap;
    }
    uint32_t before = dset_tab.n;
    int id = strtab_id(&dset_tab, key);
    if (id >= 0 && dset_tab.n != before)
        dsets[id] = (trace_dataset){rec, dims_id(ndims, dims), type_size};
    return id;
}

/* Start times of a run may stray this far from the regular spacing: 10 us, or a sixteenth of
 * the gap between its first two calls when that is larger (docs/profile.md). */
#define TIME_TOLERANCE 10e-6

/* Does call seq, started at t, continue run e? If so the run's period bounds are narrowed.
 * (The common case, a run that goes on, costs one comparison of seq and two of times.) */
static inline int continues(trace_event *e, uint64_t seq, double t)
{
    double since = t - e->start;
    if (e->count > 1) {
        if (seq != e->last + e->stride || e->count == UINT32_MAX)
            return 0;
        double k = e->count, lo = (since - e->tol) / k, hi = (since + e->tol) / k;
        lo = lo > e->p_lo ? lo : e->p_lo;
        hi = hi < e->p_hi ? hi : e->p_hi;
        if (lo > hi)
            return 0;
        e->p_lo = lo;
        e->p_hi = hi;
        return 1;
    }
    if (seq - e->last > UINT32_MAX)
        return 0;
    e->stride = (uint32_t)(seq - e->last);
    double tol = since / 16 > TIME_TOLERANCE ? since / 16 : TIME_TOLERANCE;
    e->tol = (float)tol;
    e->p_lo = since - tol;
    e->p_hi = since + tol;
    return 1;
}

static void append(const trace_sig *s, double t, double dt)
{
    uint64_t seq = ncalls++;
    if (dropped || !open_run) { /* past a limit nothing more: the record is a prefix of the calls */
        dropped++;
        return;
    }
    uint32_t *stream = &open_run[s->rec + 1][s->layer];
    trace_event *last = *stream ? &events[*stream - 1] : NULL;
    /* a call like the stream's last one needs no signature lookup (the common case) */
    int same = last && sig_equal(&sigs[last->sig], s);
    if (same && continues(last, seq, t)) {
        last->count++;
        last->last = seq;
        last->busy += dt;
        last->end = t + dt;
        return;
    }
    int id = same ? (int)last->sig : sig_index(s);
    if (id < 0) {
        dropped++;
        return;
    }
    if (nevents >= max_events) {
        dropped++;
        return;
    }
    if (nevents == cap_events) {
        size_t cap = cap_events ? 2 * cap_events : 1024;
        trace_event *grown = realloc(events, cap * sizeof *grown);
        if (!grown) {
            dropped++;
            return;
        }
        events = grown;
        cap_events = cap;
    }
    events[nevents] = (trace_event){(uint32_t)id, 1, seq, 0, 0, t, dt, t + dt, 0, 0};
    *stream = (uint32_t)++nevents;
}

/* The offset step of a call: offset minus the previous offset on the same file and layer
 * (0 before the first, so a first access's step is its offset). */
static void set_step(trace_sig *s, int64_t offset)
{
    if (offset < 0 || s->rec < 0 || !last_offset)
        return;
    s->has_step = 1;
    s->step = offset - last_offset[s->rec][s->layer];
    last_offset[s->rec][s->layer] = offset;
}

void iot_trace(iot_clayer layer, const char *func, int rec, uint64_t size, int64_t offset, int mode,
               double t, double dt)
{
    if (iot_depth > 0 && iot_trace_on < 2)
        return; /* level 1: the application's own calls; level 2 (all): every layer */
    trace_sig s = {func, 0, size, rec, -1, -1, mode, (int32_t)layer, 0};
    set_step(&s, offset);
    append(&s, t, dt);
}

void iot_trace_h5(const char *func, int rec, int dset, uint64_t size, int64_t offset, int mode,
                  int ndims, const uint64_t *box, double t, double dt)
{
    if (iot_depth > 0 && iot_trace_on < 2)
        return;
    trace_sig s = {func, 0, size, rec, dset, dims_id(ndims, box), mode, IOT_L_HDF5, 0};
    set_step(&s, offset);
    append(&s, t, dt);
}

int iot_trace_truncated(void)
{
    return dropped > 0;
}

/* The trace is written through zlib (gzip format, readable by any gzip tool), from a FILE that
 * deflates what it is given: the JSON below is printed as before, never held whole in memory. */
typedef struct {
    FILE *out;
    z_stream z;
    int err;
} gz_sink;

static int gz_pump(gz_sink *g, int flush)
{
    unsigned char buf[1 << 15];
    do {
        g->z.next_out = buf;
        g->z.avail_out = sizeof buf;
        int rc = deflate(&g->z, flush);
        if (rc == Z_STREAM_ERROR)
            return -1;
        size_t have = sizeof buf - g->z.avail_out;
        if (have && fwrite(buf, 1, have, g->out) != have)
            return -1;
    } while (g->z.avail_out == 0);
    return 0;
}

static ssize_t gz_write(void *cookie, const char *data, size_t n)
{
    gz_sink *g = cookie;
    g->z.next_in = (unsigned char *)(uintptr_t)data;
    g->z.avail_in = (uInt)n;
    if (gz_pump(g, Z_NO_FLUSH) != 0) {
        g->err = errno ? errno : EIO;
        return -1;
    }
    return (ssize_t)n;
}

/* Times are written in ticks of 100 ns, as integers (they compress better than decimals). */
#define TICK 1e-7

static long long ticks(double seconds)
{
    return llround(seconds / TICK);
}

/* Columns of numbers are most of a trace: formatted here rather than by printf, into a buffer
 * handed to the FILE in large pieces (a fifth of the instructions of fprintf per number). */
static char col[1 << 14];
static size_t col_used;

static void col_flush(FILE *f)
{
    fwrite_unlocked(col, 1, col_used, f);
    col_used = 0;
}

static void put_raw(const char *text, FILE *f) /* as fputs */
{
    size_t n = strlen(text);
    if (col_used + n > sizeof col)
        col_flush(f);
    if (n > sizeof col) {
        fputs_unlocked(text, f);
        return;
    }
    memcpy(col + col_used, text, n);
    col_used += n;
}

static void put_int(FILE *f, size_t i, long long v)
{
    if (col_used + 24 > sizeof col)
        col_flush(f);
    char text[24], *p = text + sizeof text;
    unsigned long long u = v < 0 ? 0ull - (unsigned long long)v : (unsigned long long)v;
    do
        *--p = (char)('0' + u % 10);
    while (u /= 10);
    if (v < 0)
        *--p = '-';
    if (i) {
        col[col_used++] = ',';
        col[col_used++] = ' ';
    }
    size_t n = (size_t)(text + sizeof text - p);
    memcpy(col + col_used, p, n);
    col_used += n;
}

static void put_text(FILE *f, size_t i, const char *text)
{
    if (i)
        put_raw(", ", f);
    put_raw(text, f);
}

static const char *const layer_names[] = {"\"hdf5\"", "\"mpiio\"", "\"posix\"", "\"stdio\""};

static void write_signatures(FILE *f)
{
    put_raw(", \"signatures\": {\"layer\": [", f);
    for (uint32_t i = 0; i < nsigs; i++)
        put_text(f, i, layer_names[sigs[i].layer]);
    put_raw("], \"func\": [", f);
    for (uint32_t i = 0; i < nsigs; i++) {
        put_text(f, i, "\"");
        put_raw(sigs[i].func, f);
        put_raw("\"", f);
    }
    put_raw("], \"file\": [", f);
    for (uint32_t i = 0; i < nsigs; i++)
        put_int(f, i, sigs[i].rec);
    put_raw("], \"dataset\": [", f);
    for (uint32_t i = 0; i < nsigs; i++)
        put_int(f, i, sigs[i].dset);
    put_raw("], \"dims\": [", f);
    for (uint32_t i = 0; i < nsigs; i++)
        put_text(f, i, sigs[i].dims >= 0 ? dims_tab.s[sigs[i].dims] : "null");
    put_raw("], \"size\": [", f);
    for (uint32_t i = 0; i < nsigs; i++)
        put_int(f, i, (long long)sigs[i].size);
    put_raw("], \"step\": [", f);
    for (uint32_t i = 0; i < nsigs; i++) {
        if (sigs[i].has_step)
            put_int(f, i, sigs[i].step);
        else
            put_text(f, i, "null");
    }
    put_raw("], \"mode\": [", f);
    for (uint32_t i = 0; i < nsigs; i++)
        put_int(f, i, sigs[i].mode);
    put_raw("]}", f);
    col_flush(f);
}

static uint64_t first_seq(const trace_event *e)
{
    return e->last - (uint64_t)(e->count - 1) * e->stride;
}

/* Runs in columns; sig, seq and start as differences from the previous run's (small numbers
 * that repeat), times in ticks on the job's clock (origin), the period in thousandths of a
 * tick (an integer; precise to 0.05 ps a call, so 50 ns over a million calls). */
static void write_runs(FILE *f, double origin)
{
    put_raw(", \"runs\": {\"sig\": [", f);
    for (size_t i = 0; i < nevents; i++)
        put_int(f, i, (long long)events[i].sig - (i ? (long long)events[i - 1].sig : 0));
    put_raw("], \"count\": [", f);
    for (size_t i = 0; i < nevents; i++)
        put_int(f, i, events[i].count);
    put_raw("], \"seq\": [", f);
    for (size_t i = 0; i < nevents; i++)
        put_int(f, i, (long long)(first_seq(&events[i]) - (i ? first_seq(&events[i - 1]) : 0)));
    put_raw("], \"stride\": [", f);
    for (size_t i = 0; i < nevents; i++)
        put_int(f, i, events[i].count > 1 ? events[i].stride : 0);
    put_raw("], \"start\": [", f);
    long long before = 0;
    for (size_t i = 0; i < nevents; i++) {
        long long t = ticks(events[i].start - origin);
        put_int(f, i, t - before);
        before = t;
    }
    put_raw("], \"period\": [", f);
    for (size_t i = 0; i < nevents; i++) {
        const trace_event *e = &events[i];
        put_int(f, i, e->count > 1 ? llround((e->p_lo + e->p_hi) / 2 / TICK * 1000) : 0);
    }
    put_raw("], \"busy\": [", f);
    for (size_t i = 0; i < nevents; i++)
        put_int(f, i, ticks(events[i].busy));
    put_raw("], \"idle\": [", f); /* span minus busy: 0 for a single call */
    for (size_t i = 0; i < nevents; i++) {
        const trace_event *e = &events[i];
        long long idle = ticks(e->end - origin) - ticks(e->start - origin) - ticks(e->busy);
        put_int(f, i, idle > 0 ? idle : 0); /* never below by rounding */
    }
    put_raw("]}", f);
    col_flush(f);
}

static void write_body(FILE *f, double origin)
{
    int nrecs = 0;
    iot_file_rec *recs = iot_recs(&nrecs);
    fputs(", \"files\": [", f); /* signatures name files by index here */
    for (int i = 0; i < nrecs; i++) {
        fputs(i ? ", " : "", f);
        iot_json_string(f, recs[i].name);
    }
    fputs("], \"datasets\": [", f);
    for (uint32_t i = 0; i < dset_tab.n; i++) {
        fputs(i ? ", {\"file\": " : "{\"file\": ", f);
        iot_json_string(f, dsets[i].rec >= 0 ? iot_rec(dsets[i].rec)->name : NULL);
        fputs(", \"name\": ", f);
        iot_json_string(f, strchr(dset_tab.s[i], '\x1f') + 1);
        fprintf(f, ", \"dims\": %s, \"type_size\": %llu}",
                dsets[i].dims >= 0 ? dims_tab.s[dsets[i].dims] : "null",
                (unsigned long long)dsets[i].type_size);
    }
    fputs("]", f);
    write_signatures(f);
    write_runs(f, origin);
}

int iot_trace_write(const char *path, int rank, int nranks, const char *session, double origin,
                    double epoch)
{
    gz_sink g = {iot_real_fopen(path, "w"), {0}, 0};
    if (!g.out)
        return errno ? errno : EIO;
    /* windowBits 15 + 16: a gzip header. Level 1, the fastest: on irregular calls (a run per
     * call) zlib's default level 6 costs six times the instructions for 15 % fewer bytes. */
    if (deflateInit2(&g.z, 1, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
        iot_real_fclose(g.out);
        return ENOMEM;
    }
    cookie_io_functions_t io = {NULL, gz_write, NULL, NULL};
    FILE *f = fopencookie(&g, "w", io);
    int err = f ? 0 : (errno ? errno : ENOMEM);
    if (f) {
        setvbuf(f, NULL, _IOFBF, 1 << 16);
        fputs("{\"schema\": \"iotune-trace\", \"version\": 3, \"session\": ", f);
        iot_json_string(f, session);
        fprintf(f,
                ", \"rank\": %d, \"ranks\": %d, \"start\": %.6f, \"truncated\": %s, "
                "\"dropped_calls\": %llu, \"limits\": {\"runs\": %zu, \"signatures\": %u}, "
                "\"tick_s\": %g, \"tolerance_s\": %g",
                rank, nranks, epoch, dropped ? "true" : "false", (unsigned long long)dropped,
                max_events, max_sigs, TICK, TIME_TOLERANCE);
        write_body(f, origin);
        fputs("}\n", f);
        if (fclose(f) != 0 && !err)
            err = g.err ? g.err : (errno ? errno : EIO);
        if (!err && gz_pump(&g, Z_FINISH) != 0)
            err = errno ? errno : EIO;
    }
    deflateEnd(&g.z);
    if (ferror(g.out) && !err)
        err = errno ? errno : EIO;
    if (iot_real_fclose(g.out) != 0 && !err)
        err = errno ? errno : EIO;
    return err;
}
