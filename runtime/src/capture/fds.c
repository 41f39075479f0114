/* The descriptors the runtime follows and the descriptions they share (fds.h). */
#include "capture/fds.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>

int iot_fd_desc[IOT_MAX_FD];
iot_fd_description iot_fd_descs[IOT_MAX_FD]; /* at most one per descriptor */
static int next_free;

/* ---- the table (lock held) ---- */

static int desc_new(int rec, int writable, iot_clayer layer)
{
    for (int n = 0; n < IOT_MAX_FD; n++, next_free = (next_free + 1) % IOT_MAX_FD)
        if (!iot_fd_descs[next_free].refs) {
            iot_fd_descs[next_free] = (iot_fd_description){rec, 0, writable, layer, 0, -1, -1};
            return next_free;
        }
    return -1; /* cannot happen: each description has a descriptor below IOT_MAX_FD */
}

static void attach(int fd, int d)
{
    iot_fd_descs[d].refs++;
    iot_fd_desc[fd] = d + 1;
}

static iot_fd_description *detach(int fd)
{
    int d = iot_fd_desc[fd] - 1;
    if (d < 0)
        return NULL;
    iot_fd_desc[fd] = 0;
    iot_fd_descs[d].refs--;
    return &iot_fd_descs[d];
}

int iot_fd_rec(int fd)
{
    int d = fd >= 0 && fd < IOT_MAX_FD ? iot_fd_desc[fd] - 1 : -1;
    return d >= 0 ? iot_fd_descs[d].rec : -1;
}

int iot_fd_forget(int fd, iot_clayer *layer, int *writable)
{
    int rec = -1;
    if (fd < 0 || fd >= IOT_MAX_FD || !iot_lock())
        return -1;
    iot_fd_description *d = detach(fd);
    if (d) {
        rec = d->rec;
        if (layer)
            *layer = d->layer;
        if (writable)
            *writable = d->writable;
    }
    iot_unlock();
    return rec;
}

/* ---- opens ---- */

/* A shared library being loaded or inspected (read-only, base name libx.so or libx.so.1.2):
 * not the application's I/O. A data file such as run.sol.h5 is. */
static int shared_library(const char *path, int flags)
{
    if ((flags & O_ACCMODE) != O_RDONLY)
        return 0;
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    for (const char *so = strstr(base, ".so"); so; so = strstr(so + 1, ".so")) {
        const char *p = so + 3;
        if (!*p)
            return 1;
        if (*p != '.')
            continue;
        int digits = 0;
        for (p++; (*p >= '0' && *p <= '9') || *p == '.'; p++)
            digits += *p != '.';
        if (!*p && digits)
            return 1;
    }
    return 0;
}

void iot_fd_opened(int fd, const char *path, int flags, iot_clayer layer, const char *func,
                   double t, double dt, int outer)
{
    if (fd < 0 || fd >= IOT_MAX_FD || !path || !path[0])
        return;
    int rec = -1;
    /* directories are not I/O; "pipe:" and similar names are not files */
    if (!(flags & O_DIRECTORY) && path[strlen(path) - 1] != '/' &&
        (path[0] == '/' || !strchr(path, ':')) && !shared_library(path, flags))
        rec = iot_rec_for(path, layer);
    if ((rec < 0 && !iot_fd_desc[fd]) || !iot_lock())
        return;
    detach(fd); /* a number closed behind our back (e.g. by fdopen's fclose) now reused */
    int d = rec >= 0 ? desc_new(rec, (flags & O_ACCMODE) != O_RDONLY, layer) : -1;
    if (d >= 0) {
        attach(fd, d);
        iot_rec(rec)->c[layer].opens++;
        iot_mark_open(rec, t);
        iot_count_meta(rec, layer, dt, outer);
        if (iot_trace_on)
            iot_capture_hooks.trace(layer, func, rec, 0, -1, flags, t, dt);
    }
    iot_unlock();
}

/* newfd is now a copy of oldfd: it shares oldfd's description. A followed newfd that
 * dup2/dup3 replaced was closed by it. */
void iot_fd_duplicated(int oldfd, int newfd, const char *func)
{
    if (newfd < 0 || newfd >= IOT_MAX_FD || oldfd == newfd)
        return;
    int saved = errno;
    double t = iot_now();
    if (iot_lock()) {
        iot_fd_description *gone = detach(newfd);
        if (gone) {
            iot_rec(gone->rec)->c[IOT_L_POSIX].closes++;
            iot_mark_close(gone->rec, t);
        }
        int d = oldfd >= 0 && oldfd < IOT_MAX_FD ? iot_fd_desc[oldfd] - 1 : -1;
        if (d >= 0) {
            attach(newfd, d);
            iot_rec(iot_fd_descs[d].rec)->c[IOT_L_POSIX].dups++;
            iot_mark_open(iot_fd_descs[d].rec, t);
            if (iot_trace_on)
                iot_capture_hooks.trace(IOT_L_POSIX, func, iot_fd_descs[d].rec, 0, -1, 0, t, 0);
        }
        iot_unlock();
    }
    errno = saved;
}
