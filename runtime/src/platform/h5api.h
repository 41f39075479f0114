/* The HDF5 API as the runtime calls it: resolved at run time from whatever HDF5 the
 * application loaded, so libiotune.so has no link-time dependency on HDF5. Programs without
 * HDF5 never load it, and one build serves any ABI-compatible HDF5. */
#ifndef IOTUNE_H5API_H
#define IOTUNE_H5API_H

#include <hdf5.h>

#include "platform/mpiapi.h" /* after hdf5.h: parallel HDF5 includes <mpi.h> itself */
#include "platform/symbols.h"

/* Functions the runtime wraps (real versions) and uses. Optional ones (parallel HDF5 only,
 * or newer releases) may stay NULL. One per line, left alone by the formatter (its X-macro
 * layout differs between versions). */
/* clang-format off */
#define IOT_H5_FUNCS(X)                                                                            \
    X(H5open)                                                                                      \
    X(H5Fcreate)                                                                                   \
    X(H5Fopen)                                                                                     \
    X(H5Fget_name)                                                                                 \
    X(H5Fclose)                                                                                    \
    X(H5Fflush)                                                                                    \
    X(H5Sget_select_npoints)                                                                       \
    X(H5Sget_simple_extent_npoints)                                                                \
    X(H5Sget_select_bounds)                                                                        \
    X(H5Dcreate2)                                                                                  \
    X(H5Dcreate1)                                                                                  \
    X(H5Dcreate_anon)                                                                              \
    X(H5Dopen2)                                                                                    \
    X(H5Dopen1)                                                                                    \
    X(H5Dwrite)                                                                                    \
    X(H5Dread)                                                                                     \
    X(H5Dwrite_chunk)                                                                              \
    X(H5Dread_chunk)                                                                               \
    X(H5Dget_chunk_storage_size)                                                                   \
    X(H5Dset_extent)                                                                               \
    X(H5Dclose)                                                                                    \
    X(H5Dget_space)                                                                                \
    X(H5Dget_type)                                                                                 \
    X(H5Dget_create_plist)                                                                         \
    X(H5Pcreate)                                                                                   \
    X(H5Pcopy)                                                                                     \
    X(H5Pclose)                                                                                    \
    X(H5Pget_fapl_mpio)                                                                            \
    X(H5Pget_layout)                                                                               \
    X(H5Pget_external_count)                                                                       \
    X(H5Pset_chunk)                                                                                \
    X(H5Pfill_value_defined)                                                                       \
    X(H5Pget_nfilters)                                                                             \
    X(H5Pset_dxpl_mpio)                                                                            \
    X(H5Pget_dxpl_mpio)                                                                            \
    X(H5Sget_simple_extent_ndims)                                                                  \
    X(H5Sget_simple_extent_dims)                                                                   \
    X(H5Sclose)                                                                                    \
    X(H5Tget_size)                                                                                 \
    X(H5Tclose)                                                                                    \
    X(H5Iget_name)                                                                                 \
    X(H5Eget_auto2)                                                                                \
    X(H5Eset_auto2)                                                                                \
    X(H5Eget_current_stack)                                                                        \
    X(H5Eset_current_stack)                                                                        \
    X(H5Eclose_stack)                                                                              \
    X(H5Ewalk2)                                                                                    \
    X(H5Oopen)                                                                                     \
    X(H5Oopen_by_idx)                                                                              \
    X(H5Oclose)                                                                                    \
    X(H5Olink)                                                                                     \
    X(H5Lget_name_by_idx)                                                                          \
    X(H5Idec_ref)                                                                                  \
    X(H5Iget_type)                                                                                 \
    X(H5Iis_valid)
/* clang-format on */

