#include "capture/capture.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/env.h"
#include "base/hash.h"
#include "base/log.h"
#include "config/settings.h"
#include "platform/fstype.h"

iot_clock_t iot_clock = {0, 0, -1}; /* set at start-up and MPI_Init (lifecycle.c) */
int iot_capture_on;
int iot_trace_on;
int iot_capture_done;
iot_capture_hooks_t iot_capture_hooks;
int iot_frozen;
pthread_mutex_t iot_cap_lock = PTHREAD_MUTEX_INITIALIZER;
__thread int iot_depth;
__thread int iot_locked;
__thread uint64_t iot_coll_calls;
__thread int iot_inner_rec = -1, iot_inner_wrote;
double iot_rank_io_time;

/* ---- records: one per file name, found through a hash of the name ---- */

static iot_file_rec *recs;
static int nrecs;
static iot_index by_name;

static uint64_t rec_hash(uint32_t i)
{
    return iot_fnv1a(recs[i].name);
}

static int rec_is(uint32_t i, const void *name)
{
    return strcmp(recs[i].name, name) == 0;
}

static const char *const untracked_prefixes[] = {"/proc/", "/sys/",    "/dev/",   "/etc/",
                                                 "/usr/",  "/lib/",    "/lib64/", "/lib32/",
                                                 "/run/",  "/var/lib/"};

static int tracked(const char *name)
{
    /* the control file is the runtime's own reading, not the application's */
    if (iot_env.config && strcmp(name, iot_env.config) == 0)
        return 0;
    for (size_t i = 0; i < sizeof untracked_prefixes / sizeof *untracked_prefixes; i++)
        if (strncmp(name, untracked_prefixes[i], strlen(untracked_prefixes[i])) == 0)
            return 0;
    return !strstr(name, "/site-packages/") && !strstr(name, "/lib/python") &&
           !strstr(name, "/pipe:") && name[0];
}

/* Once per process: the table's limits drop files, and the user must know the profile is
 * incomplete. */
static void warn_dropped(int too_long, const char *name)
{
    static int said[2];
    if (__atomic_exchange_n(&said[too_long], 1, __ATOMIC_RELAXED))
        return;
    if (too_long)
        iot_log("a file name of %zu characters is too long to follow (limit %d): %.60s...; files "
                "with such names are left out of the profile",
                strlen(name), IOT_REC_NAME - 1, name);
    else
        iot_log("more than %d files: %s and any later new file are left out of the profile",
                IOT_MAX_FILES, name);
}

int iot_rec_for(const char *name, iot_clayer layer)
{
    if (!iot_capture_on || !name)
        return -1;
    name = iot_strip_romio_prefix(name);
    if (!tracked(name))
        return -1;
    if (strlen(name) >= IOT_REC_NAME) {
        warn_dropped(1, name);
        return -1;
    }
    if (!iot_lock())
        return -1;
    if (!recs)
        recs = calloc(IOT_MAX_FILES, sizeof *recs);
    uint64_t h = iot_fnv1a(name);
    int found = recs ? (int)iot_index_find(&by_name, h, rec_is, name) - 1 : -1, full = 0;
    if (found < 0 && recs && nrecs >= IOT_MAX_FILES) {
        full = 1;
    } else if (found < 0 && recs && iot_index_add(&by_name, (uint32_t)nrecs, h, rec_hash)) {
        found = nrecs++;
        iot_file_rec *r = &recs[found];
        memset(r, 0, sizeof *r);
        snprintf(r->name, sizeof r->name, "%s", name);
        r->start = -1;
        for (int l = 0; l < IOT_NLAYERS; l++)
            iot_counters_init(&r->c[l]);
    }
    if (found >= 0)
        recs[found].layers |= 1 << layer;
    iot_unlock();
    if (full) /* outside the lock: the message may go to a followed descriptor */
        warn_dropped(0, name);
    return found;
}

int iot_rec_find(const char *name)
{
    if (!iot_capture_on || !name)
        return -1;
    name = iot_strip_romio_prefix(name);
    if (!iot_lock())
        return -1;
    int found = recs ? (int)iot_index_find(&by_name, iot_fnv1a(name), rec_is, name) - 1 : -1;
    iot_unlock();
    return found;
}

iot_file_rec *iot_rec(int index)
{
    return &recs[index];
}

iot_file_rec *iot_recs(int *n)
{
    *n = nrecs;
    return recs;
}

static int size_bin(uint64_t bytes)
{
    static const uint64_t upper[IOT_SIZE_BINS - 1] = {
        100, 1024, 10240, 102400, 1048576, 4194304, 10485760, 104857600, 1073741824};
    int b = 0;
    while (b < IOT_SIZE_BINS - 1 && bytes >= upper[b])
        b++;
    return b;
}

