/* The real functions for the runtime's own files (real.h): resolved on first use, never the
 * runtime's wrappers. */
#include "base/real.h"

#include <fcntl.h>
#include <unistd.h>

REAL(fopen, FILE *, const char *, const char *)
REAL(fclose, int, FILE *)
REAL(fread, size_t, void *, size_t, size_t, FILE *)
REAL(open, int, const char *, int, ...)
REAL(close, int, int)

FILE *iot_real_fopen(const char *path, const char *mode)
{
    return get_fopen()(path, mode);
}

int iot_real_fclose(FILE *f)
{
    return get_fclose()(f);
}

size_t iot_real_fread(void *buf, size_t size, size_t n, FILE *f)
{
    return get_fread()(buf, size, n, f);
}

int iot_real_open(const char *path, int flags)
{
    return get_open()(path, flags);
}

int iot_real_close(int fd)
{
    return get_close()(fd);
}
