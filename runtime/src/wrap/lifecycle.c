/* The runtime's life in a process: start-up (environment, clock, whether to capture), the
 * MPI_Init and MPI_Finalize hooks, fork, and the end at exit. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adapt/adapt.h"
#include "base/env.h"
#include "capture/capture.h"
#include "config/values.h"
#include "core/abi.h"
#include "core/core.h"
#include "core/session.h"
#include "output/finish.h"
#include "platform/budget.h"
#include "trace/trace.h"

static int mpi_rank = -1; /* in MPI_COMM_WORLD, once MPI_Init has returned */

/* Launchers inherit LD_PRELOAD too; they must neither capture nor write a profile. Any
 * mpiexec/mpirun, also with a suffix (mpiexec.hydra, mpirun.openmpi, mpiexec.mpich). */
static int is_launcher(void)
{
    extern char *program_invocation_short_name;
    const char *me = program_invocation_short_name;
    static const char *names[] = {"hydra_pmi_proxy", "srun",  "orterun",    "orted", "prterun",
                                  "prted",           "prte",  "slurmstepd", "flux",  "aprun",
                                  "jsrun",           "ibrun", "mpispawn"};
    if (strncmp(me, "mpiexec", 7) == 0 || strncmp(me, "mpirun", 6) == 0)
        return 1;
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (strcmp(me, names[i]) == 0)
            return 1;
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
    iot_capture_never();
    pthread_mutex_unlock(&iot_cap_lock);
}

/* An IOTUNE_MODE that cannot act is said once per run, as IOTUNE_TRACE without a profile
 * is: a typo (adaptiv) or the adaptive mode without IOTUNE_PROFILE (it learns from the
 * phases the capture records) did nothing and said nothing (an outside tester). The variable
 * is emptied for the processes this one starts (the launcher's ranks), so ranks keep quiet. */
static void mode_checked(void)
{
    const char *why = NULL;
    if (iot_env.mode && !iot_env.adaptive)
        why = "not a mode of iotune (the one mode is adaptive); ignored";
    else if (iot_env.adaptive && !iot_env.profile)
        why = "the adaptive mode needs IOTUNE_PROFILE (it learns from the phases the profile "
              "records); the mode is off";
    if (!why)
        return;
    char shown[IOT_SHOWN_MAX];
    if (iot_run_first("mode-cannot-act"))
        iot_log("IOTUNE_MODE=%s: %s", iot_value_shown(iot_env.mode, shown), why);
    iot_env_export("IOTUNE_MODE", "");
}

/* Each IOTUNE_* value env.c refused: one line per run (the session's markers) naming the
 * variable, the value, why, and what is used instead (the default). The variable is emptied for the
 * processes this one starts (empty is as unset), so they neither say it again nor read it
 * otherwise. */
static void env_checked(void)
{
    for (int i = 0; i < iot_env.nproblems; i++) {
        const iot_env_problem *p = &iot_env.problems[i];
        char key[64], shown[IOT_SHOWN_MAX];
        snprintf(key, sizeof key, "env:%s", p->name);
        if (iot_run_first(key))
            iot_log("%s=%s: %s", p->name, iot_value_shown(p->value, shown), p->why);
        if (strcmp(p->name, "IOTUNE_SESSION") != 0) /* the session env.c made goes on */
            iot_env_export(p->name, "");
    }
}

__attribute__((constructor)) static void runtime_start(void)
{
    iot_clock.start = iot_now();
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    iot_clock.wall_start = (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
    iot_env_read();
    iot_trace_init();
    if (iot_env.profile || iot_env.config) {
        iot_session_init(); /* launchers too: they pass it on to the ranks */
        env_checked();      /* else the runtime does nothing the variables could change */
    }
    /* programs that an MPI rank starts (system(), popen()) must not write over its profile */
    iot_capture_on = iot_env.profile && !is_launcher() && !iot_env.rank_child;
    iot_adapt_init();
    mode_checked();
    if (iot_trace_on && !iot_env.profile) {
        /* said once per run: the variable is turned off for the processes this one starts
         * (replacing an existing variable also reaches shells, which copy their environment
         * at start), and ranks other than 0 keep quiet */
        if (iot_run_first("trace-without-profile"))
            iot_log("IOTUNE_TRACE needs IOTUNE_PROFILE (the trace is written beside the "
                    "profile); no trace is recorded");
        iot_env_export("IOTUNE_TRACE", "0");
    }
    if (!iot_capture_on)
        iot_trace_on = 0;
    iot_abi_start();
    if (iot_mpi_state == IOT_MPI_FOREIGN)
        return;
    if (iot_capture_on)
        pthread_atfork(before_fork, after_fork_parent, after_fork_child);
}

static void exit_without_finalize(void)
{
    iot_finish_at_exit(mpi_rank);
}

__attribute__((destructor)) static void runtime_end(void)
{
    iot_finish_at_exit(mpi_rank); /* also in case atexit() could not register it */
    iot_run_markers_remove();
}

/* After MPI_Init: the control file, collectively; one session and one clock for the job;
 * and a mark for the processes this rank may start, so that they do not write profiles of
 * their own. */
static void started(void)
{
    iot_abi_describe();
    iot_load(MPI_COMM_WORLD);
    /* the memory budget the bounds judge settings by, the same on every rank (the settings
     * were broadcast and the adaptive mode is the job's: all ranks take part, or none) */
    if (!iot_g.disabled && (iot_g.settings.count > 0 || iot_adapt_on))
        iot_limits_agree(MPI_COMM_WORLD);
    if (iot_capture_on) {
        /* at exit, before the destructors: the launcher may kill this rank as soon as
         * another one has exited without MPI_Finalize */
        atexit(exit_without_finalize);
        PMPI_Comm_rank(MPI_COMM_WORLD, &mpi_rank);
        char id[64];
        snprintf(id, sizeof id, "%s", iot_session());
        PMPI_Bcast(id, (int)sizeof id, MPI_CHAR, 0, MPI_COMM_WORLD);
        iot_session_set(id); /* ranks started without a launcher made sessions of their own */
        /* every rank leaves the barrier within a message latency: the job's common instant */
        PMPI_Barrier(MPI_COMM_WORLD);
        iot_clock.sync = iot_now();
    }
    iot_env_export("IOTUNE_RANK_CHILD", "1");
}

/* Entered through abi.h's stubs: only for the MPI this runtime was built for (the other
 * family's calls go straight to its MPI). */
IOT_MPI_WRAPPER(int, MPI_Init, (int *argc, char ***argv))
{
    int rc = PMPI_Init(argc, argv);
    if (rc == MPI_SUCCESS)
        started();
    return rc;
}

IOT_MPI_WRAPPER(int, MPI_Init_thread, (int *argc, char ***argv, int required, int *provided))
{
    int rc = PMPI_Init_thread(argc, argv, required, provided);
    if (rc == MPI_SUCCESS)
        started();
    return rc;
}

IOT_MPI_WRAPPER(int, MPI_Finalize, (void))
{
    iot_finish_job(MPI_COMM_WORLD);
    iot_adapt_release();
    return PMPI_Finalize();
}
