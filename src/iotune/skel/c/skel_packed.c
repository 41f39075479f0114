/* The packing methods' writes, at close: mpiio (each rank's bytes contiguous from a
 * stripe-aligned offset) and aggregate (gathered to the group's first rank). */
#define _GNU_SOURCE
#include "skel_internal.h"

#include <limits.h>

#include <stdlib.h>
#include <unistd.h>

void skel_flush_packed(skel_file_t *f)
{
    skel_t *s = f->s;
    long long mine = 0;
    for (int i = 0; i < f->npieces; i++)
        mine = skel_iadd(mine, f->pieces[i]);
    skel_ensure_buffer(s, (size_t)mine + 1);
    if (s->method == SKEL_M_MPIIO) {
        long long *all = malloc(sizeof(long long) * (size_t)s->size), base = 0;
        double t0 = skel_now();
        MPI_Allgather(&mine, 1, MPI_LONG_LONG, all, 1, MPI_LONG_LONG, MPI_COMM_WORLD);
        skel_add(s, T_COMM, t0);
        for (int r = 0; r < s->rank; r++)
            base =
                skel_iadd(base, skel_imul(skel_iadd(all[r], s->stripe - 1) / s->stripe, s->stripe));
        free(all);
        t0 = skel_now();
        long long from = 0; /* each piece from its own memory, as in data_for */
        for (int i = 0; i < f->npieces; i++) {
            MPI_Status st;
            if (MPI_File_write_at(f->mf, base, s->buf + from, (int)f->pieces[i], MPI_BYTE, &st) !=
                MPI_SUCCESS)
                skel_die(s, "MPI_File_write_at failed");
            base += f->pieces[i];
            from += f->pieces[i];
        }
        skel_add(s, T_WRITE, t0);
        s->bytes += mine;
        return;
    }
    /* aggregate */
    int gsize, grank;
    MPI_Comm_size(s->group_comm, &gsize);
    MPI_Comm_rank(s->group_comm, &grank);
    int *counts = malloc(sizeof(int) * (size_t)gsize),
        *displs = malloc(sizeof(int) * (size_t)gsize);
    if (mine > INT_MAX)
        skel_die(s, "aggregate: more than 2 GiB - 1 bytes of one rank in one file (an int count)");
    int mine_i = (int)mine;
    double t0 = skel_now();
    MPI_Gather(&mine_i, 1, MPI_INT, counts, 1, MPI_INT, 0, s->group_comm);
    long long total = 0;
    if (grank == 0)
        for (int r = 0; r < gsize; r++) {
            displs[r] = (int)total;
            total += counts[r];
            if (total > INT_MAX)
                skel_die(s, "aggregate: more than 2 GiB - 1 bytes for one aggregator (int "
                            "displacements): use more --aggregators");
        }
    char *recv = NULL;
    if (grank == 0 && !(recv = malloc((size_t)total + 1)))
        skel_die(s, "out of memory (aggregator)");
    MPI_Gatherv(s->buf, mine_i, MPI_BYTE, recv, counts, displs, MPI_BYTE, 0, s->group_comm);
    skel_add(s, T_COMM, t0);
    if (grank == 0) {
        t0 = skel_now();
        for (long long done = 0; done < total;) {
            ssize_t w = pwrite(f->fd, recv + done, (size_t)(total - done), done);
            if (w < 0)
                skel_die(s, "pwrite failed (aggregator)");
            done += w;
        }
        skel_add(s, T_WRITE, t0);
    }
    s->bytes += mine;
    free(recv);
    free(counts);
    free(displs);
}
