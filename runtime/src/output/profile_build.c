/* The profile's data: the ranks' records merged by file name in order of first open, each
 * file's time statistics across ranks, the totals per layer, and the file growth warning. */
#include "output/profile_build.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/core.h"

/* How two values of a counter combine (counters.tsv, column merge). */
#define MERGE_sum_count(a, b) a += b;
#define MERGE_sum_seconds(a, b) a += b;
#define MERGE_sum_sizes(a, b)                                                                      \
    for (int i = 0; i < IOT_SIZE_BINS; i++)                                                        \
        a[i] += b[i];
#define MERGE_min_offset(a, b)                                                                     \
    if (b >= 0 && (a < 0 || b < a))                                                                \
        a = b;
#define MERGE_max_offset(a, b)                                                                     \
    if (b > a)                                                                                     \
        a = b;
#define MERGE(field, type, merge) MERGE_##merge##_##type(a->field, b->field)

static void merge_counters(iot_counters *a, const iot_counters *b)
{
    IOT_COUNTERS(MERGE)
}

static void merge(iot_file_rec *into, const iot_file_rec *r)
{
    into->layers |= r->layers;
    if (r->start >= 0 && (into->start < 0 || r->start < into->start))
        into->start = r->start;
    if (r->end > into->end)
        into->end = r->end;
    if (!into->hints[0])
        memcpy(into->hints, r->hints, sizeof into->hints);
    if (!into->h5applied[0])
        memcpy(into->h5applied, r->h5applied, sizeof into->h5applied);
    if (!into->striping[0])
        memcpy(into->striping, r->striping, sizeof into->striping);
    if (!into->mpapplied[0])
        memcpy(into->mpapplied, r->mpapplied, sizeof into->mpapplied);
    if (!into->h5notes[0])
        memcpy(into->h5notes, r->h5notes, sizeof into->h5notes);
    if (!into->h5driver[0])
        memcpy(into->h5driver, r->h5driver, sizeof into->h5driver);
    if (!into->fs[0])
        memcpy(into->fs, r->fs, sizeof into->fs);
    if (!into->withdrawn[0])
        memcpy(into->withdrawn, r->withdrawn, sizeof into->withdrawn);
    for (int l = 0; l < IOT_NLAYERS; l++)
        merge_counters(&into->c[l], &r->c[l]);
}

static int by_start(const void *a, const void *b)
{
    double x = ((const iot_file_rec *)a)->start, y = ((const iot_file_rec *)b)->start;
    return (x > y) - (x < y);
}

/* The value of name in "name=value" lines, or NULL. */
static const char *line_value(const char *lines, const char *name, char *buf, size_t len)
{
    size_t n = strlen(name);
    for (const char *line = lines; *line;) {
        size_t l = strcspn(line, "\n");
        if (l > n && strncmp(line, name, n) == 0 && line[n] == '=') {
            snprintf(buf, len, "%.*s", (int)(l - n - 1), line + n + 1);
            return buf;
        }
        line += l + (line[l] == '\n');
    }
    return NULL;
}

/* A file that alignment or meta_block_size made much larger than the data HDF5 wrote into it
 * (1 GiB for 2 MB): one warning naming the setting, and a note in the profile. */
