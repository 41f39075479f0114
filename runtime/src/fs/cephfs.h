/* CephFS layouts (kernel client or ceph-fuse): a file's ceph.file.layout read and set through
 * extended attributes, a directory's ceph.dir.layout read. */
#ifndef IOTUNE_CEPHFS_H
#define IOTUNE_CEPHFS_H

typedef struct {
    long long stripe_unit, stripe_count, object_size; /* -1: not given (set: left as it is) */
    char pool[64];
} iot_ceph_layout;

/* The layout of a file (dir 0: ceph.file.layout) or of a directory (dir 1: ceph.dir.layout,
 * absent when the directory has none of its own). 0, or -errno. */
int iot_ceph_get(const char *path, int dir, iot_ceph_layout *l);

/* Sets the fields of want that are >= 0 on the file, in one setxattr of ceph.file.layout (so
 * that no order of the fields is ever invalid on the way). 0, or -errno: -ENOTEMPTY when the
 * file has data or had (CephFS lays out only a new, empty file), -EINVAL for a layout CephFS
 * refuses (stripe_unit a multiple of 64 KiB dividing object_size). */
int iot_ceph_set(const char *path, const iot_ceph_layout *want);

/* "stripe_unit=... stripe_count=... object_size=..." of l (fields < 0 left out). */
void iot_ceph_text(const iot_ceph_layout *l, char *buf, int len);

/* Parses CephFS's "stripe_unit=1048576 stripe_count=3 object_size=4194304 pool=..." into l;
 * 0, or -1 when a field is missing. */
int iot_ceph_parse(const char *text, iot_ceph_layout *l);

#endif
