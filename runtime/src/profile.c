#include "profile.h"

#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "abi.h"
#include "apply_mpiio.h"
#include "core.h"
#include "env.h"
#include "json.h"
#include "real.h"
#include "resolve.h"
#include "system_files_gen.h"

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
    if (!into->h5applied[0])
        memcpy(into->h5applied, r->h5applied, sizeof into->h5applied);
    if (!into->h5notes[0])
        memcpy(into->h5notes, r->h5notes, sizeof into->h5notes);
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

/* Lines "name=value" as JSON members. */
static void write_pairs(FILE *f, const char *lines)
{
    int n = 0;
    for (const char *line = lines; *line;) {
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
}

/* Lines as a JSON array of strings. */
static void write_lines(FILE *f, const char *lines)
{
    fputc('[', f);
    int n = 0;
    for (const char *line = lines; *line;) {
        size_t len = strcspn(line, "\n");
        char one[1024];
        snprintf(one, sizeof one, "%.*s", (int)len, line);
        fputs(n++ ? ", " : "", f);
        iot_json_string(f, one);
        line += len + (line[len] == '\n');
    }
    fputc(']', f);
}

/* The control file's settings in effect for a file, per layer: HDF5's read back from the
 * file's and its datasets' property lists. */
static void write_applied(FILE *f, const iot_file_rec *r)
{
    fputs("{\"hdf5\": {", f);
    write_pairs(f, r->h5applied);
    fputs("}, \"mpiio\": {", f);
    iot_file_settings *rules = iot_resolve(iot_active(), r->name);
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
    write_pairs(f, hints);
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

/* The program (argv[0]) and the script it runs when it is an interpreter of a `script` rule
 * (its first argument that is not an option; none after -m, -c, -e or --), read once. */
static const iot_file_rule *script_rule;
static char script_name[IOT_REC_NAME];

static void find_script(void)
{
    static int done;
    if (done++)
        return;
    FILE *cmd = iot_real_fopen("/proc/self/cmdline", "r");
    if (!cmd)
        return;
    char args[8192];
    size_t n = fread(args, 1, sizeof args - 1, cmd);
    iot_real_fclose(cmd);
    args[n] = '\0';
    const iot_file_rule *rule = NULL;
    for (size_t i = 0; i < sizeof iot_file_rules / sizeof *iot_file_rules && !rule; i++)
        if (iot_file_rules[i].script && fnmatch(iot_file_rules[i].pattern, args, 0) == 0)
            rule = &iot_file_rules[i];
    for (const char *w = args + strlen(args) + 1; rule && w < args + n; w += strlen(w) + 1) {
        if (!strcmp(w, "-m") || !strcmp(w, "-c") || !strcmp(w, "-e") || !strcmp(w, "--"))
            return;
        if (w[0] != '-') {
            snprintf(script_name, sizeof script_name, "%s", w);
            script_rule = rule;
            return;
        }
    }
}

static int was_written(const iot_file_rec *r)
{
    for (int l = 0; l < IOT_NLAYERS; l++)
        if (r->c[l].bytes_written || r->c[l].writes)
            return 1;
    return r->c[IOT_L_HDF5].creates || r->c[IOT_L_HDF5].dset_creates;
}

/* The class of a file the application did not ask for (system_files.tsv, first matching rule),
 * or NULL for a data file: the same rules iotune.profile applies when it loads a profile. */
static const char *system_class(const iot_file_rec *r)
{
    int written = was_written(r);
    find_script();
    if (script_rule && strcmp(r->name, script_name) == 0 && !(script_rule->read_only && written))
        return script_rule->cls;
    for (size_t i = 0; i < sizeof iot_file_rules / sizeof *iot_file_rules; i++) {
        const iot_file_rule *rule = &iot_file_rules[i];
        if (!rule->script && !(rule->read_only && written) &&
            fnmatch(rule->pattern, r->name, 0) == 0)
            return rule->cls;
    }
    return NULL;
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
    const char *cls = system_class(r);
    if (cls) { /* a file the application did not ask for: kept, marked */
        fputs(", \"system\": ", f);
        iot_json_string(f, cls);
    }
    if (r->h5notes[0]) { /* HDF5 settings not in effect and why; the application's overridden */
        fputs(", \"hdf5_notes\": ", f);
        write_lines(f, r->h5notes);
    }
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
    fputs("}, ", f);
    iot_adapt_write_json(f);
    fputs("\"layers\": {", f);
    for (int l = 0; l < IOT_NLAYERS; l++) {
        fprintf(f, "%s\"%s\": ", l ? ", " : "", layer_names[l]);
        write_counters(f, (iot_clayer)l, &p->total.c[l]);
    }
    fputs("}, \"files\": [", f);
    for (int k = 0; k < p->nfiles; k++)
        write_file(f, p, &p->files[k], k == 0);
    fputs("]}\n", f);
}
