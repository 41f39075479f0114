#include "core/core.h"

#include "base/env.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "base/hash.h"
#include "base/printable.h"
#include "core/session.h"

iot_state iot_g;

/* The launchers' variables, not the runtime's (lifecycle.c knows the launchers). */
int iot_launcher_rank(void)
{
    static const char *vars[] = {"PMI_RANK", "PMIX_RANK", "OMPI_COMM_WORLD_RANK", "SLURM_PROCID"};
    for (size_t i = 0; i < sizeof vars / sizeof *vars; i++) {
        const char *v = getenv(vars[i]);
        if (v && *v)
            return atoi(v);
    }
    return -1;
}

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
    const char *config_path = iot_env.config_name;
    const char *base = config_path ? strrchr(config_path, '/') : NULL;
    snprintf(buf, (size_t)len, "%s:%d", base ? base + 1 : (config_path ? config_path : "?"),
             e->line);
    return buf;
}

const char *iot_who_wins(const iot_entry *e)
{
    return e->line < 0 ? "the adaptive mode's rule or knowledge base; docs/adaptive.md"
                       : "the control file wins; docs/control-file.md";
}

/* One line per problem: file, line, element, message and the value when the message does
 * not quote it already (iot_log escapes what a terminal could act on). The first
 * IOT_PROBLEMS_SHOWN problems only: ctx counts them all. */
static void print_problem(void *ctx, int line, const char *element, const char *value,
                          const char *message, int kind)
{
    if (++*(int *)ctx > IOT_PROBLEMS_SHOWN)
        return;
    char where[32] = "", what[IOT_SHOWN_MAX + 4] = "", val[300] = "", shown[IOT_SHOWN_MAX];
    if (line > 0)
        snprintf(where, sizeof where, ":%d", line);
    if (element)
        snprintf(what, sizeof what, " <%s>:", iot_name_shown(element, shown));
    if (value && !strstr(message, value) && kind != IOT_DIAG_OVERRIDE) /* it names the line */
        snprintf(val, sizeof val, " (value \"%s\")", value);
    /* once per run: a pipeline of programs reads the same file in every process */
    char key[1200];
    snprintf(key, sizeof key, "config:%s:%d:%s:%s", iot_env.config, line, element ? element : "",
             message);
    if (!iot_run_first(key))
        return;
    /* a message that says what is ignored already needs no "; ignored" */
    size_t n = strlen(message);
    int says_it = n >= 7 && strcmp(message + n - 7, "ignored") == 0;
    iot_log("%s%s:%s %s%s%s", iot_env.config_name, where, what, message, val,
            kind == IOT_DIAG_FATAL ? "; no settings from this file are applied"
            : says_it              ? ""
                                   : "; ignored");
}

/* A file name as a shell command line to paste takes it (iotune.outputs.shell_word: Python's
 * shlex.quote, or bash's $'...' for a name with what a terminal would act on). */
