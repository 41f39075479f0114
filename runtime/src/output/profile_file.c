/* One file of the profile as JSON: its counters per layer (keys from the generated list),
 * the settings applied and in effect, the hints and their verdicts, what was withdrawn, and
 * whether the application asked for the file (system_files.tsv). */
#include "output/profile_file.h"

#include <fnmatch.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "apply/apply_mpiio.h"
#include "apply/resolve.h"
#include "base/real.h"
#include "config/json.h"
#include "core/core.h"
#include "system_files_gen.h"

const char *const layer_names[IOT_NLAYERS] = {"hdf5", "mpiio", "posix", "stdio"};

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
void write_counters(FILE *f, iot_clayer l, const iot_counters *c)
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

/* Per dataset setting: of the dataset creations (opens, for access settings) it was meant for,
 * how many it reached (the record's h5dsets lines "name\tN\tM"). */
static void write_dataset_counts(FILE *f, const char *lines)
{
    fputs(", \"dataset_settings\": {", f);
    int n = 0;
    for (const char *l = lines; *l;) {
        size_t len = strcspn(l, "\n");
        char name[128];
        long got = 0, of = 0;
        if (sscanf(l, "%127[^\t\n]\t%ld\t%ld", name, &got, &of) == 3) {
            fputs(n++ ? ", " : "", f);
            iot_json_string(f, name);
            fprintf(f, ": {\"reached\": %ld, \"of\": %ld}", got, of);
        }
        l += len + (l[len] == '\n');
    }
    fputc('}', f);
}

/* The settings in effect for a file, per layer (the control file's, and the adaptive mode's):
 * HDF5's read back from the file's and its datasets' property lists; the hints its MPI-IO open
 * applied, less any withdrawn since. */
static void write_applied(FILE *f, const iot_file_rec *r)
{
    fputs("{\"hdf5\": {", f);
    write_pairs(f, r->h5applied);
    fputs("}, \"mpiio\": {", f);
    char kept[sizeof r->mpapplied];
    size_t used = 0;
    kept[0] = '\0';
    for (const char *l = r->mpapplied; *l; l += strcspn(l, "\n") + (l[strcspn(l, "\n")] != 0)) {
        size_t len = strcspn(l, "\n"), key = strcspn(l, "=");
        char name[256];
        snprintf(name, sizeof name, "%.*s", (int)(key < len ? key : len), l);
        if (withdrawn(r, name) || used + len + 2 > sizeof kept)
            continue;
        used += (size_t)snprintf(kept + used, sizeof kept - used, "%.*s\n", (int)len, l);
    }
    write_pairs(f, kept);
    fputs("}}", f);
}

/* Per hint of the control file: what was asked, what MPI-IO read back, whether it took effect
 * (yes / no / unverifiable) and why not (apply_mpiio.c decides, as in the verbose report). */
