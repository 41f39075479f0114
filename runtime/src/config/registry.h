/* Types of the parameter registry. The table itself is generated from
 * src/iotune/data/params.tsv (see tools/gen_params.py). */
#ifndef IOTUNE_REGISTRY_H
#define IOTUNE_REGISTRY_H

typedef enum { IOT_LAYER_HDF5, IOT_LAYER_MPIIO, IOT_LAYER_FS } iot_layer;
typedef enum { IOT_SCOPE_FILE, IOT_SCOPE_DATASET } iot_scope;
typedef enum {
    IOT_T_SIZE,
    IOT_T_INT,
    IOT_T_BOOL,
    IOT_T_ENUM,
    IOT_T_PAIR,
    IOT_T_DIMS,
    IOT_T_DOUBLE,
    IOT_T_STRING
} iot_type;
typedef enum {
    IOT_TARGET_FAPL,
    IOT_TARGET_FCPL, /* file creation list: at H5Fcreate only */
    IOT_TARGET_DCPL,
    IOT_TARGET_DAPL,
    IOT_TARGET_DXPL,
    IOT_TARGET_HINT,
    IOT_TARGET_SWITCH /* a runtime switch (serial_files): no property list of its own */
} iot_target;

/* Where the HDF5 library supports a parameter (src/iotune/data/h5versions.tsv). */
typedef enum {
    IOT_BUILDS_ANY,
    IOT_BUILDS_SERIAL, /* a parallel build of HDF5 refuses it for every file */
    IOT_BUILDS_MPIO,   /* files opened with the MPI-IO driver only */
    IOT_BUILDS_NOMPIO  /* not for files opened with the MPI-IO driver */
} iot_builds;

typedef struct {
    const char *name;
    iot_layer layer;
    iot_scope scope;
    iot_type type;
    double min, max;     /* bounds of every number in the value */
    const char *choices; /* "a|b|c" for enums, else NULL */
    iot_target target;
    unsigned since;       /* HDF5 parameters: first release, major*10000+minor*100+release; 0 */
    iot_builds builds;    /* HDF5 parameters: where the library supports it */
    const char *defaults; /* HDF5 parameters: "release=value ..." (the library's own), or NULL */
} iot_param_def;

#endif
