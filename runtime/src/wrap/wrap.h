/* The one pattern of every wrapper (HDF5, MPI-IO, POSIX, stdio): pass through at the cost of
 * one branch when there is nothing to do; otherwise time the real call with IOT_TIMED, then
 * do the bookkeeping under the capture lock. The real functions come from REAL() (real.h,
 * libc), PMPI_ (MPI) or iot_h5_real() (HDF5, resolved at run time). */
#ifndef IOTUNE_WRAP_H
#define IOTUNE_WRAP_H

#include <errno.h>

#include "capture/capture.h"

/* Times the real call expr. Declares outer (the thread's outermost intercepted call: only it
 * counts toward the rank's I/O time), t (start, iot_now()), rc (the result) and dt (seconds). */
#define IOT_TIMED(expr)                                                                            \
    int outer = iot_depth++ == 0;                                                                  \
    double t = iot_now();                                                                          \
    __typeof__(expr) rc = (expr);                                                                  \
    double dt = iot_now() - t;                                                                     \
    iot_depth--

/* The same for libc calls, whose errno the bookkeeping must not change: saved holds it;
 * restore it with errno = saved before returning rc. */
#define IOT_TIMED_ERRNO(expr)                                                                      \
    IOT_TIMED(expr);                                                                               \
    int saved = errno

#endif
