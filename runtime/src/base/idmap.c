#include "base/idmap.h"

#include <stdlib.h>

#define REMOVED UINT64_MAX

static unsigned slot_of(uint64_t key, unsigned cap)
{
    return (unsigned)((key * 0x9E3779B97F4A7C15ull) >> 32) & (cap - 1);
}

static iot_idmap_table *table(const iot_idmap *m)
{
    return __atomic_load_n(&m->t, __ATOMIC_ACQUIRE);
}

static iot_idmap_slot *find(iot_idmap_table *t, uint64_t key)
{
    if (!t)
        return NULL;
    unsigned i = slot_of(key, t->cap);
    for (unsigned n = 0; n < t->cap && t->slot[i].key != 0; n++, i = (i + 1) & (t->cap - 1))
        if (t->slot[i].key == key)
            return &t->slot[i];
    return NULL;
}

/* A new table for the live keys of the old one (removed marks dropped), with room to spare. */
static int rebuild(iot_idmap *m)
{
    iot_idmap_table *old = table(m);
    unsigned live = 0;
    for (unsigned i = 0; old && i < old->cap; i++)
        live += old->slot[i].key != 0 && old->slot[i].key != REMOVED;
    unsigned cap = 64;
    while (cap < 4 * (live + 1))
        cap *= 2;
    iot_idmap_table *t = calloc(1, sizeof *t + (size_t)cap * sizeof t->slot[0]);
    if (!t)
        return -1;
    t->cap = cap;
    t->filled = live;
    t->prev = old;
    for (unsigned i = 0; old && i < old->cap; i++) {
        uint64_t k = old->slot[i].key;
        if (k == 0 || k == REMOVED)
            continue;
        unsigned j = slot_of(k, cap);
        while (t->slot[j].key)
            j = (j + 1) & (cap - 1);
        t->slot[j] = old->slot[i];
    }
    __atomic_store_n(&m->t, t, __ATOMIC_RELEASE);
    return 0;
}

int iot_idmap_put(iot_idmap *m, uint64_t key, int a, int b)
{
    iot_idmap_slot *s = find(table(m), key);
    if (!s) {
        iot_idmap_table *t = table(m);
        if ((!t || 2 * (t->filled + 1) > t->cap) && rebuild(m) < 0)
            return -1;
        t = table(m);
        unsigned i = slot_of(key, t->cap);
        while (t->slot[i].key != 0 && t->slot[i].key != REMOVED)
            i = (i + 1) & (t->cap - 1);
        s = &t->slot[i];
        if (s->key == 0)
            t->filled++;
        s->val[0] = a;
        s->val[1] = b;
        __atomic_store_n(&s->key, key, __ATOMIC_RELEASE);
        m->used = 1;
        return 0;
    }
    s->val[0] = a;
    s->val[1] = b;
    return 0;
}

int *iot_idmap_get(iot_idmap *m, uint64_t key)
{
    if (!m->used)
        return NULL;
    iot_idmap_slot *s = find(table(m), key);
    return s ? s->val : NULL;
}

void iot_idmap_del(iot_idmap *m, uint64_t key)
{
    if (!m->used)
        return;
    iot_idmap_slot *s = find(table(m), key);
    if (s)
        s->key = REMOVED; /* keeps probe chains intact; a later rebuild drops it */
}

unsigned iot_idmap_count(const iot_idmap *m)
{
    const iot_idmap_table *t = table(m);
    unsigned n = 0;
    for (unsigned i = 0; t && i < t->cap; i++)
        n += t->slot[i].key != 0 && t->slot[i].key != REMOVED;
    return n;
}
