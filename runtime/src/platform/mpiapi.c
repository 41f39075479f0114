/* The MPI functions the runtime calls itself (mpiapi.h): each is a hidden entry of this library
 * that jumps through a pointer, filled in from the process's MPI by iot_mpi_resolve. Hidden, so
 * only the runtime's own calls reach them and the program's MPI names stay the program's; one
 * indirect jump, as a call through the PLT costs. */
#include "platform/mpiapi.h"

#include <dlfcn.h>
#include <stddef.h>

#include "platform/symbols.h"

IOT_HIDDEN int iot_mpi_state;

/* clang-format off */
#define IOT_MPI_IMPORTS(X)                                                                         \
    X(PMPI_Init) X(PMPI_Init_thread) X(PMPI_Finalize) X(MPI_Initialized) X(MPI_Finalized)          \
    X(PMPI_Get_version) X(PMPI_Get_library_version) X(PMPI_Get_processor_name)                     \
    X(PMPI_Error_class) X(PMPI_Error_string)                                                       \
    X(PMPI_Comm_rank) X(PMPI_Comm_size) X(PMPI_Comm_dup) X(PMPI_Comm_free) X(MPI_Comm_free)        \
    X(PMPI_Comm_test_inter) X(PMPI_Comm_split) X(PMPI_Send) X(PMPI_Recv)                           \
    X(PMPI_Barrier) X(PMPI_Bcast) X(PMPI_Reduce) X(PMPI_Allreduce) X(PMPI_Gather)                  \
    X(PMPI_Gatherv) X(PMPI_Allgather) X(PMPI_Allgatherv) X(PMPI_Scatter) X(PMPI_Exscan)           \
    X(PMPI_Type_size_x) X(PMPI_Get_elements_x)                                                     \
    X(PMPI_Type_get_extent_x) X(PMPI_Type_get_true_extent_x) X(PMPI_Type_get_envelope)            \
    X(PMPI_Type_get_contents) X(PMPI_Type_free) X(PMPI_Type_contiguous) X(PMPI_Type_commit)        \
    X(PMPI_Op_create) X(PMPI_Op_free)                                                              \
    X(MPI_Info_create) X(MPI_Info_dup) X(MPI_Info_free) X(MPI_Info_get) X(MPI_Info_set)            \
    X(MPI_Info_delete) X(MPI_Info_get_nkeys) X(MPI_Info_get_nthkey)                                \
    X(PMPI_File_open) X(PMPI_File_close) X(PMPI_File_delete) X(PMPI_File_sync)                     \
    X(PMPI_File_set_view) X(PMPI_File_get_info) X(PMPI_File_get_amode) X(PMPI_File_set_size)       \
    X(PMPI_File_get_position) X(PMPI_File_get_byte_offset) X(PMPI_File_set_info)                   \
    X(PMPI_File_seek_shared) X(PMPI_File_get_position_shared)                                      \
    X(PMPI_File_write_all_end) X(PMPI_File_write_at_all_end) X(PMPI_File_write_ordered_end)        \
    X(PMPI_File_read_all_end) X(PMPI_File_read_at_all_end) X(PMPI_File_read_ordered_end)

