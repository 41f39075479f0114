/* Interposed POSIX calls, for capture only: counts, bytes, times, access sizes and offsets
 * per file. ROMIO's own reads and writes land here too (below an H5Dwrite or MPI-IO call).
 * With capture off each wrapper is one branch around the real call. */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

#include "capture.h"
#include "core.h"

/* What the runtime knows of an open descriptor. Zeroed: not followed. */
#define IOT_MAX_FD 16384
static struct {
    int rec1; /* capture record + 1 */
    int writable;
    int64_t pos, last_offset, last_end;
} fds[IOT_MAX_FD];

static int sync_on_close = -1; /* IOTUNE_SYNC=1: fsync written files before close */

#define REAL(name, ret, ...)                                                                       \
    static ret (*real_##name)(__VA_ARGS__);                                                        \
    static ret (*get_##name(void))(__VA_ARGS__)                                                    \
    {                                                                                              \
        if (!real_##name)                                                                          \
            real_##name = (ret(*)(__VA_ARGS__))dlsym(RTLD_NEXT, #name);                            \
        return real_##name;                                                                        \
    }

REAL(open, int, const char *, int, ...)
REAL(open64, int, const char *, int, ...)
REAL(openat, int, int, const char *, int, ...)
REAL(close, int, int)
REAL(read, ssize_t, int, void *, size_t)
REAL(write, ssize_t, int, const void *, size_t)
REAL(pread, ssize_t, int, void *, size_t, off_t)
REAL(pwrite, ssize_t, int, const void *, size_t, off_t)
REAL(pread64, ssize_t, int, void *, size_t, off64_t)
REAL(pwrite64, ssize_t, int, const void *, size_t, off64_t)
REAL(lseek, off_t, int, off_t, int)
REAL(lseek64, off64_t, int, off64_t, int)
REAL(fsync, int, int)
REAL(fdatasync, int, int)

static int followed(int fd)
{
    return iot_capture_on && fd >= 0 && fd < IOT_MAX_FD && fds[fd].rec1;
}

static void opened(int fd, const char *path, int flags, double t, double dt, int outer)
{
    int rec = -1;
    /* directories are not I/O; "pipe:" and similar names are not files */
    if (fd >= 0 && fd < IOT_MAX_FD && !(flags & O_DIRECTORY) && path[strlen(path) - 1] != '/' &&
        (path[0] == '/' || !strchr(path, ':')))
        rec = iot_rec_for(path, IOT_L_POSIX);
    if (rec >= 0) {
        fds[fd].rec1 = rec + 1;
        fds[fd].writable = (flags & O_ACCMODE) != O_RDONLY;
        fds[fd].pos = 0;
        fds[fd].last_offset = fds[fd].last_end = -1;
        iot_rec(rec)->c[IOT_L_POSIX].opens++;
        iot_mark_open(rec, t);
    }
    iot_count_meta(rec, IOT_L_POSIX, dt, outer);
    if (iot_trace_on && rec >= 0)
        iot_trace(IOT_L_POSIX, "open", rec, 0, -1, 0, dt);
}

static int open_common(int (*real)(const char *, int, ...), const char *path, int flags,
                       mode_t mode)
{
    if (!iot_capture_on)
        return real(path, flags, mode);
    int outer = iot_depth++ == 0;
    double t = iot_now();
    int fd = real(path, flags, mode);
    double dt = iot_now() - t;
    iot_depth--;
    int saved = errno;
    opened(fd, path, flags, t, dt, outer);
    errno = saved;
    return fd;
}

static mode_t mode_arg(int flags, va_list ap)
{
    return (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE ? (mode_t)va_arg(ap, int) : 0;
}

IOT_EXPORT int open(const char *path, int flags, ...)
{
    va_list ap;
    va_start(ap, flags);
    mode_t mode = mode_arg(flags, ap);
    va_end(ap);
    return open_common(get_open(), path, flags, mode);
}

IOT_EXPORT int open64(const char *path, int flags, ...)
{
    va_list ap;
    va_start(ap, flags);
    mode_t mode = mode_arg(flags, ap);
    va_end(ap);
    return open_common(get_open64(), path, flags, mode);
}

/* What open() becomes in programs built with _FORTIFY_SOURCE when the flags are not known at
 * compile time. */
IOT_EXPORT int __open_2(const char *path, int flags)
{
    return open_common(get_open(), path, flags, 0);
}

IOT_EXPORT int __open64_2(const char *path, int flags)
{
    return open_common(get_open64(), path, flags, 0);
}

IOT_EXPORT int creat(const char *path, mode_t mode)
{
    return open_common(get_open(), path, O_CREAT | O_WRONLY | O_TRUNC, mode);
}

IOT_EXPORT int openat(int dirfd, const char *path, int flags, ...)
{
    va_list ap;
    va_start(ap, flags);
    mode_t mode = mode_arg(flags, ap);
    va_end(ap);
    if (!iot_capture_on || (dirfd != AT_FDCWD && path[0] != '/'))
        return get_openat()(dirfd, path, flags, mode); /* relative to a directory: not named */
    int outer = iot_depth++ == 0;
    double t = iot_now();
    int fd = get_openat()(dirfd, path, flags, mode);
    double dt = iot_now() - t;
    iot_depth--;
    int saved = errno;
    opened(fd, path, flags, t, dt, outer);
    errno = saved;
    return fd;
}

IOT_EXPORT int close(int fd)
{
    if (!followed(fd))
        return get_close()(fd);
    if (sync_on_close < 0) {
        const char *v = getenv("IOTUNE_SYNC");
        sync_on_close = v && *v && strcmp(v, "0") != 0;
    }
    int rec = fds[fd].rec1 - 1;
    int outer = iot_depth++ == 0;
    double t = iot_now();
    if (sync_on_close && fds[fd].writable) {
        get_fsync()(fd); /* measure the storage, not the page cache */
        iot_rec(rec)->c[IOT_L_POSIX].syncs++;
    }
    int rc = get_close()(fd);
    double end = iot_now();
    iot_depth--;
    int saved = errno;
    fds[fd].rec1 = 0;
    iot_rec(rec)->c[IOT_L_POSIX].closes++;
    iot_mark_close(rec, end);
    iot_count_meta(rec, IOT_L_POSIX, end - t, outer);
    if (iot_trace_on)
        iot_trace(IOT_L_POSIX, "close", rec, 0, -1, 0, end - t);
    errno = saved;
    return rc;
}

/* Accounts one transfer of done bytes at offset on fd. */
static void transferred(int fd, const char *func, int is_write, int64_t offset, ssize_t done,
                        double dt, int outer)
{
    int rec = fds[fd].rec1 - 1;
    uint64_t bytes = done > 0 ? (uint64_t)done : 0;
    iot_count_access(rec, IOT_L_POSIX, is_write, offset, bytes, dt, outer);
    iot_counters *c = &iot_rec(rec)->c[IOT_L_POSIX];
    if (fds[fd].last_offset >= 0) {
        c->sequential += offset > fds[fd].last_offset;
        c->consecutive += offset == fds[fd].last_end;
    }
    fds[fd].last_offset = offset;
    fds[fd].last_end = offset + (int64_t)bytes;
    if (iot_trace_on)
        iot_trace(IOT_L_POSIX, func, rec, bytes, offset, 0, dt);
}

#define IOT_TIMED(expr)                                                                            \
    int outer = iot_depth++ == 0;                                                                  \
    double t = iot_now();                                                                          \
    __typeof__(expr) rc = (expr);                                                                  \
    double dt = iot_now() - t;                                                                     \
    iot_depth--;                                                                                   \
    int saved = errno

/* read/write move the descriptor's position; the p-forms take an explicit offset. */
#define IOT_POSIX_STREAM(name, BUF, is_write)                                                      \
    IOT_EXPORT ssize_t name(int fd, BUF buf, size_t n)                                             \
    {                                                                                              \
        if (!followed(fd))                                                                         \
            return get_##name()(fd, buf, n);                                                       \
        int64_t offset = fds[fd].pos;                                                              \
        IOT_TIMED(get_##name()(fd, buf, n));                                                       \
        if (rc > 0)                                                                                \
            fds[fd].pos += rc;                                                                     \
        transferred(fd, #name, is_write, offset, rc, dt, outer);                                   \
        errno = saved;                                                                             \
        return rc;                                                                                 \
    }
#define IOT_POSIX_AT(name, BUF, OFF, is_write)                                                     \
    IOT_EXPORT ssize_t name(int fd, BUF buf, size_t n, OFF offset)                                 \
    {                                                                                              \
        if (!followed(fd))                                                                         \
            return get_##name()(fd, buf, n, offset);                                               \
        IOT_TIMED(get_##name()(fd, buf, n, offset));                                               \
        transferred(fd, is_write ? "pwrite" : "pread", is_write, offset, rc, dt, outer);           \
        errno = saved;                                                                             \
        return rc;                                                                                 \
    }

IOT_POSIX_STREAM(read, void *, 0)
IOT_POSIX_STREAM(write, const void *, 1)
IOT_POSIX_AT(pread, void *, off_t, 0)
IOT_POSIX_AT(pwrite, const void *, off_t, 1)
IOT_POSIX_AT(pread64, void *, off64_t, 0)
IOT_POSIX_AT(pwrite64, const void *, off64_t, 1)

#define IOT_POSIX_SEEK(name, OFF)                                                                  \
    IOT_EXPORT OFF name(int fd, OFF offset, int whence)                                            \
    {                                                                                              \
        if (!followed(fd))                                                                         \
            return get_##name()(fd, offset, whence);                                               \
        IOT_TIMED(get_##name()(fd, offset, whence));                                               \
        if (rc >= 0)                                                                               \
            fds[fd].pos = rc;                                                                      \
        iot_rec(fds[fd].rec1 - 1)->c[IOT_L_POSIX].seeks++;                                         \
        iot_count_meta(fds[fd].rec1 - 1, IOT_L_POSIX, dt, outer);                                  \
        errno = saved;                                                                             \
        return rc;                                                                                 \
    }

IOT_POSIX_SEEK(lseek, off_t)
IOT_POSIX_SEEK(lseek64, off64_t)

static int sync_common(int fd, int data_only)
{
    int (*real)(int) = data_only ? get_fdatasync() : get_fsync();
    if (!followed(fd))
        return real(fd);
    IOT_TIMED(real(fd));
    iot_rec(fds[fd].rec1 - 1)->c[IOT_L_POSIX].syncs++;
    iot_count_meta(fds[fd].rec1 - 1, IOT_L_POSIX, dt, outer);
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
