#include "capture.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core.h"
#include "fstype.h"
#include "json.h"

int iot_capture_on;
int iot_trace_on;
__thread int iot_depth;
__thread uint64_t iot_coll_calls;
double iot_rank_io_time;

static double t_start;
static double wall_start;
static const char *profile_path;

/* ---- records: one per file name, found through a hash of the name ---- */

#define IOT_MAX_FILES 4096
#define IOT_HASH_SLOTS 8192
static iot_file_rec *recs;
static int nrecs;
static int slots[IOT_HASH_SLOTS]; /* record index + 1, 0 = empty */
static pthread_mutex_t rec_lock = PTHREAD_MUTEX_INITIALIZER;

static const char *const untracked_prefixes[] = {"/proc/", "/sys/", "/dev/", "/etc/",
                                                 "/usr/",  "/lib",  "/run/", "/var/lib/"};

static int tracked(const char *name)
{
    for (size_t i = 0; i < sizeof untracked_prefixes / sizeof *untracked_prefixes; i++)
        if (strncmp(name, untracked_prefixes[i], strlen(untracked_prefixes[i])) == 0)
            return 0;
    return !strstr(name, ".so") && !strstr(name, "/site-packages/") &&
           !strstr(name, "/lib/python") && !strstr(name, "/pipe:") && name[0];
}

static uint64_t hash_name(const char *s)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 0x100000001b3ULL;
    return h;
}

static const char *strip_romio_prefix(const char *path)
{
    const char *colon = strchr(path, ':');
    if (colon && colon - path >= 2 && !memchr(path, '/', (size_t)(colon - path)))
        return colon + 1;
    return path;
}

int iot_rec_for(const char *name, iot_clayer layer)
{
    if (!iot_capture_on || !name)
        return -1;
    name = strip_romio_prefix(name);
    if (!tracked(name) || strlen(name) >= IOT_REC_NAME)
        return -1;
    pthread_mutex_lock(&rec_lock);
    unsigned slot = (unsigned)(hash_name(name) % IOT_HASH_SLOTS);
    int found = -1;
    for (int n = 0; n < IOT_HASH_SLOTS && slots[slot]; n++, slot = (slot + 1) % IOT_HASH_SLOTS)
        if (strcmp(recs[slots[slot] - 1].name, name) == 0) {
            found = slots[slot] - 1;
            break;
        }
    if (found < 0 && nrecs < IOT_MAX_FILES && !slots[slot]) {
        if (!recs)
            recs = calloc(IOT_MAX_FILES, sizeof *recs);
        if (recs) {
            found = nrecs++;
            iot_file_rec *r = &recs[found];
            memset(r, 0, sizeof *r);
            snprintf(r->name, sizeof r->name, "%s", name);
            r->start = -1;
            for (int l = 0; l < IOT_NLAYERS; l++)
                r->c[l].first_offset = r->c[l].last_offset = -1;
            slots[slot] = found + 1;
        }
    }
    if (found >= 0)
        recs[found].layers |= 1 << layer;
    pthread_mutex_unlock(&rec_lock);
    return found;
}

iot_file_rec *iot_rec(int index)
{
    return &recs[index];
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
    if (outer)
        iot_rank_io_time += dt;
    iot_file_rec *r = &recs[rec];
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
}

void iot_count_meta(int rec, iot_clayer layer, double dt, int outer)
{
    if (rec < 0)
        return;
    if (outer)
        iot_rank_io_time += dt;
    recs[rec].c[layer].meta_time += dt;
    if (outer)
        recs[rec].outer_time += dt;
}

void iot_mark_open(int rec, double t)
{
    if (rec >= 0 && recs[rec].start < 0)
        recs[rec].start = t - t_start;
}

void iot_mark_close(int rec, double t)
{
    if (rec >= 0)
        recs[rec].end = t - t_start;
}

double iot_since_start(void)
{
    return iot_now() - t_start;
}

/* ---- trace mode: signatures, run-length encoded ---- */

typedef struct {
    int layer, rec, mode;
    const char *func;
    uint64_t size;
    int64_t step; /* offset minus the previous offset on the same file */
} trace_sig;

