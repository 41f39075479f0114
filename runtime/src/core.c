#include "core.h"

#include "env.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "abi.h"
#include "hash.h"
#include "output.h"

iot_state iot_g;

int iot_world_rank(void)
{
    int init = 0, fini = 0, rank = 0;
    if (iot_mpi_state == IOT_MPI_FOREIGN)
        return iot_launcher_rank() > 0 ? iot_launcher_rank() : 0;
    MPI_Initialized(&init);
    MPI_Finalized(&fini);
    if (init && !fini)
        PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
    return rank;
}

void iot_log(const char *fmt, ...)
{
    int saved = errno; /* the application may read errno after the wrapped call */
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    fprintf(stderr, "iotune: %s\n", line);
    errno = saved;
}

void iot_log_block(const char *header, const char *lines)
{
    fprintf(stderr, "iotune: %s\n", header);
    while (lines && *lines) {
        size_t n = strcspn(lines, "\n");
        fprintf(stderr, "iotune:   %.*s\n", (int)n, lines);
        lines += n + (lines[n] == '\n');
    }
}

void iot_warn_once(const char *key, const char *fmt, ...)
{
    if (!iot_run_first(key))
        return;
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    iot_log("%s", line);
}

const char *iot_origin(const iot_entry *e, char *buf, int len)
{
    if (e->line < 0) { /* an entry of the adaptive mode's rules (adapt.c) */
        snprintf(buf, (size_t)len, "adaptive mode");
        return buf;
    }
    const char *config_path = iot_env.config;
    const char *base = config_path ? strrchr(config_path, '/') : NULL;
    snprintf(buf, (size_t)len, "%s:%d", base ? base + 1 : (config_path ? config_path : "?"),
             e->line);
    return buf;
}

/* Copies text into buf on one line: line breaks become \n. */
static const char *one_line(const char *text, char *buf, size_t len)
{
    size_t n = 0;
    for (; *text && n + 3 < len; text++) {
        if (*text == '\n' || *text == '\r') {
            buf[n++] = '\\';
            buf[n++] = *text == '\n' ? 'n' : 'r';
        } else {
            buf[n++] = *text;
        }
    }
    buf[n] = '\0';
    return buf;
}

/* One line per problem: file, line, element, message and the value when the message does
 * not quote it already. */
static void print_problem(void *ctx, int line, const char *element, const char *value,
                          const char *message, int fatal)
{
    char where[32] = "", what[96] = "", val[300] = "", msg[600];
    if (line > 0)
        snprintf(where, sizeof where, ":%d", line);
    if (element)
        snprintf(what, sizeof what, " <%s>:", element);
    if (value && !strstr(message, value)) {
        char v[280];
        snprintf(val, sizeof val, " (value \"%s\")", one_line(value, v, sizeof v));
    }
    /* once per run: a pipeline of programs reads the same file in every process */
    char key[1200];
    snprintf(key, sizeof key, "config:%s:%d:%s:%s", iot_env.config, line, element ? element : "",
             message);
    if (!iot_run_first(key))
        return;
    /* a message that says what is ignored already needs no "; ignored" */
    size_t n = strlen(message);
    int says_it = n >= 7 && strcmp(message + n - 7, "ignored") == 0;
    iot_log("%s%s:%s %s%s%s", iot_env.config, where, what, one_line(message, msg, sizeof msg), val,
            fatal     ? "; no settings from this file are applied"
            : says_it ? ""
                      : "; ignored");
}

void iot_load(MPI_Comm comm)
{
    if (iot_g.loaded)
        return;
    iot_env_read(); /* a library's constructor may open a file before ours has run */
    iot_g.verbose = iot_env.verbose;
    iot_g.disabled = iot_env.disabled;
    const char *config_path = iot_env.config;
    int rank = 0, nprocs = 1;
    if (comm != MPI_COMM_NULL) {
        PMPI_Comm_rank(comm, &rank);
        PMPI_Comm_size(comm, &nprocs);
    }
    if (config_path && !iot_g.disabled && rank == 0) {
        /* only one rank speaks, also when every rank reads the file itself */
        int speak = comm != MPI_COMM_NULL || iot_world_rank() == 0;
        iot_settings_load(config_path, &iot_g.settings, speak ? print_problem : NULL, NULL);
    }
    if (nprocs > 1) {
        int count = iot_g.settings.count;
        PMPI_Bcast(&count, 1, MPI_INT, 0, comm);
        if (rank != 0 && count > 0)
            iot_g.settings.entries = calloc((size_t)count, sizeof(iot_entry));
        /* entry by entry, so that a rank short of memory can still take part */
        for (int i = 0; i < count; i++) {
            iot_entry scratch;
            iot_entry *e = iot_g.settings.entries ? &iot_g.settings.entries[i] : &scratch;
            PMPI_Bcast(e, (int)sizeof *e, MPI_BYTE, 0, comm);
        }
        if (!iot_g.settings.entries)
            count = 0;
        iot_g.settings.count = count;
    }
    iot_g.loaded = 1;
    if (iot_g.verbose && rank == 0 && config_path && iot_world_rank() == 0)
        iot_log("control file %s: %d setting%s", config_path, iot_g.settings.count,
                iot_g.settings.count == 1 ? "" : "s");
}

