/* What the trace says once rather than per call: texts it interns (selection boxes as
 * "[n, m]"), the HDF5 datasets the calls name (extent, maximum extent, chunks, element type),
 * the MPI-IO file views set (displacement, etype, the filetype's blocks), the memory layouts
 * of MPI-IO transfers from noncontiguous datatypes and the HDF5 attributes (object, name,
 * dataspace, element type). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/printable.h"
#include "platform/mpitype.h"
#include "trace/trace.h"
#include "trace/trace_store.h"

trace_strtab trace_dims_tab, trace_dset_keys, trace_views, trace_memory, trace_attrs;
trace_dataset *trace_dsets;
static uint32_t cap_dsets;

/* The string table being searched or grown (the index's callbacks take no context). */
static trace_strtab *cur_tab;

static uint64_t str_hash_of(uint32_t i)
{
    return iot_fnv1a(cur_tab->s[i]);
}

static int str_is(uint32_t i, const void *key)
{
    return strcmp(cur_tab->s[i], key) == 0;
}

static int strtab_id(trace_strtab *t, const char *s)
{
    cur_tab = t;
    uint64_t h = iot_fnv1a(s);
    uint32_t found = iot_index_find(&t->index, h, str_is, s);
    if (found)
        return (int)found - 1;
    if (t->n >= trace_max_sigs)
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
        used += dims[d] == UINT64_MAX /* an unlimited maximum extent */
                    ? (size_t)snprintf(text + used, sizeof text - used, "%snull", d ? ", " : "")
                    : (size_t)snprintf(text + used, sizeof text - used, "%s%llu", d ? ", " : "",
                                       (unsigned long long)dims[d]);
    if (used + 2 > sizeof text)
        return -1;
    text[used] = ']';
    text[used + 1] = '\0';
    return strtab_id(&trace_dims_tab, text);
}

/* "[n, m, ...]", interned. Consecutive calls mostly repeat the same box: the last one is
 * remembered, so the formatting and the table lookup run only when it changes. */
int trace_dims_id(int ndims, const uint64_t *dims)
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

/* The fixed extents of traced datasets, by index, for transfers to read without the lock: in
 * chunks that never move, an entry written before its index is handed out (as the dataset's
 * description), and afterwards only ever turned from known to unknown (a dataset of that path
 * opened again with another extent). Entry: rank (0: unknown or extendible), then the extent. */
#define EXTENT_CHUNK 256
#define EXTENT_CHUNKS 1024 /* 262,144 datasets, the most the dataset table holds */
typedef uint64_t extent_entry[1 + 32];
static extent_entry *extent_chunks[EXTENT_CHUNKS];

static void keep_extent(int id, const iot_trace_dset_desc *d, int fresh)
{
    int n = d->ndims;
    int fixed = n > 0 && n <= 32 && d->maxdims &&
                memcmp(d->dims, d->maxdims, (size_t)n * sizeof *d->dims) == 0;
    if (id < 0 || id / EXTENT_CHUNK >= EXTENT_CHUNKS)
        return;
    extent_entry *chunk = extent_chunks[id / EXTENT_CHUNK];
    if (!chunk && fresh && (chunk = calloc(EXTENT_CHUNK, sizeof *chunk)))
        __atomic_store_n(&extent_chunks[id / EXTENT_CHUNK], chunk, __ATOMIC_RELEASE);
    if (!chunk)
        return; /* unknown: transfers ask HDF5 */
    uint64_t *e = chunk[id % EXTENT_CHUNK];
    if (fresh) {
        if (fixed)
            memcpy(e + 1, d->dims, (size_t)n * sizeof *e);
        __atomic_store_n(&e[0], fixed ? (uint64_t)n : 0, __ATOMIC_RELEASE);
    } else if (e[0] && (!fixed || e[0] != (uint64_t)n ||
                        memcmp(e + 1, d->dims, (size_t)n * sizeof *e) != 0)) {
        __atomic_store_n(&e[0], 0, __ATOMIC_RELEASE);
    }
}

int iot_trace_fixed_extent(int ds, uint64_t *dims)
{
    if (ds < 0 || ds / EXTENT_CHUNK >= EXTENT_CHUNKS)
        return 0;
    extent_entry *chunk = __atomic_load_n(&extent_chunks[ds / EXTENT_CHUNK], __ATOMIC_ACQUIRE);
    if (!chunk)
        return 0;
    const uint64_t *e = chunk[ds % EXTENT_CHUNK];
    int n = (int)__atomic_load_n(&e[0], __ATOMIC_ACQUIRE);
    memcpy(dims, e + 1, (size_t)n * sizeof *dims);
    return n;
}

void iot_trace_extent_changed(int ds)
{
    if (ds < 0 || ds / EXTENT_CHUNK >= EXTENT_CHUNKS)
        return;
    extent_entry *chunk = __atomic_load_n(&extent_chunks[ds / EXTENT_CHUNK], __ATOMIC_ACQUIRE);
    if (chunk)
        __atomic_store_n(&chunk[ds % EXTENT_CHUNK][0], 0, __ATOMIC_RELEASE);
}