static void warn_growth(iot_file_rec *r)
{
    char align[64], meta[64];
    const char *a = line_value(r->h5applied, "alignment", align, sizeof align);
    const char *m = line_value(r->h5applied, "meta_block_size", meta, sizeof meta);
    struct stat st;
    if ((!a && !m) || stat(r->name, &st) != 0)
        return;
    uint64_t size = (uint64_t)st.st_size, data = r->c[IOT_L_HDF5].bytes_written;
    if (size <= 4 * data + (8u << 20))
        return;
    char line[1024];
    snprintf(line, sizeof line,
             "%s is %.1f MiB for %.1f MiB written through HDF5: %s%s%s%s%s%s grows it (each "
             "object starts on such a boundary); a smaller value or none keeps the file small",
             r->name, (double)size / 1048576.0, (double)data / 1048576.0, a ? "alignment=" : "",
             a ? a : "", a && m ? " and " : "", m ? "meta_block_size=" : "", m ? m : "",
             a && m ? " together" : "");
    iot_warn_once(r->name, "%s", line);
    size_t used = strlen(r->h5notes);
    if (used + 2 < sizeof r->h5notes)
        snprintf(r->h5notes + used, sizeof r->h5notes - used, "%s%.*s", used ? "\n" : "",
                 (int)(sizeof r->h5notes - used - 2), line);
}

int iot_profile_build(iot_profile *p, const iot_file_rec *all, int nall, const double *rank_times,
                      int nranks)
{
    memset(p, 0, sizeof *p);
    p->nranks = nranks;
    size_t n = (size_t)(nall ? nall : 1);
    p->files = calloc(n, sizeof *p->files);
    p->stats = calloc(n, sizeof *p->stats);
    p->first = malloc(n * sizeof *p->first);
    p->next = malloc(n * sizeof *p->next);
    int *last = malloc(n * sizeof *last);
    if (!p->files || !p->stats || !p->first || !p->next || !last) {
        free(last);
        iot_profile_free(p);
        return -1;
    }
    p->all = all;
    for (int i = 0; i < nall; i++) {
        int k = 0;
        while (k < p->nfiles && strcmp(p->files[k].name, all[i].name) != 0)
            k++;
        /* file k's records in rank order (all is gathered rank by rank) */
        p->next[i] = -1;
        if (k == p->nfiles)
            p->first[k] = i;
        else
            p->next[last[k]] = i;
        last[k] = i;
        iot_file_stats *st = &p->stats[k];
        double t = all[i].outer_time;
        if (k == p->nfiles) {
            p->files[k] = all[i];
            p->files[k].rank = k; /* from now on: the index into stats */
            *st = (iot_file_stats){t, t, t, all[i].rank, 1};
            p->nfiles++;
            continue;
        }
        merge(&p->files[k], &all[i]);
        if (t > st->max) {
            st->max = t;
            st->slowest = all[i].rank;
        }
        if (t < st->min)
            st->min = t;
        st->sum += t;
        st->ranks++;
    }
    free(last);
    qsort(p->files, (size_t)p->nfiles, sizeof *p->files, by_start);
    for (int k = 0; k < p->nfiles; k++)
        warn_growth(&p->files[k]);
    for (int r = 0; r < nranks; r++)
        if (rank_times[r] > p->io_time)
            p->io_time = rank_times[r];
    iot_file_rec *total = &p->total;
    for (int l = 0; l < IOT_NLAYERS; l++)
        iot_counters_init(&total->c[l]);
    total->start = -1;
    for (int k = 0; k < p->nfiles; k++) {
        const iot_file_rec *f = &p->files[k];
        merge(total, f);
        /* bytes at the file's outermost layer; stdio and POSIX are side by side */
        int l = (f->layers & (1 << IOT_L_HDF5))    ? IOT_L_HDF5
                : (f->layers & (1 << IOT_L_MPIIO)) ? IOT_L_MPIIO
                                                   : -1;
        if (l >= 0) {
            p->bytes_written += f->c[l].bytes_written;
            p->bytes_read += f->c[l].bytes_read;
            continue;
        }
        for (l = IOT_L_POSIX; l <= IOT_L_STDIO; l++) {
            p->bytes_written += f->c[l].bytes_written;
            p->bytes_read += f->c[l].bytes_read;
        }
    }
    return 0;
}

void iot_profile_free(iot_profile *p)
{
    free(p->files);
    free(p->stats);
    free(p->first);
    free(p->next);
    p->files = NULL;
    p->stats = NULL;
    p->first = p->next = NULL;
}
