/* What the trace says once rather than per call: texts it interns (selection boxes as
 * "[n, m]") and the HDF5 datasets the calls name, with their extent and element size. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace.h"
#include "trace_store.h"

trace_strtab trace_dims_tab, trace_dset_keys;
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
        used += (size_t)snprintf(text + used, sizeof text - used, "%s%llu", d ? ", " : "",
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

int iot_trace_dataset(int rec, const char *path, int ndims, const uint64_t *dims,
                      uint64_t type_size)
{
    char key[IOT_REC_NAME + 1100];
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
    if (id >= 0 && trace_dset_keys.n != before)
        trace_dsets[id] = (trace_dataset){rec, trace_dims_id(ndims, dims), type_size};
    return id;
}