/* ---- once per run: the first process of the run to claim a key speaks ---- */

/* Removes a run's marker directory (its markers are empty directories). */
static void remove_run_dir(int parent, const char *name)
{
    int fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (d) {
        struct dirent *e;
        while ((e = readdir(d)))
            if (e->d_name[0] != '.')
                unlinkat(dirfd(d), e->d_name, AT_REMOVEDIR);
        closedir(d);
    } else if (fd >= 0) {
        close(fd);
    }
    unlinkat(parent, name, AT_REMOVEDIR);
}

/* Runs whose first process did not stay to the end (a shell that exec'd its last program)
 * leave their markers: a new run removes those older than a day. */
static void prune_old_runs(const char *base)
{
    DIR *d = opendir(base);
    if (!d)
        return;
    time_t now = time(NULL);
    struct dirent *e;
    struct stat st;
    while ((e = readdir(d)))
        if (e->d_name[0] != '.' && fstatat(dirfd(d), e->d_name, &st, 0) == 0 &&
            S_ISDIR(st.st_mode) && st.st_mtime < now - 86400)
            remove_run_dir(dirfd(d), e->d_name);
    closedir(d);
}

/* The directory of this run's markers: <tmp>/iotune-<uid>/<session>, made on first use. */
static int run_dir(char *dir, size_t len)
{
    const char *session = iot_session();
    if (!session[0])
        return 0;
    const char *tmp = getenv("TMPDIR"); /* not an IOTUNE_ variable: where temporary files go */
    if (!tmp || !*tmp)
        tmp = "/tmp";
    snprintf(dir, len, "%s/iotune-%u", tmp, (unsigned)getuid());
    mkdir(dir, 0700);
    size_t n = strlen(dir);
    snprintf(dir + n, len - n, "/%s", session);
    if (mkdir(dir, 0700) == 0) {
        dir[n] = '\0';
        prune_old_runs(dir);
        dir[n] = '/';
        return 1;
    }
    return errno == EEXIST;
}

static int run_first(const char *key);

/* Never changes errno: it is called from wrappers whose caller reads errno next. */
int iot_run_first(const char *key)
{
    int saved = errno;
    int first = run_first(key);
    errno = saved;
    return first;
}

static int run_first(const char *key)
{
    static char seen[64][96];
    static int nseen;
    for (int i = 0; i < nseen; i++)
        if (strcmp(seen[i], key) == 0)
            return 0;
    if (nseen < 64)
        snprintf(seen[nseen++], sizeof seen[0], "%s", key);
    /* an MPI job's rank 0 speaks for it (before MPI_Init, or without the runtime's MPI: the
     * launcher's rank variables say which rank this is) */
    if (iot_launcher_rank() > 0 || (iot_mpi_state != IOT_MPI_FOREIGN && iot_world_rank() > 0))
        return 0;
    char dir[512], path[700];
    if (!run_dir(dir, sizeof dir))
        return 1; /* no marker possible: better twice than never */
    snprintf(path, sizeof path, "%s/%016llx", dir, (unsigned long long)iot_fnv1a(key));
    return mkdir(path, 0700) == 0 || errno != EEXIST; /* atomic: one process makes it */
}

void iot_run_markers_remove(void)
{
    char dir[512];
    struct stat st;
    if (!iot_session_created() || !iot_session()[0])
        return;
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/iotune-%u/%s", tmp && *tmp ? tmp : "/tmp", (unsigned)getuid(),
             iot_session());
    if (stat(dir, &st) == 0) /* made only when something was said */
        remove_run_dir(AT_FDCWD, dir);
}
