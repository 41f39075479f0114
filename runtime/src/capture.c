#include "capture.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core.h"
#include "fstype.h"
#include "output.h"
#include "profile.h"
#include "trace.h"

int iot_capture_on;
int iot_frozen;
pthread_mutex_t iot_cap_lock = PTHREAD_MUTEX_INITIALIZER;
__thread int iot_depth;
__thread int iot_locked;
__thread uint64_t iot_coll_calls;
double iot_rank_io_time;

static double t_start;     /* monotonic clock when the runtime loaded */
static double t_sync = -1; /* monotonic clock when the ranks left the barrier in MPI_Init */
static double wall_start;  /* wall clock at t_start */
static const char *profile_path;
static int mpi_rank = -1; /* in MPI_COMM_WORLD, once MPI_Init has returned */

/* ---- records: one per file name, found through a hash of the name ---- */

#define IOT_HASH_SLOTS 8192
static iot_file_rec *recs;
static int nrecs;
static int slots[IOT_HASH_SLOTS]; /* record index + 1, 0 = empty */

static const char *const untracked_prefixes[] = {"/proc/", "/sys/",    "/dev/",   "/etc/",
                                                 "/usr/",  "/lib/",    "/lib64/", "/lib32/",
                                                 "/run/",  "/var/lib/"};

static const char *config_path; /* IOTUNE_CONFIG: the runtime's own reading, not the app's */

