/* The real libc functions behind the interposed ones: REAL(name, ret, args...) defines
 * get_name(), which finds the next definition (RTLD_NEXT) on first use and keeps it. */
#ifndef IOTUNE_REAL_H
#define IOTUNE_REAL_H

#include <dlfcn.h>

#define REAL(name, ret, ...)                                                                       \
    static ret (*real_##name)(__VA_ARGS__);                                                        \
    static ret (*get_##name(void))(__VA_ARGS__)                                                    \
    {                                                                                              \
        if (!real_##name)                                                                          \
            real_##name = (ret(*)(__VA_ARGS__))dlsym(RTLD_NEXT, #name);                            \
        return real_##name;                                                                        \
    }

#endif
