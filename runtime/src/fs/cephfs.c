#include "fs/cephfs.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/xattr.h>

int iot_ceph_parse(const char *text, iot_ceph_layout *l)
{
    l->stripe_unit = l->stripe_count = l->object_size = -1;
    l->pool[0] = '\0';
    for (const char *p = text; *p;) {
        p += strspn(p, " ");
        size_t n = strcspn(p, " ");
        const char *eq = memchr(p, '=', n);
        if (eq) {
            size_t k = (size_t)(eq - p);
            long long v = strtoll(eq + 1, NULL, 10);
            if (k == 11 && strncmp(p, "stripe_unit", k) == 0)
                l->stripe_unit = v;
            else if (k == 12 && strncmp(p, "stripe_count", k) == 0)
                l->stripe_count = v;
            else if (k == 11 && strncmp(p, "object_size", k) == 0)
                l->object_size = v;
            else if (k == 4 && strncmp(p, "pool", k) == 0)
                snprintf(l->pool, sizeof l->pool, "%.*s", (int)(n - k - 1), eq + 1);
        }
        p += n;
    }
    return l->stripe_unit > 0 && l->stripe_count > 0 && l->object_size > 0 ? 0 : -1;
}

int iot_ceph_get(const char *path, int dir, iot_ceph_layout *l)
{
    char text[512];
    ssize_t n = getxattr(path, dir ? "ceph.dir.layout" : "ceph.file.layout", text, sizeof text - 1);
    if (n < 0)
        return -errno;
    text[n] = '\0';
    return iot_ceph_parse(text, l) == 0 ? 0 : -EIO;
}

void iot_ceph_text(const iot_ceph_layout *l, char *buf, int len)
{
    int used = 0;
    buf[0] = '\0';
    if (l->stripe_unit >= 0)
        used += snprintf(buf + used, (size_t)(len - used), "stripe_unit=%lld", l->stripe_unit);
    if (l->stripe_count >= 0 && used < len)
        used += snprintf(buf + used, (size_t)(len - used), "%sstripe_count=%lld", used ? " " : "",
                         l->stripe_count);
    if (l->object_size >= 0 && used < len)
        snprintf(buf + used, (size_t)(len - used), "%sobject_size=%lld", used ? " " : "",
                 l->object_size);
}

int iot_ceph_set(const char *path, const iot_ceph_layout *want)
{
    char text[160];
    iot_ceph_text(want, text, sizeof text);
    if (!text[0])
        return 0;
    return setxattr(path, "ceph.file.layout", text, strlen(text), 0) == 0 ? 0 : -errno;
}
