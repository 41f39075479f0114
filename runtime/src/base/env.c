/* Every IOTUNE_* variable the runtime reads, read once, at start-up (README, "variables"):
 *
 * | variable           | value                 | meaning                                     |
 * |--------------------|-----------------------|---------------------------------------------|
 * | IOTUNE_CONFIG      | path                  | the control file; unset: nothing is changed |
 * | IOTUNE_CONFIG_NAME | path                  | the name messages give the control file,    |
 * |                    |                       | when IOTUNE_CONFIG is a copy of it (iotune  |
 * |                    |                       | run's copy without Open MPI's parameters)   |
 * | IOTUNE_VERBOSE     | N >= 0, or a flag     | rank 0 reports what was applied per file    |
 * | IOTUNE_DISABLE     | flag                  | pass every call through untouched           |
 * | IOTUNE_PROFILE     | path                  | capture on; write the profile there         |
 * | IOTUNE_TRACE       | flag, all (2)         | record the call stream beside the profile   |
 * | IOTUNE_TRACE_LIMIT | N: 1 to 2^31-1        | at most N trace events per rank             |
 * | IOTUNE_TRACE_FILES | host, rank, both      | traces: one file per host (the default), or |
 * |                    |                       | per rank as before, or both (comparisons)   |
 * | IOTUNE_SESSION     | id: 1 to 63 of        | the run a profile belongs to (set when      |
 * |                    | A-Z a-z 0-9 - _ . :,  | unset); it names a directory: another value |
 * |                    | not . first           | is replaced by "x" and its hash             |
 * | IOTUNE_SYNC        | flag                  | fsync written files before close            |
 * | IOTUNE_RANK_CHILD  | 1 (set by the runtime)| started by an MPI rank: capture nothing     |
 * | IOTUNE_MODE        | adaptive              | rules applied to recurring phases (adapt.c) |
 * | IOTUNE_ADAPT_KB    | path                  | adaptive mode: an `iotune kb export` file;  |
 * |                    |                       | its entry of a learning phase's motif is    |
 * |                    |                       | applied to the later phases (adapt_kb.c).   |
 * |                    |                       | Not IOTUNE_KB: that is the CLI's database.  |
 * | IOTUNE_REDUCE_STATS | path                 | rank 0 writes the profile reduction's costs |
 * |                    |                       | there (JSON; bench/scale_profile)           |
 * | IOTUNE_TEST_SLOW_RULE | CODE[:FACTOR]      | TESTS ONLY: the adaptive guard sees phases  |
 * |                    |                       | that applied rule CODE as FACTOR (10) times |
 * |                    |                       | slower than measured, to test its revert    |
 * | IOTUNE_TEST_REFUSE | H5Fcreate             | TESTS ONLY: H5Fcreate with the control      |
 * |                    |                       | file's settings fails as when HDF5 refuses  |
 * |                    |                       | them after the driver made the (empty) file,|
 * |                    |                       | to test the fail-safe (wrap_hdf5_file.c)    |
 *
 * A flag is 0, 1, yes, no, true, false, on or off (any case). Empty is as unset. A value that
 * is none of the above is one problem (iot_env.problems): the default is used, as when unset,
 * and lifecycle.c says it once per run when the runtime has something to do (a profile or a
 * control file; else no variable changes anything).
 *
 * The runtime also sets IOTUNE_SESSION (first process of a run), IOTUNE_RANK_CHILD (in an MPI
 * rank) and IOTUNE_TRACE=0 (trace asked without a profile: said once) for its children. */
#include "base/env.h"

#include "base/hash.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

iot_env_vars iot_env;
static int read_done;

/* The value, or NULL when unset or empty. */
static const char *value(const char *name)
{
    const char *v = getenv(name);
    return v && *v ? v : NULL;
}

/* The value is the environment's own string (setenv() later replaces it, never frees it). */
static void problem(const char *name, const char *why)
{
    const char *v = getenv(name);
    if (iot_env.nproblems < IOT_ENV_MAX_PROBLEMS)
        iot_env.problems[iot_env.nproblems++] = (iot_env_problem){name, v ? v : "", why};
}

/* 1 or 0 for a flag's words, -1 for anything else. */
static int flag_word(const char *v)
{
    static const char *on[] = {"1", "yes", "true", "on"}, *off[] = {"0", "no", "false", "off"};
    for (size_t i = 0; i < sizeof on / sizeof *on; i++) {
        if (strcasecmp(v, on[i]) == 0)
            return 1;
        if (strcasecmp(v, off[i]) == 0)
            return 0;
    }
    return -1;
}

/* A flag; unset, empty or not a flag (said): 0. */
static int flag(const char *name)
{
    const char *v = value(name);
    int f = v ? flag_word(v) : 0;
    if (f < 0)
        problem(name, "not a flag (0, 1, yes, no, true, false, on, off); off is used");
    return f > 0;
}

