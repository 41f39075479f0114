/* Opening and closing a file for the method chosen at run time (see the methods in
 * skel_internal.h). */
#define _GNU_SOURCE
#include "skel_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void make_dir_of(skel_t *s, const char *dir)
{
    if (mkdir(dir, 0755) != 0 && errno != EEXIST)
        skel_die(s, "cannot create the method's directory");
}

/* The files skeletons wrote in this directory, NUL-separated (names may hold newlines). A
 * skeleton replaces only a file listed there: never one it did not create, such as the
 * application's own output when the skeleton runs where the application ran. */
#define SKEL_MANIFEST ".iotune-skel-files"

static int listed(const char *path)
{
    int fd = open(SKEL_MANIFEST, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return 0;
    char buf[65536], name[4200];
    size_t have = 0;
    int found = 0;
    ssize_t n;
    while (!found && (n = read(fd, buf, sizeof buf)) > 0)
        for (ssize_t i = 0; i < n && !found; i++) {
            if (buf[i] == '\0') {
                name[have] = '\0';
                found = strcmp(name, path) == 0;
                have = 0;
            } else if (have + 1 < sizeof name) {
                name[have++] = buf[i];
            }
        }
    close(fd);
    return found;
}

/* Before a file is replaced: refuse one that exists and is not the skeleton's, then list it. */
static void claim(skel_t *s, const char *path)
{
    struct stat st;
    if (lstat(path, &st) == 0 && !listed(path)) {
        char msg[4400];
        snprintf(msg, sizeof msg,
                 "%s exists and was not written by a skeleton: not replacing it (run the "
                 "skeleton in a new directory: --dir)",
                 path);
        skel_die(s, msg);
    }
    if (listed(path))
        return;
    int fd = open(SKEL_MANIFEST, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0 || write(fd, path, strlen(path) + 1) != (ssize_t)(strlen(path) + 1))
        skel_die(s, "cannot record the file in " SKEL_MANIFEST);
    close(fd);
}

/* A file an earlier entry of the skeleton wrote, opened again: it must be the skeleton's. */
static void check_own(skel_t *s, const char *path)
{
    struct stat st;
    if (lstat(path, &st) == 0 && listed(path))
        return;
    char msg[4400];
    snprintf(msg, sizeof msg,
             "%s: %s: not opening it (a skeleton reopens only the files it wrote in this run)",
             path, lstat(path, &st) == 0 ? "not written by a skeleton" : "does not exist");
    skel_die(s, msg);
}

int skel_member(const skel_file_t *f)
{
    return f->member;
}

skel_file_t *skel_open(skel_t *s, const char *pattern, enum skel_api api, long long step, int flags,
                       int member)
{
    int existing = (flags & SKEL_OPEN_EXISTING) != 0;
    int format[5], has_format = s->has_format; /* skel_file_format's, for this open only */
    memcpy(format, s->format, sizeof format);
    s->has_format = 0;
    skel_file_t *f = calloc(1, sizeof *f);
    if (!f)
        skel_die(s, "out of memory");
    f->s = s;
    f->api = api;
    f->fd = -1;
    skel_format_name(f->name, sizeof f->name, pattern, step, s->rank);
    int per_rank = strstr(pattern, "{rank}") != NULL || strstr(pattern, "{rank:0") != NULL;
    int serial = (flags & SKEL_OPEN_SERIAL) && api == SKEL_HDF5;
    if (serial && !per_rank && s->size > 1)
        skel_die(s, "a serial HDF5 file (serial: true) shared by several ranks: run at 1 rank "
                    "or name it per rank ({rank})");
    f->comm = per_rank || serial ? MPI_COMM_SELF : MPI_COMM_WORLD;
    f->subcomm = MPI_COMM_NULL;
    enum skel_method m = s->method;
    if (m == SKEL_NATIVE && api == SKEL_HDF5)
        m = SKEL_M_HDF5;
    int subset = (flags & SKEL_OPEN_SUBSET) && (m == SKEL_M_HDF5 || m == SKEL_NATIVE);
    f->member = subset ? member != 0 : 1;
    if (s->sizing)
        return f;
    int lead = s->rank == 0; /* the rank that clears or checks a shared file */
    if (subset) {            /* collective over every rank; non-members get MPI_COMM_NULL */
        MPI_Comm_split(MPI_COMM_WORLD, f->member ? 0 : MPI_UNDEFINED, s->rank, &f->subcomm);
        int srank = -1;
        if (f->member) {
            MPI_Comm_rank(f->subcomm, &srank);
            if (!per_rank && !serial)
                f->comm = f->subcomm;
        }
        lead = srank == 0;
    }
    char path[4200];
    /* remove what a previous run left, outside the timed parts (as the kernels do) */
    if (m == SKEL_M_POSIX || m == SKEL_AGGREGATE) {
        snprintf(path, sizeof path, "%s.dir", f->name);
        make_dir_of(s, path);
        if (m == SKEL_M_POSIX)
            snprintf(path, sizeof path, "%s.dir/rank-%d", f->name, s->rank);
        else
            snprintf(path, sizeof path, "%s.dir/agg-%d", f->name, s->group);
    } else {
        snprintf(path, sizeof path, "%s", f->name);
    }
    int is_owner = f->member && (per_rank || m == SKEL_M_POSIX || lead);
    if (m == SKEL_AGGREGATE) {
        int grank;
        MPI_Comm_rank(s->group_comm, &grank);
        is_owner = grank == 0;
    }
    if (is_owner && existing) {
        check_own(s, path);
    } else if (is_owner) {
        claim(s, path);
        unlink(path);
        skel_remember(s, path);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (!f->member)
        return f;
    double t0 = skel_now();
    if (m == SKEL_M_HDF5) {
        hid_t fapl = H5Pcreate(H5P_FILE_ACCESS), fcpl = H5Pcreate(H5P_FILE_CREATE);
        if (!serial) /* serial: HDF5's default driver (sec2), as the application's */
            H5Pset_fapl_mpio(fapl, f->comm, MPI_INFO_NULL);
        const int *fmt = has_format ? format : NULL; /* skel_file_format */
        if (fmt && fmt[0] >= 0 &&
            H5Pset_libver_bounds(fapl, (H5F_libver_t)fmt[0], (H5F_libver_t)fmt[1]) < 0)
            skel_die(s, "H5Pset_libver_bounds failed");
        if (fmt && fmt[2] == 0)
            H5Pset_obj_track_times(fcpl, 0);
        if (fmt && fmt[3] >= 0)
            H5Pset_link_creation_order(fcpl, (unsigned)fmt[3]);
        if (fmt && fmt[4] >= 0)
            H5Pset_attr_creation_order(fcpl, (unsigned)fmt[4]);
        unsigned acc = (flags & SKEL_OPEN_READONLY) ? H5F_ACC_RDONLY : H5F_ACC_RDWR;
        f->h5 = existing ? H5Fopen(path, acc, fapl) : H5Fcreate(path, H5F_ACC_TRUNC, fcpl, fapl);
        H5Pclose(fcpl);
        H5Pclose(fapl);
        if (f->h5 < 0)
            skel_die(s, existing ? "H5Fopen failed" : "H5Fcreate failed");
        H5G_info_t gi; /* the hdf5 method on a raw file: its next dataset /wN after those there */
        if (existing && api != SKEL_HDF5 && H5Gget_info(f->h5, &gi) >= 0)
            f->nwrites = (int)gi.nlinks;
    } else if (m == SKEL_M_MPIIO || (m == SKEL_NATIVE && api == SKEL_MPIIO)) {
        MPI_Info info = MPI_INFO_NULL;
        if (m == SKEL_M_MPIIO) { /* MPI_LUSTRE: stripes the size of the ranks' blocks */
            char v[32];
            MPI_Info_create(&info);
            snprintf(v, sizeof v, "%lld", s->stripe);
            MPI_Info_set(info, "striping_unit", v);
        }
        int amode = (flags & SKEL_OPEN_READONLY) ? MPI_MODE_RDONLY
                    : (flags & SKEL_OPEN_READS)  ? MPI_MODE_RDWR
                                                 : MPI_MODE_WRONLY;
        if (MPI_File_open(f->comm, path, amode | (existing ? 0 : MPI_MODE_CREATE), info, &f->mf) !=
            MPI_SUCCESS)
            skel_die(s, "MPI_File_open failed");
        if (info != MPI_INFO_NULL)
            MPI_Info_free(&info);
    } else if (is_owner || m == SKEL_NATIVE) {
        int mode = (flags & SKEL_OPEN_READONLY) ? O_RDONLY
                   : (flags & SKEL_OPEN_READS)  ? O_CREAT | O_RDWR
                                                : O_CREAT | O_WRONLY;
        f->fd = open(path, mode, 0644);
        if (f->fd < 0)
            skel_die(s, "open failed");
    }
    skel_add(s, T_OPEN, t0);
    return f;
}

void skel_file_format(skel_t *s, int libver_low, int libver_high, int track_times, int link_order,
                      int attr_order)
{
    const int fmt[5] = {libver_low, libver_high, track_times, link_order, attr_order};
    memcpy(s->format, fmt, sizeof fmt);
    s->has_format = 1;
}

void skel_sync(skel_file_t *f)
{
    skel_t *s = f->s;
    if (s->sizing)
        return;
    double t0 = skel_now();
    if (skel_is_hdf5(f)) { /* the mpio driver's flush syncs the MPI file */
        if (H5Fflush(f->h5, H5F_SCOPE_GLOBAL) < 0)
            skel_die(s, "H5Fflush failed");
    } else if (s->method == SKEL_M_MPIIO || (s->method == SKEL_NATIVE && f->api == SKEL_MPIIO)) {
        MPI_File_sync(f->mf);
    } else if (f->fd >= 0) {
        fsync(f->fd);
    }
    skel_add(s, T_WRITE, t0);
}

void skel_close(skel_file_t *f)
{
    skel_t *s = f->s;
    if (s->sizing) { /* the packing methods write all pieces from the buffer's start */
        long long mine = 0;
        for (int i = 0; i < f->npieces; i++)
            mine = skel_iadd(mine, f->pieces[i]);
        skel_need(s, (size_t)mine);
        skel_close_types(f);
        free(f->pieces);
        free(f);
        return;
    }
    if (!f->member) { /* opened by other ranks only */
        free(f);
        return;
    }
    if (s->method == SKEL_M_MPIIO || s->method == SKEL_AGGREGATE)
        skel_flush_packed(f);
    double t0 = skel_now();
    skel_attr_release(f);
    for (int i = 0; i < f->ndsets; i++)
        if (f->dsets[i].id > 0)
            H5Dclose(f->dsets[i].id);
    if (skel_is_hdf5(f)) {
        if (H5Fclose(f->h5) < 0)
            skel_die(s, "H5Fclose failed");
    } else if (s->method == SKEL_M_MPIIO || (s->method == SKEL_NATIVE && f->api == SKEL_MPIIO)) {
        MPI_File_close(&f->mf);
    } else if (f->fd >= 0) {
        close(f->fd);
    }
    skel_add(s, T_CLOSE, t0);
    if (f->subcomm != MPI_COMM_NULL)
        MPI_Comm_free(&f->subcomm);
    skel_close_types(f);
    free(f->pieces);
    free(f);
}

void skel_remove(skel_t *s, const char *pattern, long long step)
{
    if (s->sizing || (s->method != SKEL_NATIVE && s->method != SKEL_M_HDF5))
        return;
    char name[4096];
    skel_format_name(name, sizeof name, pattern, step, s->rank);
    int per_rank = strstr(pattern, "{rank}") != NULL || strstr(pattern, "{rank:0") != NULL;
    MPI_Barrier(MPI_COMM_WORLD); /* every rank closed it */
    if ((per_rank || s->rank == 0) && listed(name))
        unlink(name);
}