static const char *shell_word(const char *name, char *buf, size_t len)
{
    static const char safe[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
                               "@%+=:,./-_";
    if (*name && strspn(name, safe) == strlen(name))
        return name;
    if (iot_shell_ansi(name, buf, len))
        return buf;
    size_t n = 0;
    buf[n++] = '\'';
    for (; *name && n + 6 < len; name++)
        n += *name == '\'' ? (size_t)snprintf(buf + n, len - n, "'\"'\"'")
                           : (size_t)snprintf(buf + n, len - n, "%c", *name);
    snprintf(buf + n, len - n, "'");
    return buf;
}

/* The problems past the first IOT_PROBLEMS_SHOWN: one line counts them, once per run. */
static void print_problems_left(int problems)
{
    if (problems <= IOT_PROBLEMS_SHOWN)
        return;
    char key[600], word[IOT_PRINTABLE_MAX(600) + 3];
    snprintf(key, sizeof key, "config-more:%s", iot_env.config);
    if (iot_run_first(key))
        iot_log("%s: %d more problems not shown (%d in all); `iotune check --all %s` lists them "
                "all",
                iot_env.config_name, problems - IOT_PROBLEMS_SHOWN, problems,
                shell_word(iot_env.config_name, word, sizeof word));
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
        int problems = 0;
        iot_settings_load(config_path, &iot_g.settings, speak ? print_problem : NULL, &problems);
        if (speak)
            print_problems_left(problems);
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
        iot_log("control file %s: %d setting%s", iot_env.config_name, iot_g.settings.count,
                iot_g.settings.count == 1 ? "" : "s");
}

/* ---- once per run: the first process of the run to claim a key speaks ---- */

/* The markers live in a directory of this user only, <tmp>/iotune-<uid>, and are reached
 * through descriptors: each directory is opened without following a symbolic link and checked
 * (a directory, this user's, writable by no one else) before anything is made or removed in
 * it. The calls go to the kernel directly, never through the runtime's own wrappers. */
static int dir_open(int parent, const char *name)
{
    return (int)syscall(SYS_openat, parent, name,
                        O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK, 0);
}

static void dir_close(int fd)
{
    if (fd >= 0)
        syscall(SYS_close, fd);
}

/* A directory that is this user's own and that no one else may write into. */
static int private_dir(int fd)
{
    struct stat st;
    return fd >= 0 && syscall(SYS_fstat, fd, &st) == 0 && S_ISDIR(st.st_mode) &&
           st.st_uid == geteuid() && !(st.st_mode & (S_IWGRP | S_IWOTH));
}

/* <tmp>/iotune-<uid> as an open descriptor (made, mode 0700, when create and missing), or -1.
 * One that is a symbolic link, another user's, or writable by others is refused, with one
 * message per process: the run goes on without markers. */
static int user_dir(int create)
{
    const char *tmp = getenv("TMPDIR"); /* not an IOTUNE_ variable: where temporary files go */
    char path[512];
    snprintf(path, sizeof path, "%s/iotune-%u", tmp && *tmp ? tmp : "/tmp", (unsigned)getuid());
    if (create)
        syscall(SYS_mkdirat, AT_FDCWD, path, 0700);
    int fd = dir_open(AT_FDCWD, path);
    if (private_dir(fd))
        return fd;
    int missing = fd < 0 && errno == ENOENT;
    dir_close(fd);
    static int said;
    if (create && !missing && !said++)
        iot_log("%s is not a private directory of this user (a symbolic link, another user's, "
                "or writable by others): refused; the run goes on without it, and a message "
                "meant once per run may come once per process",
                path);
    return -1;
}

/* Removes a run's marker directory (its markers are empty directories) below parent, never
 * following a symbolic link: one in place of the run's directory or of a marker is left. */
static void remove_run_dir(int parent, const char *name)
{
    int fd = dir_open(parent, name);
    DIR *d = private_dir(fd) ? fdopendir(fd) : NULL;
    if (d) {
        struct dirent *e;
        while ((e = readdir(d)))
            if (e->d_name[0] != '.') /* rmdir: never through a link */
                syscall(SYS_unlinkat, dirfd(d), e->d_name, AT_REMOVEDIR);
        closedir(d);
    } else {
        dir_close(fd);
    }
    if (fd >= 0) /* a real directory (rmdir of a symbolic link fails anyway) */
        syscall(SYS_unlinkat, parent, name, AT_REMOVEDIR);
}

/* Runs whose first process did not stay to the end (a shell that exec'd its last program)
 * leave their markers: a new run removes those older than a day. */
static void prune_old_runs(int base)
{
    int fd = dir_open(base, ".");
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        dir_close(fd);
        return;
    }
    time_t now = time(NULL);
    struct dirent *e;
    struct stat st;
    while ((e = readdir(d)))
        if (e->d_name[0] != '.' &&
            syscall(SYS_newfstatat, dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
            S_ISDIR(st.st_mode) && st.st_mtime < now - 86400)
            remove_run_dir(dirfd(d), e->d_name);
    closedir(d);
}

/* The directory of this run's markers, <tmp>/iotune-<uid>/<session>, made on first use: an
 * open descriptor, or -1. */
static int run_dir(void)
{
    const char *session = iot_session();
    if (!session[0] || session[0] == '.')
        return -1;
    int base = user_dir(1);
    if (base < 0)
        return -1;
    int made = syscall(SYS_mkdirat, base, session, 0700) == 0;
    if (made)
        prune_old_runs(base);
    int fd = made || errno == EEXIST ? dir_open(base, session) : -1;
    dir_close(base);
    if (private_dir(fd))
        return fd;
    dir_close(fd);
    return -1;
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
    int dir = run_dir();
    if (dir < 0)
        return 1; /* no marker possible: better twice than never */
    char name[32];
    snprintf(name, sizeof name, "%016llx", (unsigned long long)iot_fnv1a(key));
    /* atomic: one process makes it */
    int first = syscall(SYS_mkdirat, dir, name, 0700) == 0 || errno != EEXIST;
    dir_close(dir);
    return first;
}

void iot_run_markers_remove(void)
{
    if (!iot_session_created() || !iot_session()[0] || iot_session()[0] == '.')
        return;
    int saved = errno;
    int base = user_dir(0); /* made only when something was said */
    if (base >= 0)
        remove_run_dir(base, iot_session());
    dir_close(base);
    errno = saved;
}
