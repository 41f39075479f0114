/* The runtime's one string hash (FNV-1a, 64 bit) and one open-addressing index: slots that
 * hold an entry's index + 1 (0: empty), a power of two in number, at most half full. The
 * entries live in the caller's array; the index only finds them. */
#ifndef IOTUNE_HASH_H
#define IOTUNE_HASH_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define IOT_FNV_OFFSET 0xcbf29ce484222325ull
#define IOT_FNV_PRIME 0x100000001b3ull

static inline uint64_t iot_fnv1a_add(uint64_t h, const void *data, size_t n)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * IOT_FNV_PRIME;
    return h;
}

static inline uint64_t iot_fnv1a(const char *s)
{
    uint64_t h = IOT_FNV_OFFSET;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * IOT_FNV_PRIME;
    return h;
}

typedef struct {
    uint32_t *slots;
    uint32_t nslots;
} iot_index;

/* The index + 1 of the entry key (with hash h), or 0 when absent. same(i, key) says whether
 * entry i is key. */
static inline uint32_t iot_index_find(const iot_index *t, uint64_t h,
                                      int (*same)(uint32_t i, const void *key), const void *key)
{
    if (!t->nslots)
        return 0;
    uint32_t mask = t->nslots - 1, i = (uint32_t)h & mask;
    while (t->slots[i] && !same(t->slots[i] - 1, key))
        i = (i + 1) & mask;
    return t->slots[i];
}

/* Adds entry n (hash h) to an index of entries 0..n-1 (hash_of(i) their hashes), rehashing
 * into a larger table when it would be more than half full. Returns 0 when out of memory. */
static inline int iot_index_add(iot_index *t, uint32_t n, uint64_t h,
                                uint64_t (*hash_of)(uint32_t i))
{
    if (!t->nslots || 2 * (n + 1) >= t->nslots) {
        uint32_t want = t->nslots ? 2 * t->nslots : 1024;
        uint32_t *fresh = calloc(want, sizeof *fresh);
        if (!fresh)
            return 0;
        for (uint32_t k = 0; k < n; k++) {
            uint32_t i = (uint32_t)hash_of(k) & (want - 1);
            while (fresh[i])
                i = (i + 1) & (want - 1);
            fresh[i] = k + 1;
        }
        free(t->slots);
        t->slots = fresh;
        t->nslots = want;
    }
    uint32_t mask = t->nslots - 1, i = (uint32_t)h & mask;
    while (t->slots[i])
        i = (i + 1) & mask;
    t->slots[i] = n + 1;
    return 1;
}

/* Removes entry n (hash h) from the index, if there: linear probing's backward shift, so that
 * the entries after it in its run stay found (hash_of(i): their hashes). */
static inline void iot_index_del(iot_index *t, uint32_t n, uint64_t h,
                                 uint64_t (*hash_of)(uint32_t i))
{
    if (!t->nslots)
        return;
    uint32_t mask = t->nslots - 1, i = (uint32_t)h & mask;
    while (t->slots[i] && t->slots[i] != n + 1)
        i = (i + 1) & mask;
    if (!t->slots[i])
        return;
    for (uint32_t j = i;;) {
        t->slots[i] = 0;
        for (;;) { /* the next slot of the run that may move into the hole at i */
            j = (j + 1) & mask;
            if (!t->slots[j])
                return;
            uint32_t home = (uint32_t)hash_of(t->slots[j] - 1) & mask;
            if (i <= j ? (home <= i || home > j) : (home <= i && home > j))
                break; /* its home is not in (i, j]: it moves back to i */
        }
        t->slots[i] = t->slots[j];
        i = j;
    }
}

/* Puts entry n (hash h) back into an index that had it (after iot_index_del: no growth). */
static inline void iot_index_put(iot_index *t, uint32_t n, uint64_t h)
{
    uint32_t mask = t->nslots - 1, i = (uint32_t)h & mask;
    while (t->slots[i])
        i = (i + 1) & mask;
    t->slots[i] = n + 1;
}

#endif
