/* Which MPI the process uses (abi.h), told by functions each family's library defines: Open
 * MPI's ompi_mpi_init, every MPICH-derived library's (MPICH, Intel MPI, MVAPICH, Cray MPICH)
 * MPIR_Err_create_code. Functions, not variables: a program may hold a copy of an MPI variable,
 * and then the variable tells where neither the MPI is nor its functions are. The runtime
 * links no MPI (mpiapi.h), so what is loaded is the program's. */
#include "core/abi.h"

#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capture/capture.h"
#include "core/core.h"
#include "platform/h5api.h"

#ifdef OPEN_MPI
#define IOT_FAMILY "openmpi"
static const char built_for[] = "Open MPI", other[] = "an MPICH-family MPI";
static const char own_marker[] = "ompi_mpi_init", other_marker[] = "MPIR_Err_create_code";
#else
#define IOT_FAMILY "mpich"
static const char built_for[] = "MPICH", other[] = "Open MPI";
static const char own_marker[] = "MPIR_Err_create_code", other_marker[] = "ompi_mpi_init";
#endif
/* The family, legible in the file (iotune's paths.library_family): no linked MPI tells it. */
__attribute__((used)) static const char family_tag[] = "iotune-mpi-family=" IOT_FAMILY;

/* the linker's bounds of section iot_fwd, hidden: the library exports only MPI, HDF5 and libc names
 */
extern const iot_fwd_slot __start_iot_fwd[] IOT_HIDDEN, __stop_iot_fwd[] IOT_HIDDEN;

const char *iot_abi_built_for(void)
{
    return built_for;
}

typedef struct {
    const char *name;
    void *found;
} marker_search;

/* A loaded object that defines the marker, searched object by object: an MPI loaded with
 * dlopen(RTLD_LOCAL) is not in the global scope. */
static int find_in_object(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    marker_search *m = data;
    if (!info->dlpi_name || !info->dlpi_name[0])
        return 0;
    void *h = dlopen(info->dlpi_name, RTLD_LAZY | RTLD_NOLOAD);
    if (!h)
        return 0;
    m->found = dlsym(h, m->name);
    dlclose(h);
    return m->found != NULL;
}

static void *find_marker(const char *name, int everywhere)
{
    marker_search m = {name, dlsym(RTLD_DEFAULT, name)};
    if (!m.found && everywhere)
        dl_iterate_phdr(find_in_object, &m);
    return m.found;
}

/* The library that defines sym, held open for as long as the process runs (NULL when sym is in
 * the program itself); its path in *path. */
static void *library_of(void *sym, const char **path)
{
    Dl_info where;
    *path = "?";
    if (!sym || !dladdr(sym, &where) || !where.dli_fname)
        return NULL;
    *path = where.dli_fname;
    return dlopen(where.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
}

/* The other family's MPI: every wrapper forwards to it, and the runtime turns itself off
 * before any MPI call of its own. */
static void become_foreign(void *sym)
{
    const char *path;
    void *mpi = library_of(sym, &path);
    for (const iot_fwd_slot *s = __start_iot_fwd; s < __stop_iot_fwd; s++) {
        void *f = mpi ? dlsym(mpi, s->name) : NULL;
        if (!f)
            f = iot_find_symbol(s->name);
        /* a function the other MPI lacks: its programs cannot call it */
        *s->target = f ? f : (void *)iot_mpi_absent;
    }
    iot_g.loaded = 1;
    iot_g.disabled = 1;
    iot_capture_never();
    iot_trace_on = 0;
    __atomic_store_n(&iot_mpi_state, IOT_MPI_FOREIGN, __ATOMIC_RELEASE);
    if (iot_run_first("abi-mismatch"))
        iot_log("this program uses %s (%s), but this libiotune.so was built for %s: it "
                "applies no setting and captures nothing in this run; preload the runtime "
                "built for the program's MPI (iotune lib)",
                other, path, built_for);
}

/* The family built for (or an MPI neither marker names): the runtime's MPI calls go to it. */
static void become_own(void *sym)
{
    const char *path;
    iot_mpi_resolve(library_of(sym, &path));
    __atomic_store_n(&iot_mpi_state, IOT_MPI_OWN, __ATOMIC_RELEASE);
}

void iot_abi_start(void)
{
    void *sym = find_marker(other_marker, 0);
    if (sym) {
        become_foreign(sym);
        return;
    }
    sym = find_marker(own_marker, 0);
    if (sym)
        become_own(sym);
}

int iot_abi_settle(void)
{
    static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    pthread_mutex_lock(&lock);
    if (__atomic_load_n(&iot_mpi_state, __ATOMIC_ACQUIRE) == IOT_MPI_UNKNOWN) {
        void *sym = find_marker(other_marker, 1);
        if (sym)
            become_foreign(sym);
        else
            become_own(find_marker(own_marker, 1));
    }
    pthread_mutex_unlock(&lock);
    return iot_mpi_state;
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
