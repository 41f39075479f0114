#include "output/finish.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include "base/env.h"
#include "base/real.h"
#include "capture/capture.h"
#include "core/core.h"
#include "core/session.h"
#include "output/profile.h"
#include "output/profile_build.h"
#include "output/reduce.h"
#include "platform/fstype.h"
#include "platform/hosts.h"
#include "trace/trace.h"

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

/* The first caller ends capture; returns 0 to every later one (and once never() ran). */
static int claim(void)
{
    if (!iot_capture_on || iot_capture_done)
        return 0;
    iot_capture_done = 1;
    return 1;
}

/* The traces: one file per host, written by its leader (trace_host.c), each rank's own file
 * where that could not be (and with IOTUNE_TRACE_FILES=rank or both). Rank 0 alone reports
 * problems, in one line each. */
static void write_traces(MPI_Comm comm, const iot_hosts *hosts, int rank, int nranks, double shift,
                         double epoch)
{
    const char *profile = iot_env.profile;
    char dir[4200], path[4300], host[IOT_HOST_LEN];
    snprintf(dir, sizeof dir, "%s.trace", profile);
    mkdir(dir, 0777);
    iot_host_name(host);
    double origin = iot_clock.start - shift;
    int merged = 0, err = 0;
    if (hosts->comm != MPI_COMM_NULL && iot_env.trace_files != 1) {
        snprintf(path, sizeof path, "%s/host-%d.json.gz", dir, hosts->index);
        iot_trace_meta m = {rank, nranks, iot_session(), host, hosts->index, origin, epoch};
        merged = iot_trace_write_host(hosts->comm, path, &m);
    }
    if (!merged || iot_env.trace_files == 2) {
        snprintf(path, sizeof path, "%s/rank-%d.json.gz", dir, rank);
        err = iot_trace_write(path, rank, nranks, iot_session(), origin, epoch);
    }
    int asked = hosts->comm != MPI_COMM_NULL && iot_env.trace_files != 1;
    int mine[4] = {err != 0, iot_trace_truncated(), merged, asked && !merged && !err};
    int sums[4] = {mine[0], mine[1], mine[2], mine[3]}, worst = err;
    if (comm != MPI_COMM_NULL) {
        PMPI_Reduce(mine, sums, 4, MPI_INT, MPI_SUM, 0, comm);
        PMPI_Reduce(&err, &worst, 1, MPI_INT, MPI_MAX, 0, comm);
    }
    if (rank != 0)
        return;
    if (sums[0])
        iot_log("IOTUNE_PROFILE=%s: cannot write the trace of %d of %d rank%s in %s: %s", profile,
                sums[0], nranks, nranks == 1 ? "" : "s", dir, strerror(worst));
    if (sums[1])
        iot_log("the trace of %d rank%s reached IOTUNE_TRACE_LIMIT and is truncated (see "
                "\"dropped_calls\" in %s)",
                sums[1], sums[1] == 1 ? "" : "s", dir);
    if (sums[3])
        iot_log("the traces of %d of %d rank%s could not go into their host's file and are "
                "written one per rank in %s",
                sums[3], nranks, nranks == 1 ? "" : "s", dir);
    /* a previous run's files: every rank's when all went into host files */
    iot_out_prune_traces(dir, sums[2] == nranks && iot_env.trace_files == 0 ? 0 : nranks,
                         sums[2] ? hosts->count : 0);
}

/* IOTUNE_REDUCE_STATS=path: rank 0 writes what the reduction cost there, as one JSON object
 * (bench/scale_profile; docs/scale.md). */
static void report_reduction(const iot_job_files *j, int nranks, double seconds)
{
    const char *path = iot_env.reduce_stats;
    FILE *f = path ? iot_open_output(path) : NULL;
    if (!f)
        return;
    struct rusage ru = {0};
    getrusage(RUSAGE_SELF, &ru); /* rank 0's peak resident memory so far, in KiB */
    fprintf(f,
            "{\"ranks\": %d, \"bytes_to_rank0\": %llu, \"tree_bytes_to_rank0\": %llu, "
            "\"shared_files\": %d, \"gathered_records\": %d, \"summarised_files\": %llu, "
            "\"record_bytes\": %zu, \"file_rec_bytes\": %zu, \"reduce_s\": %.6f, "
            "\"rank0_max_rss_kb\": %ld}\n",
            nranks, (unsigned long long)j->bytes_in, (unsigned long long)j->tree_bytes, j->shared,
            j->gathered, (unsigned long long)j->summary.files, sizeof(iot_reduced),
            sizeof(iot_file_rec), seconds, ru.ru_maxrss);
    iot_real_fclose(f);
}

