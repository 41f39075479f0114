/* The machine's limits (budget.h): physical memory, the cgroup's memory limit (v2 memory.max,
 * v1 memory.limit_in_bytes, on the process's cgroup and its ancestors), RLIMIT_AS and
 * RLIMIT_DATA; the ranks sharing a host; statvfs for free disk space. Files of /proc and /sys
 * are read with plain system calls, never through the runtime's own wrappers. */
#include "platform/budget.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/hash.h"
#include "config/settings.h"

static iot_budget agreed;
static int have_agreed;

/* The start of a small file (read with system calls), or "" when it cannot be read. */
static const char *read_small(const char *path, char *buf, size_t len)
{
    buf[0] = '\0';
    int fd = (int)syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return buf;
    long n;
    do
        n = syscall(SYS_read, fd, buf, len - 1);
    while (n < 0 && errno == EINTR);
    buf[n > 0 ? n : 0] = '\0';
    syscall(SYS_close, fd);
    return buf;
}

/* The least limit of a cgroup and its ancestors: file (memory.max, memory.limit_in_bytes)
 * under root + path. "max" and v1's huge "no limit" values are no limit (-1). */
static double cgroup_limit(const char *root, const char *path, const char *file)
{
    char dir[1024], value[64];
    double least = -1;
    snprintf(dir, sizeof dir, "%s", path);
    for (;;) {
        char where[1200];
        snprintf(where, sizeof where, "%s%s/%s", root, strcmp(dir, "/") ? dir : "", file);
        char *end;
        double v = strtod(read_small(where, value, sizeof value), &end);
        if (end != value && v > 0 && v < 4e18 && (least < 0 || v < least))
            least = v;
        char *slash = strrchr(dir, '/');
        if (!slash || slash == dir)
            break;
        *slash = '\0';
    }
    if (strcmp(path, "/") != 0) { /* the root's own file, where a namespace shows it */
        char where[1200];
        snprintf(where, sizeof where, "%s/%s", root, file);
        char *end;
        double v = strtod(read_small(where, value, sizeof value), &end);
        if (end != value && v > 0 && v < 4e18 && (least < 0 || v < least))
            least = v;
    }
    return least;
}

/* The memory limit of the process's cgroup (v2, else v1), -1 when none. */
static double cgroup_memory(const char **name)
{
    char text[4096];
    read_small("/proc/self/cgroup", text, sizeof text);
    double least = -1;
    char *save = NULL;
    for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
        if (!c2)
            continue;
        *c2 = '\0';
        const char *controllers = c1 + 1, *path = c2 + 1;
        double v = -1;
        const char *what = NULL;
        if (!*controllers) { /* v2: unified, or hybrid under /sys/fs/cgroup/unified */
            v = cgroup_limit("/sys/fs/cgroup", path, "memory.max");
            if (v < 0)
                v = cgroup_limit("/sys/fs/cgroup/unified", path, "memory.max");
            what = "cgroup memory.max";
        } else if (!strcmp(controllers, "memory") || strstr(controllers, "memory,") ||
                   strstr(controllers, ",memory")) {
            v = cgroup_limit("/sys/fs/cgroup/memory", path, "memory.limit_in_bytes");
            what = "cgroup memory.limit_in_bytes";
        }
        if (v > 0 && (least < 0 || v < least)) {
            least = v;
            *name = what;
        }
    }
    return least;
}