typedef struct {
    int sig;
    uint64_t count;
    double time;
} trace_event;

static trace_sig *sigs;
static int nsigs, cap_sigs;
static trace_event *events;
static size_t nevents, cap_events;
static int64_t *last_offset; /* per record */

static int sig_index(const trace_sig *s)
{
    /* recent signatures first: loops repeat a handful of them */
    for (int i = nsigs - 1; i >= 0 && i >= nsigs - 64; i--)
        if (sigs[i].layer == s->layer && sigs[i].rec == s->rec && sigs[i].mode == s->mode &&
            sigs[i].func == s->func && sigs[i].size == s->size && sigs[i].step == s->step)
            return i;
    for (int i = nsigs - 65; i >= 0; i--)
        if (sigs[i].layer == s->layer && sigs[i].rec == s->rec && sigs[i].mode == s->mode &&
            sigs[i].func == s->func && sigs[i].size == s->size && sigs[i].step == s->step)
            return i;
    if (nsigs == cap_sigs) {
        int cap = cap_sigs ? 2 * cap_sigs : 256;
        trace_sig *grown = realloc(sigs, (size_t)cap * sizeof *grown);
        if (!grown)
            return -1;
        sigs = grown;
        cap_sigs = cap;
    }
    sigs[nsigs] = *s;
    return nsigs++;
}

void iot_trace(iot_clayer layer, const char *func, int rec, uint64_t size, int64_t offset, int mode,
               double dt)
{
    if (iot_depth > 0 && iot_trace_on < 2)
        return; /* level 1: the application's own calls; level 2 (all): every layer */
    if (!last_offset)
        last_offset = calloc(IOT_MAX_FILES, sizeof *last_offset);
    int64_t step = 0;
    if (rec >= 0 && offset >= 0 && last_offset) {
        step = offset - last_offset[rec];
        last_offset[rec] = offset;
    }
    trace_sig s = {(int)layer, rec, mode, func, size, step};
    int id = sig_index(&s);
    if (id < 0)
        return;
    if (nevents && events[nevents - 1].sig == id) {
        events[nevents - 1].count++;
        events[nevents - 1].time += dt;
        return;
    }
    if (nevents == cap_events) {
        size_t cap = cap_events ? 2 * cap_events : 1024;
        trace_event *grown = realloc(events, cap * sizeof *grown);
        if (!grown)
            return;
        events = grown;
        cap_events = cap;
    }
    events[nevents++] = (trace_event){id, 1, dt};
}

static void write_trace(int rank)
{
    char dir[4200], path[4300];
    snprintf(dir, sizeof dir, "%s.trace", profile_path);
    mkdir(dir, 0777);
    snprintf(path, sizeof path, "%s/rank-%d.json", dir, rank);
    FILE *f = fopen(path, "w");
    if (!f) {
        iot_warn_once("trace", "cannot write the trace %s: %s", path, strerror(errno));
        return;
    }
    static const char *layers[] = {"hdf5", "mpiio", "posix"};
    fprintf(f, "{\"schema\": \"iotune-trace\", \"version\": 1, \"rank\": %d, \"signatures\": [",
            rank);
    for (int i = 0; i < nsigs; i++) {
        fprintf(f, "%s{\"layer\": \"%s\", \"func\": \"%s\", \"file\": ", i ? ", " : "",
                layers[sigs[i].layer], sigs[i].func);
        iot_json_string(f, sigs[i].rec >= 0 ? recs[sigs[i].rec].name : NULL);
        fprintf(f, ", \"size\": %llu, \"step\": %lld, \"mode\": %d}",
                (unsigned long long)sigs[i].size, (long long)sigs[i].step, sigs[i].mode);
    }
    fputs("], \"events\": [", f);
    for (size_t i = 0; i < nevents; i++)
        fprintf(f, "%s[%d, %llu, %.9f]", i ? ", " : "", events[i].sig,
                (unsigned long long)events[i].count, events[i].time);
    fputs("]}\n", f);
    fclose(f);
}