/* Moves this rank's times onto the job's clock (0: the earliest rank's start) and closes what
 * is still open. Returns the shift. */
static double to_job_clock(MPI_Comm comm, int rank, double now)
{
    double delta = iot_clock.sync >= 0 ? iot_clock.sync - iot_clock.start : 0, latest = delta;
    if (comm != MPI_COMM_NULL)
        PMPI_Allreduce(&delta, &latest, 1, MPI_DOUBLE, MPI_MAX, comm);
    double shift = latest - delta;
    int nrecs;
    iot_file_rec *recs = iot_recs(&nrecs);
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
    return shift;
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
    double shift = to_job_clock(comm, rank, now), epoch = iot_clock.wall_start - shift;
    double wall = now + shift, slowest = wall;
    iot_job_files job;
    double t0 = iot_now();
    if (comm != MPI_COMM_NULL)
        PMPI_Reduce(&wall, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, comm);
    int reduced_ok = iot_reduce_files(comm, &job) == 0;
    iot_hosts hosts;
    iot_hosts_gather(comm, &hosts);
    int write = 0;
    iot_profile prof;
    iot_out out;
    if (rank == 0 && !reduced_ok)
        iot_log("IOTUNE_PROFILE=%s: not enough memory to write the profile", iot_env.profile);
    if (rank == 0 && reduced_ok) {
        iot_profile_build(&prof, &job, nranks);
        iot_claim claim = {mpi, prof.bytes_written + prof.bytes_read, prof.nfiles};
        iot_out_once(iot_run_first); /* every process of a run meets the same problem */
        write = iot_out_open(&out, iot_env.profile, &claim) ? 1 + out.stream : 0;
        if (write)
            report_reduction(&job, nranks, iot_now() - t0);
        if (write == 2 && iot_trace_on)
            iot_log("IOTUNE_PROFILE=%s is not a regular file: the trace is not written (it goes "
                    "in a folder beside the profile)",
                    iot_env.profile);
    }
    if (comm != MPI_COMM_NULL)
        PMPI_Bcast(&write, 1, MPI_INT, 0, comm); /* traces go with the profile they belong to */
    if (write == 1 && iot_trace_on)
        write_traces(comm, &hosts, rank, nranks, shift, epoch);
    if (write && rank == 0) {
        iot_profile_meta meta = {iot_session(), mpi, reduced, epoch, slowest, &hosts};
        iot_profile_write(out.f, &prof, &meta);
        iot_out_commit(&out);
    }
    iot_hosts_free(&hosts);
    iot_job_files_free(&job);
    return write != 0;
}

void iot_finish_job(MPI_Comm comm)
{
    if (!claim())
        return;
    int frozen = freeze();
    if (comm != MPI_COMM_NULL || frozen) /* the ranks' collectives go on in any case */
        finish(comm, comm != MPI_COMM_NULL, 1);
}

/* MPI_Init came but MPI_Finalize never did (exit() on some path). The other ranks may be gone,
 * still running or aborting, and MPI may be in any state: a collective could hang and even a
 * local call is not safe after an abort. So no MPI call here: rank 0 writes what it alone saw,
 * marked "reduced": false, and says so; the other ranks write nothing (they have nobody to
 * reduce with). Hydra kills the remaining ranks when one exits without MPI_Finalize: rank 0
 * may be killed before it is done, and then there is no profile. */
void iot_finish_at_exit(int mpi_rank)
{
    if (!claim() || !freeze())
        return;
    if (mpi_rank < 0) {
        finish(MPI_COMM_NULL, 0, 1); /* programs without MPI write their profile at exit */
        return;
    }
    if (mpi_rank == 0 && finish(MPI_COMM_NULL, 1, 0))
        iot_log("MPI_Finalize was not called: the profile %s has rank 0's counters alone (not "
                "reduced across ranks, \"reduced\": false)",
                iot_env.profile);
}
