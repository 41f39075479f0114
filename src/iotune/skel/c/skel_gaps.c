/* The time an application spends between two calls inside a step (a write entry's `gap_s`,
 * docs/skel.md): spent as CPU work over the data just transferred (busy, as a program that
 * checks, packs or computes on its arrays between calls), slept, or left out (--gaps). */
#define _GNU_SOURCE
#include "skel_internal.h"

#include <string.h>

int skel_gaps_mode(const char *name)
{
    if (strcmp(name, "busy") == 0)
        return SKEL_GAPS_BUSY;
    if (strcmp(name, "sleep") == 0)
        return SKEL_GAPS_SLEEP;
    if (strcmp(name, "off") == 0)
        return SKEL_GAPS_OFF;
    return -1;
}

void skel_gaps_default(skel_t *s, int mode)
{
    if (s->gaps < 0) /* --gaps at run time wins */
        s->gaps = mode;
}

/* Reads the last transfer's memory (a byte sum per 64-byte line) until the time is spent; a
 * rank without such memory spins on the clock. */
void skel_gap(skel_file_t *f, double seconds)
{
    skel_t *s = f->s;
    if (s->sizing || !(seconds > 0) || s->gaps == SKEL_GAPS_OFF)
        return;
    if (s->gaps == SKEL_GAPS_SLEEP) {
        skel_compute(s, seconds);
        return;
    }
    double end = skel_now() + seconds;
    const volatile unsigned char *b = (const unsigned char *)s->last_data;
    size_t n = b ? s->last_size : 0, at = 0;
    unsigned sum = 0;
    while (skel_now() < end) {
        for (int k = 0; k < 64 && n; k++) { /* 4 KiB between looks at the clock */
            sum += b[at];
            at = at + 64 < n ? at + 64 : 0;
        }
    }
    s->gap_sum += sum; /* kept, so the reads are not optimised away */
}