/* ---- the profile ---- */

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
    for (int l = 0; l < IOT_NLAYERS; l++) {
        iot_counters *a = &into->c[l];
        const iot_counters *b = &r->c[l];
        uint64_t *ua = &a->creates;
        const uint64_t *ub = &b->creates;
        /* the uint64_t counters from creates to consecutive are contiguous */
        for (int i = 0; &ua[i] <= &a->consecutive; i++)
            ua[i] += ub[i];
        if (b->first_offset >= 0 && (a->first_offset < 0 || b->first_offset < a->first_offset))
            a->first_offset = b->first_offset;
        if (b->last_offset > a->last_offset)
            a->last_offset = b->last_offset;
        for (int i = 0; i < IOT_SIZE_BINS; i++)
            a->sizes[i] += b->sizes[i];
        a->read_time += b->read_time;
        a->write_time += b->write_time;
        a->meta_time += b->meta_time;
    }
}

static void write_counters(FILE *f, iot_clayer l, const iot_counters *c)
{
    if (l == IOT_L_HDF5) {
        fprintf(f,
                "{\"file_creates\": %llu, \"file_opens\": %llu, \"file_closes\": %llu, "
                "\"dataset_creates\": %llu, \"dataset_opens\": %llu, \"writes\": %llu, "
                "\"reads\": %llu, \"collective_writes\": %llu, \"independent_writes\": %llu, "
                "\"collective_reads\": %llu, \"independent_reads\": %llu, ",
                (unsigned long long)c->creates, (unsigned long long)c->opens,
                (unsigned long long)c->closes, (unsigned long long)c->dset_creates,
                (unsigned long long)c->dset_opens, (unsigned long long)c->writes,
                (unsigned long long)c->reads, (unsigned long long)c->coll_writes,
                (unsigned long long)c->indep_writes, (unsigned long long)c->coll_reads,
                (unsigned long long)c->indep_reads);
    } else if (l == IOT_L_MPIIO) {
        fprintf(f,
                "{\"opens\": %llu, \"closes\": %llu, \"syncs\": %llu, \"set_views\": %llu, "
                "\"independent_writes\": %llu, \"collective_writes\": %llu, "
                "\"independent_reads\": %llu, \"collective_reads\": %llu, ",
                (unsigned long long)c->opens, (unsigned long long)c->closes,
                (unsigned long long)c->syncs, (unsigned long long)c->set_views,
                (unsigned long long)c->indep_writes, (unsigned long long)c->coll_writes,
                (unsigned long long)c->indep_reads, (unsigned long long)c->coll_reads);
    } else {
        static const char *bins[IOT_SIZE_BINS] = {"0-100",   "100-1K", "1K-10K", "10K-100K",
                                                  "100K-1M", "1M-4M",  "4M-10M", "10M-100M",
                                                  "100M-1G", "1G+"};
        fprintf(f,
                "{\"opens\": %llu, \"closes\": %llu, \"reads\": %llu, \"writes\": %llu, "
                "\"seeks\": %llu, \"fsyncs\": %llu, \"sequential\": %llu, \"consecutive\": "
                "%llu, \"first_offset\": %lld, \"last_offset\": %lld, \"sizes\": {",
                (unsigned long long)c->opens, (unsigned long long)c->closes,
                (unsigned long long)c->reads, (unsigned long long)c->writes,
                (unsigned long long)c->seeks, (unsigned long long)c->syncs,
                (unsigned long long)c->sequential, (unsigned long long)c->consecutive,
                (long long)c->first_offset, (long long)c->last_offset);
        for (int i = 0; i < IOT_SIZE_BINS; i++)
            fprintf(f, "%s\"%s\": %llu", i ? ", " : "", bins[i], (unsigned long long)c->sizes[i]);
        fputs("}, ", f);
    }
    fprintf(f,
            "\"bytes_written\": %llu, \"bytes_read\": %llu, \"write_time_s\": %.9f, "
            "\"read_time_s\": %.9f, \"meta_time_s\": %.9f}",
            (unsigned long long)c->bytes_written, (unsigned long long)c->bytes_read, c->write_time,
            c->read_time, c->meta_time);
}