static int tracked(const char *name)
{
    if (config_path && strcmp(name, config_path) == 0)
        return 0;
    for (size_t i = 0; i < sizeof untracked_prefixes / sizeof *untracked_prefixes; i++)
        if (strncmp(name, untracked_prefixes[i], strlen(untracked_prefixes[i])) == 0)
            return 0;
    return !strstr(name, "/site-packages/") && !strstr(name, "/lib/python") &&
           !strstr(name, "/pipe:") && name[0];
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
    name = strip_romio_prefix(name);
    if (!tracked(name))
        return -1;
    if (strlen(name) >= IOT_REC_NAME) {
        warn_dropped(1, name);
        return -1;
    }
    if (!iot_lock())
        return -1;
    unsigned slot = (unsigned)(hash_name(name) % IOT_HASH_SLOTS);
    int found = -1;
    for (int n = 0; n < IOT_HASH_SLOTS && slots[slot]; n++, slot = (slot + 1) % IOT_HASH_SLOTS)
        if (strcmp(recs[slots[slot] - 1].name, name) == 0) {
            found = slots[slot] - 1;
            break;
        }
    int full = 0;
    if (found < 0 && (nrecs >= IOT_MAX_FILES || slots[slot])) {
        full = 1;
    } else if (found < 0) {
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
    iot_unlock();
    if (full) /* outside the lock: the message may go to a followed descriptor */
        warn_dropped(0, name);
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
}

void iot_count_time(int rec, iot_clayer layer, int is_write, double dt, int outer)
{
    if (rec < 0)
        return;
    if (outer) {
        iot_rank_io_time += dt;
        recs[rec].outer_time += dt;
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
    recs[rec].layers |= 1 << layer;
    recs[rec].c[layer].meta_time += dt;
    if (outer)
        recs[rec].outer_time += dt;
}

void iot_mark_open(int rec, double t)
{
    if (rec < 0)
        return;
    if (recs[rec].start < 0 || t - t_start < recs[rec].start) /* H5Fcreate after its MPI-IO open */
        recs[rec].start = t - t_start;
    recs[rec].open_now++;
}

void iot_mark_close(int rec, double t)
{
    if (rec < 0)
        return;
    recs[rec].end = t - t_start;
    if (recs[rec].open_now > 0)
        recs[rec].open_now--;
}

void iot_count_close(int rec, iot_clayer layer, const char *func, double t, double end, int outer)
{
    if (rec < 0)
        return;
    recs[rec].c[layer].closes++;
    iot_mark_close(rec, end);
    iot_count_meta(rec, layer, end - t, outer);
    if (iot_trace_on)
        iot_trace(layer, func, rec, 0, -1, 0, t, end - t);
}

double iot_since_start(void)
{
    return iot_now() - t_start;
}

/* ---- MPI: one session and one clock for the whole job ---- */

static void exit_without_finalize(void);

void iot_capture_mpi_started(void)
{
    if (!iot_capture_on)
        return;
    /* at exit, before the destructors: the launcher may kill this rank as soon as another
     * one has exited without MPI_Finalize */
    atexit(exit_without_finalize);
    PMPI_Comm_rank(MPI_COMM_WORLD, &mpi_rank);
    char id[64];
    snprintf(id, sizeof id, "%s", iot_session());
    PMPI_Bcast(id, (int)sizeof id, MPI_CHAR, 0, MPI_COMM_WORLD);
    iot_session_set(id); /* ranks started without a launcher made sessions of their own */
    /* every rank leaves the barrier within a message latency: the job's common instant */
    PMPI_Barrier(MPI_COMM_WORLD);
    t_sync = iot_now();
}

/* ---- the end: reduction, traces, profile ---- */

static int finished;

/* Stops capture: later calls pass through, and the data stays as it is while it is written
 * (other threads may still be doing I/O). Returns 0 when this thread was interrupted in the
 * middle of its bookkeeping (exit() from a signal handler): the data may be half updated and
 * nothing is written. */
static int freeze(void)
{
    if (iot_locked) {
        iot_capture_on = 0;
        return 0;
    }
    pthread_mutex_lock(&iot_cap_lock);
    iot_frozen = 1;
    iot_capture_on = 0;
    pthread_mutex_unlock(&iot_cap_lock);
    return 1;
}

/* Each rank writes its trace; rank 0 alone reports problems, in one line each. */
static void write_traces(MPI_Comm comm, int rank, int nranks, double shift, double epoch)
{
    char dir[4200], path[4300];
    snprintf(dir, sizeof dir, "%s.trace", profile_path);
    mkdir(dir, 0777);
    snprintf(path, sizeof path, "%s/rank-%d.json", dir, rank);
    int err = iot_trace_write(path, rank, nranks, iot_session(), t_start - shift, epoch);
    int mine[2] = {err != 0, iot_trace_truncated()}, sums[2] = {mine[0], mine[1]}, worst = err;
    if (comm != MPI_COMM_NULL) {
        PMPI_Reduce(mine, sums, 2, MPI_INT, MPI_SUM, 0, comm);
        PMPI_Reduce(&err, &worst, 1, MPI_INT, MPI_MAX, 0, comm);
    }
    if (rank != 0)
        return;
    if (sums[0])
        iot_log("IOTUNE_PROFILE=%s: cannot write the trace of %d of %d rank%s in %s: %s",
                profile_path, sums[0], nranks, nranks == 1 ? "" : "s", dir, strerror(worst));
    if (sums[1])
        iot_log("the trace of %d rank%s reached IOTUNE_TRACE_LIMIT and is truncated (see "
                "\"dropped_calls\" in %s)",
                sums[1], sums[1] == 1 ? "" : "s", dir);
    iot_out_prune_traces(dir, nranks);
}

/* Rank 0 receives every rank's records and I/O time. Returns the count, or -1 on rank 0 when
 * memory ran out (every rank then skips the profile). */
static int gather(MPI_Comm comm, int rank, int nranks, iot_file_rec **all, double **times)
{
    int bytes = nrecs * (int)sizeof(iot_file_rec), total = 0, ok = 1;
    int *counts = NULL, *displs = NULL;
    *all = NULL;
    *times = NULL;
    if (rank == 0) {
        counts = calloc((size_t)nranks, sizeof *counts);
        displs = calloc((size_t)nranks, sizeof *displs);
        *times = calloc((size_t)nranks, sizeof **times);
        ok = counts && displs && *times;
    }
    PMPI_Bcast(&ok, 1, MPI_INT, 0, comm);
    if (ok) {
        PMPI_Gather(&bytes, 1, MPI_INT, counts, 1, MPI_INT, 0, comm);
        PMPI_Gather(&iot_rank_io_time, 1, MPI_DOUBLE, *times, 1, MPI_DOUBLE, 0, comm);
        if (rank == 0) {
            for (int r = 0; r < nranks; r++) {
                displs[r] = total;
                total += counts[r];
            }
            *all = malloc((size_t)(total ? total : 1));
            ok = *all != NULL;
        }
        PMPI_Bcast(&ok, 1, MPI_INT, 0, comm);
    }
    if (ok)
        PMPI_Gatherv(recs ? (void *)recs : (void *)&bytes, bytes, MPI_BYTE, *all, counts, displs,
                     MPI_BYTE, 0, comm);
    free(counts);
    free(displs);
    if (!ok && rank == 0)
        iot_log("IOTUNE_PROFILE=%s: not enough memory to write the profile", profile_path);
    return ok ? total / (int)sizeof(iot_file_rec) : -1;
}

/* Writes the profile (rank 0 of comm, or this process alone with MPI_COMM_NULL) and the
 * traces. mpi: the process is (was) an MPI rank; reduced: comm is the whole job. Returns 1
 * when the profile was written. */
static int finish(MPI_Comm comm, int mpi, int reduced)
{
    double now = iot_since_start();
    int rank = 0, nranks = 1;
    if (comm != MPI_COMM_NULL) {
        PMPI_Comm_rank(comm, &rank);
        PMPI_Comm_size(comm, &nranks);
    }
    /* the common clock: times move by shift so that 0 is the earliest rank's start */
    double delta = t_sync >= 0 ? t_sync - t_start : 0, latest = delta;
    if (comm != MPI_COMM_NULL)
        PMPI_Allreduce(&delta, &latest, 1, MPI_DOUBLE, MPI_MAX, comm);
    double shift = latest - delta, epoch = wall_start - shift;
    for (int i = 0; i < nrecs; i++) {
        iot_file_rec *r = &recs[i];
        r->rank = rank;
        if (!r->fs[0])
            iot_fstype(r->name, r->fs, sizeof r->fs);
        if (r->open_now > 0 || (r->start >= 0 && r->end < r->start))
            r->end = now; /* never closed: open until the end */
        if (r->start >= 0) {
            r->start += shift;
            r->end += shift;
        }
    }
    double wall = now + shift, slowest = wall;
    iot_file_rec *all = recs;
    double *times = &iot_rank_io_time;
    int nall = nrecs;
    if (comm != MPI_COMM_NULL) {
        PMPI_Reduce(&wall, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, comm);
        nall = gather(comm, rank, nranks, &all, &times);
    }
    int write = 0, built = 0;
    iot_profile prof;
    iot_out out;
    if (rank == 0 && nall >= 0) {
        built = iot_profile_build(&prof, all, nall, times, nranks) == 0;
        if (!built)
            iot_log("IOTUNE_PROFILE=%s: not enough memory to write the profile", profile_path);
        iot_claim claim = {mpi, built ? prof.bytes_written + prof.bytes_read : 0,
                           built ? prof.nfiles : 0};
        write = built && iot_out_open(&out, profile_path, &claim);
    }
    if (comm != MPI_COMM_NULL)
        PMPI_Bcast(&write, 1, MPI_INT, 0, comm); /* traces go with the profile they belong to */
    if (write && iot_trace_on)
        write_traces(comm, rank, nranks, shift, epoch);
    if (write && rank == 0) {
        iot_profile_meta meta = {iot_session(), mpi, reduced, epoch, slowest};
        iot_profile_write(out.f, &prof, &meta);
        iot_out_commit(&out);
    }
    if (built)
        iot_profile_free(&prof);
    if (all != recs)
        free(all);
    if (times != &iot_rank_io_time)
        free(times);
    return write;
}

void iot_capture_finish(MPI_Comm comm)
{
    if (!iot_capture_on || finished)
        return;
    finished = 1;
    int frozen = freeze();
    if (comm != MPI_COMM_NULL || frozen) /* the ranks' collectives go on in any case */
        finish(comm, comm != MPI_COMM_NULL, 1);
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

/* A rank other than 0 of a job whose launcher does not load the runtime (srun --export). */
static int later_rank(void)
{
    static const char *vars[] = {"PMI_RANK", "PMIX_RANK", "OMPI_COMM_WORLD_RANK", "SLURM_PROCID"};
    for (size_t i = 0; i < sizeof vars / sizeof *vars; i++) {
        const char *v = getenv(vars[i]);
        if (v && *v && atoi(v) != 0)
            return 1;
    }
    return 0;
}

/* fork() without exec: the child is a copy with the parent's counters and, in an MPI job, a
 * rank's identity it cannot use. It captures nothing and writes nothing (an exec'd program
 * starts afresh). The lock is held across fork so the child never inherits it taken. */
static void before_fork(void)
{
    pthread_mutex_lock(&iot_cap_lock);
}

static void after_fork_parent(void)
{
    pthread_mutex_unlock(&iot_cap_lock);
}

static void after_fork_child(void)
{
    iot_frozen = 1;
    iot_capture_on = 0;
    finished = 1;
    pthread_mutex_unlock(&iot_cap_lock);
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
    config_path = getenv("IOTUNE_CONFIG");
    iot_trace_init();
    if (profile_path)
        iot_session_init(); /* launchers too: they pass it on to the ranks */
    /* programs that an MPI rank starts (system(), popen()) must not write over its profile */
    int child_of_rank = getenv("IOTUNE_RANK_CHILD") != NULL;
    iot_capture_on = profile_path && !is_launcher() && !child_of_rank;
    if (iot_trace_on && !profile_path) {
        /* said once per run: the variable is turned off for the processes this one starts
         * (replacing an existing variable also reaches shells, which copy their environment
         * at start), and ranks other than 0 keep quiet */
        if (!later_rank())
            iot_log("IOTUNE_TRACE needs IOTUNE_PROFILE (the trace is written beside the "
                    "profile); no trace is recorded");
        setenv("IOTUNE_TRACE", "0", 1);
    }
    if (!iot_capture_on)
        iot_trace_on = 0;
    if (iot_capture_on)
        pthread_atfork(before_fork, after_fork_parent, after_fork_child);
}

/* MPI_Init came but MPI_Finalize never did (exit() on some path). The other ranks may be gone,
 * still running or aborting, and MPI may be in any state: a collective could hang and even a
 * local call is not safe after an abort. So no MPI call here: rank 0 writes what it alone saw,
 * marked "reduced": false, and says so; the other ranks write nothing (they have nobody to
 * reduce with). Hydra kills the remaining ranks when one exits without MPI_Finalize: rank 0
 * may be killed before it is done, and then there is no profile at all. */
static void exit_without_finalize(void)
{
    if (!iot_capture_on || finished)
        return;
    finished = 1;
    if (freeze() && mpi_rank == 0 && finish(MPI_COMM_NULL, 1, 0))
        iot_log("MPI_Finalize was not called: the profile %s has rank 0's counters alone (not "
                "reduced across ranks, \"reduced\": false)",
                profile_path);
}

__attribute__((destructor)) static void capture_end(void)
{
    if (!iot_capture_on || finished)
        return;
    if (mpi_rank >= 0) {
        exit_without_finalize(); /* in case atexit() could not register it */
        return;
    }
    finished = 1;
    if (freeze())
        finish(MPI_COMM_NULL, 0, 1); /* programs without MPI write their profile at exit */
}
