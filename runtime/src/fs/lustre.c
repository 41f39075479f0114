#include "fs/lustre.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/xattr.h>

#define LOV_USER_MAGIC_V1 0x0BD10BD0U
#define LOV_USER_MAGIC_V3 0x0BD30BD0U

/* struct lov_user_md_v1/v3 (lustre_user.h): magic, pattern, object id (16 bytes), stripe size
 * (u32), stripe count (u16), ... */
int iot_lustre_get(const char *path, long long *count, long long *size)
{
    unsigned char md[4096];
    ssize_t n = getxattr(path, "lustre.lov", md, sizeof md);
    if (n < 0)
        return -errno;
    if (n < 32)
        return -ENOTSUP;
    uint32_t magic, ssize;
    uint16_t scount;
    memcpy(&magic, md, 4);
    memcpy(&ssize, md + 24, 4);
    memcpy(&scount, md + 28, 2);
    if (magic != LOV_USER_MAGIC_V1 && magic != LOV_USER_MAGIC_V3)
        return -ENOTSUP;
    *count = scount;
    *size = ssize;
    return 0;
}

typedef int (*file_create_fn)(const char *name, unsigned long long stripe_size, int stripe_offset,
                              int stripe_count, int stripe_pattern);

int iot_lustre_create(const char *path, long long count, long long size)
{
    void *lib = dlopen("liblustreapi.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib)
        lib = dlopen("liblustreapi.so", RTLD_NOW | RTLD_LOCAL);
    if (!lib)
        return -ENOSYS;
    file_create_fn create;
    *(void **)&create = dlsym(lib, "llapi_file_create");
    int rc = create ? create(path, size > 0 ? (unsigned long long)size : 0, -1,
                             count > 0 ? (int)count : 0, 0)
                    : -ENOSYS;
    dlclose(lib);
    return rc < 0 ? rc : 0; /* llapi returns -errno */
}
