/* A skeleton's state: its run-time options (skel_init), steps and the compute time between
 * them, and the helpers every part uses (messages, the clock, file names). */
#define _GNU_SOURCE
#include "skel_internal.h"

#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

long long skel_size = 1;

/* MPI_Abort after a message: the launcher kills every rank at once and may drop what a rank
 * wrote just before (seen under load: an empty stderr), so the message gets a moment to leave. */
static void abort_after_message(void)
{
    fflush(stderr);
    struct timespec pause = {0, 200 * 1000 * 1000};
    nanosleep(&pause, NULL);
    MPI_Abort(MPI_COMM_WORLD, 1);
}

void skel_die(skel_t *s, const char *what)
{
    fprintf(stderr, "skeleton %s: rank %d: %s\n", s ? s->name : "?", s ? s->rank : -1, what);
    abort_after_message();
}

/* A refusal every rank reaches with the same values (options, sizes): rank 0 says it and all
 * leave cleanly. MPI_Abort could kill the ranks before their message left the node. */
static void skel_refuse_all(skel_t *s, const char *what)
{
    if (s->rank == 0)
        fprintf(stderr, "skeleton %s: %s\n", s->name, what);
    fflush(stderr);
    MPI_Finalize();
    exit(2);
}

void skel_overflow(const char *op, long long a, long long b)
{
    int rank = -1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    fprintf(stderr,
            "skeleton: rank %d: %lld %s %lld %s: a size, offset or count of the descriptor is "
            "out of range for these parameters\n",
            rank, a, op, b,
            *op == '/' || *op == '%' ? "divides by zero or overflows" : "overflows");
    abort_after_message();
    abort();
}

/* A whole number option value: digits only, within [lo, hi]; else *bad is set. */
static long long number_arg(const char *v, long long lo, long long hi, int *bad)
{
    char *end = NULL;
    errno = 0;
    long long x = strtoll(v, &end, 10);
    if (errno || end == v || *end || x < lo || x > hi)
        *bad = 1;
    return x;
}

double skel_now(void)
{
    return MPI_Wtime();
}

void skel_add(skel_t *s, int part, double t0)
{
    s->times[s->cur_step * T_N + part] += skel_now() - t0;
}

/* {step} and {rank}, or zero-padded to a width: {step:04} (the application's names' padding) */
static int placeholder(const char *p, const char *which, int *width)
{
    size_t n = strlen(which);
    if (p[0] != '{' || strncmp(p + 1, which, n) != 0)
        return 0;
    const char *q = p + 1 + n;
    *width = 0;
    if (q[0] == ':' && q[1] == '0' && q[2] >= '1' && q[2] <= '9') {
        q += 2;
        while (*q >= '0' && *q <= '9' && *width < 100)
            *width = *width * 10 + (*q++ - '0');
    }
    return *q == '}' ? (int)(q + 1 - p) : 0;
}

void skel_format_name(char *out, size_t n, const char *pattern, long long step, int rank)
{
    size_t o = 0;
    for (const char *p = pattern; *p && o + 128 < n;) {
        int width, len;
        if ((len = placeholder(p, "step", &width)) > 0) {
            o += (size_t)snprintf(out + o, n - o, "%0*lld", width, step);
            p += len;
        } else if ((len = placeholder(p, "rank", &width)) > 0) {
            o += (size_t)snprintf(out + o, n - o, "%0*d", width, rank);
            p += len;
        } else {
            out[o++] = *p++;
        }
    }
    out[o] = '\0';
}

void skel_remember(skel_t *s, const char *path)
{
    if (!s->cleanup)
        return;
    for (int i = 0; i < s->ncreated; i++)
        if (strcmp(s->created[i], path) == 0)
            return;
    s->created = realloc(s->created, sizeof(char *) * (size_t)(s->ncreated + 1));
    s->created[s->ncreated++] = strdup(path);
}

static enum skel_method parse_method(const char *m)
{
    if (strcmp(m, "native") == 0)
        return SKEL_NATIVE;
    if (strcmp(m, "hdf5") == 0)
        return SKEL_M_HDF5;
    if (strcmp(m, "mpiio") == 0)
        return SKEL_M_MPIIO;
    if (strcmp(m, "posix") == 0)
        return SKEL_M_POSIX;
    if (strcmp(m, "aggregate") == 0)
        return SKEL_AGGREGATE;
    return (enum skel_method) - 1;
}

static const char *USAGE =
    "options: --method native|hdf5|mpiio|posix|aggregate  --transfer collective|independent\n"
    "         --stripe BYTES  --aggregators N  --steps N  --set NAME=VALUE  --timing FILE\n"
    "         --dir DIR  --cleanup  --gaps busy|sleep|off\n";

