#include "idmap.h"

static unsigned slot_of(uint64_t key)
{
    return (unsigned)((key * 0x9E3779B97F4A7C15ull) >> 40) % IOT_IDMAP_SLOTS;
}

int iot_idmap_put(iot_idmap *m, uint64_t key, int a, int b)
{
    int *v = iot_idmap_get(m, key);
    if (!v) {
        unsigned i = slot_of(key);
        for (int n = 0; n < IOT_IDMAP_SLOTS && m->key[i] != 0 && m->key[i] != UINT64_MAX; n++)
            i = (i + 1) % IOT_IDMAP_SLOTS;
        if (m->key[i] != 0 && m->key[i] != UINT64_MAX)
            return -1;
        m->key[i] = key;
        v = m->val[i];
        m->used = 1;
    }
    v[0] = a;
    v[1] = b;
    return 0;
}

int *iot_idmap_get(iot_idmap *m, uint64_t key)
{
    if (!m->used)
        return 0;
    unsigned i = slot_of(key);
    for (int n = 0; n < IOT_IDMAP_SLOTS && m->key[i] != 0; n++, i = (i + 1) % IOT_IDMAP_SLOTS)
        if (m->key[i] == key)
            return m->val[i];
    return 0;
}

void iot_idmap_del(iot_idmap *m, uint64_t key)
{
    if (!m->used)
        return;
    unsigned i = slot_of(key);
    for (int n = 0; n < IOT_IDMAP_SLOTS && m->key[i] != 0; n++, i = (i + 1) % IOT_IDMAP_SLOTS)
        if (m->key[i] == key) {
            m->key[i] = UINT64_MAX; /* keeps probe chains intact */
            return;
        }
}