void iot_count_access(int rec, iot_clayer layer, int is_write, int64_t offset, uint64_t bytes,
                      double dt, int outer)
{
    if (rec < 0) /* untracked files (/proc, /dev/shm, ...) are not the application's I/O */
        return;
    if (outer) {
        iot_rank_io_time += dt;
    } else {
        iot_inner_rec = rec;
        iot_inner_wrote |= is_write;
    }
    iot_file_rec *r = &recs[rec];
    r->layers |= 1 << layer; /* e.g. write() on a descriptor that fopen() made */
    iot_counters *c = &r->c[layer];
    if (is_write) {
        c->writes++;
        c->bytes_written += bytes;
        c->write_time += dt;
    } else {
        c->reads++;
        c->bytes_read += bytes;
        c->read_time += dt;
    }
    c->sizes[size_bin(bytes)]++;
    if (offset >= 0) {
        if (c->first_offset < 0 || offset < c->first_offset)
            c->first_offset = offset;
        if (offset + (int64_t)bytes > c->last_offset)
            c->last_offset = offset + (int64_t)bytes;
    }
    if (outer)
        r->outer_time += dt;
    if (outer && iot_capture_hooks.call) /* the call stream the adaptive mode predicts */
        iot_capture_hooks.call(rec, layer, is_write, bytes);
}

void iot_count_time(int rec, iot_clayer layer, int is_write, double dt, int outer)
{
    if (rec < 0)
        return;
    if (outer) {
        iot_rank_io_time += dt;
        recs[rec].outer_time += dt;
    } else {
        iot_inner_rec = rec;
    }
    if (is_write)
        recs[rec].c[layer].write_time += dt;
    else
        recs[rec].c[layer].read_time += dt;
}

void iot_count_meta(int rec, iot_clayer layer, double dt, int outer)
{
    if (rec < 0)
        return;
    if (outer)
        iot_rank_io_time += dt;
    else
        iot_inner_rec = rec;
    recs[rec].layers |= 1 << layer;
    recs[rec].c[layer].meta_time += dt;
    if (outer)
        recs[rec].outer_time += dt;
}

void iot_mark_open(int rec, double t)
{
    if (rec < 0)
        return;
    if (recs[rec].start < 0 ||
        t - iot_clock.start < recs[rec].start) /* H5Fcreate after its MPI-IO open */
        recs[rec].start = t - iot_clock.start;
    if (++recs[rec].open_now == 1 && iot_capture_hooks.phase_begin)
        iot_capture_hooks.phase_begin(rec, recs[rec].name);
}

void iot_mark_close(int rec, double t)
{
    if (rec < 0)
        return;
    recs[rec].end = t - iot_clock.start;
    if (recs[rec].open_now > 0 && --recs[rec].open_now == 0 && iot_capture_hooks.phase_end)
        iot_capture_hooks.phase_end(rec);
}

void iot_count_close(int rec, iot_clayer layer, const char *func, double t, double end, int outer)
{
    if (rec < 0)
        return;
    recs[rec].c[layer].closes++;
    iot_mark_close(rec, end);
    iot_count_meta(rec, layer, end - t, outer);
    if (iot_trace_on)
        iot_capture_hooks.trace(layer, func, rec, 0, -1, 0, t, end - t);
}

void iot_capture_never(void)
{
    iot_frozen = 1;
    iot_capture_on = 0;
    iot_capture_done = 1;
}

void iot_rec_withdraw(const char *filename, iot_clayer layer, const char *setting,
                      const char *value, const char *reason)
{
    if (iot_capture_on && filename)
        iot_rec_withdraw_at(iot_rec_for(filename, layer), setting, value, reason);
}

void iot_rec_withdraw_at(int rec, const char *setting, const char *value, const char *reason)
{
    if (rec < 0 || !iot_lock())
        return;
    char *w = iot_rec(rec)->withdrawn;
    size_t used = strlen(w), slen = strlen(setting);
    for (const char *l = w; *l; l += strcspn(l, "\n") + 1)
        if (strncmp(l, setting, slen) == 0 && l[slen] == '\t') { /* once per file */
            iot_unlock();
            return;
        }
    int n = snprintf(w + used, IOT_REC_WITHDRAWN - used, "%s\t%s\t%s\n", setting, value, reason);
    if (n < 0 || used + (size_t)n >= IOT_REC_WITHDRAWN)
        w[used] = '\0'; /* never half a line */
    iot_unlock();
}
