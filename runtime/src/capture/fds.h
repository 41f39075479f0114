/* Descriptors the runtime follows (fds.c), shared with the stdio wrappers. A followed
 * descriptor points to a description, as in the kernel: dup() and fcntl(F_DUPFD) make a
 * second descriptor of the same description (same file record, same position). */
#ifndef IOTUNE_FDS_H
#define IOTUNE_FDS_H

#include "capture/capture.h"

#define IOT_MAX_FD 16384

/* What open() created. refs 0: free. Found by index, never freed: a descriptor used while
 * another thread closes it cannot reach freed memory. */
typedef struct {
    int rec, refs, writable;
    iot_clayer layer; /* the layer that opened it: POSIX or STDIO */
    int64_t pos, last_offset, last_end;
} iot_fd_description;

extern int iot_fd_desc[IOT_MAX_FD]; /* description index + 1; 0: not followed */

static inline int iot_fd_followed(int fd)
{
    return iot_capture_on && fd >= 0 && fd < IOT_MAX_FD && iot_fd_desc[fd];
}

/* After open() (layer POSIX) or fopen() (layer STDIO) returned fd for path: follows it when
 * the file is tracked, and accounts the call. Takes the lock itself. */
void iot_fd_opened(int fd, const char *path, int flags, iot_clayer layer, const char *func,
                   double t, double dt, int outer);

/* Stops following fd (before it is closed, so that a descriptor reused at once by another
 * thread is not mistaken for it). Returns its record or -1, and the layer that opened it and
 * whether it was opened for writing. Takes the lock itself. */
int iot_fd_forget(int fd, iot_clayer *layer, int *writable);

/* The record of a followed descriptor, or -1; the lock must be held. */
int iot_fd_rec(int fd);

/* The description of a followed descriptor (0 <= fd < IOT_MAX_FD), or NULL; lock held. */
extern iot_fd_description iot_fd_descs[IOT_MAX_FD];
static inline iot_fd_description *iot_fd_described(int fd)
{
    int d = iot_fd_desc[fd] - 1;
    return d >= 0 ? &iot_fd_descs[d] : NULL;
}

/* newfd is now a copy of oldfd (dup, dup2, dup3, fcntl F_DUPFD by func): it shares oldfd's
 * description; a followed newfd that dup2/dup3 replaced was closed by it. Takes the lock. */
void iot_fd_duplicated(int oldfd, int newfd, const char *func);

#endif
