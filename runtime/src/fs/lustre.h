/* Lustre layouts: a file's stripe count and size read from its lustre.lov extended attribute,
 * and a new file created with a layout through the Lustre user API (liblustreapi, loaded at run
 * time with dlopen: the runtime links no Lustre library). Written to the Lustre headers'
 * definitions; NOT tested on this project's machines (no Lustre there): docs/striping.md. */
#ifndef IOTUNE_LUSTRE_H
#define IOTUNE_LUSTRE_H

/* stripe_count and stripe_size of path's plain (v1/v3) layout: 0, or -errno (-ENOTSUP for a
 * composite or otherwise unknown layout). */
int iot_lustre_get(const char *path, long long *count, long long *size);

/* A new file at path with count stripes of size bytes (-1: the file system's default), through
 * llapi_file_create: for MPI-IO drivers that do not stripe (ROMIO's generic one on Lustre).
 * 0, or -errno (-ENOSYS when liblustreapi cannot be loaded). */
int iot_lustre_create(const char *path, long long count, long long size);

#endif
