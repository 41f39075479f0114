#include "platform/fstype.h"

#include <stdio.h>
#include <string.h>
#include <sys/vfs.h>

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

const char *iot_fstype(const char *path, char *buf, int len)
{
    path = iot_strip_romio_prefix(path);
    struct statfs st;
    int rc = statfs(path, &st);
    if (rc != 0) {
        char dir[4096];
        snprintf(dir, sizeof dir, "%s", path);
        char *slash = strrchr(dir, '/');
        if (slash)
            *(slash == dir ? slash + 1 : slash) = '\0';
        else
            snprintf(dir, sizeof dir, ".");
        rc = statfs(dir, &st);
    }
    if (rc != 0) {
        snprintf(buf, (size_t)len, "unknown");
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
