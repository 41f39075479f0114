/* A small open-addressing map from handles (HDF5 ids, MPI_File pointers) to two ints.
 * Lookups are lock-free reads; the caller serialises updates (HDF5 and MPI-IO calls are). */
#ifndef IOTUNE_IDMAP_H
#define IOTUNE_IDMAP_H

#include <stdint.h>

#define IOT_IDMAP_SLOTS 4096

typedef struct {
    uint64_t key[IOT_IDMAP_SLOTS]; /* 0 = empty, UINT64_MAX = removed */
    int val[IOT_IDMAP_SLOTS][2];
    int used;
} iot_idmap;

/* Returns 0, or -1 when the map is full. key must not be 0 or UINT64_MAX. */
int iot_idmap_put(iot_idmap *m, uint64_t key, int a, int b);
/* Returns a pointer to the two values, or NULL. */
int *iot_idmap_get(iot_idmap *m, uint64_t key);
void iot_idmap_del(iot_idmap *m, uint64_t key);

#endif
