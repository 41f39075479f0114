#include "fs/fslayout.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "base/log.h"
#include "capture/capture.h"
#include "core/core.h"
#include "fs/cephfs.h"
#include "fs/lustre.h"
#include "platform/fstype.h"

static long long asked_value(const iot_settings *s, int param, const char *file)
{
    const iot_entry *e = iot_settings_find(s, param, file, NULL);
    return e ? e->value.v[0] : -1;
}

int iot_fs_request(const iot_settings *s, const char *file, int amode, iot_fs_striping *j)
{
    memset(j, 0, sizeof *j);
    if (!s || !file || !(amode & (MPI_MODE_WRONLY | MPI_MODE_RDWR)))
        return 0;
    file = iot_strip_romio_prefix(file);
    j->count = asked_value(s, IOT_P_STRIPING_FACTOR, file);
    j->unit = asked_value(s, IOT_P_STRIPING_UNIT, file);
    j->object = asked_value(s, IOT_P_STRIPING_OBJECT_SIZE, file);
    if (j->count < 0 && j->unit < 0 && j->object < 0)
        return 0;
    int used = 0;
    const char *names[] = {"striping_factor", "striping_unit", "striping_object_size"};
    long long vals[] = {j->count, j->unit, j->object};
    for (int i = 0; i < 3; i++)
        if (vals[i] >= 0 && used < (int)sizeof j->asked)
            used += snprintf(j->asked + used, sizeof j->asked - (size_t)used, "%s%s=%lld",
                             used ? " " : "", names[i], vals[i]);
    return 1;
}

static int rank_of(MPI_Comm comm)
{
    int rank = 0;
    PMPI_Comm_rank(comm, &rank);
    return rank;
}

void iot_fs_before_open(MPI_Comm comm, const char *file, int amode, iot_fs_striping *j)
{
    const char *path = iot_strip_romio_prefix(file);
    if (rank_of(comm) == 0) {
        struct stat st;
        iot_fstype(path, j->fs, sizeof j->fs);
        /* Lustre: a new file made with its layout first, for MPI-IO drivers that do not stripe
         * (ROMIO's Lustre driver would do it from the hints; an existing layout stays) */
        if (strcmp(j->fs, "lustre") == 0 && (amode & MPI_MODE_CREATE) && !(amode & MPI_MODE_EXCL) &&
            stat(path, &st) != 0 && errno == ENOENT)
            j->precreated = iot_lustre_create(path, j->count, j->unit) == 0;
    }
    PMPI_Bcast(j, (int)sizeof *j, MPI_BYTE, 0, comm);
}

static void set(iot_fs_striping *j, const char *outcome, const char *fmt, const char *a,
                const char *b)
{
    snprintf(j->outcome, sizeof j->outcome, "%s", outcome);
    snprintf(j->reason, sizeof j->reason, fmt, a, b);
}

/* The asked fields all equal to the layout l. */
static int matches(const iot_fs_striping *j, const iot_ceph_layout *l)
{
    return (j->count < 0 || j->count == l->stripe_count) &&
           (j->unit < 0 || j->unit == l->stripe_unit) &&
           (j->object < 0 || j->object == l->object_size);
}

