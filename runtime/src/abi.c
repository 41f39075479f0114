/* Which MPI the process uses (abi.h): a runtime of one ABI family preloaded into a process of
 * the other must stay out of the way. Found from the other family's functions: Open MPI's
 * library defines ompi_mpi_init, every MPICH-derived one (MPICH, Intel MPI, MVAPICH, Cray
 * MPICH) MPIR_Err_create_code (a function, not a variable: a program may hold a copy of an MPI
 * variable, and then the variable tells where neither the MPI is nor its functions are). The
 * runtime's own MPI (it links one) is always loaded, so only the other family's symbol tells: a
 * program without MPI (sh, cat) never has it. */
#include "abi.h"

#include <dlfcn.h>
#include <link.h>
#include <mpi.h>
#include <stdio.h>
#include <string.h>

#include "capture.h"
#include "core.h"
#include "finish.h"
#include "trace.h"

IOT_HIDDEN int iot_mpi_foreign;

#ifdef OPEN_MPI
static const char built_for[] = "Open MPI", other[] = "an MPICH-family MPI";
static const char marker[] = "MPIR_Err_create_code";
#else
static const char built_for[] = "MPICH", other[] = "Open MPI";
static const char marker[] = "ompi_mpi_init"; /* functions: never copied into a program */
#endif

extern const iot_fwd_slot __start_iot_fwd[], __stop_iot_fwd[];

const char *iot_abi_built_for(void)
{
    return built_for;
}

/* A loaded object that defines the marker, searched object by object: an MPI loaded with
 * dlopen(RTLD_LOCAL) is not in the global scope. */
static int find_in_object(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    void **found = data;
    if (!info->dlpi_name || !info->dlpi_name[0])
        return 0;
    void *h = dlopen(info->dlpi_name, RTLD_LAZY | RTLD_NOLOAD);
    if (!h)
        return 0;
    *found = dlsym(h, marker);
    dlclose(h);
    return *found != NULL;
}

/* Stands in for a wrapped function the other MPI does not have (its programs cannot call it). */
static int absent(void)
{
    return 1; /* MPI_ERR_BUFFER in both families: never MPI_SUCCESS */
}

int iot_abi_check(int at_init)
{
    if (iot_mpi_foreign)
        return 1;
    void *sym = dlsym(RTLD_DEFAULT, marker);
    if (!sym && at_init)
        dl_iterate_phdr(find_in_object, &sym);
    Dl_info where;
    if (!sym || !dladdr(sym, &where) || !where.dli_fname)
        return 0;
    void *mpi = dlopen(where.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
    for (const iot_fwd_slot *s = __start_iot_fwd; s < __stop_iot_fwd; s++) {
        void *f = mpi ? dlsym(mpi, s->name) : NULL;
        *s->target = f ? f : (void *)absent;
    }
    /* off before the first MPI call of the runtime's own: nothing applied, nothing captured */
    iot_g.loaded = 1;
    iot_g.disabled = 1;
    iot_finish_never();
    iot_trace_on = 0;
    __atomic_store_n(&iot_mpi_foreign, 1, __ATOMIC_RELEASE);
    if (iot_run_first("abi-mismatch"))
        iot_log("this program uses %s (%s), but this libiotune.so was built for %s: it "
                "applies no setting and captures nothing in this run; preload the runtime "
                "built for the program's MPI (iotune lib)",
                other, where.dli_fname, built_for);
    return 1;
}
