/* The MPI as the runtime calls it: found at run time in the process's own MPI, never linked.
 *
 * A preloaded library that linked an MPI would load it into every process, ahead of the MPI
 * the program brings: a program that loads the other family's MPI later with dlopen (Python's
 * mpi4py and h5py) would then have its MPI calls answered by the wrong library. So
 * libiotune.so has no link-time dependency on MPI. Every MPI function it calls itself
 * (PMPI_File_open, MPI_Info_set, ...) is a hidden entry of this library that jumps through a
 * pointer filled in by abi.c once the process's MPI is known (mpiapi.c lists them; the link,
 * with -z defs, fails on any MPI function missing from that list). Before that, and in a
 * process of the other family, each returns an error and touches nothing.
 *
 * Open MPI's predefined handles (MPI_COMM_WORLD, MPI_INT, ...) are addresses of objects in its
 * library; for a build on Open MPI they are redefined below to the addresses found at run time.
 * MPICH's handles are integer constants and need nothing. Include this header, not <mpi.h>. */
#ifndef IOTUNE_MPIAPI_H
#define IOTUNE_MPIAPI_H

#include <mpi.h>

#define IOT_HIDDEN __attribute__((visibility("hidden")))

/* Fills the MPI entries from the global scope, else from lib (a dlopen handle of the process's
 * MPI, or NULL), else from any loaded object. Entries the MPI lacks keep returning an error. */
void iot_mpi_resolve(void *lib);

/* Stands in for an MPI function that is not there: never MPI_SUCCESS (1 is MPI_ERR_BUFFER in
 * both families). */
int iot_mpi_absent(void);

#ifdef OPEN_MPI
/* clang-format off */
#define IOT_OMPI_OBJECTS(X)                                                                        \
    X(ompi_mpi_byte)                                                                               \
    X(ompi_mpi_char)                                                                               \
    X(ompi_mpi_int)                                                                                \
    X(ompi_mpi_double)                                                                             \
    X(ompi_mpi_int64_t)                                                                            \
    X(ompi_mpi_comm_world)                                                                         \
    X(ompi_mpi_comm_null)                                                                          \
    X(ompi_mpi_info_null)                                                                          \
    X(ompi_mpi_file_null)                                                                          \
    X(ompi_mpi_op_max)                                                                             \
    X(ompi_mpi_op_min)                                                                             \
    X(ompi_mpi_op_sum)
/* clang-format on */
#define IOT_OMPI_DECLARE(obj) extern IOT_HIDDEN void *iot_obj_##obj;
IOT_OMPI_OBJECTS(IOT_OMPI_DECLARE)
#undef IOT_OMPI_DECLARE

#undef MPI_BYTE
#undef MPI_CHAR
#undef MPI_INT
#undef MPI_DOUBLE
#undef MPI_INT64_T
#undef MPI_COMM_WORLD
#undef MPI_COMM_NULL
#undef MPI_INFO_NULL
#undef MPI_FILE_NULL
#undef MPI_MAX
#undef MPI_MIN
#undef MPI_SUM
#define MPI_BYTE ((MPI_Datatype)iot_obj_ompi_mpi_byte)
#define MPI_CHAR ((MPI_Datatype)iot_obj_ompi_mpi_char)
#define MPI_INT ((MPI_Datatype)iot_obj_ompi_mpi_int)
#define MPI_DOUBLE ((MPI_Datatype)iot_obj_ompi_mpi_double)
#define MPI_INT64_T ((MPI_Datatype)iot_obj_ompi_mpi_int64_t)
#define MPI_COMM_WORLD ((MPI_Comm)iot_obj_ompi_mpi_comm_world)
#define MPI_COMM_NULL ((MPI_Comm)iot_obj_ompi_mpi_comm_null)
#define MPI_INFO_NULL ((MPI_Info)iot_obj_ompi_mpi_info_null)
#define MPI_FILE_NULL ((MPI_File)iot_obj_ompi_mpi_file_null)
#define MPI_MAX ((MPI_Op)iot_obj_ompi_mpi_op_max)
#define MPI_MIN ((MPI_Op)iot_obj_ompi_mpi_op_min)
#define MPI_SUM ((MPI_Op)iot_obj_ompi_mpi_op_sum)
#endif

/* What the process's MPI is to this runtime (settled by abi.c). */
enum {
    IOT_MPI_UNKNOWN = 0, /* no MPI seen yet: the runtime makes no MPI call */
    IOT_MPI_OWN = 1,     /* the family built for: MPI functions resolved (mpiapi.h) */
    IOT_MPI_FOREIGN = 2  /* the other family: nothing applied, nothing captured, no MPI call */
};
extern IOT_HIDDEN int iot_mpi_state;

#endif
