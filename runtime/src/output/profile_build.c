/* The profile's data: the job's files (reduce.c) in order of first open, the totals per layer,
 * and the file growth warning. */
#include "output/profile_build.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/core.h"

static int by_start(const void *a, const void *b)
{
    const iot_file_rec *r = &((const iot_reduced *)a)->rec, *q = &((const iot_reduced *)b)->rec;
    double x = r->start, y = q->start;
    return x != y ? (x > y) - (x < y) : strcmp(r->name, q->name);
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

void iot_profile_build(iot_profile *p, iot_job_files *j, int nranks)
{
    memset(p, 0, sizeof *p);
    p->nranks = nranks;
    p->files = j->files;
    p->nfiles = j->nfiles;
    p->io_time = j->io_time;
    p->summary = j->summary.files ? &j->summary : NULL;
    qsort(p->files, (size_t)p->nfiles, sizeof *p->files, by_start);
    for (int k = 0; k < p->nfiles; k++) {
        p->files[k].rec.rank = k;
        warn_growth(&p->files[k].rec);
    }
    iot_file_rec *total = &p->total;
    for (int l = 0; l < IOT_NLAYERS; l++)
        iot_counters_init(&total->c[l]);
    total->start = -1;
    for (int k = 0; k < p->nfiles; k++) {
        iot_rec_merge(total, &p->files[k].rec);
        iot_rec_outer_bytes(&p->files[k].rec, &p->bytes_written, &p->bytes_read);
    }
    if (p->summary) { /* each summarised record counted at its own outermost layer */
        iot_rec_merge(total, &p->summary->rec);
        p->bytes_written += p->summary->outer_written;
        p->bytes_read += p->summary->outer_read;
    }
}
