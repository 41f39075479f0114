#include "core/session.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include "base/env.h"
#include "base/hash.h"
#include "base/log.h"
#include "base/real.h"

static char session[64];
static int created;

/* Only characters that need no escaping in JSON, so that a profile's header can be read back
 * with a plain string search. */
static void keep_session(const char *id)
{
    size_t n = 0;
    for (; id[n] && n < sizeof session - 1; n++) {
        char c = id[n];
        int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                 c == '-' || c == '_' || c == '.' || c == ':';
        session[n] = ok ? c : '_';
    }
    session[n] = '\0';
}

void iot_session_init(void)
{
    if (iot_env.session) {
        keep_session(iot_env.session);
        return;
    }
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    char host[64] = "";
    gethostname(host, sizeof host - 1);
    unsigned h = (unsigned)iot_fnv1a(host);
    snprintf(session, sizeof session, "%llx-%x-%x",
             (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec,
             (unsigned)getpid(), h);
    iot_env_export("IOTUNE_SESSION",
                   session); /* children (ranks, a script's programs) inherit it */
    created = 1;
}

const char *iot_session(void)
{
    return session;
}

void iot_session_set(const char *id)
{
    keep_session(id);
}

int iot_session_created(void)
{
    return created;
}

/* ---- an existing profile's header (written first by profile.c: session, mpi, io) ---- */

typedef struct {
    char session[64];
    int mpi;
    uint64_t bytes;
} header;

static uint64_t number_after(const char *text, const char *key)
{
    const char *p = strstr(text, key);
    return p ? strtoull(p + strlen(key), NULL, 10) : 0;
}

/* Returns 0 when path is not a profile with a session (e.g. an older run's). */
static int read_header(const char *path, header *h)
{
    FILE *f = iot_real_fopen(path, "r");
    if (!f)
        return 0;
    char text[2048];
    size_t n = iot_real_fread(text, 1, sizeof text - 1, f);
    iot_real_fclose(f);
    text[n] = '\0';
    char *end = strstr(text, "\"program\": "); /* the header ends where free text begins */
    if (end)
        *end = '\0';
    const char *s = strstr(text, "\"session\": \"");
    if (strncmp(text, "{\"schema\": \"iotune-profile\"", 27) != 0 || !s)
        return 0;
    s += strlen("\"session\": \"");
    size_t len = strcspn(s, "\"");
    snprintf(h->session, sizeof h->session, "%.*s", (int)len, s);
    h->mpi = strstr(text, "\"mpi\": true") != NULL;
    h->bytes = number_after(text, "\"bytes_written\": ") + number_after(text, "\"bytes_read\": ");
    return 1;
}

/* An MPI job beats a process without MPI; then more bytes win; a tie goes to the later. */
static int at_least_as_good(const iot_claim *c, const header *h)
{
    if (c->mpi != h->mpi)
        return c->mpi > h->mpi;
    return c->bytes >= h->bytes;
}

static int (*run_first)(const char *key);

void iot_out_once(int (*first)(const char *key))
{
    run_first = first;
}

/* A problem with the profile's file, said once per run (run_first: iot_run_first, given by
 * the layer above): every process of the run that loaded the runtime meets it (a program
 * under a preloaded /usr/bin/time said it twice). Without it, said: better twice than never. */
__attribute__((format(printf, 1, 2))) static void say_once(const char *fmt, ...)
{
    char msg[4600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (!run_first || run_first(msg))
        iot_log("%s", msg);
}

static void cannot(const char *path, int err)
{
    say_once("IOTUNE_PROFILE=%s: cannot write the profile: %s", path, strerror(err));
}

/* May this process's profile replace the file at path? Says why not when that is a problem. */
static int may_replace(const char *path, const struct stat *st, const iot_claim *c)
{
    header h;
    if (S_ISDIR(st->st_mode)) {
        cannot(path, EISDIR);
        return 0;
    }
    if (!(st->st_mode & 0222)) { /* checked by hand: root may write anything */
        say_once("IOTUNE_PROFILE=%s: cannot replace it: the file is read-only (this run's "
                 "profile is not written)",
                 path);
        return 0;
    }
    if (c->nfiles == 0)
        return 0; /* a process that touched no file never writes over a profile */
    /* another run's profile, or one of this run that is not better */
    return !read_header(path, &h) || strcmp(h.session, session) != 0 || at_least_as_good(c, &h);
}

/* ---- where the profile goes: a symbolic link is followed, a stream is written in place ---- */

#define FIFO_WAIT_S 10 /* as Python's outputs.FIFO_WAIT_S: a FIFO's reader may start second */

/* The file a symbolic link at path points to (to the end of a chain), else path itself: the
 * link stays a link (a temporary file renamed over it would have replaced it). */
static void follow_links(const char *path, char *target, size_t size)
{
    struct stat st;
    snprintf(target, size, "%s", path);
    if (lstat(path, &st) != 0 || !S_ISLNK(st.st_mode))
        return;
    char *real = realpath(path, NULL);
    if (real) {
        snprintf(target, size, "%s", real);
        free(real);
        return;
    }
    char to[4096]; /* a link to a file not there yet: the name it points to */
    ssize_t n = readlink(path, to, sizeof to - 1);
    if (n <= 0)
        return;
    to[n] = '\0';
    const char *slash = strrchr(path, '/');
    if (to[0] == '/' || !slash)
        snprintf(target, size, "%s", to);
    else
        snprintf(target, size, "%.*s/%s", (int)(slash - path), path, to);
}

/* A FIFO or character device, opened to be written as `cat > path` would: without blocking
 * (a FIFO nobody reads yet is ENXIO: tried again for FIFO_WAIT_S, then refused), then
 * blocking for the writes. Never replaced by a regular file. Returns -1 with errno set. */
static int open_stream(const char *path)
{
    for (int waited_ms = 0;; waited_ms += 50) {
        int fd = iot_real_open(path, O_WRONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
        if (fd >= 0) {
            fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
            return fd;
        }
        if (errno != ENXIO || waited_ms >= FIFO_WAIT_S * 1000)
            return -1;
        nanosleep(&(struct timespec){0, 50 * 1000 * 1000}, NULL);
    }
}

static int is_stream(const struct stat *st)
{
    return S_ISFIFO(st->st_mode) || S_ISCHR(st->st_mode);
}

static void cannot_stream(const char *path, int err)
{
    if (err == ENXIO)
        say_once("IOTUNE_PROFILE=%s: cannot write the profile: no process opened the FIFO for "
                 "reading within %d s",
                 path, FIFO_WAIT_S);
    else
        cannot(path, err);
}

FILE *iot_open_output(const char *path)
{
    struct stat st;
    if (stat(path, &st) == 0 && is_stream(&st)) {
        int fd = open_stream(path);
        FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
        if (fd >= 0 && !f)
            iot_real_close(fd);
        return f;
    }
    return iot_real_fopen(path, "w");
}

int iot_out_open(iot_out *o, const char *path, const iot_claim *c)
{
    memset(o, 0, sizeof *o);
    o->path = path;
    o->dirfd = -1;
    follow_links(path, o->target, sizeof o->target);
    struct stat st;
    int there = stat(o->target, &st) == 0;
    if (there && is_stream(&st)) {
        if (!(c->nfiles > 0 || c->mpi))
            return 0; /* as for a new file: only a process that did I/O or an MPI job */
        int fd = open_stream(o->target);
        o->f = fd >= 0 ? fdopen(fd, "w") : NULL;
        if (!o->f) {
            cannot_stream(path, errno);
            if (fd >= 0)
                iot_real_close(fd);
            return 0;
        }
        o->stream = 1;
        return 1;
    }
    if (there && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode)) {
        say_once("IOTUNE_PROFILE=%s: cannot write the profile: not a regular file, FIFO or "
                 "character device",
                 path);
        return 0;
    }
    char dir[4200];
    snprintf(dir, sizeof dir, "%s", o->target);
    char *slash = strrchr(dir, '/');
    if (!slash)
        snprintf(dir, sizeof dir, ".");
    else
        slash[slash == dir] = '\0'; /* "/p.json" -> "/" */
    o->dirfd = iot_real_open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (o->dirfd < 0) {
        cannot(path, errno);
        return 0;
    }
    flock(o->dirfd, LOCK_EX); /* processes of one run ending together decide in turn */
    int go = stat(o->target, &st) == 0 ? may_replace(path, &st, c) : c->nfiles > 0 || c->mpi;
    if (go) {
        snprintf(o->tmp, sizeof o->tmp, "%s.tmp.%d", o->target, (int)getpid());
        o->f = iot_real_fopen(o->tmp, "w");
        if (!o->f)
            cannot(path, errno);
    }
    if (!o->f) {
        iot_out_cancel(o);
        return 0;
    }
    return 1;
}

void iot_out_commit(iot_out *o)
{
    int bad = ferror(o->f);
    errno = 0;
    bad |= iot_real_fclose(o->f) != 0;
    int err = errno;
    o->f = NULL;
    if (o->stream) {
        if (bad)
            cannot(o->path, err ? err : EIO);
    } else if (bad || rename(o->tmp, o->target) != 0) {
        cannot(o->path, errno ? errno : EIO);
        unlink(o->tmp);
    }
    iot_out_cancel(o);
}

void iot_out_cancel(iot_out *o)
{
    if (o->f) {
        iot_real_fclose(o->f);
        if (!o->stream)
            unlink(o->tmp);
        o->f = NULL;
    }
    if (o->dirfd >= 0)
        iot_real_close(o->dirfd); /* releases the lock */
    o->dirfd = -1;
}

void iot_out_prune_traces(const char *dir, int nranks, int nhosts)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d))) {
        int k, used = 0;
        /* rank-K.json: schema 2, an older runtime's; rank-K.json.gz of a larger run */
        if (sscanf(e->d_name, "rank-%d.json%n", &k, &used) == 1 && used > 0 &&
            (!e->d_name[used] || (!strcmp(e->d_name + used, ".gz") && k >= nranks)))
            unlinkat(dirfd(d), e->d_name, 0);
        else if (sscanf(e->d_name, "host-%d.json.gz%n", &k, &used) == 1 && used > 0 &&
                 !e->d_name[used] && k >= nhosts)
            unlinkat(dirfd(d), e->d_name, 0);
    }
    closedir(d);
}
