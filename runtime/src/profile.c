#include "profile.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "abi.h"
#include "apply_mpiio.h"
#include "core.h"
#include "env.h"
#include "json.h"
#include "real.h"
#include "resolve.h"

static const char *const layer_names[IOT_NLAYERS] = {"hdf5", "mpiio", "posix", "stdio"};

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

int iot_profile_build(iot_profile *p, const iot_file_rec *all, int nall, const double *rank_times,
                      int nranks)
{
    memset(p, 0, sizeof *p);
    p->nranks = nranks;
    p->files = calloc((size_t)(nall ? nall : 1), sizeof *p->files);
    p->stats = calloc((size_t)(nall ? nall : 1), sizeof *p->stats);
    if (!p->files || !p->stats) {
        iot_profile_free(p);
        return -1;
    }
    for (int i = 0; i < nall; i++) {
        int k = 0;
        while (k < p->nfiles && strcmp(p->files[k].name, all[i].name) != 0)
            k++;
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
    qsort(p->files, (size_t)p->nfiles, sizeof *p->files, by_start);
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
    p->files = NULL;
    p->stats = NULL;
}

/* One counter as "key": value, by its type (counters.tsv). */
static void write_count(FILE *f, int *n, const char *key, uint64_t v)
{
    fprintf(f, "%s\"%s\": %llu", (*n)++ ? ", " : "", key, (unsigned long long)v);
}

static void write_offset(FILE *f, int *n, const char *key, int64_t v)
{
    fprintf(f, "%s\"%s\": %lld", (*n)++ ? ", " : "", key, (long long)v);
}

static void write_seconds(FILE *f, int *n, const char *key, double v)
{
    fprintf(f, "%s\"%s\": %.9f", (*n)++ ? ", " : "", key, v);
}

static void write_sizes(FILE *f, int *n, const char *key, const uint64_t *sizes)
{
    static const char *bins[IOT_SIZE_BINS] = {"0-100", "100-1K", "1K-10K",   "10K-100K", "100K-1M",
                                              "1M-4M", "4M-10M", "10M-100M", "100M-1G",  "1G+"};
    fprintf(f, "%s\"%s\": {", (*n)++ ? ", " : "", key);
    for (int i = 0; i < IOT_SIZE_BINS; i++)
        fprintf(f, "%s\"%s\": %llu", i ? ", " : "", bins[i], (unsigned long long)sizes[i]);
    fputc('}', f);
}

#define WRITE_COUNTER(field, type, key) write_##type(f, &n, key, c->field);

/* A layer's counters, with the keys counters.tsv gives them in that layer. */
static void write_counters(FILE *f, iot_clayer l, const iot_counters *c)
{
    int n = 0;
    fputc('{', f);
    switch (l) {
    case IOT_L_HDF5: IOT_COUNTERS_HDF5(WRITE_COUNTER) break;
    case IOT_L_MPIIO: IOT_COUNTERS_MPIIO(WRITE_COUNTER) break;
    case IOT_L_POSIX: IOT_COUNTERS_POSIX(WRITE_COUNTER) break;
    default: IOT_COUNTERS_STDIO(WRITE_COUNTER) break;
    }
    fputc('}', f);
}

typedef struct {
    FILE *f;
    int n;
    const iot_file_rec *r;
} applied_ctx;

/* Whether setting was withdrawn from the file (its "setting\tvalue\treason\n" lines). */
static int withdrawn(const iot_file_rec *r, const char *setting)
{
    size_t n = strlen(setting);
    for (const char *l = r->withdrawn; *l; l += strcspn(l, "\n") + (l[strcspn(l, "\n")] != 0))
        if (strncmp(l, setting, n) == 0 && l[n] == '\t')
            return 1;
    return 0;
}

static void applied_hint(void *ctx, const iot_entry *e)
{
    applied_ctx *a = ctx;
    if (withdrawn(a->r, e->name))
        return;
    fputs(a->n++ ? ", " : "", a->f);
    iot_json_string(a->f, e->name);
    fputs(": ", a->f);
    iot_json_string(a->f, e->value.text);
}

/* The control file's settings in effect for a file, per layer. */
static void write_applied(FILE *f, const iot_file_rec *r)
{
    iot_file_settings *rules = iot_resolve(iot_active(), r->name);
    fputs("{\"hdf5\": {", f);
    int n = 0;
    for (int p = 0; rules && (r->layers & (1 << IOT_L_HDF5)) && p < IOT_P_COUNT; p++) {
        const iot_entry *e = iot_resolved_file(rules, p);
        if (!e || iot_params[p].target == IOT_TARGET_HINT || withdrawn(r, e->name))
            continue;
        fputs(n++ ? ", " : "", f);
        iot_json_string(f, e->name);
        fputs(": ", f);
        iot_json_string(f, e->value.text);
    }
    fputs("}, \"mpiio\": {", f);
    applied_ctx a = {f, 0, r};
    if (rules && (r->layers & (1 << IOT_L_MPIIO)))
        iot_settings_each_hint(&rules->set, r->name, applied_hint, &a);
    fputs("}}", f);
    iot_resolved_free(rules);
}

/* Per hint of the control file: what was asked, what MPI-IO read back, whether it took effect
 * (yes / no / unverifiable) and why not (apply_mpiio.c decides, as in the verbose report). */
static void effect_hint(void *ctx, const iot_entry *e)
{
    applied_ctx *a = ctx;
    char why[400], got[1024] = "";
    const char *reason = why;
    iot_effect v = iot_mpiio_effect(e->name, e->value.text, a->r->hints, a->r->fs, why, sizeof why);
    const char *eff = iot_effect_name(v);
    if (withdrawn(a->r, e->name)) {
        eff = "no";
        reason = "withdrawn (see \"withdrawn\")";
    }
    size_t klen = strlen(e->name);
    for (const char *l = a->r->hints; *l; l += strcspn(l, "\n") + (l[strcspn(l, "\n")] != 0))
        if (strncmp(l, e->name, klen) == 0 && l[klen] == '=')
            snprintf(got, sizeof got, "%.*s", (int)(strcspn(l, "\n") - klen - 1), l + klen + 1);
    fputs(a->n++ ? ", " : "", a->f);
    iot_json_string(a->f, e->name);
    fputs(": {\"requested\": ", a->f);
    iot_json_string(a->f, e->value.text);
    fputs(", \"read_back\": ", a->f);
    iot_json_string(a->f, got[0] ? got : NULL);
    fputs(", \"in_effect\": ", a->f);
    iot_json_string(a->f, eff);
    fputs(", \"reason\": ", a->f);
    iot_json_string(a->f, reason[0] ? reason : NULL);
    fputc('}', a->f);
}

static void write_effect(FILE *f, const iot_file_rec *r)
{
    iot_file_settings *rules = iot_resolve(iot_active(), r->name);
    applied_ctx a = {f, 0, r};
    fputc('{', f);
    if (rules && (r->layers & (1 << IOT_L_MPIIO)) && r->hints[0])
        iot_settings_each_hint(&rules->set, r->name, effect_hint, &a);
    fputc('}', f);
    iot_resolved_free(rules);
}

static void write_withdrawn(FILE *f, const char *lines)
{
    fputc('[', f);
    for (int n = 0; *lines; n++) {
        size_t len = strcspn(lines, "\n");
        char part[3][512] = {"", "", ""};
        const char *p = lines;
        for (int k = 0; k < 3 && p < lines + len; k++) {
            size_t m = k < 2 ? strcspn(p, "\t\n") : (size_t)(lines + len - p);
            snprintf(part[k], sizeof part[k], "%.*s", (int)m, p);
            p += m + (k < 2);
        }
        fprintf(f, "%s{\"setting\": ", n ? ", " : "");
        iot_json_string(f, part[0]);
        fputs(", \"value\": ", f);
        iot_json_string(f, part[1]);
        fputs(", \"reason\": ", f);
        iot_json_string(f, part[2]);
        fputc('}', f);
        lines += len + (lines[len] == '\n');
    }
    fputc(']', f);
}

static void write_hints(FILE *f, const char *hints)
{
    fputc('{', f);
    int n = 0;
    for (const char *line = hints; *line;) {
        size_t len = strcspn(line, "\n");
        const char *eq = memchr(line, '=', len);
        if (eq) {
            char key[256], val[1024];
            snprintf(key, sizeof key, "%.*s", (int)(eq - line), line);
            snprintf(val, sizeof val, "%.*s", (int)(line + len - eq - 1), eq + 1);
            fputs(n++ ? ", " : "", f);
            iot_json_string(f, key);
            fputs(": ", f);
            iot_json_string(f, val);
        }
        line += len + (line[len] == '\n');
    }
    fputc('}', f);
}

static void write_argv(FILE *f)
{
    fputs("[", f);
    FILE *cmd = iot_real_fopen("/proc/self/cmdline", "r");
    if (!cmd) {
        fputs("]", f);
        return;
    }
    char arg[4096];
    int n = 0, c, len = 0;
    while ((c = fgetc(cmd)) != EOF) {
        if (c && len < (int)sizeof arg - 1) {
            arg[len++] = (char)c;
            continue;
        }
        if (c)
            continue;
        arg[len] = '\0';
        fputs(n++ ? ", " : "", f);
        iot_json_string(f, arg);
        len = 0;
    }
    iot_real_fclose(cmd);
    fputs("]", f);
}

static void write_file(FILE *f, const iot_profile *p, const iot_file_rec *r, int first)
{
    const iot_file_stats *st = &p->stats[r->rank];
    double mean = st->sum / st->ranks;
    fputs(first ? "{\"name\": " : ", {\"name\": ", f);
    iot_json_string(f, r->name);
    fputs(", \"fs\": ", f);
    iot_json_string(f, r->fs[0] ? r->fs : "unknown");
    fprintf(f,
            ", \"ranks\": %d, \"phase\": {\"start_s\": %.9f, \"end_s\": %.9f}, "
            "\"time_s\": {\"max\": %.9f, \"min\": %.9f, \"mean\": %.9f, \"slowest_rank\": "
            "%d, \"imbalance\": %.4f}, \"applied\": ",
            st->ranks, r->start < 0 ? 0 : r->start, r->end, st->max, st->min, mean, st->slowest,
            mean > 0 ? st->max / mean : 1.0);
    write_applied(f, r);
    fputs(", \"hints\": ", f);
    write_hints(f, r->hints);
    fputs(", \"hint_effect\": ", f);
    write_effect(f, r);
    fputs(", \"withdrawn\": ", f);
    write_withdrawn(f, r->withdrawn);
    for (int l = 0; l < IOT_NLAYERS; l++) {
        if (!(r->layers & (1 << l)))
            continue;
        fprintf(f, ", \"%s\": ", layer_names[l]);
        write_counters(f, (iot_clayer)l, &r->c[l]);
    }
    fputc('}', f);
}

void iot_profile_write(FILE *f, const iot_profile *p, const iot_profile_meta *m)
{
    /* session, mpi and io first: output.c reads them back to compare profiles of one run */
    fputs("{\"schema\": \"iotune-profile\", \"version\": 1, \"session\": ", f);
    iot_json_string(f, m->session);
    fprintf(f,
            ", \"mpi\": %s, \"reduced\": %s, \"ranks\": %d, \"io\": {\"time_s\": %.9f, "
            "\"bytes_written\": %llu, \"bytes_read\": %llu}, \"program\": ",
            m->mpi ? "true" : "false", m->reduced ? "true" : "false", p->nranks, p->io_time,
            (unsigned long long)p->bytes_written, (unsigned long long)p->bytes_read);
    extern char *program_invocation_name;
    iot_json_string(f, program_invocation_name);
    fputs(", \"argv\": ", f);
    write_argv(f);
    char host[256] = "";
    gethostname(host, sizeof host - 1);
    fputs(", \"hostname\": ", f);
    iot_json_string(f, host);
    fprintf(f, ", \"start\": %.6f, \"wall_s\": %.9f, ", m->epoch, m->wall);
    const iot_mpi_impl_t *mpi = &iot_mpi_impl; /* read by the tuner: which hints can matter */
    fputs("\"mpi_library\": {\"family\": ", f);
    iot_json_string(f, mpi->family);
    fputs(", \"library\": ", f);
    iot_json_string(f, m->mpi && mpi->library[0] ? mpi->library : NULL);
    if (mpi->version > 0)
        fprintf(f, ", \"standard\": \"%d.%d\"", mpi->version, mpi->subversion);
    else
        fputs(", \"standard\": null", f);
    fputs(", \"io_component\": ", f);
    iot_json_string(f, mpi->io);
    fputs(", \"io_component_from\": ", f);
    iot_json_string(f, mpi->io_from);
    fprintf(f, ", \"hints_verifiable\": %s}, ", mpi->echoes ? "false" : "true");
    const iot_settings *s = &iot_g.settings;
    fputs("\"config\": {\"path\": ", f);
    iot_json_string(f, iot_env.config);
    fputs(", \"digest\": ", f);
    iot_json_string(f, s->digest[0] ? s->digest : NULL);
    fputs(", \"settings\": ", f);
    iot_json_settings(f, s);
    fputs("}, \"layers\": {", f);
    for (int l = 0; l < IOT_NLAYERS; l++) {
        fprintf(f, "%s\"%s\": ", l ? ", " : "", layer_names[l]);
        write_counters(f, (iot_clayer)l, &p->total.c[l]);
    }
    fputs("}, \"files\": [", f);
    for (int k = 0; k < p->nfiles; k++)
        write_file(f, p, &p->files[k], k == 0);
    fputs("]}\n", f);
}