/* A whole decimal number from lo to hi (no sign, space or suffix), else -1. */
static long long count(const char *v, long long lo, long long hi)
{
    if (!*v || strspn(v, "0123456789") != strlen(v) || strlen(v) > 12)
        return -1;
    long long n = strtoll(v, NULL, 10);
    return n >= lo && n <= hi ? n : -1;
}

/* A session names a directory of the run's markers (core.c) and is copied into profiles: only
 * what needs no escaping in a path or in JSON, not "." or "..", not hidden. Another value is
 * replaced by one made from it ("x" and its hash), the same in every process that has it: the
 * processes of the run stay one run (a shell keeps its own copy of the variable and passes it
 * on unchanged), and the run's markers say the problem once. */
static const char *session_id(void)
{
    const char *v = value("IOTUNE_SESSION");
    if (!v)
        return NULL;
    static const char ok[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.:";
    const char *why = strlen(v) > 63               ? "longer than 63 characters"
                      : strspn(v, ok) != strlen(v) ? "not only A-Z a-z 0-9 - _ . :"
                      : *v == '.'                  ? "begins with '.'"
                                                   : NULL;
    if (!why)
        return v;
    static char id[20], text[200];
    snprintf(id, sizeof id, "x%016llx", (unsigned long long)iot_fnv1a(v));
    snprintf(text, sizeof text, "%s (it names a directory); the session %s, made from it, is used",
             why, id);
    problem("IOTUNE_SESSION", text);
    return id;
}

static void read_trace(void)
{
    const char *v = value("IOTUNE_TRACE");
    int f = v ? flag_word(v) : 0;
    iot_env.trace = v && (strcasecmp(v, "all") == 0 || strcmp(v, "2") == 0) ? 2 : f > 0;
    if (f < 0 && !iot_env.trace)
        problem("IOTUNE_TRACE", "not 0, 1, 2, all or a flag (yes, no, ...); no trace is recorded");
    v = value("IOTUNE_TRACE_LIMIT");
    iot_env.trace_limit = v ? count(v, 1, (1ll << 31) - 1) : 0;
    if (iot_env.trace_limit < 0) {
        iot_env.trace_limit = 0;
        problem("IOTUNE_TRACE_LIMIT", "not a whole number from 1 to 2147483647; the default "
                                      "(1048576 runs per rank) is used");
    }
    v = value("IOTUNE_TRACE_FILES");
    iot_env.trace_files = !v ? 0 : strcmp(v, "rank") == 0 ? 1 : strcmp(v, "both") == 0 ? 2 : 0;
    if (v && strcmp(v, "host") && !iot_env.trace_files)
        problem("IOTUNE_TRACE_FILES", "not host, rank or both; host (one file per host) is used");
}

void iot_env_read(void)
{
    if (read_done)
        return;
    read_done = 1;
    iot_env.config = value("IOTUNE_CONFIG");
    iot_env.config_name = value("IOTUNE_CONFIG_NAME");
    if (!iot_env.config_name)
        iot_env.config_name = iot_env.config;
    iot_env.profile = value("IOTUNE_PROFILE");
    iot_env.session = session_id();
    const char *v = value("IOTUNE_VERBOSE");
    long long n = v ? count(v, 0, 1000) : 0;
    iot_env.verbose = n >= 0 ? (int)n : flag_word(v);
    if (iot_env.verbose < 0) {
        iot_env.verbose = 0;
        problem("IOTUNE_VERBOSE", "not a whole number from 0 to 1000 or a flag (0, 1, yes, no, "
                                  "true, false, on, off); quiet (0) is used");
    }
    iot_env.disabled = flag("IOTUNE_DISABLE");
    read_trace();
    iot_env.sync = flag("IOTUNE_SYNC");
    iot_env.rank_child = getenv("IOTUNE_RANK_CHILD") != NULL;
    iot_env.mode = v = value("IOTUNE_MODE");
    iot_env.adaptive = v && strcmp(v, "adaptive") == 0;
    iot_env.slow_rule = value("IOTUNE_TEST_SLOW_RULE");
    iot_env.reduce_stats = value("IOTUNE_REDUCE_STATS");
    v = value("IOTUNE_TEST_REFUSE");
    iot_env.refuse_create = v && strcmp(v, "H5Fcreate") == 0;
    if (v && !iot_env.refuse_create)
        problem("IOTUNE_TEST_REFUSE", "not H5Fcreate (the one call it can refuse); ignored");
    iot_env.adapt_kb = value("IOTUNE_ADAPT_KB");
}

void iot_env_export(const char *name, const char *val)
{
    setenv(name, val, 1);
}
