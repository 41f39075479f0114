/* The application's MPI datatypes: a noncontiguous memory layout (skel_memory) and the file
 * view a write goes through (skel_write_view), native method on an MPI-IO file. */
#define _GNU_SOURCE
#include "skel_internal.h"

#include <stdlib.h>

void skel_memory(skel_file_t *f, int n, const long long *pieces)
{
    f->nmem = n;
    f->mem = pieces;
}

#define SKEL_MEM_GAP 64 /* bytes between the pieces of a noncontiguous memory datatype */

/* The memory of a native MPI-IO write of size bytes: the pieces skel_memory gave (one instance
 * of an hindexed type, *count 1) when they add up to size, else size contiguous bytes. */
const char *skel_write_memory(skel_file_t *f, long long size, MPI_Datatype *type, int *count)
{
    long long sum = 0;
    for (int i = 0; i < f->nmem; i++)
        sum += f->mem[i];
    *type = MPI_BYTE;
    *count = (int)size;
    if (f->nmem < 2 || sum != size) {
        f->nmem = 0;
        return skel_data_for(f->s, (size_t)size);
    }
    if (f->s->sizing) {
        long long footprint = sum + (long long)f->nmem * SKEL_MEM_GAP; /* as below */
        f->nmem = 0;
        return skel_data_for(f->s, (size_t)footprint);
    }
    int *len = malloc(sizeof(int) * (size_t)f->nmem);
    MPI_Aint *at = malloc(sizeof(MPI_Aint) * (size_t)f->nmem);
    if (!len || !at)
        skel_die(f->s, "out of memory");
    long long off = 0;
    for (int i = 0; i < f->nmem; i++) {
        at[i] = (MPI_Aint)off;
        len[i] = (int)f->mem[i];
        off += f->mem[i] + SKEL_MEM_GAP;
    }
    MPI_Type_create_hindexed(f->nmem, len, at, MPI_BYTE, type);
    MPI_Type_commit(type);
    free(len);
    free(at);
    *count = 1;
    f->nmem = 0;
    return skel_data_for(f->s, (size_t)off);
}

/* The filetype of nblocks (offset, length, count, stride) entries: an hindexed type of their
 * blocks, resized to lb and extent where it must be; MPI_BYTE for none. */
static MPI_Datatype view_type(skel_t *s, long long lb, long long extent, int nblocks,
                              const long long *view)
{
    long long total = 0;
    for (int i = 0; i < nblocks; i++)
        total += view[4 * i + 2] > 0 ? view[4 * i + 2] : 0;
    if (total <= 0)
        return MPI_BYTE; /* no blocks (a rank without data): bytes */
    if (total == 1 && view[0] == 0 && lb == 0 && view[1] == 1 && extent == 1)
        return MPI_BYTE; /* the filetype was MPI_BYTE itself (PnetCDF's contiguous views) */
    if (total > (1LL << 24))
        skel_die(s, "a file view of more than 2^24 blocks");
    int *len = malloc(sizeof(int) * (size_t)total);
    MPI_Aint *at = malloc(sizeof(MPI_Aint) * (size_t)total);
    if (!len || !at)
        skel_die(s, "out of memory");
    int n = 0;
    for (int i = 0; i < nblocks; i++)
        for (long long k = 0; k < view[4 * i + 2]; k++, n++) {
            at[n] = (MPI_Aint)(view[4 * i] + k * view[4 * i + 3]);
            len[n] = (int)view[4 * i + 1];
        }
    MPI_Datatype ftype;
    MPI_Aint lo = 0, ext = 0;
    MPI_Type_create_hindexed(n, len, at, MPI_BYTE, &ftype);
    MPI_Type_get_extent(ftype, &lo, &ext);
    /* resized only when it must be: ROMIO's collective writes of a resized type span a
     * wider range of the file (measured: 432 bytes more, read and written back) */
    if (lo != (MPI_Aint)lb || ext != (MPI_Aint)extent) {
        MPI_Datatype blocks = ftype;
        MPI_Type_create_resized(blocks, (MPI_Aint)lb, (MPI_Aint)extent, &ftype);
        MPI_Type_free(&blocks);
    }
    MPI_Type_commit(&ftype);
    free(len);
    free(at);
    return ftype;
}

void skel_write_view(skel_file_t *f, long long offset, long long size, long long lb,
                     long long extent, long long at, int nblocks, const long long *view,
                     int collective, int active)
{
    skel_t *s = f->s;
    if (s->method != SKEL_NATIVE || f->api != SKEL_MPIIO) {
        skel_write_bytes(f, nblocks > 0 ? offset + view[0] : offset, size, collective, active);
        return;
    }
    if (!active)
        size = nblocks = 0;
    if (s->sizing) {
        MPI_Datatype mtype;
        int mcount;
        skel_write_memory(f, size, &mtype, &mcount);
        return;
    }
    MPI_Datatype ftype = view_type(s, lb, extent, nblocks, view);
    MPI_Datatype mtype;
    int mcount;
    const char *data = skel_write_memory(f, size, &mtype, &mcount);
    double t0 = skel_now();
    MPI_Status st;
    int coll = skel_transfer_of(s, collective);
    MPI_Offset where = at > 0 && size ? (MPI_Offset)at : 0;
    /* set before every write through it, as PnetCDF and h5perf do (a program that writes
     * twice through a view it set once gets one MPI_File_set_view more here) */
    int rc = MPI_File_set_view(f->mf, offset, MPI_BYTE, ftype, "native", MPI_INFO_NULL);
    if (rc == MPI_SUCCESS && at >= 0 && coll)
        rc = MPI_File_write_at_all(f->mf, where, data, mcount, mtype, &st);
    else if (rc == MPI_SUCCESS && at >= 0 && size)
        rc = MPI_File_write_at(f->mf, where, data, mcount, mtype, &st);
    else if (rc == MPI_SUCCESS && coll)
        rc = MPI_File_write_all(f->mf, data, mcount, mtype, &st);
    else if (rc == MPI_SUCCESS && size)
        rc = MPI_File_write(f->mf, data, mcount, mtype, &st);
    if (mtype != MPI_BYTE)
        MPI_Type_free(&mtype);
    if (rc != MPI_SUCCESS)
        skel_die(s, "MPI_File_set_view or write through it failed");
    skel_add(s, T_WRITE, t0);
    if (ftype != MPI_BYTE)
        MPI_Type_free(&ftype);
    s->bytes += size;
}
