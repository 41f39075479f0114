/* File system type of a path (statfs), for reports and for knowing which hints can work. */
#ifndef IOTUNE_FSTYPE_H
#define IOTUNE_FSTYPE_H

/* Name such as "lustre", "gpfs", "ceph" (kernel CephFS, or ceph-fuse: a FUSE mount whose type in
 * /proc/self/mountinfo is fuse.ceph-fuse), "ext4", "tmpfs", or "unknown(0x...)"; the path or,
 * for a file not yet created, its directory. buf receives the name. */
const char *iot_fstype(const char *path, char *buf, int len);

/* Does ROMIO honour striping hints on this file system? */
int iot_fs_stripes(const char *fsname);

/* Does the file system keep a striping layout per file that the runtime can set and read back
 * (fs/: Lustre, CephFS)? */
int iot_fs_has_layouts(const char *fsname);

#endif
