/* A small open-addressing map from handles (HDF5 ids, MPI_File pointers) to two ints. It grows
 * (and drops its removed slots) as needed, so it never stops taking keys: only running out of
 * memory makes a put fail. Lookups are lock-free reads; the caller serialises updates (HDF5 and
 * MPI-IO calls are). A table that grew is retired, not freed: a concurrent reader may still be
 * in it, and the retired ones add up to less than the live one. */
#ifndef IOTUNE_IDMAP_H
#define IOTUNE_IDMAP_H

#include <stdint.h>

typedef struct {
    uint64_t key; /* 0 = empty, UINT64_MAX = removed */
    int val[2];
} iot_idmap_slot;

typedef struct iot_idmap_table {
    unsigned cap;                 /* a power of two */
    unsigned filled;              /* slots holding a key or a removed mark */
    struct iot_idmap_table *prev; /* the retired table it replaced */
    iot_idmap_slot slot[];
} iot_idmap_table;

typedef struct {
    iot_idmap_table *t; /* NULL until the first put */
    int used;           /* any put ever: lookups of a never-used map cost one branch */
} iot_idmap;

/* Returns 0, or -1 when out of memory. key must not be 0 or UINT64_MAX. */
int iot_idmap_put(iot_idmap *m, uint64_t key, int a, int b);
/* Returns a pointer to the two values, or NULL. */
int *iot_idmap_get(iot_idmap *m, uint64_t key);
void iot_idmap_del(iot_idmap *m, uint64_t key);
/* Keys held now (for tests and messages). */
unsigned iot_idmap_count(const iot_idmap *m);

#endif