typedef struct {
#define IOT_H5_FIELD(f) __typeof__(&f) f;
    IOT_H5_FUNCS(IOT_H5_FIELD)
#undef IOT_H5_FIELD
    /* property list classes (H5P_FILE_ACCESS ...), read after H5open */
    hid_t cls_fapl, cls_dcpl, cls_dapl, cls_dxpl;
    hid_t cls_fcpl;      /* the file creation class */
    int parallel;        /* the HDF5 loaded has the MPI-IO driver */
    unsigned version[3]; /* the HDF5 loaded, from its own H5get_libversion (0.0.0: unknown) */
} iot_h5_api;

/* The version of the HDF5 the runtime has already resolved (v: major, minor, release) and
 * whether it is a parallel build: 0 when it never resolved one (no HDF5 call was seen). Never
 * resolves it itself: safe at the end of a run. */
int iot_h5_seen(unsigned v[3], int *parallel);

/* The HDF5 loaded is at least major.minor.release (its H5get_libversion). */
int iot_h5_at_least(unsigned major, unsigned minor, unsigned release);

/* The newest file format of the library as an H5F_libver_t: 1.8 -> 1, 1.10 -> 2, 1.12 -> 3,
 * 1.14 -> 4, 2.0 -> 5 (its H5F_LIBVER_LATEST, which a header of another release misstates). */
int iot_h5_latest_format(void);

/* The name of a file driver id of the HDF5 loaded ("sec2", "core", "mpio", "subfiling", "ioc",
 * "stdio", "family", ...; "other" for a driver it does not know by name): each known driver's
 * id read from the H5FD_<NAME>_id_g variable of 1.14 and later, or returned by the
 * H5FD_<name>_init function of 1.8 to 1.12, whichever the library defines. */
const char *iot_h5_driver_name(hid_t driver);

/* The resolved API, or NULL when the HDF5 loaded cannot be tuned (or there is none). */
const iot_h5_api *iot_h5(void);

/* The resolved API for calling the real wrapped functions; pointers may be NULL. */
const iot_h5_api *iot_h5_real(void);

/* An HDF5 function that is not in IOT_H5_FUNCS, found on first use: NULL when the HDF5
 * loaded lacks it. Setting a new parameter needs no edit of the list above. */
#define IOT_H5_FN(fn)                                                                              \
    __extension__({                                                                                \
        static __typeof__(&fn) found_;                                                             \
        static int looked_;                                                                        \
        if (!__atomic_load_n(&looked_, __ATOMIC_ACQUIRE)) {                                        \
            found_ = (__typeof__(&fn))iot_find_symbol(#fn);                                        \
            __atomic_store_n(&looked_, 1, __ATOMIC_RELEASE);                                       \
        }                                                                                          \
        found_;                                                                                    \
    })

/* Calls fn(...) found with IOT_H5_FN; -1 (refused) when this HDF5 lacks it. */
#define IOT_H5_CALL(fn, ...)                                                                       \
    __extension__({                                                                                \
        __typeof__(&fn) fn_ = IOT_H5_FN(fn);                                                       \
        fn_ ? fn_(__VA_ARGS__) : -1;                                                               \
    })

/* Silences HDF5's error stack printing around the runtime's own calls. */
typedef struct {
    H5E_auto2_t func;
    void *data;
} iot_h5_quiet;
void iot_h5_quiet_begin(iot_h5_quiet *q);
void iot_h5_quiet_end(const iot_h5_quiet *q);

/* A failed call's error stack and errno, set aside while the runtime makes HDF5 calls of its
 * own (any HDF5 call clears the stack), then given back: the application sees exactly the
 * error of its call. Without H5Eget_current_stack nothing is kept (stack = -1). */
typedef struct {
    hid_t stack;
    int err;
} iot_h5_failure;
void iot_h5_failure_keep(iot_h5_failure *f);
void iot_h5_failure_give_back(iot_h5_failure *f);
/* HDF5's innermost message of a kept failure, e.g. "H5Pset_alignment: ..."; then drops it. */
void iot_h5_failure_describe_and_drop(iot_h5_failure *f, char *buf, size_t len);

#endif
