/* Which MPI the process uses, and the entry points of the runtime's MPI wrappers.
 *
 * A runtime is built for one MPI ABI family (MPICH's or Open MPI's): their handles differ
 * (MPICH: integers; Open MPI: pointers), so a wrapper compiled for one family cannot even pass
 * the other family's arguments on. Each interposed MPI function is therefore entered through
 * a few instructions of assembly (IOT_MPI_WRAPPER) that jump either to the C wrapper or, when
 * the process runs the other family's MPI, straight to that MPI's own function, with every
 * register untouched. Which of the two is decided at the first such call when start-up could
 * not tell (an MPI loaded later with dlopen, as Python's mpi4py and h5py do): the entry then
 * keeps the argument registers, settles the question (iot_abi_settle) and starts over. */
#ifndef IOTUNE_ABI_H
#define IOTUNE_ABI_H

#include "platform/mpiapi.h"

/* At start-up: looks for an MPI in the program's global scope (a program linked with one) and
 * settles iot_mpi_state when it finds one; otherwise it stays IOT_MPI_UNKNOWN. */
void iot_abi_start(void);

/* Settles iot_mpi_state for good, searching every loaded object (an MPI that came with
 * dlopen(RTLD_LOCAL) is not in the global scope): IOT_MPI_FOREIGN when the other family's MPI
 * is there (said once per run), else IOT_MPI_OWN. Returns it. */
IOT_HIDDEN int iot_abi_settle(void);

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
            "0:\tcmpl $1, iot_mpi_state(%rip)\n\tjne 1f\n\tjmp iot_w_" #name "\n"                  \
            "1:\tcmpl $2, iot_mpi_state(%rip)\n\tje 2f\n"                                          \
            "\tpush %rdi\n\tpush %rsi\n\tpush %rdx\n\tpush %rcx\n\tpush %r8\n\tpush %r9\n"         \
            "\tpush %rax\n\tcall iot_abi_settle\n\tpop %rax\n\tpop %r9\n\tpop %r8\n\tpop %rcx\n"   \
            "\tpop %rdx\n\tpop %rsi\n\tpop %rdi\n\tjmp 0b\n"                                       \
            "2:\tjmp *iot_fwd_" #name "(%rip)\n.size " #name ", .-" #name "\n");
#elif defined(__aarch64__)
#define IOT_MPI_STUB(name)                                                                         \
    __asm__(".text\n.globl " #name "\n.type " #name ",%function\n" #name ":\n"                     \
            "0:\tadrp x16, iot_mpi_state\n\tadd x16, x16, :lo12:iot_mpi_state\n"                   \
            "\tldar w16, [x16]\n\tcmp w16, #1\n\tb.ne 1f\n\tb iot_w_" #name "\n"                   \
            "1:\tcmp w16, #2\n\tb.eq 2f\n"                                                         \
            "\tstp x29, x30, [sp, #-96]!\n\tmov x29, sp\n\tstp x0, x1, [sp, #16]\n"                \
            "\tstp x2, x3, [sp, #32]\n\tstp x4, x5, [sp, #48]\n\tstp x6, x7, [sp, #64]\n"          \
            "\tstr x8, [sp, #80]\n\tbl iot_abi_settle\n\tldp x0, x1, [sp, #16]\n"                  \
            "\tldp x2, x3, [sp, #32]\n\tldp x4, x5, [sp, #48]\n\tldp x6, x7, [sp, #64]\n"          \
            "\tldr x8, [sp, #80]\n\tldp x29, x30, [sp], #96\n\tb 0b\n"                             \
            "2:\tadrp x16, iot_fwd_" #name "\n\tldr x16, [x16, :lo12:iot_fwd_" #name "]\n"         \
            "\tbr x16\n.size " #name ", .-" #name "\n");
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
