/* The real libc functions behind the interposed ones: REAL(name, ret, args...) defines
 * get_name(), which finds the next definition (RTLD_NEXT) on first use and keeps it. */
#ifndef IOTUNE_REAL_H
#define IOTUNE_REAL_H

#include <dlfcn.h>
#include <stdio.h>

#define REAL(name, ret, ...)                                                                       \
    static ret (*real_##name)(__VA_ARGS__);                                                        \
    static ret (*get_##name(void))(__VA_ARGS__)                                                    \
    {                                                                                              \
        if (!real_##name)                                                                          \
            real_##name = (ret(*)(__VA_ARGS__))dlsym(RTLD_NEXT, #name);                            \
        return real_##name;                                                                        \
    }

/* The runtime's own files (profile, traces, /proc/self/cmdline) are read and written through
 * these, the real functions, never through its own wrappers: its I/O is not the application's
 * and must not re-enter the bookkeeping (real.c). */
FILE *iot_real_fopen(const char *path, const char *mode);
int iot_real_fclose(FILE *f);
size_t iot_real_fread(void *buf, size_t size, size_t n, FILE *f);
int iot_real_open(const char *path, int flags);
int iot_real_close(int fd);

#endif