/* The index of dataset path of record rec, interned; *fresh: 1 when it is new. */
static int dataset_slot(int rec, const char *path, int *fresh)
{
    char key[IOT_REC_NAME + 1100];
    *fresh = 0;
    if (snprintf(key, sizeof key, "%d\x1f%s", rec, path) >= (int)sizeof key)
        return -1;
    if (trace_dset_keys.n == cap_dsets) { /* room first: a key is never kept without its data */
        uint32_t cap = cap_dsets ? 2 * cap_dsets : 64;
        trace_dataset *grown = realloc(trace_dsets, cap * sizeof *grown);
        if (!grown)
            return -1;
        trace_dsets = grown;
        cap_dsets = cap;
    }
    uint32_t before = trace_dset_keys.n;
    int id = strtab_id(&trace_dset_keys, key);
    *fresh = trace_dset_keys.n != before;
    return id;
}

int iot_trace_dataset_rename(int ds, const char *path, int *rec)
{
    if (ds < 0 || (uint32_t)ds >= trace_dset_keys.n)
        return -1;
    *rec = trace_dsets[ds].rec;
    char key[IOT_REC_NAME + 1100];
    if (snprintf(key, sizeof key, "%d\x1f%s", *rec, path) >= (int)sizeof key)
        return -1;
    trace_strtab *t = &trace_dset_keys;
    cur_tab = t;
    uint64_t h = iot_fnv1a(key);
    uint32_t found = iot_index_find(&t->index, h, str_is, key);
    if (found) /* the path has an entry already (the name traced before the link) */
        return (int)found - 1;
    char *copy = strdup(key);
    if (!copy)
        return -1;
    iot_index_del(&t->index, (uint32_t)ds, iot_fnv1a(t->s[ds]), str_hash_of);
    free(t->s[ds]);
    t->s[ds] = copy;
    iot_index_put(&t->index, (uint32_t)ds, h);
    return ds;
}

void iot_trace_datasets_under(const char *prefix, void (*fn)(int ds, const char *rest, void *ctx),
                              void *ctx)
{
    size_t len = strlen(prefix);
    for (uint32_t i = 0, n = trace_dset_keys.n; i < n; i++) {
        const char *path = strchr(trace_dset_keys.s[i], '\x1f') + 1;
        if (strncmp(path, prefix, len) == 0 && path[len] == '/')
            fn((int)i, path + len, ctx);
    }
}

int iot_trace_dataset(int rec, const char *path, const iot_trace_dset_desc *d)
{
    int fresh, id = dataset_slot(rec, path, &fresh);
    keep_extent(id, d, fresh);
    if (id >= 0 && fresh) { /* the boxes' cache left alone */
        trace_dsets[id] = (trace_dataset){rec,
                                          trace_dims_id(d->ndims, d->dims),
                                          d->maxdims ? dims_text_id(d->ndims, d->maxdims) : -1,
                                          d->chunks ? dims_text_id(d->ndims, d->chunks) : -1,
                                          d->type_size,
                                          d->type_class,
                                          d->type_signed,
                                          d->type_order,
                                          d->fill_time,
                                          d->fill_len,
                                          {0},
                                          d->track_times,
                                          d->attr_order};
        memcpy(trace_dsets[id].fill, d->fill, sizeof d->fill);
    }
    return id;
}

/* A view as the JSON object the trace writes, interned: a view set again (every step, every
 * reopen) is stored once. Blocks past what fits the text are left out, and it says so; a view
 * of too many blocks may be given as runs instead ("blocks": null, "runs": [[off, len, count,
 * stride], ...]: a subarray's rows). */
int iot_trace_view(int64_t disp, uint64_t etype_size, uint64_t size, int64_t lb, int64_t extent,
                   int64_t true_extent, const iot_block *blocks, int nblocks, const iot_run *runs,
                   int nruns)
{
    char text[1 << 15];
    int n = snprintf(text, sizeof text,
                     "{\"disp\": %lld, \"etype_size\": %llu, \"size\": %llu, \"lb\": %lld, "
                     "\"extent\": %lld, \"true_extent\": %lld, \"blocks\": ",
                     (long long)disp, (unsigned long long)etype_size, (unsigned long long)size,
                     (long long)lb, (long long)extent, (long long)true_extent);
    size_t used = (size_t)n;
    if (nblocks < 0) {
        used += (size_t)snprintf(text + used, sizeof text - used, "null");
        size_t bare = used;
        if (nruns > 0)
            used += (size_t)snprintf(text + used, sizeof text - used, ", \"runs\": [");
        for (int i = 0; i < nruns && used + 96 < sizeof text; i++)
            used += (size_t)snprintf(text + used, sizeof text - used, "%s[%lld, %lld, %lld, %lld]",
                                     i ? ", " : "", (long long)runs[i].off, (long long)runs[i].len,
                                     (long long)runs[i].count, (long long)runs[i].stride);
        if (nruns > 0 && used + 96 >= sizeof text) /* too many for the text: none */
            used = bare;
        else if (nruns > 0)
            text[used++] = ']';
        snprintf(text + used, sizeof text - used, "}");
        return strtab_id(&trace_views, text);
    }
    text[used++] = '[';
    for (int i = 0; i < nblocks && used + 64 < sizeof text; i++)
        used += (size_t)snprintf(text + used, sizeof text - used, "%s[%lld, %lld]", i ? ", " : "",
                                 (long long)blocks[i].off, (long long)blocks[i].len);
    if (used + 64 >= sizeof text) /* too many for the text: none rather than some */
        used = (size_t)n + (size_t)snprintf(text + n, sizeof text - (size_t)n, "null");
    else
        text[used++] = ']';
    snprintf(text + used, sizeof text - used, "}");
    return strtab_id(&trace_views, text);
}