/* The data transfers the MPI-IO wrappers pass on (wrap_mpiio.c), per count suffix. */
#define IOT_MPI_TRANSFERS(X, S)                                                                    \
    X(PMPI_File_write##S) X(PMPI_File_write_at##S) X(PMPI_File_write_all##S)                       \
    X(PMPI_File_write_at_all##S) X(PMPI_File_write_shared##S) X(PMPI_File_write_ordered##S)        \
    X(PMPI_File_read##S) X(PMPI_File_read_at##S) X(PMPI_File_read_all##S)                          \
    X(PMPI_File_read_at_all##S) X(PMPI_File_read_shared##S) X(PMPI_File_read_ordered##S)           \
    X(PMPI_File_iwrite##S) X(PMPI_File_iwrite_at##S) X(PMPI_File_iwrite_shared##S)                 \
    X(PMPI_File_iread##S) X(PMPI_File_iread_at##S) X(PMPI_File_iread_shared##S)                    \
    X(PMPI_File_write_all_begin##S) X(PMPI_File_write_at_all_begin##S)                             \
    X(PMPI_File_write_ordered_begin##S) X(PMPI_File_read_all_begin##S)                             \
    X(PMPI_File_read_at_all_begin##S) X(PMPI_File_read_ordered_begin##S)
#define IOT_MPI_TRANSFERS_31(X, S)                                                                 \
    X(PMPI_File_iwrite_all##S) X(PMPI_File_iwrite_at_all##S) X(PMPI_File_iread_all##S)             \
    X(PMPI_File_iread_at_all##S)
/* clang-format on */

#if defined(__x86_64__)
#define IOT_MPI_IMPORT_STUB(name)                                                                  \
    __asm__(".text\n.globl " #name "\n.hidden " #name "\n.type " #name ",@function\n" #name ":\n"  \
            "\tjmp *iot_imp_" #name "(%rip)\n.size " #name ", .-" #name "\n");
#elif defined(__aarch64__)
#define IOT_MPI_IMPORT_STUB(name)                                                                  \
    __asm__(".text\n.globl " #name "\n.hidden " #name "\n.type " #name ",%function\n" #name ":\n"  \
            "\tadrp x16, iot_imp_" #name "\n\tldr x16, [x16, :lo12:iot_imp_" #name "]\n"           \
            "\tbr x16\n.size " #name ", .-" #name "\n");
#else
#error "mpiapi.c: no import stub for this architecture (add one beside x86_64 and aarch64)"
#endif

int iot_mpi_absent(void)
{
    return 1;
}

#define IOT_MPI_DEFINE(name)                                                                       \
    IOT_HIDDEN void *iot_imp_##name = (void *)iot_mpi_absent;                                      \
    IOT_MPI_IMPORT_STUB(name)
#define IOT_MPI_ENTRY(name) {#name, &iot_imp_##name},

typedef struct {
    const char *name;
    void **target;
} entry;

IOT_MPI_IMPORTS(IOT_MPI_DEFINE)
IOT_MPI_TRANSFERS(IOT_MPI_DEFINE, )
#if MPI_VERSION > 3 || (MPI_VERSION == 3 && MPI_SUBVERSION >= 1)
IOT_MPI_TRANSFERS_31(IOT_MPI_DEFINE, )
#endif
#if MPI_VERSION >= 4
IOT_MPI_TRANSFERS(IOT_MPI_DEFINE, _c)
IOT_MPI_TRANSFERS_31(IOT_MPI_DEFINE, _c)
#endif

#ifdef OPEN_MPI
#define IOT_OMPI_DEFINE(obj) IOT_HIDDEN void *iot_obj_##obj;
#define IOT_OMPI_ENTRY(obj) {#obj, &iot_obj_##obj},
IOT_OMPI_OBJECTS(IOT_OMPI_DEFINE)
#endif

/* clang-format off */
static const entry entries[] = {
    IOT_MPI_IMPORTS(IOT_MPI_ENTRY)
    IOT_MPI_TRANSFERS(IOT_MPI_ENTRY, )
#if MPI_VERSION > 3 || (MPI_VERSION == 3 && MPI_SUBVERSION >= 1)
    IOT_MPI_TRANSFERS_31(IOT_MPI_ENTRY, )
#endif
#if MPI_VERSION >= 4
    IOT_MPI_TRANSFERS(IOT_MPI_ENTRY, _c)
    IOT_MPI_TRANSFERS_31(IOT_MPI_ENTRY, _c)
#endif
#ifdef OPEN_MPI
    IOT_OMPI_OBJECTS(IOT_OMPI_ENTRY)
#endif
};
/* clang-format on */

void iot_mpi_resolve(void *lib)
{
    for (size_t i = 0; i < sizeof entries / sizeof *entries; i++) {
        /* the global scope first, as the link would have bound them: a program that uses
         * MPI_COMM_WORLD of Open MPI holds its own copy of the object (a copy relocation), and
         * that copy is the one its MPI uses */
        void *found = dlsym(RTLD_DEFAULT, entries[i].name);
        if (!found && lib)
            found = dlsym(lib, entries[i].name);
        if (!found)
            found = iot_find_symbol(entries[i].name);
        if (found)
            __atomic_store_n(entries[i].target, found, __ATOMIC_RELEASE);
    }
}
