/* Every IOTUNE_* variable the runtime reads, read once, at start-up (README, "variables"):
 *
 * | variable           | value                 | meaning                                     |
 * |--------------------|-----------------------|---------------------------------------------|
 * | IOTUNE_CONFIG      | path                  | the control file; unset: nothing is changed |
 * | IOTUNE_CONFIG_NAME | path                  | the name messages give the control file,    |
 * |                    |                       | when IOTUNE_CONFIG is a copy of it (iotune  |
 * |                    |                       | run's copy without Open MPI's parameters)   |
 * | IOTUNE_VERBOSE     | 0, 1, yes             | rank 0 reports what was applied per file    |
 * | IOTUNE_DISABLE     | 0, 1                  | pass every call through untouched           |
 * | IOTUNE_PROFILE     | path                  | capture on; write the profile there         |
 * | IOTUNE_TRACE       | 0, 1, all (2)         | record the call stream beside the profile   |
 * | IOTUNE_TRACE_LIMIT | N                     | at most N trace events per rank             |
 * | IOTUNE_TRACE_FILES | host, rank, both      | traces: one file per host (the default), or |
 * |                    |                       | per rank as before, or both (comparisons)   |
 * | IOTUNE_SESSION     | id                    | the run a profile belongs to (set when unset)|
 * | IOTUNE_SYNC        | 0, 1                  | fsync written files before close            |
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
 * The runtime also sets IOTUNE_SESSION (first process of a run), IOTUNE_RANK_CHILD (in an MPI
 * rank) and IOTUNE_TRACE=0 (trace asked without a profile: said once) for its children. */
#include "base/env.h"

#include <stdlib.h>
#include <string.h>

iot_env_vars iot_env;
static int read_done;

/* The value, or NULL when unset or empty. */
static const char *value(const char *name)
{
    const char *v = getenv(name);
    return v && *v ? v : NULL;
}

/* Set and not "0". */
static int flag(const char *name)
{
    const char *v = value(name);
    return v && strcmp(v, "0") != 0;
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
    iot_env.session = value("IOTUNE_SESSION");
    const char *v = value("IOTUNE_VERBOSE");
    iot_env.verbose = v ? atoi(v) : 0;
    if (v && !iot_env.verbose && strcmp(v, "0") != 0)
        iot_env.verbose = 1; /* IOTUNE_VERBOSE=yes */
    iot_env.disabled = flag("IOTUNE_DISABLE");
    v = value("IOTUNE_TRACE");
    iot_env.trace = !v || strcmp(v, "0") == 0                      ? 0
                    : strcmp(v, "all") == 0 || strcmp(v, "2") == 0 ? 2
                                                                   : 1;
    v = value("IOTUNE_TRACE_LIMIT");
    iot_env.trace_limit = v ? atoll(v) : 0;
    v = value("IOTUNE_TRACE_FILES");
    iot_env.trace_files = !v ? 0 : strcmp(v, "rank") == 0 ? 1 : strcmp(v, "both") == 0 ? 2 : 0;
    iot_env.sync = flag("IOTUNE_SYNC");
    iot_env.rank_child = getenv("IOTUNE_RANK_CHILD") != NULL;
    iot_env.mode = v = value("IOTUNE_MODE");
    iot_env.adaptive = v && strcmp(v, "adaptive") == 0;
    iot_env.slow_rule = value("IOTUNE_TEST_SLOW_RULE");
    iot_env.reduce_stats = value("IOTUNE_REDUCE_STATS");
    v = value("IOTUNE_TEST_REFUSE");
    iot_env.refuse_create = v && strcmp(v, "H5Fcreate") == 0;
    iot_env.adapt_kb = value("IOTUNE_ADAPT_KB");
}

void iot_env_export(const char *name, const char *val)
{
    setenv(name, val, 1);
}
