/* Raw byte writes (MPI-IO and POSIX files, and every file under the byte methods): at the
 * traced offset, packed for mpiio and aggregate, one dataset per write for hdf5. */
#define _GNU_SOURCE
#include "skel_internal.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/* dataset sizes are needed by the other methods too: remember types without creating */
void skel_write_bytes(skel_file_t *f, long long offset, long long size, int collective, int active)
{
    skel_t *s = f->s;
    enum skel_method m = s->method;
    if (!active)
        size = 0;
    if (size < 0 || (active && offset < -1))
        skel_die(s, "a negative offset or size for these parameters");
    if (m == SKEL_M_HDF5 && s->sizing) {
        skel_data_for(s, (size_t)size);
        return;
    }
    if (m == SKEL_M_HDF5) { /* a raw file through HDF5: one byte dataset per write */
        long long *sizes = malloc(sizeof(long long) * (size_t)s->size);
        double t0 = skel_now();
        MPI_Allgather(&size, 1, MPI_LONG_LONG, sizes, 1, MPI_LONG_LONG, f->comm);
        skel_add(s, T_COMM, t0);
        int n = f->comm == MPI_COMM_WORLD ? s->size : 1;
        long long total = 0, mine = 0;
        for (int r = 0; r < n; r++) {
            if (r < (f->comm == MPI_COMM_WORLD ? s->rank : 0))
                mine = skel_iadd(mine, sizes[r]);
            total = skel_iadd(total, sizes[r]);
        }
        free(sizes);
        char name[32];
        snprintf(name, sizeof name, "/w%d", f->nwrites++);
        hsize_t d = (hsize_t)total, st = (hsize_t)mine, ct = (hsize_t)size;
        t0 = skel_now();
        hid_t space = H5Screate_simple(1, &d, NULL);
        hid_t id =
            H5Dcreate2(f->h5, name, H5T_NATIVE_UINT8, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
        H5Sclose(space);
        skel_add(s, T_WRITE, t0);
        skel_h5_write(f, id, H5T_NATIVE_UINT8, 1, 1, &st, &ct, collective, size > 0);
        H5Dclose(id);
        return;
    }
    if (m == SKEL_M_MPIIO || m == SKEL_AGGREGATE) { /* packed at close */
        if (size == 0)
            return;
        if (f->npieces == f->cap) {
            f->cap = f->cap ? 2 * f->cap : 64;
            f->pieces = realloc(f->pieces, sizeof(long long) * (size_t)f->cap);
            if (!f->pieces)
                skel_die(s, "out of memory");
        }
        f->pieces[f->npieces++] = size;
        return;
    }
    if (m == SKEL_M_POSIX || offset < 0)
        offset = f->pos;
    MPI_Datatype mtype = MPI_BYTE;
    if (size > INT_MAX && f->api == SKEL_MPIIO && m == SKEL_NATIVE)
        skel_die(s, "one MPI-IO write of more than 2 GiB - 1 bytes (an int count)");
    int mcount = (int)size;
    int native_mpiio = f->api == SKEL_MPIIO && m == SKEL_NATIVE;
    const char *data =
        native_mpiio ? skel_write_memory(f, size, &mtype, &mcount) : skel_data_for(s, (size_t)size);
    f->nmem = 0;
    if (s->sizing)
        return;
    double t0 = skel_now();
    if (native_mpiio) {
        MPI_Status st;
        int rc =
            skel_transfer_of(s, collective)
                ? MPI_File_write_at_all(f->mf, offset, data, mcount, mtype, &st)
                : (size ? MPI_File_write_at(f->mf, offset, data, mcount, mtype, &st) : MPI_SUCCESS);
        if (mtype != MPI_BYTE)
            MPI_Type_free(&mtype);
        if (rc != MPI_SUCCESS)
            skel_die(s, "MPI_File_write_at failed");
    } else if (size > 0) {
        for (long long done = 0; done < size;) {
            ssize_t w = pwrite(f->fd, data + done, (size_t)(size - done), offset + done);
            if (w < 0)
                skel_die(s, "pwrite failed");
            done += w;
        }
    }
    skel_add(s, T_WRITE, t0);
    f->pos = skel_iadd(offset, size);
    s->bytes = skel_iadd(s->bytes, size);
}

void skel_shared_settle(skel_file_t *f, int collective)
{
    if (!collective) {
        f->shared_moved = 1; /* every rank of the file runs the entry: the same on all */
        return;
    }
    if (!f->shared_moved)
        return;
    f->shared_moved = 0;
    double t0 = skel_now();
    MPI_Barrier(f->comm);
    skel_add(f->s, T_COMM, t0);
}

/* The bytes of one rank's shared-pointer transfer (none when inactive): one MPI int count. */
long long skel_shared_count(skel_t *s, long long size, int active, const char *what)
{
    if (!active)
        return 0;
    if (size < 0)
        skel_die(s, "a negative size for these parameters");
    if (size > INT_MAX) {
        char msg[96];
        snprintf(msg, sizeof msg, "one MPI-IO %s of more than 2 GiB - 1 bytes (an int count)",
                 what);
        skel_die(s, msg);
    }
    return size;
}

/* A write through the shared file pointer (the native method on an MPI-IO file): the
 * application's call, MPI_File_write_ordered (collective: every rank of the file, an inactive
 * one with no bytes) or MPI_File_write_shared, at the offset the pointer gives; the other
 * methods write the bytes as any other write (at the rank's running position). */
void skel_write_shared(skel_file_t *f, long long size, int collective, int active)
{
    skel_t *s = f->s;
    if (f->api != SKEL_MPIIO || s->method != SKEL_NATIVE) {
        skel_write_bytes(f, -1, size, collective, active);
        return;
    }
    size = skel_shared_count(s, size, active, "write");
    MPI_Datatype mtype = MPI_BYTE;
    int mcount = (int)size;
    const char *data = skel_write_memory(f, size, &mtype, &mcount);
    f->nmem = 0;
    if (s->sizing)
        return;
    int coll = skel_transfer_of(s, collective);
    skel_shared_settle(f, coll);
    double t0 = skel_now();
    MPI_Status st;
    int rc = coll ? MPI_File_write_ordered(f->mf, data, mcount, mtype, &st)
                  : (size ? MPI_File_write_shared(f->mf, data, mcount, mtype, &st) : MPI_SUCCESS);
    if (mtype != MPI_BYTE)
        MPI_Type_free(&mtype);
    if (rc != MPI_SUCCESS)
        skel_die(s, "MPI_File_write_shared failed");
    skel_add(s, T_WRITE, t0);
    s->bytes = skel_iadd(s->bytes, size);
}

/* The shared file pointer moved to byte offset of the file (MPI_File_seek_shared, collective:
 * every rank of the file, the same offset; the native method on an MPI-IO file, whose view is
 * bytes from the start there). Independent transfers before it are settled first, as a seek
 * after a rank's unfinished write_shared would be moved by it. The other methods write shared
 * transfers at the rank's running position and skip it. */
void skel_seek_shared(skel_file_t *f, long long offset)
{
    skel_t *s = f->s;
    if (f->api != SKEL_MPIIO || s->method != SKEL_NATIVE || s->sizing)
        return;
    if (offset < 0)
        skel_die(s, "a negative shared file pointer offset for these parameters");
    skel_shared_settle(f, 1);
    double t0 = skel_now();
    if (MPI_File_seek_shared(f->mf, (MPI_Offset)offset, MPI_SEEK_SET) != MPI_SUCCESS)
        skel_die(s, "MPI_File_seek_shared failed");
    skel_add(s, T_WRITE, t0);
}
