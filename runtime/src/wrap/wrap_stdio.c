/* Interposed stdio calls: fopen, fopen64, fclose, fread and fwrite, counted in a layer of
 * their own ("stdio"). glibc's stdio reaches the kernel without the interposable read() and
 * write(), so nothing is counted twice; the bytes are those the application handed to stdio
 * (the kernel sees them later, buffered). Other stdio functions (fprintf, fputs, fgets, getc,
 * fseek, ...) are not counted (docs/profile.md). A stream is followed through its descriptor,
 * so an untracked stream (stdout) costs one table lookup. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>

#include "base/real.h"
#include "capture/capture.h"
#include "capture/fds.h"
#include "core/core.h"
#include "trace/trace.h"
#include "wrap/wrap.h"

REAL(fopen, FILE *, const char *, const char *)
REAL(fopen64, FILE *, const char *, const char *)
REAL(fclose, int, FILE *)
REAL(fread, size_t, void *, size_t, size_t, FILE *)
REAL(fwrite, size_t, const void *, size_t, size_t, FILE *)

/* The stream's descriptor when capture is on, else -1; errno untouched (a memory stream
 * has none and fileno would set EBADF). */
static int stream_fd(FILE *fp)
{
    if (!iot_capture_on || !fp)
        return -1;
    int saved = errno, fd = fileno_unlocked(fp);
    errno = saved;
    return fd;
}

static int open_flags(const char *mode)
{
    int plus = mode && strchr(mode, '+') != NULL;
    if (!mode || mode[0] == 'r')
        return plus ? O_RDWR : O_RDONLY;
    return (plus ? O_RDWR : O_WRONLY) | O_CREAT | (mode[0] == 'a' ? O_APPEND : O_TRUNC);
}

static FILE *fopen_common(FILE *(*real)(const char *, const char *), const char *path,
                          const char *mode)
{
    if (!iot_capture_on)
        return real(path, mode);
    IOT_TIMED_ERRNO(real(path, mode));
    if (rc)
        iot_fd_opened(stream_fd(rc), path, open_flags(mode), IOT_L_STDIO, "fopen", t, dt, outer);
    errno = saved;
    return rc;
}

IOT_EXPORT FILE *fopen(const char *path, const char *mode)
{
    return fopen_common(get_fopen(), path, mode);
}

IOT_EXPORT FILE *fopen64(const char *path, const char *mode)
{
    return fopen_common(get_fopen64(), path, mode);
}

/* Also for streams of fdopen(): their descriptor closes here, not through close(). */
IOT_EXPORT int fclose(FILE *fp)
{
    int fd = stream_fd(fp);
    if (!iot_fd_followed(fd))
        return get_fclose()(fp);
    iot_clayer layer = IOT_L_STDIO;
    int rec = iot_fd_forget(fd, &layer, NULL);
    IOT_TIMED_ERRNO(get_fclose()(fp));
    if (rec >= 0 && iot_lock()) {
        iot_count_close(rec, layer, "fclose", t, t + dt, outer);
        iot_unlock();
    }
    errno = saved;
    return rc;
}

static void transferred(int fd, const char *func, int is_write, uint64_t bytes, double t, double dt,
                        int outer)
{
    if (!iot_lock())
        return;
    int rec = iot_fd_rec(fd);
    if (rec >= 0) {
        iot_count_access(rec, IOT_L_STDIO, is_write, -1, bytes, dt, outer);
        if (iot_trace_on)
            iot_trace(IOT_L_STDIO, func, rec, bytes, -1, 0, t, dt);
    }
    iot_unlock();
}

IOT_EXPORT size_t fread(void *buf, size_t size, size_t n, FILE *fp)
{
    int fd = stream_fd(fp);
    if (!iot_fd_followed(fd))
        return get_fread()(buf, size, n, fp);
    IOT_TIMED_ERRNO(get_fread()(buf, size, n, fp));
    transferred(fd, "fread", 0, (uint64_t)rc * size, t, dt, outer);
    errno = saved;
    return rc;
}

IOT_EXPORT size_t fwrite(const void *buf, size_t size, size_t n, FILE *fp)
{
    int fd = stream_fd(fp);
    if (!iot_fd_followed(fd))
        return get_fwrite()(buf, size, n, fp);
    IOT_TIMED_ERRNO(get_fwrite()(buf, size, n, fp));
    transferred(fd, "fwrite", 1, (uint64_t)rc * size, t, dt, outer);
    errno = saved;
    return rc;
}