skel_t *skel_init(int *argc, char ***argv, const char *name, const char *default_method,
                  skel_param *params, int nparams, long long *steps,
                  long long (*default_steps)(void))
{
    MPI_Init(argc, argv);
    skel_t *s = calloc(1, sizeof *s);
    if (!s)
        skel_die(NULL, "out of memory");
    s->name = name;
    MPI_Comm_rank(MPI_COMM_WORLD, &s->rank);
    MPI_Comm_size(MPI_COMM_WORLD, &s->size);
    skel_size = s->size;
    s->method = parse_method(default_method);
    s->transfer = -1;
    s->stripe = 1 << 20;
    s->aggregators = 1;
    s->timing = NULL;
    s->dir = NULL;
    s->gaps = -1;
    char **av = *argv;
    for (int i = 1; i < *argc; i++) {
        const char *a = av[i], *v = i + 1 < *argc ? av[i + 1] : NULL;
        int bad = 0;
        if (strcmp(a, "--help") == 0) {
            if (s->rank == 0)
                printf("usage: %s [options]\n%s", av[0], USAGE);
            MPI_Finalize();
            exit(0);
        } else if (strcmp(a, "--cleanup") == 0) {
            s->cleanup = 1;
            continue;
        }
        if (!v)
            bad = 1;
        else if (strcmp(a, "--method") == 0)
            bad = (int)(s->method = parse_method(v)) < 0;
        else if (strcmp(a, "--transfer") == 0) {
            s->transfer = strcmp(v, "collective") == 0 ? 1 : strcmp(v, "independent") == 0 ? 0 : -2;
            bad = s->transfer == -2;
        } else if (strcmp(a, "--stripe") == 0)
            s->stripe = number_arg(v, 1, LLONG_MAX, &bad);
        else if (strcmp(a, "--aggregators") == 0)
            s->aggregators = (int)number_arg(v, 1, INT_MAX, &bad);
        else if (strcmp(a, "--steps") == 0)
            *steps = number_arg(v, 1, LLONG_MAX, &bad);
        else if (strcmp(a, "--timing") == 0)
            s->timing = v;
        else if (strcmp(a, "--dir") == 0)
            s->dir = v;
        else if (strcmp(a, "--gaps") == 0)
            bad = (s->gaps = skel_gaps_mode(v)) < 0;
        else if (strcmp(a, "--set") == 0) {
            const char *eq = strchr(v, '=');
            bad = 1;
            for (int p = 0; eq && p < nparams; p++)
                if (strlen(params[p].name) == (size_t)(eq - v) &&
                    !strncmp(params[p].name, v, eq - v)) {
                    bad = 0;
                    *params[p].value = number_arg(eq + 1, LLONG_MIN, LLONG_MAX, &bad);
                }
        } else
            bad = 1;
        if (bad) {
            if (s->rank == 0)
                fprintf(stderr, "skeleton %s: bad option %s %s\n%s", name, a, v ? v : "", USAGE);
            MPI_Finalize();
            exit(2);
        }
        i++;
    }
    if (s->dir && chdir(s->dir) != 0)
        skel_die(s, "cannot change to --dir");
    if (*steps < 1)
        *steps = default_steps(); /* after --set: it may use the parameters */
    if (*steps < 1)
        skel_die(s, "the number of steps is below 1");
    /* the per-step times are gathered to rank 0 (an int count of doubles per rank): bound
     * the steps by that, and the memory rank 0 needs, before any I/O */
    if (*steps > INT_MAX / T_N ||
        (uint64_t)*steps * T_N * sizeof(double) * (uint64_t)s->size > ((uint64_t)1 << 34)) {
        char msg[200];
        snprintf(msg, sizeof msg,
                 "%lld steps at %d ranks: too many to time (at most %d steps, and 16 GiB of "
                 "timings at rank 0)",
                 *steps, s->size, INT_MAX / T_N);
        skel_refuse_all(s, msg);
    }
    s->steps = *steps;
    s->times = calloc((size_t)s->steps * T_N, sizeof(double));
    if (!s->times)
        skel_die(s, "out of memory for the per-step timings");
    if (s->aggregators > s->size)
        s->aggregators = s->size;
    s->group = (int)((long long)s->rank * s->aggregators / s->size);
    MPI_Comm_split(MPI_COMM_WORLD, s->group, s->rank, &s->group_comm);
    return s;
}

void skel_step(skel_t *s, long long step)
{
    s->cur_step = step < s->steps ? step : s->steps - 1;
    s->cursor = 0; /* a new step rewrites the same arrays */
}

/* After the application's inputs were made (before the first step): every rank's are on the
 * file system before any rank reads them, and their time and bytes are no step's. */
void skel_inputs_made(skel_t *s)
{
    MPI_Barrier(MPI_COMM_WORLD);
    memset(s->times, 0, (size_t)s->steps * T_N * sizeof(double));
    s->bytes = 0;
    skel_step(s, 0);
}

void skel_compute(skel_t *s, double seconds)
{
    (void)s;
    if (seconds <= 0)
        return;
    struct timespec ts = {(time_t)seconds, (long)((seconds - (double)(time_t)seconds) * 1e9)};
    nanosleep(&ts, NULL);
}
