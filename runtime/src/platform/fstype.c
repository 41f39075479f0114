#include "platform/fstype.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/vfs.h>

#include "base/real.h"

#include "config/settings.h"

static const struct {
    unsigned long magic;
    const char *name;
} known[] = {
    {0x0BD00BD0UL, "lustre"}, {0x47504653UL, "gpfs"},    {0xEF53UL, "ext4"},
    {0x01021994UL, "tmpfs"},  {0x58465342UL, "xfs"},     {0x9123683EUL, "btrfs"},
    {0x6969UL, "nfs"},        {0x794C7630UL, "overlay"}, {0xFF534D42UL, "cifs"},
    {0x65735546UL, "fuse"},   {0x00C36400UL, "ceph"},    {0x19830326UL, "beegfs"},
    {0x5346414FUL, "afs"},    {0x2FC12FC1UL, "zfs"},     {0xAAD7AAEAUL, "panfs"},
};

/* A FUSE mount's file system from /proc/self/mountinfo: the type after " - " of the longest
 * mount point that holds path ("fuse.ceph-fuse" is CephFS). 1 when it is ceph-fuse. */
static int fuse_is_ceph(const char *path)
{
    char real[4096];
    if (!realpath(path, real))
        return 0;
    FILE *f = iot_real_fopen("/proc/self/mountinfo", "r");
    if (!f)
        return 0;
    char line[8192];
    size_t best = 0;
    int ceph = 0;
    while (fgets(line, sizeof line, f)) {
        char point[4096], type[64];
        const char *dash = strstr(line, " - ");
        if (!dash || sscanf(line, "%*s %*s %*s %*s %4095s", point) != 1 ||
            sscanf(dash + 3, "%63s", type) != 1)
            continue;
        size_t n = strlen(point); /* octal escapes (\040) left as they are: no match then */
        int under = strncmp(real, point, n) == 0 && (real[n] == '/' || real[n] == '\0' || n == 1);
        if (under && n >= best) {
            best = n;
            ceph = strcmp(type, "fuse.ceph-fuse") == 0 || strcmp(type, "fuse.ceph") == 0;
        }
    }
    iot_real_fclose(f);
    return ceph;
}

const char *iot_fstype(const char *path, char *buf, int len)
{
    path = iot_strip_romio_prefix(path);
    struct statfs st;
    const char *at = path;
    char dir[4096];
    int rc = statfs(path, &st);
    if (rc != 0) {
        snprintf(dir, sizeof dir, "%s", path);
        char *slash = strrchr(dir, '/');
        if (slash)
            *(slash == dir ? slash + 1 : slash) = '\0';
        else
            snprintf(dir, sizeof dir, ".");
        rc = statfs(dir, &st);
        at = dir;
    }
    if (rc != 0) {
        snprintf(buf, (size_t)len, "unknown");
        return buf;
    }
    if ((unsigned int)st.f_type == 0x65735546U && fuse_is_ceph(at)) {
        snprintf(buf, (size_t)len, "ceph"); /* CephFS through ceph-fuse */
        return buf;
    }
    for (size_t i = 0; i < sizeof known / sizeof *known; i++)
        if ((unsigned long)(unsigned int)st.f_type == known[i].magic) {
            snprintf(buf, (size_t)len, "%s", known[i].name);
            return buf;
        }
    snprintf(buf, (size_t)len, "unknown(0x%lx)", (unsigned long)(unsigned int)st.f_type);
    return buf;
}

int iot_fs_stripes(const char *fsname)
{
    return strcmp(fsname, "lustre") == 0;
}

int iot_fs_has_layouts(const char *fsname)
{
    return strcmp(fsname, "lustre") == 0 || strcmp(fsname, "ceph") == 0;
}
