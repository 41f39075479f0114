#include "trace.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

typedef struct {
    uint32_t sig, count;
    double start, busy, end; /* first call's start, summed durations, last call's end */
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

#define DEFAULT_MAX_EVENTS (1u << 20) /* 32 MiB of events */
#define MAX_SIGNATURES (1u << 18)     /* 12 MiB of signatures */

static trace_sig *sigs;
static uint32_t nsigs, cap_sigs, max_sigs = MAX_SIGNATURES;
static iot_index sig_index_tab;
static trace_event *events;
static size_t nevents, cap_events, max_events = DEFAULT_MAX_EVENTS;
static uint64_t dropped;                    /* calls not recorded once a limit was reached */
static int64_t (*last_offset)[IOT_NLAYERS]; /* per record and layer */
static strtab dims_tab, dset_tab;
static trace_dataset *dsets;
static uint32_t cap_dsets;

void iot_trace_init(void)
{
    iot_trace_on = iot_env.trace;
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

static void append(const trace_sig *s, double t, double dt)
{
    int id = sig_index(s);
    if (id < 0) {
        dropped++;
        return;
    }
    trace_event *last = nevents ? &events[nevents - 1] : NULL;
    if (last && last->sig == (uint32_t)id && last->count < UINT32_MAX) {
        last->count++;
        last->busy += dt;
        last->end = t + dt;
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
    events[nevents++] = (trace_event){(uint32_t)id, 1, t, dt, t + dt};
}

/* The offset step of a call: offset minus the previous offset on the same file and layer
 * (0 before the first, so a first access's step is its offset). */
static void set_step(trace_sig *s, int64_t offset)
{
    if (offset < 0 || s->rec < 0)
        return;
    if (!last_offset) {
        last_offset = calloc(IOT_MAX_FILES, sizeof *last_offset);
        if (!last_offset)
            return;
    }
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

static void write_body(FILE *f, double origin)
{
    static const char *layers[] = {"hdf5", "mpiio", "posix", "stdio"};
    fputs(", \"datasets\": [", f);
    for (uint32_t i = 0; i < dset_tab.n; i++) {
        fputs(i ? ", {\"file\": " : "{\"file\": ", f);
        iot_json_string(f, dsets[i].rec >= 0 ? iot_rec(dsets[i].rec)->name : NULL);
        fputs(", \"name\": ", f);
        iot_json_string(f, strchr(dset_tab.s[i], '\x1f') + 1);
        fprintf(f, ", \"dims\": %s, \"type_size\": %llu}",
                dsets[i].dims >= 0 ? dims_tab.s[dsets[i].dims] : "null",
                (unsigned long long)dsets[i].type_size);
    }
    fputs("], \"signatures\": [", f);
    for (uint32_t i = 0; i < nsigs; i++) {
        const trace_sig *s = &sigs[i];
        fprintf(f, "%s{\"layer\": \"%s\", \"func\": \"%s\", \"file\": ", i ? ", " : "",
                layers[s->layer], s->func);
        iot_json_string(f, s->rec >= 0 ? iot_rec(s->rec)->name : NULL);
        if (s->dset >= 0)
            fprintf(f, ", \"dataset\": %d", s->dset);
        else
            fputs(", \"dataset\": null", f);
        fprintf(f, ", \"dims\": %s, \"size\": %llu, \"step\": ",
                s->dims >= 0 ? dims_tab.s[s->dims] : "null", (unsigned long long)s->size);
        if (s->has_step)
            fprintf(f, "%lld", (long long)s->step);
        else
            fputs("null", f);
        fprintf(f, ", \"mode\": %d}", s->mode);
    }
    fputs("], \"events\": [", f);
    for (size_t i = 0; i < nevents; i++) {
        const trace_event *e = &events[i];
        fprintf(f, "%s[%u, %u, %.6f, %.9g, %.9g]", i ? ", " : "", e->sig, e->count,
                e->start - origin, e->busy, e->end - e->start);
    }
}

int iot_trace_write(const char *path, int rank, int nranks, const char *session, double origin,
                    double epoch)
{
    FILE *f = iot_real_fopen(path, "w");
    if (!f)
        return errno ? errno : EIO;
    fputs("{\"schema\": \"iotune-trace\", \"version\": 2, \"session\": ", f);
    iot_json_string(f, session);
    fprintf(f,
            ", \"rank\": %d, \"ranks\": %d, \"start\": %.6f, \"truncated\": %s, "
            "\"dropped_calls\": %llu, \"limits\": {\"events\": %zu, \"signatures\": %u}",
            rank, nranks, epoch, dropped ? "true" : "false", (unsigned long long)dropped,
            max_events, max_sigs);
    write_body(f, origin);
    fputs("]}\n", f);
    int err = ferror(f) ? (errno ? errno : EIO) : 0;
    if (iot_real_fclose(f) != 0 && !err)
        err = errno ? errno : EIO;
    return err;
}
