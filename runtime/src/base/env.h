/* The runtime's environment: every IOTUNE_* variable, read once at start-up (env.c has the
 * table of what each one means). No other file reads them. */
#ifndef IOTUNE_ENV_H
#define IOTUNE_ENV_H

/* A variable whose value was refused: its name, the value, why, and what is used instead. */
typedef struct {
    const char *name, *value, *why;
} iot_env_problem;

#define IOT_ENV_MAX_PROBLEMS 8

typedef struct {
    const char *config;      /* IOTUNE_CONFIG: the control file, NULL when unset or empty */
    const char *config_name; /* IOTUNE_CONFIG_NAME, else config: the file messages name */
    const char *profile;     /* IOTUNE_PROFILE: where the profile goes, NULL: no capture */
    const char *session;     /* IOTUNE_SESSION: the run this process belongs to, or NULL */
    int verbose;             /* IOTUNE_VERBOSE: 0 quiet, >0 report what was applied */
    int disabled;            /* IOTUNE_DISABLE: pass every call through */
    int trace;               /* IOTUNE_TRACE: 0 off, 1 application calls, 2 every layer */
    long long trace_limit;   /* IOTUNE_TRACE_LIMIT: events per rank, 0 for the default */
    int trace_files;         /* IOTUNE_TRACE_FILES: 0 one per host, 1 one per rank, 2 both */
    int sync;                /* IOTUNE_SYNC: fsync written files before close */
    int rank_child;          /* IOTUNE_RANK_CHILD: started by an MPI rank (system(), popen()) */
    int adaptive;            /* IOTUNE_MODE=adaptive: rules applied to recurring phases */
    const char *mode;        /* IOTUNE_MODE as given (NULL: unset or empty) */
    const char *slow_rule;   /* IOTUNE_TEST_SLOW_RULE: tests only, see env.c */
    int refuse_create;       /* IOTUNE_TEST_REFUSE=H5Fcreate: tests only, see env.c */
    const char *adapt_kb;    /* IOTUNE_ADAPT_KB: an exported knowledge base for the adaptive mode */
    const char *reduce_stats; /* IOTUNE_REDUCE_STATS: where rank 0 writes the finish's costs */
    iot_env_problem problems[IOT_ENV_MAX_PROBLEMS]; /* values refused (lifecycle.c says them) */
    int nproblems;
} iot_env_vars;

extern iot_env_vars iot_env;

/* Reads the variables (the first call only; later calls do nothing). */
void iot_env_read(void);

/* Sets a variable for the processes this one starts. */
void iot_env_export(const char *name, const char *value);

#endif