/* This process's budget when ranks processes share the host's memory. */
static iot_budget own_budget(int ranks)
{
    iot_budget b = {.memory = -1, .disk = -1};
    char size[32];
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    const char *cg_name = NULL;
    double shared[2] = {pages > 0 && page > 0 ? (double)pages * (double)page : -1,
                        cgroup_memory(&cg_name)};
    const char *shared_name[2] = {"physical memory", cg_name};
    for (int i = 0; i < 2; i++)
        if (shared[i] > 0 && (b.memory < 0 || shared[i] / ranks < b.memory)) {
            b.memory = shared[i] / ranks;
            if (ranks > 1)
                snprintf(b.memory_what, sizeof b.memory_what, "%s %s / %d ranks on this host",
                         shared_name[i], iot_format_bytes(shared[i], size, sizeof size), ranks);
            else
                snprintf(b.memory_what, sizeof b.memory_what, "%s %s", shared_name[i],
                         iot_format_bytes(shared[i], size, sizeof size));
        }
    static const struct {
        int which;
        const char *name;
    } rl[] = {{RLIMIT_AS, "RLIMIT_AS"}, {RLIMIT_DATA, "RLIMIT_DATA"}};
    for (size_t i = 0; i < sizeof rl / sizeof *rl; i++) {
        struct rlimit r;
        if (getrlimit(rl[i].which, &r) != 0 || r.rlim_cur == RLIM_INFINITY)
            continue;
        double v = (double)r.rlim_cur;
        if (b.memory < 0 || v < b.memory) {
            b.memory = v;
            snprintf(b.memory_what, sizeof b.memory_what, "%s %s", rl[i].name,
                     iot_format_bytes(v, size, sizeof size));
        }
    }
    return b;
}

/* Ranks on this host from the launcher's variables (no MPI), 1 when none says. */
static int launcher_local_ranks(void)
{
    static const char *vars[] = {"MPI_LOCALNRANKS", "OMPI_COMM_WORLD_LOCAL_SIZE", "PMIX_LOCAL_SIZE",
                                 "SLURM_NTASKS_PER_NODE"};
    for (size_t i = 0; i < sizeof vars / sizeof *vars; i++) {
        const char *v = getenv(vars[i]);
        if (v && atoi(v) > 0)
            return atoi(v);
    }
    return 1;
}

void iot_limits_agree(MPI_Comm comm)
{
    int size = 1;
    PMPI_Comm_size(comm, &size);
    char host[MPI_MAX_PROCESSOR_NAME + 1] = "";
    int len = 0;
    PMPI_Get_processor_name(host, &len);
    uint64_t mine = iot_fnv1a(host);
    uint64_t *all = calloc((size_t)size, sizeof *all);
    int ok = all != NULL, all_ok = 0;
    PMPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, comm);
    int ranks = launcher_local_ranks();
    if (all_ok) {
        PMPI_Allgather(&mine, 8, MPI_BYTE, all, 8, MPI_BYTE, comm);
        ranks = 0;
        for (int i = 0; i < size; i++)
            ranks += all[i] == mine;
    }
    free(all);
    iot_budget b = own_budget(ranks > 0 ? ranks : 1);
    double own = b.memory < 0 ? 1e300 : b.memory, least = own;
    PMPI_Allreduce(&own, &least, 1, MPI_DOUBLE, MPI_MIN, comm);
    if (least < 1e300 && least < b.memory) {
        b.memory = least;
        snprintf(b.memory_what, sizeof b.memory_what, "the least of the job's ranks");
    } else if (least >= 1e300) {
        b.memory = -1;
    }
    agreed = b;
    have_agreed = 1;
}

iot_budget iot_limits_budget(void)
{
    if (!have_agreed) {
        agreed = own_budget(launcher_local_ranks());
        have_agreed = 1;
    }
    return agreed;
}

void iot_limits_disk(const char *file, iot_budget *b)
{
    char dir[1024];
    snprintf(dir, sizeof dir, "%s", iot_strip_romio_prefix(file));
    char *slash = strrchr(dir, '/');
    if (!slash)
        snprintf(dir, sizeof dir, ".");
    else if (slash == dir)
        dir[1] = '\0';
    else
        *slash = '\0';
    struct statvfs fs;
    b->disk = -1;
    if (statvfs(dir, &fs) != 0)
        return;
    b->disk = (double)fs.f_bavail * (double)fs.f_frsize;
    snprintf(b->disk_what, sizeof b->disk_what, "free on the file system of %.160s", dir);
}