int iot_trace_memory(uint64_t size, const iot_block *blocks, int nblocks)
{
    char text[1 << 14];
    size_t used = (size_t)snprintf(text, sizeof text, "{\"size\": %llu, \"pieces\": [",
                                   (unsigned long long)size);
    for (int i = 0; i < nblocks && used + 32 < sizeof text; i++)
        used += (size_t)snprintf(text + used, sizeof text - used, "%s%lld", i ? ", " : "",
                                 (long long)blocks[i].len);
    if (nblocks < 0 || used + 32 >= sizeof text) /* not followed, or too many to say */
        snprintf(text, sizeof text, "{\"size\": %llu, \"pieces\": null}", (unsigned long long)size);
    else
        snprintf(text + used, sizeof text - used, "]}");
    return strtab_id(&trace_memory, text);
}

/* s as a JSON string at text + *used (of len bytes); 0 when it does not fit or is not UTF-8. */
static int put_string(char *text, size_t len, size_t *used, const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t u = *used;
    if (u + 2 >= len)
        return 0;
    text[u++] = '"';
    while (*p) {
        int n = iot_utf8_length(p);
        if (!n || u + 8 >= len)
            return 0;
        if (*p == '"' || *p == '\\')
            u += (size_t)snprintf(text + u, len - u, "\\%c", *p);
        else if (*p < 0x20)
            u += (size_t)snprintf(text + u, len - u, "\\u%04x", *p);
        else
            memcpy(text + u, p, (size_t)n), u += (size_t)n;
        p += n;
    }
    text[u++] = '"';
    text[u] = '\0';
    *used = u;
    return 1;
}

int iot_trace_attribute(const iot_trace_attr_desc *a)
{
    static const char *const classes[] = {"integer",  "float",  "time",     "string",
                                          "bitfield", "opaque", "compound", "reference",
                                          "enum",     "vlen",   "array"};
    static const char *const spaces[] = {"scalar", "simple", "null"};
    static const char *const pads[] = {"nullterm", "nullpad", "spacepad"};
    char text[8192];
    size_t used = (size_t)snprintf(text, sizeof text, "{\"object\": ");
    if (!a->object || !put_string(text, sizeof text, &used, a->object))
        return -1;
    used +=
        (size_t)snprintf(text + used, sizeof text - used, ", \"name\": %s", a->name ? "" : "null");
    if ((a->name && !put_string(text, sizeof text, &used, a->name)) || used + 1024 >= sizeof text)
        return -1;
    if (a->described) {
        int space = a->space >= 0 && a->space < 3 ? a->space : 1;
        used +=
            (size_t)snprintf(text + used, sizeof text - used, ", \"space\": \"%s\"", spaces[space]);
        if (space == 1) {
            int id = trace_dims_id(a->ndims, a->dims);
            if (id < 0)
                return -1;
            used += (size_t)snprintf(text + used, sizeof text - used, ", \"dims\": %s",
                                     trace_dims_tab.s[id]);
        }
        int cls = a->type_class;
        used += (size_t)snprintf(
            text + used, sizeof text - used,
            ", \"type_size\": %llu, \"type_class\": %s%s%s, \"type_signed\": %s, "
            "\"type_order\": %s",
            (unsigned long long)a->type_size, cls >= 0 && cls < 11 ? "\"" : "",
            cls >= 0 && cls < 11 ? classes[cls] : "null", cls >= 0 && cls < 11 ? "\"" : "",
            a->type_signed < 0 ? "null"
            : a->type_signed   ? "true"
                               : "false",
            a->type_order == 0   ? "\"LE\""
            : a->type_order == 1 ? "\"BE\""
                                 : "null");
        if (a->str_pad >= 0 && a->str_pad < 3 && a->str_cset >= 0 && a->str_cset < 2)
            used += (size_t)snprintf(
                text + used, sizeof text - used,
                ", \"string\": {\"pad\": \"%s\", \"cset\": \"%s\", \"variable\": %s}",
                pads[a->str_pad], a->str_cset ? "utf8" : "ascii",
                a->str_variable > 0 ? "true" : "false");
    }
    snprintf(text + used, sizeof text - used, "}");
    return strtab_id(&trace_attrs, text);
}