static void cephfs(const char *path, iot_fs_striping *j)
{
    iot_ceph_layout now, want = {j->unit, j->count, j->object, ""};
    int rc = iot_ceph_get(path, 0, &now);
    if (rc < 0) {
        set(j, "refused", "ceph.file.layout cannot be read: %s%s", strerror(-rc), "");
        return;
    }
    iot_ceph_text(&now, j->layout, sizeof j->layout);
    if (matches(j, &now)) {
        char parent[4096];
        snprintf(parent, sizeof parent, "%s", path);
        char *slash = strrchr(parent, '/');
        snprintf(slash ? slash + (slash == parent) : parent, sizeof parent, "%s", slash ? "" : ".");
        iot_ceph_layout dir;
        int inherited = iot_ceph_get(parent, 1, &dir) == 0 && matches(j, &dir);
        set(j, "in effect", "the file's layout already%s%s",
            inherited ? ", inherited from its directory's ceph.dir.layout" : " (set before)", "");
        return;
    }
    struct stat st;
    if (stat(path, &st) == 0 && st.st_size > 0) {
        char size[32];
        snprintf(size, sizeof size, "%lld", (long long)st.st_size);
        set(j, "refused",
            "the file is not empty (%s bytes): CephFS lays out only a new, empty file; remove it "
            "first, or give its directory the layout (setfattr -n ceph.dir.layout.stripe_count "
            "...)%s",
            size, "");
        return;
    }
    rc = iot_ceph_set(path, &want);
    if (rc == -ENOTEMPTY) {
        set(j, "refused",
            "the file had data (CephFS lays out only a new file never written or truncated); "
            "remove it first, or give its directory the layout%s%s",
            "", "");
        return;
    }
    if (rc < 0) {
        char asked[160];
        iot_ceph_text(&want, asked, sizeof asked);
        set(j, "refused",
            "CephFS refused the layout %s (%s): stripe_unit must be a multiple of 64 KiB "
            "that divides object_size (striping_object_size)",
            asked, strerror(-rc));
        return;
    }
    if (iot_ceph_get(path, 0, &now) < 0) {
        set(j, "NOT in effect", "set, but ceph.file.layout cannot be read back%s%s", "", "");
        return;
    }
    iot_ceph_text(&now, j->layout, sizeof j->layout);
    if (matches(j, &now))
        set(j, "applied", "set on the new, empty file, read back from ceph.file.layout%s%s", "",
            "");
    else
        set(j, "NOT in effect", "set, but CephFS reads back another layout%s%s", "", "");
}

static void lustre(const char *path, iot_fs_striping *j)
{
    long long count = -1, size = -1;
    int rc = iot_lustre_get(path, &count, &size);
    if (rc < 0) {
        set(j, "NOT in effect", "the layout cannot be read back from lustre.lov: %s%s",
            strerror(-rc), "");
        return;
    }
    snprintf(j->layout, sizeof j->layout, "stripe_count=%lld stripe_size=%lld", count, size);
    if ((j->count < 0 || j->count == count) && (j->unit < 0 || j->unit == size))
        set(j, "in effect", "read back from lustre.lov%s%s",
            j->precreated ? " (the file created with liblustreapi before the open)" : "", "");
    else
        set(j, "NOT in effect",
            "Lustre reads back another layout (an existing file keeps its own; ROMIO's generic "
            "driver and a missing liblustreapi set none)%s%s",
            "", "");
}

static void decide(const char *path, iot_fs_striping *j)
{
    if (strcmp(j->fs, "ceph") == 0)
        cephfs(path, j);
    else if (strcmp(j->fs, "lustre") == 0)
        lustre(path, j);
    else if (strcmp(j->fs, "gpfs") == 0)
        set(j, "not applicable",
            "GPFS spreads every file over all its disks by the file system's block size: no "
            "stripe count or size per file (its own hints, such as IBM_largeblock_io, are "
            "passed to MPI-IO)%s%s",
            "", "");
    else if (strcmp(j->fs, "beegfs") == 0)
        set(j, "refused",
            "BeeGFS stripes by its directories' patterns (beegfs-ctl --setpattern): the runtime "
            "does not set them%s%s",
            "", "");
    else
        set(j, "not applicable", "no striping on this file system (%s)%s", j->fs, "");
}

static void record(const char *file, const iot_fs_striping *j)
{
    int rec = iot_rec_for(file, IOT_L_MPIIO);
    if (rec < 0 || !iot_lock())
        return;
    iot_file_rec *r = iot_rec(rec);
    if (!r->striping[0])
        snprintf(r->striping, sizeof r->striping, "%s\t%s\t%s\t%s", j->outcome, j->asked, j->layout,
                 j->reason);
    iot_unlock();
}

void iot_fs_after_open(MPI_Comm comm, const char *file, int opened, iot_fs_striping *j)
{
    int rank = rank_of(comm);
    if (rank == 0 && opened)
        decide(iot_strip_romio_prefix(file), j);
    else if (rank == 0)
        set(j, "refused", "the open failed%s%s", "", "");
    PMPI_Bcast(j, (int)sizeof *j, MPI_BYTE, 0, comm);
    if (iot_capture_on && opened)
        record(file, j);
    if (rank == 0 && iot_g.verbose)
        iot_log("file system: %s on %s: striping %s: %s%s%s (%s)", file, j->fs, j->asked,
                j->outcome, j->layout[0] ? ", layout " : "", j->layout, j->reason);
}