typedef struct {
    FILE *f;
    int n;
} applied_ctx;

static void applied_hint(void *ctx, const iot_entry *e)
{
    applied_ctx *a = ctx;
    fputs(a->n++ ? ", " : "", a->f);
    iot_json_string(a->f, e->name);
    fputs(": ", a->f);
    iot_json_string(a->f, e->value.text);
}

/* The control file's settings in effect for a file, per layer. */
static void write_applied(FILE *f, const iot_file_rec *r)
{
    const iot_settings *s = iot_active();
    fputs("{\"hdf5\": {", f);
    int n = 0;
    for (int p = 0; s && (r->layers & (1 << IOT_L_HDF5)) && p < IOT_P_COUNT; p++) {
        if (iot_params[p].target == IOT_TARGET_HINT)
            continue;
        const iot_entry *e = iot_settings_find(s, p, r->name, NULL);
        if (!e)
            continue;
        fputs(n++ ? ", " : "", f);
        iot_json_string(f, e->name);
        fputs(": ", f);
        iot_json_string(f, e->value.text);
    }
    fputs("}, \"mpiio\": {", f);
    applied_ctx a = {f, 0};
    if (s && (r->layers & (1 << IOT_L_MPIIO)))
        iot_settings_each_hint(s, r->name, applied_hint, &a);
    fputs("}}", f);
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

static int by_start(const void *a, const void *b)
{
    double x = ((const iot_file_rec *)a)->start, y = ((const iot_file_rec *)b)->start;
    return (x > y) - (x < y);
}

static void write_profile(iot_file_rec *all, int nall, const double *rank_times, int nranks,
                          double wall, int mpi)
{
    /* merge the ranks' records by file name, keeping per-rank outermost times */
    iot_file_rec *files = calloc((size_t)(nall ? nall : 1), sizeof *files);
    double(*stats)[4] = calloc((size_t)(nall ? nall : 1), sizeof *stats); /* max min sum slow */
    int *nfr = calloc((size_t)(nall ? nall : 1), sizeof *nfr);
    if (!files || !stats || !nfr) {
        iot_log("not enough memory to write the profile");
        free(files), free(stats), free(nfr);
        return;
    }
    int nfiles = 0;
    for (int i = 0; i < nall; i++) {
        int k = 0;
        while (k < nfiles && strcmp(files[k].name, all[i].name) != 0)
            k++;
        if (k == nfiles) {
            files[nfiles] = all[i];
            files[nfiles].rank = 0; /* reused below as the index into stats */
            stats[nfiles][0] = stats[nfiles][1] = all[i].outer_time;
            stats[nfiles][2] = all[i].outer_time;
            stats[nfiles][3] = all[i].rank;
            nfr[nfiles] = 1;
            nfiles++;
            continue;
        }
        merge(&files[k], &all[i]);
        if (all[i].outer_time > stats[k][0]) {
            stats[k][0] = all[i].outer_time;
            stats[k][3] = all[i].rank;
        }
        if (all[i].outer_time < stats[k][1])
            stats[k][1] = all[i].outer_time;
        stats[k][2] += all[i].outer_time;
        nfr[k]++;
    }
    for (int k = 0; k < nfiles; k++)
        files[k].rank = k;
    qsort(files, (size_t)nfiles, sizeof *files, by_start);

    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp.%d", profile_path, (int)getpid());
    FILE *f = fopen(tmp, "w");
    if (!f) {
        iot_log("IOTUNE_PROFILE=%s: cannot write the profile: %s", profile_path, strerror(errno));
        free(files), free(stats), free(nfr);
        return;
    }
    double io_time = 0;
    for (int r = 0; r < nranks; r++)
        if (rank_times[r] > io_time)
            io_time = rank_times[r];
    iot_file_rec total;
    memset(&total, 0, sizeof total);
    for (int l = 0; l < IOT_NLAYERS; l++)
        total.c[l].first_offset = total.c[l].last_offset = -1;
    total.start = -1;
    for (int k = 0; k < nfiles; k++)
        merge(&total, &files[k]);
    uint64_t bw = 0, br = 0;
    for (int k = 0; k < nfiles; k++) { /* bytes at each file's outermost layer */
        int l = (files[k].layers & 1)   ? IOT_L_HDF5
                : (files[k].layers & 2) ? IOT_L_MPIIO
                                        : IOT_L_POSIX;
        bw += files[k].c[l].bytes_written;
        br += files[k].c[l].bytes_read;
    }
    char host[256] = "";
    gethostname(host, sizeof host - 1);
    extern char *program_invocation_name;
    fputs("{\"schema\": \"iotune-profile\", \"version\": 1, \"program\": ", f);
    iot_json_string(f, program_invocation_name);
    fputs(", \"argv\": [", f);
    FILE *cmd = fopen("/proc/self/cmdline", "r");
    if (cmd) {
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
        fclose(cmd);
    }
    fputs("], \"hostname\": ", f);
    iot_json_string(f, host);
    fprintf(f, ", \"ranks\": %d, \"mpi\": %s, \"start\": %.6f, \"wall_s\": %.9f, ", nranks,
            mpi ? "true" : "false", wall_start, wall);
    const iot_settings *s = &iot_g.settings;
    fputs("\"config\": {\"path\": ", f);
    iot_json_string(f, getenv("IOTUNE_CONFIG"));
    fputs(", \"digest\": ", f);
    iot_json_string(f, s->digest[0] ? s->digest : NULL);
    fputs(", \"settings\": ", f);
    iot_json_settings(f, s);
    fprintf(f, "}, \"io\": {\"time_s\": %.9f, \"bytes_written\": %llu, \"bytes_read\": %llu}, ",
            io_time, (unsigned long long)bw, (unsigned long long)br);
    static const char *lname[] = {"hdf5", "mpiio", "posix"};
    fputs("\"layers\": {", f);
    for (int l = 0; l < IOT_NLAYERS; l++) {
        fprintf(f, "%s\"%s\": ", l ? ", " : "", lname[l]);
        write_counters(f, (iot_clayer)l, &total.c[l]);
    }
    fputs("}, \"files\": [", f);
    for (int k = 0; k < nfiles; k++) {
        const iot_file_rec *r = &files[k];
        const double *st = stats[r->rank];
        int n = nfr[r->rank];
        double mean = st[2] / n;
        fputs(k ? ", {\"name\": " : "{\"name\": ", f);
        iot_json_string(f, r->name);
        fputs(", \"fs\": ", f);
        iot_json_string(f, r->fs[0] ? r->fs : "unknown");
        fprintf(f,
                ", \"ranks\": %d, \"phase\": {\"start_s\": %.9f, \"end_s\": %.9f}, "
                "\"time_s\": {\"max\": %.9f, \"min\": %.9f, \"mean\": %.9f, \"slowest_rank\": "
                "%d, \"imbalance\": %.4f}, \"applied\": ",
                n, r->start < 0 ? 0 : r->start, r->end, st[0], st[1], mean, (int)st[3],
                mean > 0 ? st[0] / mean : 1.0);
        write_applied(f, r);
        fputs(", \"hints\": ", f);
        write_hints(f, r->hints);
        for (int l = 0; l < IOT_NLAYERS; l++) {
            if (!(r->layers & (1 << l)))
                continue;
            fprintf(f, ", \"%s\": ", lname[l]);
            write_counters(f, (iot_clayer)l, &r->c[l]);
        }
        fputc('}', f);
    }
    fputs("]}\n", f);
    int bad = ferror(f);
    bad |= fclose(f) != 0;
    if (bad || rename(tmp, profile_path) != 0) {
        iot_log("IOTUNE_PROFILE=%s: cannot write the profile: %s", profile_path, strerror(errno));
        unlink(tmp);
    }
    free(files), free(stats), free(nfr);
}

static int finished;

void iot_capture_finish(MPI_Comm comm)
{
    if (!iot_capture_on || finished)
        return;
    finished = 1;
    double wall = iot_since_start();
    int rank = 0, nranks = 1;
    if (comm != MPI_COMM_NULL) {
        PMPI_Comm_rank(comm, &rank);
        PMPI_Comm_size(comm, &nranks);
    }
    for (int i = 0; i < nrecs; i++) {
        recs[i].rank = rank;
        if (!recs[i].fs[0])
            iot_fstype(recs[i].name, recs[i].fs, sizeof recs[i].fs);
    }
    if (iot_trace_on && profile_path)
        write_trace(rank);
    if (comm == MPI_COMM_NULL) {
        if (profile_path && nrecs > 0)
            write_profile(recs, nrecs, &iot_rank_io_time, 1, wall, 0);
        return;
    }
    /* rank 0 gathers every rank's records and times */
    int *counts = NULL, *displs = NULL;
    double *times = NULL, mine[2] = {iot_rank_io_time, wall}, *pairs = NULL;
    iot_file_rec *all = NULL;
    int bytes = nrecs * (int)sizeof(iot_file_rec), total = 0;
    if (rank == 0) {
        counts = calloc((size_t)nranks, sizeof *counts);
        displs = calloc((size_t)nranks, sizeof *displs);
        pairs = calloc((size_t)nranks * 2, sizeof *pairs);
        times = calloc((size_t)nranks, sizeof *times);
    }
    PMPI_Gather(&bytes, 1, MPI_INT, counts, 1, MPI_INT, 0, comm);
    PMPI_Gather(mine, 2, MPI_DOUBLE, pairs, 2, MPI_DOUBLE, 0, comm);
    if (rank == 0 && counts && displs) {
        for (int r = 0; r < nranks; r++) {
            displs[r] = total;
            total += counts[r];
        }
        all = malloc((size_t)(total ? total : 1));
    }
    PMPI_Gatherv(recs ? (void *)recs : (void *)&bytes, bytes, MPI_BYTE, all, counts, displs,
                 MPI_BYTE, 0, comm);
    if (rank == 0 && all && times && pairs && profile_path) {
        double w = 0;
        for (int r = 0; r < nranks; r++) {
            times[r] = pairs[2 * r];
            if (pairs[2 * r + 1] > w)
                w = pairs[2 * r + 1];
        }
        write_profile(all, total / (int)sizeof(iot_file_rec), times, nranks, w, 1);
    }
    free(counts), free(displs), free(times), free(pairs), free(all);
}

/* Launchers inherit LD_PRELOAD too; they must neither capture nor write a profile. */
static int is_launcher(void)
{
    extern char *program_invocation_short_name;
    static const char *names[] = {"mpiexec", "mpirun",     "mpiexec.hydra", "hydra_pmi_proxy",
                                  "srun",    "orterun",    "orted",         "prterun",
                                  "prted",   "slurmstepd", "mpiexec.mpich", "mpirun.mpich"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (strcmp(program_invocation_short_name, names[i]) == 0)
            return 1;
    return 0;
}

__attribute__((constructor)) static void capture_start(void)
{
    t_start = iot_now();
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    wall_start = (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
    profile_path = getenv("IOTUNE_PROFILE");
    if (profile_path && !*profile_path)
        profile_path = NULL;
    const char *trace = getenv("IOTUNE_TRACE");
    iot_trace_on = !trace || !*trace || strcmp(trace, "0") == 0           ? 0
                   : strcmp(trace, "all") == 0 || strcmp(trace, "2") == 0 ? 2
                                                                          : 1;
    /* programs that an MPI rank starts (system(), popen()) must not write over its profile */
    int child_of_rank = getenv("IOTUNE_RANK_CHILD") != NULL;
    iot_capture_on = (profile_path || iot_trace_on) && !is_launcher() && !child_of_rank;
    if (iot_trace_on && !profile_path && !is_launcher()) {
        iot_log("IOTUNE_TRACE needs IOTUNE_PROFILE (the trace is written beside the profile)");
        iot_trace_on = 0;
    }
}

__attribute__((destructor)) static void capture_end(void)
{
    int init = 0;
    MPI_Initialized(&init);
    if (!init) /* programs without MPI write their profile at exit */
        iot_capture_finish(MPI_COMM_NULL);
}
