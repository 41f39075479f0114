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
#include <stdlib.h>
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

/* the linker's bounds of section iot_fwd, hidden: the library exports only MPI, HDF5 and libc names
 */
extern const iot_fwd_slot __start_iot_fwd[] IOT_HIDDEN, __stop_iot_fwd[] IOT_HIDDEN;

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

#ifdef OPEN_MPI
iot_mpi_impl_t iot_mpi_impl = {"Open MPI", "", 0, 0, "ompio", "OMPIO", "default", 1};
#else
iot_mpi_impl_t iot_mpi_impl = {"MPICH", "", 0, 0, "romio", "ROMIO", "family", 0};
#endif

#ifdef OPEN_MPI
/* Open MPI picks its component per file by priority (OMPIO first) unless told: mpirun --mca io
 * X and the environment both arrive as OMPI_MCA_io ("romio321", "ompio", "^ompio", a list). */
static void open_mpi_component(iot_mpi_impl_t *m)
{
    const char *v = getenv("OMPI_MCA_io"); /* Open MPI's variable, not the runtime's */
    if (!v || !*v)
        return;
    int exclude = v[0] == '^';
    int romio = strstr(v, "romio") != NULL, ompio = strstr(v, "ompio") != NULL;
    if ((!exclude && romio && !ompio) || (exclude && ompio && !romio)) {
        snprintf(m->io, sizeof m->io, "%s", exclude ? "romio321" : v);
        m->io_name = "ROMIO";
    }
    m->io_from = "OMPI_MCA_io";
}
#endif

void iot_abi_describe(void)
{
    iot_mpi_impl_t *m = &iot_mpi_impl;
    char text[MPI_MAX_LIBRARY_VERSION_STRING + 1] = "";
    int len = 0;
    if (PMPI_Get_library_version(text, &len) == MPI_SUCCESS) {
        for (size_t i = 0, n = 0; text[i] && !strchr("\n\r,", text[i]) && n + 1 < sizeof m->library;
             i++)
            if (text[i] != '\t' && text[i] != ' ')
                m->library[n++] = text[i];
            else if (n && m->library[n - 1] != ' ')
                m->library[n++] = ' '; /* "MPICH Version:\t4.0.2": one space */
    }
    PMPI_Get_version(&m->version, &m->subversion);
#ifdef OPEN_MPI
    open_mpi_component(m);
#endif
}

int iot_mpiio_component_uses(const char *key)
{
    /* strings of Open MPI 4.1.4's libmca_common_ompio and mca_fs_lustre/gpfs: the info keys
     * OMPIO reads; every other hint is ignored by it */
    static const char *const ompio[] = {"cb_buffer_size",  "cb_nodes",      "collective_buffering",
                                        "striping_factor", "striping_unit", NULL};
    if (strcmp(iot_mpi_impl.io, "ompio") != 0)
        return 1;
    for (int i = 0; ompio[i]; i++)
        if (strcmp(key, ompio[i]) == 0)
            return 1;
    return 0;
}
