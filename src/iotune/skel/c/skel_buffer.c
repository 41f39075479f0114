/* The memory a skeleton's writes read from: like an application's arrays, made before the
 * I/O and distinct for each write of a step. */
#define _GNU_SOURCE
#include "skel_internal.h"

#include <stdlib.h>
#include <string.h>

/* Bytes written over after the buffer grows, to push its fresh contents out of the CPU caches:
 * an application's data was made before its I/O, not right before each write (measured: from
 * just-touched memory the skeleton's pwrite of HACC-IO's variables took 0.6x the kernel's). */
#define SKEL_SCRUB ((size_t)64 << 20)

void skel_ensure_buffer(skel_t *s, size_t bytes)
{
    if (bytes <= s->buf_size)
        return;
    size_t want = bytes > 2 * s->buf_size ? bytes : 2 * s->buf_size; /* few growths */
    s->late_growths += s->prepared;
    char *b = realloc(s->buf, want);
    if (!b)
        skel_die(s, "out of memory for the write buffer");
    memset(b + s->buf_size, 0x5a ^ (s->rank & 0xff), want - s->buf_size); /* touch it now */
    s->buf = b;
    s->buf_size = want;
    static char *scrub;
    if (!scrub)
        scrub = malloc(SKEL_SCRUB);
    if (scrub)
        memset(scrub, s->rank & 0xff, SKEL_SCRUB);
}

/* The data of the next write: each write of a step reads memory of its own, as an application
 * writes its distinct arrays (reusing one hot buffer would make page-cache writes faster
 * than the application's). Past 1 GiB per rank and step the region wraps around. */
#define SKEL_DATA_CAP ((size_t)1 << 30)
char *skel_data_for(skel_t *s, size_t bytes)
{
    if (s->cursor + bytes > SKEL_DATA_CAP && bytes <= SKEL_DATA_CAP)
        s->cursor = 0;
    if (s->sizing) {
        s->cursor += bytes;
        skel_need(s, s->cursor);
        return NULL;
    }
    skel_ensure_buffer(s, s->cursor + bytes + 1);
    char *p = s->buf + s->cursor;
    s->cursor += bytes;
    s->last_data = p;
    s->last_size = bytes;
    return p;
}

void skel_need(skel_t *s, size_t bytes)
{
    if (bytes + 1 > s->need)
        s->need = bytes + 1;
}

void skel_prepare_begin(skel_t *s)
{
    s->sizing = 1;
    s->need = 0;
    s->cursor = 0;
}

void skel_prepare_end(skel_t *s)
{
    s->sizing = 0;
    s->cursor = 0;
    skel_ensure_buffer(s, s->need);
    s->prepared = 1;
}