static void effect_hint(void *ctx, const iot_entry *e)
{
    applied_ctx *a = ctx;
    char why[400], got[1024] = "";
    const char *reason = why;
    iot_effect v =
        iot_mpiio_effect(e->name, e->value.text, a->r->hints, a->r->fs, 0, why, sizeof why);
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

/* "k=v k=v" as a JSON object, numbers as numbers. */
static void write_words(FILE *f, const char *text, size_t len)
{
    fputc('{', f);
    for (size_t i = 0, n = 0; i < len; n++) {
        size_t w = strcspn(text + i, " \t"), eq = strcspn(text + i, "=");
        w = i + w > len ? len - i : w;
        if (eq < w) {
            char key[64], val[128];
            snprintf(key, sizeof key, "%.*s", (int)eq, text + i);
            snprintf(val, sizeof val, "%.*s", (int)(w - eq - 1), text + i + eq + 1);
            fputs(n ? ", " : "", f);
            iot_json_string(f, key);
            fputs(": ", f);
            if (val[0] && strspn(val, "0123456789") == strlen(val) && strlen(val) < 19)
                fputs(val, f);
            else
                iot_json_string(f, val);
        }
        i += w + 1;
    }
    fputc('}', f);
}

/* The file system's striping (fs/): "outcome\tasked\tlayout\treason" as an object. */
static void write_striping(FILE *f, const char *s)
{
    const char *part[4] = {s, "", "", ""};
    size_t len[4] = {strcspn(s, "\t"), 0, 0, 0};
    for (int k = 1; k < 4 && part[k - 1][len[k - 1]] == '\t'; k++) {
        part[k] = part[k - 1] + len[k - 1] + 1;
        len[k] = strcspn(part[k], k < 3 ? "\t" : "");
    }
    char outcome[32], reason[512];
    snprintf(outcome, sizeof outcome, "%.*s", (int)len[0], part[0]);
    snprintf(reason, sizeof reason, "%.*s", (int)len[3], part[3]);
    fputs(", \"striping\": {\"outcome\": ", f);
    iot_json_string(f, outcome);
    fputs(", \"asked\": ", f);
    write_words(f, part[1], len[1]);
    fputs(", \"layout\": ", f);
    write_words(f, part[2], len[2]);
    fputs(", \"reason\": ", f);
    iot_json_string(f, reason);
    fputc('}', f);
}

static void write_hints(FILE *f, const char *hints)
{
    fputc('{', f);
    write_pairs(f, hints);
    fputc('}', f);
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

/* One per_rank counter (index k) of a file: "key": [...] in rank order, or {"min", "max"} when
 * more ranks had the file than are listed. */
static void write_values(FILE *f, const iot_rank_values *v, int k, const char *key, int *n)
{
    fprintf(f, "%s\"%s\": ", (*n)++ ? ", " : "", key);
    if (v->listed < 0) {
        fprintf(f, "{\"min\": %llu, \"max\": %llu}", (unsigned long long)v->min[k],
                (unsigned long long)v->max[k]);
        return;
    }
    fputc('[', f);
    for (int i = 0; i < v->listed; i++)
        fprintf(f, "%s%llu", i ? ", " : "", (unsigned long long)v->val[i][k]);
    fputc(']', f);
}

#define PER_RANK_IN(field, layer, key) here |= (layer) == l;
#define WRITE_PER_RANK(field, layer, key)                                                          \
    if ((layer) == l)                                                                              \
        write_values(f, v, k, key, &n);                                                            \
    k++;

/* "per_rank": {"ranks": [...], LAYER: {KEY: [...]}}: the counters.tsv rows marked per_rank,
 * one value per rank that has the file, for the layers the file used (the question of
 * collective transfers: does every rank call H5Dwrite as often?). A file of more than
 * IOT_LISTED_RANKS ranks: {"listed": false, LAYER: {KEY: {"min", "max"}}}. */
static void write_per_rank(FILE *f, const iot_reduced *x)
{
    const iot_rank_values *v = &x->pr;
    int opened = 0;
    for (int l = 0; l < IOT_NLAYERS; l++) {
        int here = 0, n = 0, k = 0;
        IOT_COUNTERS_PER_RANK(PER_RANK_IN)
        if (!here || !(x->rec.layers & (1 << l)))
            continue;
        if (!opened++ && v->listed < 0) {
            fputs(", \"per_rank\": {\"listed\": false", f);
        } else if (opened == 1) {
            fputs(", \"per_rank\": {\"ranks\": [", f);
            for (int i = 0; i < v->listed; i++)
                fprintf(f, "%s%d", i ? ", " : "", v->rank[i]);
            fputc(']', f);
        }
        fprintf(f, ", \"%s\": {", layer_names[l]);
        IOT_COUNTERS_PER_RANK(WRITE_PER_RANK)
        (void)k;
        fputc('}', f);
    }
    if (opened)
        fputc('}', f);
}

void write_file(FILE *f, const iot_reduced *x, int first)
{
    const iot_file_rec *r = &x->rec;
    const iot_file_stats *st = &x->st;
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
    if (r->h5driver[0]) { /* serial (sec2, core) or parallel (mpio) HDF5 */
        fputs(", \"hdf5_driver\": ", f);
        iot_json_string(f, r->h5driver);
    }
    if (r->h5notes[0]) { /* HDF5 settings not in effect and why; the application's overridden */
        fputs(", \"hdf5_notes\": ", f);
        write_lines(f, r->h5notes);
    }
    if (r->h5dsets[0])
        write_dataset_counts(f, r->h5dsets);
    if (r->striping[0])
        write_striping(f, r->striping);
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
    write_per_rank(f, x);
    fputc('}', f);
}
