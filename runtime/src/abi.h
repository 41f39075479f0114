/* Which MPI the process uses, and the entry points of the runtime's MPI wrappers.
 *
 * A runtime is built for one MPI ABI family (MPICH's or Open MPI's): their handles differ
 * (MPICH: integers; Open MPI: pointers), so a wrapper compiled for one family cannot even pass
 * the other family's arguments on. Each interposed MPI function is therefore entered through
 * a few instructions of assembly (IOT_MPI_WRAPPER) that jump either to the C wrapper or, when
 * the process runs the other family's MPI (iot_mpi_foreign), straight to that MPI's own
 * function, with every register untouched. */
#ifndef IOTUNE_ABI_H
#define IOTUNE_ABI_H

#define IOT_HIDDEN __attribute__((visibility("hidden")))

/* 1 once the process is found to use an MPI of the other ABI family: the runtime then applies
 * nothing, captures nothing and makes no MPI call of its own. */
extern IOT_HIDDEN int iot_mpi_foreign;

/* Looks for the other family's MPI in the process (at start-up; again at MPI_Init, for an MPI
 * loaded later with dlopen, as Python's mpi4py does) and, when it is there, turns the runtime
 * off and says so once per run. Returns iot_mpi_foreign. */
int iot_abi_check(int at_init);

/* The family this runtime was built for: "MPICH" or "Open MPI". */
const char *iot_abi_built_for(void);

/* The MPI of the process and its MPI-IO component (after MPI_Init; before it, or without MPI,
 * the family the runtime was built for and that family's default component). */
typedef struct {
    const char *family;      /* "MPICH" (any MPICH-derived MPI) or "Open MPI" */
    char library[160];       /* MPI_Get_library_version, first line */
    int version, subversion; /* MPI standard */
    char io[32];             /* MPI-IO component: "romio", "ompio", "romio321" */
    const char *io_name;     /* for messages: "ROMIO", "OMPIO" */
    const char *io_from;     /* how io was found: "family", "OMPI_MCA_io", "default" */
    int echoes;              /* MPI_File_get_info returns every hint given (Open MPI): no proof */
} iot_mpi_impl_t;
extern iot_mpi_impl_t iot_mpi_impl;

/* Fills iot_mpi_impl (MPI initialised, not foreign). */
void iot_abi_describe(void);

/* Whether the process's MPI-IO component reads hint key at all (ROMIO: every registry hint;
 * OMPIO: the few of libmca_common_ompio and its fs components, Open MPI 4.1). */
int iot_mpiio_component_uses(const char *key);

/* One forwarding slot per wrapped MPI function, collected by the linker (section iot_fwd). */
typedef struct {
    const char *name;
    void **target;
} iot_fwd_slot;

#if defined(__x86_64__)
#define IOT_MPI_STUB(name)                                                                         \
    __asm__(".text\n.globl " #name "\n.type " #name ",@function\n" #name ":\n"                     \
            "\tcmpl $0, iot_mpi_foreign(%rip)\n\tjne 1f\n\tjmp iot_w_" #name "\n"                  \
            "1:\tjmp *iot_fwd_" #name "(%rip)\n.size " #name ", .-" #name "\n");
#elif defined(__aarch64__)
#define IOT_MPI_STUB(name)                                                                         \
    __asm__(".text\n.globl " #name "\n.type " #name ",%function\n" #name ":\n"                     \
            "\tadrp x16, iot_mpi_foreign\n\tldr w16, [x16, :lo12:iot_mpi_foreign]\n"               \
            "\tcbnz w16, 1f\n\tb iot_w_" #name "\n1:\tadrp x16, iot_fwd_" #name "\n"               \
            "\tldr x16, [x16, :lo12:iot_fwd_" #name "]\n\tbr x16\n.size " #name ", .-" #name       \
            "\n");
#else
#error "abi.h: no entry stub for this architecture (add one beside x86_64 and aarch64)"
#endif

/* Declares the C wrapper of MPI function name (hidden, iot_w_<name>) and its exported entry:
 *     IOT_MPI_WRAPPER(int, MPI_File_sync, (MPI_File fh)) { ... }                            */
#define IOT_MPI_WRAPPER(ret, name, params)                                                         \
    IOT_HIDDEN void *iot_fwd_##name;                                                               \
    static const iot_fwd_slot iot_slot_##name                                                      \
        __attribute__((section("iot_fwd"), used)) = {#name, &iot_fwd_##name};                      \
    IOT_MPI_STUB(name)                                                                             \
    IOT_HIDDEN ret iot_w_##name params;                                                            \
    IOT_HIDDEN ret iot_w_##name params

#endif
