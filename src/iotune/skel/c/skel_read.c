/* Reads: the application's reads of its own files (a read-back after the writes, a restart),
 * repeated on the skeleton's files with the same selections and sizes; and a raw file's size
 * set (skel_set_size). Only the native method
 * (and the hdf5 method on HDF5 files) reads; the others write raw layouts of their own and
 * skip the reads. A read's time is its own part of the step's time (T_READ, "read"). */
#define _GNU_SOURCE
#include "skel_internal.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static int find(skel_file_t *f, const char *name)
{
    int k = f->ndsets - 1;
    while (k >= 0 && strcmp(f->dsets[k].name, name) != 0)
        k--;
    return k;
}

/* Room for one more handle in f's table: when it is full, a handle whose dataset has another
 * handle open (an open of a dataset opened before, skel_dataset_open) is closed and its place
 * taken, the dataset name first; with none, the skeleton stops. */
void skel_dataset_room(skel_file_t *f, const char *name)
{
    if (f->ndsets < MAX_OPEN_DATASETS)
        return;
    int k = find(f, name), later = -1;
    if (k >= 0) { /* a handle of name before its last one */
        later = k;
        for (k--; k >= 0 && strcmp(f->dsets[k].name, name) != 0; k--)
            ;
    }
    for (int i = 0; k < 0 && i < f->ndsets; i++) /* any dataset's earlier handle */
        for (int j = i + 1; j < f->ndsets && k < 0; j++)
            if (strcmp(f->dsets[i].name, f->dsets[j].name) == 0)
                k = i;
    if (k < 0)
        k = later; /* a dataset opened once: its only handle goes, it is opened anew */
    if (k < 0)
        skel_die(f->s, "too many datasets open in one file");
    if (f->dsets[k].id > 0)
        H5Dclose(f->dsets[k].id);
    H5T_class_t c = H5Tget_class(f->dsets[k].type); /* opaque, compound: the skeleton's */
    if (c == H5T_OPAQUE || c == H5T_COMPOUND)
        H5Tclose(f->dsets[k].type);
    f->dsets[k] = f->dsets[--f->ndsets];
}

/* An open (H5Dopen) of a dataset, as many times as the application opened it: each handle is
 * kept until the file's close (the trace has no H5Dclose). */
void skel_dataset_open(skel_file_t *f, const char *pattern, long long step, hid_t t)
{
    if (f->api != SKEL_HDF5)
        return;
    char name[1024];
    skel_format_name(name, sizeof name, pattern, step, f->s->rank);
    skel_dataset_room(f, name);
    hid_t id = -1;
    if (skel_is_hdf5(f) && !f->s->sizing) {
        double t0 = skel_now();
        id = H5Dopen2(f->h5, name, H5P_DEFAULT);
        if (id < 0)
            skel_die(f->s, "H5Dopen of a dataset an earlier step made failed");
        skel_add(f->s, T_WRITE, t0);
    }
    snprintf(f->dsets[f->ndsets].name, sizeof f->dsets[0].name, "%s", name);
    f->dsets[f->ndsets].id = id;
    f->dsets[f->ndsets++].type = t;
}

static void h5_read(skel_file_t *f, int k, int nd, const hsize_t *start, const hsize_t *count,
                    int collective, int fresh, int active)
{
    skel_t *s = f->s;
    int coll = skel_transfer_of(s, collective) && f->comm == MPI_COMM_WORLD;
    if (!active && !coll)
        return;
    size_t esize = H5Tget_size(f->dsets[k].type);
    long long n = active ? 1 : 0;
    for (int i = 0; i < nd && active; i++)
        n = skel_imul(n, (long long)count[i]);
    size_t bytes = (size_t)skel_imul(n, (long long)esize);
    fresh = fresh && bytes > 0;
    char *data = fresh ? NULL : skel_data_for(s, bytes);
    if (s->sizing)
        return;
    if (fresh) { /* untouched pages, as a new array's: the read faults them in */
        data = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (data == MAP_FAILED)
            skel_die(s, "out of memory (mmap of a read's memory)");
    }
    double t0 = skel_now();
    hid_t fspace = H5Dget_space(f->dsets[k].id);
    hsize_t one = 1;
    hid_t mspace =
        active && n > 0 ? H5Screate_simple(nd, count, NULL) : H5Screate_simple(1, &one, NULL);
    if (active && n > 0) {
        H5Sselect_hyperslab(fspace, H5S_SELECT_SET, start, NULL, count, NULL);
    } else {
        H5Sselect_none(fspace);
        H5Sselect_none(mspace);
    }
    hid_t dxpl = H5Pcreate(H5P_DATASET_XFER);
    H5Pset_dxpl_mpio(dxpl, coll ? H5FD_MPIO_COLLECTIVE : H5FD_MPIO_INDEPENDENT);
    herr_t rc =
        H5Dread(f->dsets[k].id, skel_mem_type(f->dsets[k].type), mspace, fspace, dxpl, data);
    H5Pclose(dxpl);
    H5Sclose(mspace);
    H5Sclose(fspace);
    if (rc < 0)
        skel_die(s, "H5Dread failed");
    skel_add(s, T_READ, t0);
    if (fresh)
        munmap(data, bytes);
}

