/* Interposed POSIX calls, for capture only: counts, bytes, times, access sizes and offsets
 * per file. ROMIO's own reads and writes land here too (below an H5Dwrite or MPI-IO call).
 * With capture off each wrapper is one branch around the real call. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

#include "base/env.h"
#include "base/real.h"
#include "capture/capture.h"
#include "capture/fds.h"
#include "core/core.h"
#include "trace/trace.h"
#include "wrap/wrap.h"

REAL(open, int, const char *, int, ...)
REAL(open64, int, const char *, int, ...)
REAL(openat, int, int, const char *, int, ...)
REAL(openat64, int, int, const char *, int, ...)
REAL(close, int, int)
REAL(read, ssize_t, int, void *, size_t)
REAL(write, ssize_t, int, const void *, size_t)
REAL(__read_chk, ssize_t, int, void *, size_t, size_t)
REAL(pread, ssize_t, int, void *, size_t, off_t)
REAL(pwrite, ssize_t, int, const void *, size_t, off_t)
REAL(pread64, ssize_t, int, void *, size_t, off64_t)
REAL(pwrite64, ssize_t, int, const void *, size_t, off64_t)
REAL(__pread_chk, ssize_t, int, void *, size_t, off_t, size_t)
REAL(__pread64_chk, ssize_t, int, void *, size_t, off64_t, size_t)
REAL(readv, ssize_t, int, const struct iovec *, int)
REAL(writev, ssize_t, int, const struct iovec *, int)
REAL(preadv, ssize_t, int, const struct iovec *, int, off_t)
REAL(pwritev, ssize_t, int, const struct iovec *, int, off_t)
REAL(preadv64, ssize_t, int, const struct iovec *, int, off64_t)
REAL(pwritev64, ssize_t, int, const struct iovec *, int, off64_t)
REAL(lseek, off_t, int, off_t, int)
REAL(lseek64, off64_t, int, off64_t, int)
REAL(fsync, int, int)
REAL(fdatasync, int, int)
REAL(dup, int, int)
REAL(dup2, int, int, int)
REAL(dup3, int, int, int, int)
REAL(fcntl, int, int, int, ...)
REAL(fcntl64, int, int, int, ...)
REAL(unlink, int, const char *)
REAL(remove, int, const char *)

/* ---- opens ---- */

static int open_common(int (*real)(const char *, int, ...), const char *func, const char *path,
                       int flags, mode_t mode)
{
    if (!iot_capture_on)
        return real(path, flags, mode);
    IOT_TIMED_ERRNO(real(path, flags, mode));
    iot_fd_opened(rc, path, flags, IOT_L_POSIX, func, t, dt, outer);
    errno = saved;
    return rc;
}

static int openat_common(int (*real)(int, const char *, int, ...), int dirfd, const char *path,
                         int flags, mode_t mode)
{
    if (!iot_capture_on || !path || (dirfd != AT_FDCWD && path[0] != '/'))
        return real(dirfd, path, flags, mode); /* relative to a directory: not named */
    IOT_TIMED_ERRNO(real(dirfd, path, flags, mode));
    iot_fd_opened(rc, path, flags, IOT_L_POSIX, "openat", t, dt, outer);
    errno = saved;
    return rc;
}

