/* What the HDF5 wrappers share (wrap_hdf5*.c): the tables of followed files and datasets
 * and the names of an object's file and path. */
#ifndef IOTUNE_WRAP_HDF5_H
#define IOTUNE_WRAP_HDF5_H

#include <stddef.h>

#include "base/idmap.h"
#include "platform/h5api.h"
#include "trace/trace.h"

/* Open datasets the runtime follows: id -> {capture record, forced transfer mode or -1}.
 * Empty, and never consulted, unless transfer_mode is set or capture is on. */
extern iot_idmap dsets;
/* Open datasets of a traced run: id -> {index in the trace's dataset table, element size}.
 * IOT_TRACE_UNNAMED: a dataset traced without a path (none in a traced run now: an anonymous
 * one is traced under a stand-in, iot_anon_trace_path), whose transfers the trace leaves out. */
extern iot_idmap traced;
#define IOT_TRACE_UNNAMED (-2)
/* Anonymous datasets (H5Dcreate_anon) and, in a traced run, groups (H5Gcreate_anon) not linked
 * yet: id -> {capture record (a group's: -1), 0 or IOT_ANON_GROUP} (wrap_hdf5_link.c). */
extern iot_idmap anon;
#define IOT_ANON_GROUP 1
#define IOT_ANON_NESTED 2 /* a group linked into an anonymous group (wrap_hdf5_link.c) */
/* A new number for an anonymous object (a group's is its `anon` entry's first int). The trace's
 * path of a dataset made at loc under rel: an anonymous one's (anonymous: H5Dcreate_anon)
 * "(anonymous N)", one made in an anonymous group "(anonymous group N)/rel", until H5Olink names
 * them (docs/profile.md); else path (wrap_hdf5_link.c). */
int iot_anon_next(void);
void iot_anon_trace_path(hid_t loc, const char *rel, int anonymous, const char *path, char *out,
                         size_t len);
/* Open files the runtime follows (settings or capture): id -> {capture record or -1, unused}. */
extern iot_idmap files;

/* Where a dataset lives: the file's name and the dataset's full path. */
void dataset_names(const iot_h5_api *h, hid_t loc, const char *name, char *file, size_t flen,
                   char *path, size_t plen);
/* The capture record of an HDF5 object's file (by the file's name). */
int record_of(const iot_h5_api *h, hid_t obj, const char *known_name);
/* The trace's description of a dataset (HDF5 calls, outside the lock): space, type and creation
 * list are the application's own when it creates the dataset (what it asked for, not the tuned
 * chunking), else the dataset's (space, type, dcpl H5I_INVALID_HID: asked of id). */
void describe_dataset(const iot_h5_api *h, hid_t id, hid_t space, hid_t type, hid_t dcpl,
                      iot_trace_dset_desc *d, uint64_t *dims, uint64_t *maxdims, uint64_t *chunks);

/* Space may be freed by a call on loc (a deletion): every open file is marked
 * (iot_files_space_freed); H5Dset_extent to size: marked when it shrinks the dataset
 * (wrap_hdf5_free.c). */
void iot_h5_space_freed(hid_t loc);
void iot_h5_extent_shrinks(hid_t dset, const hsize_t *size);
/* Does a dataset made with dcpl let HDF5 free space by itself (filters: a chunk rewritten
 * larger is moved; 1 when not known)? */
int iot_h5_frees_by_itself(hid_t dcpl);

/* What an object's creation list says of its header: times recorded (*track 1, 0), attribute
 * creation order (*order: H5Pset_attr_creation_order's flags); -1 when unknown (wrap_hdf5.c). */
void describe_header(hid_t cp, int *track, int *order);

/* A lookup call in loc's file (finding an object or attribute, iterating) that took dt
 * seconds: HDF5 metadata time (wrap_hdf5_attr.c). */
void iot_h5_lookup_done(hid_t loc, double dt, int outer);
/* A dimension scale lookup (H5DSis_scale, H5DSget_num_scales, H5DSiterate_scales) on dataset
 * did, dimension dim, traced (wrap_hdf5_scales.c; the trace's lock is taken there). */
void iot_trace_scale_lookup(const char *func, hid_t did, int dim, double t, double dt);

/* Attribute calls in the trace (wrap_hdf5_attrtrace.c), after the application's call
 * succeeded, when it was to be traced (iot_trace_wanted() before it): a creation or open of
 * attribute attr on the object loc (obj: a path from it, or NULL), named name (NULL: asked of
 * attr), of type and dataspace (H5I_INVALID_HID: asked of attr); a write or read of attr with
 * memory type mtype from or into buf; a lookup, rename (new_name) or deletion by name. */
void iot_attr_made(const char *func, hid_t loc, const char *obj, const char *name, hid_t type,
                   hid_t space, hid_t attr, double t, double dt);
void iot_attr_io(const char *func, hid_t attr, hid_t mtype, const void *buf, double t, double dt);
void iot_attr_named(const char *func, hid_t loc, const char *obj, const char *name,
                    const char *new_name, double t, double dt);
/* A group created (H5Gcreate1, H5Gcreate2: loc the group, name NULL; H5Gcreate_anon at its
 * H5Olink: loc and name the link's), traced on its path. */
void iot_group_made(hid_t loc, const char *name, double t, double dt);
/* A release of id by fn (H5Dclose, H5Gclose, H5Oclose, H5Aclose, H5Idec_ref), timed with
 * capture on: HDF5 may write or read the file then on the application's behalf (a chunk cache
 * flushed through its filters, metadata written, a file whose close waited for its last
 * object). When it is the outermost call, its time is HDF5 metadata time of the file and I/O
 * time of the rank (docs/profile.md) if id is a dataset the runtime follows or the call wrote
 * or read a followed file (that file's); the calls inside it are not counted again. */
int iot_h5_release(int (*fn)(hid_t), hid_t id);
/* A link deleted by name (H5Ldelete, H5Gunlink): traced (wrap_hdf5_attrtrace.c). */
void iot_link_deleted(hid_t loc, const char *name, double t, double dt);
/* An attribute id let go (H5Aclose, H5Idec_ref to 0): forgotten. */
void iot_attr_closed(hid_t attr);

#endif