void skel_read(skel_file_t *f, const char *pattern, long long step, int nd, const long long *start,
               const long long *count, int collective, int fresh, int active)
{
    skel_t *s = f->s;
    if (nd < 1 || nd > 32)
        skel_die(s, "a dataset of more than 32 dimensions");
    char name[1024];
    skel_format_name(name, sizeof name, pattern, step, s->rank);
    if (!skel_is_hdf5(f) || f->api != SKEL_HDF5)
        return; /* the raw methods skip reads */
    int k = find(f, name);
    if (k < 0)
        skel_die(s, "read of a dataset that was neither created nor opened");
    hsize_t st[32], ct[32];
    for (int i = 0; i < nd; i++) {
        if (start[i] < 0 || count[i] < 0)
            skel_die(s, "a negative selection start or count for these parameters");
        st[i] = (hsize_t)start[i];
        ct[i] = (hsize_t)count[i];
    }
    h5_read(f, k, nd, st, ct, collective, fresh, active);
}

void skel_read_bytes(skel_file_t *f, long long offset, long long size, int collective, int active)
{
    skel_t *s = f->s;
    if (s->method != SKEL_NATIVE || f->api == SKEL_HDF5)
        return; /* the raw methods skip reads */
    if (!active)
        size = 0;
    if (size < 0 || (active && offset < -1))
        skel_die(s, "a negative offset or size for these parameters");
    if (size > INT_MAX && f->api == SKEL_MPIIO)
        skel_die(s, "one MPI-IO read of more than 2 GiB - 1 bytes (an int count)");
    char *data = skel_data_for(s, (size_t)size);
    if (s->sizing)
        return;
    if (offset < 0)
        offset = f->pos;
    double t0 = skel_now();
    if (f->api == SKEL_MPIIO) {
        MPI_Status st;
        int rc = skel_transfer_of(s, collective)
                     ? MPI_File_read_at_all(f->mf, offset, data, (int)size, MPI_BYTE, &st)
                     : (size ? MPI_File_read_at(f->mf, offset, data, (int)size, MPI_BYTE, &st)
                             : MPI_SUCCESS);
        if (rc != MPI_SUCCESS)
            skel_die(s, "MPI_File_read_at failed");
    } else {
        for (long long done = 0; done < size;) {
            ssize_t r = pread(f->fd, data + done, (size_t)(size - done), offset + done);
            if (r < 0)
                skel_die(s, "pread failed");
            if (r == 0)
                break; /* past the end: the application read what was there */
            done += r;
        }
    }
    skel_add(s, T_READ, t0);
    f->pos = skel_iadd(offset, size);
}

/* A read through the shared file pointer (native method, MPI-IO files): MPI_File_read_ordered
 * (collective: every rank of the file, an inactive one with no bytes) or MPI_File_read_shared;
 * a POSIX file's at the rank's running position. */
void skel_read_shared(skel_file_t *f, long long size, int collective, int active)
{
    skel_t *s = f->s;
    if (f->api != SKEL_MPIIO) {
        skel_read_bytes(f, -1, size, collective, active);
        return;
    }
    if (s->method != SKEL_NATIVE)
        return; /* the raw methods skip reads */
    size = skel_shared_count(s, size, active, "read");
    char *data = skel_data_for(s, (size_t)size);
    if (s->sizing)
        return;
    int coll = skel_transfer_of(s, collective);
    skel_shared_settle(f, coll);
    double t0 = skel_now();
    MPI_Status st;
    int rc =
        coll ? MPI_File_read_ordered(f->mf, data, (int)size, MPI_BYTE, &st)
             : (size ? MPI_File_read_shared(f->mf, data, (int)size, MPI_BYTE, &st) : MPI_SUCCESS);
    if (rc != MPI_SUCCESS)
        skel_die(s, "MPI_File_read_shared failed");
    skel_add(s, T_READ, t0);
}

void skel_set_size(skel_file_t *f, long long size, int active)
{
    skel_t *s = f->s;
    if (s->method != SKEL_NATIVE || f->api == SKEL_HDF5 || s->sizing)
        return; /* the raw methods write layouts of their own */
    if (active && size < 0)
        skel_die(s, "a negative file size for these parameters");
    double t0 = skel_now();
    if (f->api == SKEL_MPIIO) {
        if (!active && f->comm != MPI_COMM_WORLD)
            return;   /* a file of its own: only the ranks that set its size */
        if (size < 0) /* collective: every rank the same size (set_size names no rank) */
            skel_die(s, "a negative file size for these parameters");
        if (MPI_File_set_size(f->mf, (MPI_Offset)size) != MPI_SUCCESS)
            skel_die(s, "MPI_File_set_size failed");
    } else if (active && ftruncate(f->fd, (off_t)size) != 0) {
        skel_die(s, "ftruncate failed");
    }
    skel_add(s, T_WRITE, t0);
}
