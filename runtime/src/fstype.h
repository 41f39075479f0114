/* File system type of a path (statfs), for reports and for knowing which hints can work. */
#ifndef IOTUNE_FSTYPE_H
#define IOTUNE_FSTYPE_H

#include <string.h>

/* The path without a ROMIO file system prefix such as "ufs:" or "lustre:" (two or more
 * characters before the first colon, no slash among them). */
static inline const char *iot_romio_path(const char *path)
{
    const char *colon = strchr(path, ':');
    if (colon && colon - path >= 2 && !memchr(path, '/', (size_t)(colon - path)))
        return colon + 1;
    return path;
}

/* Name such as "lustre", "gpfs", "ext4", "tmpfs", or "unknown(0x...)"; the path or, for a
 * file not yet created, its directory. buf receives the name. */
const char *iot_fstype(const char *path, char *buf, int len);

/* Does ROMIO honour striping hints on this file system? */
int iot_fs_stripes(const char *fsname);

#endif