static mode_t mode_arg(int flags, va_list ap)
{
    return (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE ? (mode_t)va_arg(ap, int) : 0;
}

#define IOT_VA_MODE(flags)                                                                         \
    va_list ap;                                                                                    \
    va_start(ap, flags);                                                                           \
    mode_t mode = mode_arg(flags, ap);                                                             \
    va_end(ap)

IOT_EXPORT int open(const char *path, int flags, ...)
{
    IOT_VA_MODE(flags);
    return open_common(get_open(), "open", path, flags, mode);
}

IOT_EXPORT int open64(const char *path, int flags, ...)
{
    IOT_VA_MODE(flags);
    return open_common(get_open64(), "open", path, flags, mode);
}

/* What open() and openat() become in programs built with _FORTIFY_SOURCE when the flags are
 * not known at compile time. */
IOT_EXPORT int __open_2(const char *path, int flags)
{
    return open_common(get_open(), "open", path, flags, 0);
}

IOT_EXPORT int __open64_2(const char *path, int flags)
{
    return open_common(get_open64(), "open", path, flags, 0);
}

IOT_EXPORT int creat(const char *path, mode_t mode)
{
    return open_common(get_open(), "open", path, O_CREAT | O_WRONLY | O_TRUNC, mode);
}

IOT_EXPORT int openat(int dirfd, const char *path, int flags, ...)
{
    IOT_VA_MODE(flags);
    return openat_common(get_openat(), dirfd, path, flags, mode);
}

IOT_EXPORT int openat64(int dirfd, const char *path, int flags, ...)
{
    IOT_VA_MODE(flags);
    return openat_common(get_openat64(), dirfd, path, flags, mode);
}

IOT_EXPORT int __openat_2(int dirfd, const char *path, int flags)
{
    return openat_common(get_openat(), dirfd, path, flags, 0);
}

IOT_EXPORT int __openat64_2(int dirfd, const char *path, int flags)
{
    return openat_common(get_openat64(), dirfd, path, flags, 0);
}

/* ---- close and dup ---- */

IOT_EXPORT int close(int fd)
{
    if (!iot_fd_followed(fd))
        return get_close()(fd);
    int writable = 0;
    int rec = iot_fd_forget(fd, NULL, &writable);
    int synced = iot_env.sync && writable && rec >= 0;
    /* with IOTUNE_SYNC, the fsync is timed as part of the close: measure the storage, not
     * the page cache */
    IOT_TIMED_ERRNO((synced ? get_fsync()(fd) : 0, get_close()(fd)));
    if (rec >= 0 && iot_lock()) {
        iot_rec(rec)->c[IOT_L_POSIX].syncs += (uint64_t)synced;
        iot_count_close(rec, IOT_L_POSIX, "close", t, t + dt, outer);
        iot_unlock();
    }
    errno = saved;
    return rc;
}

IOT_EXPORT int dup(int fd)
{
    int rc = get_dup()(fd);
    if (rc >= 0 && iot_fd_followed(fd))
        iot_fd_duplicated(fd, rc, "dup");
    return rc;
}

IOT_EXPORT int dup2(int oldfd, int newfd)
{
    int rc = get_dup2()(oldfd, newfd);
    if (rc >= 0 && (iot_fd_followed(oldfd) || iot_fd_followed(newfd)))
        iot_fd_duplicated(oldfd, rc, "dup2");
    return rc;
}

IOT_EXPORT int dup3(int oldfd, int newfd, int flags)
{
    int rc = get_dup3()(oldfd, newfd, flags);
    if (rc >= 0 && (iot_fd_followed(oldfd) || iot_fd_followed(newfd)))
        iot_fd_duplicated(oldfd, rc, "dup3");
    return rc;
}

/* The third argument is an int or a pointer depending on cmd: passed on as glibc reads it. */
static int fcntl_common(int (*real)(int, int, ...), int fd, int cmd, void *arg)
{
    int rc = real(fd, cmd, arg);
    if (rc >= 0 && (cmd == F_DUPFD || cmd == F_DUPFD_CLOEXEC) && iot_fd_followed(fd))
        iot_fd_duplicated(fd, rc, "fcntl");
    return rc;
}

IOT_EXPORT int fcntl(int fd, int cmd, ...)
{
    va_list ap;
    va_start(ap, cmd);
    void *arg = va_arg(ap, void *);
    va_end(ap);
    return fcntl_common(get_fcntl(), fd, cmd, arg);
}

IOT_EXPORT int fcntl64(int fd, int cmd, ...)
{
    va_list ap;
    va_start(ap, cmd);
    void *arg = va_arg(ap, void *);
    va_end(ap);
    return fcntl_common(get_fcntl64() ? get_fcntl64() : get_fcntl(), fd, cmd, arg);
}

/* ---- data ---- */

/* Accounts one transfer of rc bytes at offset on fd; offset -1: at the descriptor's position,
 * which moves. */
static void transferred(int fd, const char *func, int is_write, int64_t offset, ssize_t rc,
                        double t, double dt, int outer)
{
    if (!iot_lock())
        return;
    iot_fd_description *d = iot_fd_described(fd);
    if (d) {
        uint64_t bytes = rc > 0 ? (uint64_t)rc : 0;
        if (offset < 0) {
            offset = d->pos;
            d->pos += (int64_t)bytes;
        }
        iot_count_access(d->rec, IOT_L_POSIX, is_write, offset, bytes, dt, outer);
        iot_counters *c = &iot_rec(d->rec)->c[IOT_L_POSIX];
        if (d->last_offset >= 0) {
            c->sequential += offset > d->last_offset;
            c->consecutive += offset == d->last_end;
        }
        d->last_offset = offset;
        d->last_end = offset + (int64_t)bytes;
        if (iot_trace_on)
            iot_trace(IOT_L_POSIX, func, d->rec, bytes, offset, 0, t, dt);
    }
    iot_unlock();
}

/* One wrapper per data call: PARAMS and ARGS are its parameter and argument lists, OFFSET the
 * explicit offset or -1 (at the descriptor's position). */
#define IOT_POSIX_DATA(ret, name, PARAMS, ARGS, func, is_write, OFFSET)                            \
    IOT_EXPORT ret name PARAMS                                                                     \
    {                                                                                              \
        if (!iot_fd_followed(fd))                                                                  \
            return get_##name() ARGS;                                                              \
        IOT_TIMED_ERRNO(get_##name() ARGS);                                                        \
        transferred(fd, func, is_write, OFFSET, rc, t, dt, outer);                                 \
        errno = saved;                                                                             \
        return rc;                                                                                 \
    }

IOT_POSIX_DATA(ssize_t, read, (int fd, void *buf, size_t n), (fd, buf, n), "read", 0, -1)
IOT_POSIX_DATA(ssize_t, write, (int fd, const void *buf, size_t n), (fd, buf, n), "write", 1, -1)
IOT_POSIX_DATA(ssize_t, pread, (int fd, void *buf, size_t n, off_t off), (fd, buf, n, off), "pread",
               0, off)
IOT_POSIX_DATA(ssize_t, pwrite, (int fd, const void *buf, size_t n, off_t off), (fd, buf, n, off),
               "pwrite", 1, off)
IOT_POSIX_DATA(ssize_t, pread64, (int fd, void *buf, size_t n, off64_t off), (fd, buf, n, off),
               "pread", 0, off)
IOT_POSIX_DATA(ssize_t, pwrite64, (int fd, const void *buf, size_t n, off64_t off),
               (fd, buf, n, off), "pwrite", 1, off)
IOT_POSIX_DATA(ssize_t, readv, (int fd, const struct iovec *iov, int n), (fd, iov, n), "readv", 0,
               -1)
IOT_POSIX_DATA(ssize_t, writev, (int fd, const struct iovec *iov, int n), (fd, iov, n), "writev", 1,
               -1)
IOT_POSIX_DATA(ssize_t, preadv, (int fd, const struct iovec *iov, int n, off_t off),
               (fd, iov, n, off), "preadv", 0, off)
IOT_POSIX_DATA(ssize_t, pwritev, (int fd, const struct iovec *iov, int n, off_t off),
               (fd, iov, n, off), "pwritev", 1, off)
IOT_POSIX_DATA(ssize_t, preadv64, (int fd, const struct iovec *iov, int n, off64_t off),
               (fd, iov, n, off), "preadv", 0, off)
IOT_POSIX_DATA(ssize_t, pwritev64, (int fd, const struct iovec *iov, int n, off64_t off),
               (fd, iov, n, off), "pwritev", 1, off)
/* _FORTIFY_SOURCE turns read/pread into these when the buffer's size is known */
IOT_POSIX_DATA(ssize_t, __read_chk, (int fd, void *buf, size_t n, size_t len), (fd, buf, n, len),
               "read", 0, -1)
IOT_POSIX_DATA(ssize_t, __pread_chk, (int fd, void *buf, size_t n, off_t off, size_t len),
               (fd, buf, n, off, len), "pread", 0, off)
IOT_POSIX_DATA(ssize_t, __pread64_chk, (int fd, void *buf, size_t n, off64_t off, size_t len),
               (fd, buf, n, off, len), "pread", 0, off)

/* ---- seek and sync ---- */

static void seeked(int fd, int whence, int64_t pos, double t, double dt, int outer)
{
    if (!iot_lock())
        return;
    iot_fd_description *d = iot_fd_described(fd);
    if (d) {
        if (pos >= 0)
            d->pos = pos;
        iot_rec(d->rec)->c[IOT_L_POSIX].seeks++;
        iot_count_meta(d->rec, IOT_L_POSIX, dt, outer);
        if (iot_trace_on)
            iot_trace(IOT_L_POSIX, "lseek", d->rec, 0, pos, whence, t, dt);
    }
    iot_unlock();
}

#define IOT_POSIX_SEEK(name, OFF)                                                                  \
    IOT_EXPORT OFF name(int fd, OFF offset, int whence)                                            \
    {                                                                                              \
        if (!iot_fd_followed(fd))                                                                  \
            return get_##name()(fd, offset, whence);                                               \
        IOT_TIMED_ERRNO(get_##name()(fd, offset, whence));                                         \
        seeked(fd, whence, rc, t, dt, outer);                                                      \
        errno = saved;                                                                             \
        return rc;                                                                                 \
    }

IOT_POSIX_SEEK(lseek, off_t)
IOT_POSIX_SEEK(lseek64, off64_t)

static int sync_common(int fd, int data_only)
{
    int (*real)(int) = data_only ? get_fdatasync() : get_fsync();
    if (!iot_fd_followed(fd))
        return real(fd);
    IOT_TIMED_ERRNO(real(fd));
    if (iot_lock()) {
        int rec = iot_fd_rec(fd);
        if (rec >= 0) {
            iot_rec(rec)->c[IOT_L_POSIX].syncs++;
            iot_count_meta(rec, IOT_L_POSIX, dt, outer);
            if (iot_trace_on)
                iot_trace(IOT_L_POSIX, data_only ? "fdatasync" : "fsync", rec, 0, -1, 0, t, dt);
        }
        iot_unlock();
    }
    errno = saved;
    return rc;
}

IOT_EXPORT int fsync(int fd)
{
    return sync_common(fd, 0);
}

IOT_EXPORT int fdatasync(int fd)
{
    return sync_common(fd, 1);
}

/* ---- removals ---- */

/* A followed file removed (unlink, remove; MPI_File_delete in wrap_mpiio.c): traced, so that a
 * skeleton removes its file there too; nothing is counted. */
static int removal(int (*real)(const char *), const char *func, const char *path)
{
    if (!real) {
        errno = ENOSYS;
        return -1;
    }
    if (!iot_capture_on || !iot_trace_on || !path)
        return real(path);
    IOT_TIMED_ERRNO(real(path));
    int rec = rc == 0 && outer ? iot_rec_find(path) : -1;
    if (rec >= 0 && iot_lock()) {
        iot_trace(IOT_L_POSIX, func, rec, 0, -1, 0, t, dt);
        iot_unlock();
    }
    errno = saved;
    return rc;
}

IOT_EXPORT int unlink(const char *path)
{
    return removal(get_unlink(), "unlink", path);
}

IOT_EXPORT int remove(const char *path)
{
    return removal(get_remove(), "remove", path);
}
