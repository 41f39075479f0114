/* The job's distinct hosts, cheaply at any scale: each rank sends rank 0 an 8-byte hash of its
 * host name (as it sends its I/O time); rank 0 picks the first rank of each distinct hash and
 * tells every rank (one int) whether to send its name; only those ranks send (64 bytes each).
 * Three collectives, 12 bytes per rank plus one name per host into rank 0. */
#include "platform/hosts.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/hash.h"

typedef struct {
    uint64_t hash;
    int rank;
} host_of;

static int by_hash_then_rank(const void *a, const void *b)
{
    const host_of *x = a, *y = b;
    if (x->hash != y->hash)
        return (x->hash > y->hash) - (x->hash < y->hash);
    return (x->rank > y->rank) - (x->rank < y->rank);
}

static int by_name(const void *a, const void *b)
{
    return strncmp(a, b, IOT_HOST_LEN);
}

static void own_name(char name[IOT_HOST_LEN])
{
    memset(name, 0, IOT_HOST_LEN);
    gethostname(name, IOT_HOST_LEN - 1);
}

/* Sorts h's names and drops repeats (two hosts whose hashes collided give one name twice
 * only if their names are equal: then they are one host). */
static void sort_names(iot_hosts *h)
{
    qsort(h->names, (size_t)h->listed, IOT_HOST_LEN, by_name);
    int n = 0;
    for (int i = 0; i < h->listed; i++)
        if (n == 0 || by_name(h->names[n - 1], h->names[i]) != 0)
            memmove(h->names[n++], h->names[i], IOT_HOST_LEN);
    h->listed = n;
}

/* Rank 0: which ranks send their name (send[r] = 1 for the first rank of each distinct hash);
 * returns the number of distinct hashes. */
static int choose_senders(const uint64_t *hashes, int nranks, int *send)
{
    host_of *all = malloc((size_t)nranks * sizeof *all);
    if (!all)
        return 0;
    for (int r = 0; r < nranks; r++)
        all[r] = (host_of){hashes[r], r};
    qsort(all, (size_t)nranks, sizeof *all, by_hash_then_rank);
    int distinct = 0;
    for (int i = 0; i < nranks; i++)
        if (i == 0 || all[i].hash != all[i - 1].hash) {
            send[all[i].rank] = 1;
            distinct++;
        }
    free(all);
    return distinct;
}

void iot_hosts_gather(MPI_Comm comm, iot_hosts *h)
{
    char mine[IOT_HOST_LEN];
    own_name(mine);
    memset(h, 0, sizeof *h);
    int rank = 0, nranks = 1;
    if (comm != MPI_COMM_NULL) {
        PMPI_Comm_rank(comm, &rank);
        PMPI_Comm_size(comm, &nranks);
    }
    if (nranks == 1) {
        h->names = malloc(IOT_HOST_LEN);
        h->count = 1;
        if (h->names) {
            memcpy(h->names, mine, IOT_HOST_LEN);
            h->listed = 1;
        }
        return;
    }
    uint64_t hash = iot_fnv1a(mine), *hashes = NULL;
    int *send = NULL, *counts = NULL, *displs = NULL, ok = 1, me = 0, total = 0;
    if (rank == 0) {
        hashes = malloc((size_t)nranks * sizeof *hashes);
        send = calloc((size_t)nranks, sizeof *send);
        counts = calloc((size_t)nranks, sizeof *counts);
        displs = calloc((size_t)nranks, sizeof *displs);
        ok = hashes && send && counts && displs;
    }
    PMPI_Bcast(&ok, 1, MPI_INT, 0, comm);
    if (ok) {
        PMPI_Gather(&hash, (int)sizeof hash, MPI_BYTE, hashes, (int)sizeof hash, MPI_BYTE, 0, comm);
        if (rank == 0) {
            h->count = choose_senders(hashes, nranks, send);
            h->names = malloc((size_t)(h->count ? h->count : 1) * IOT_HOST_LEN);
            for (int r = 0; r < nranks; r++) {
                counts[r] = h->names && send[r] ? IOT_HOST_LEN : 0;
                displs[r] = total;
                total += counts[r];
            }
        }
        PMPI_Scatter(counts, 1, MPI_INT, &me, 1, MPI_INT, 0, comm);
        PMPI_Gatherv(mine, me, MPI_CHAR, h->names, counts, displs, MPI_CHAR, 0, comm);
    }
    if (rank == 0 && h->names) {
        h->listed = total / IOT_HOST_LEN;
        sort_names(h);
    }
    free(hashes);
    free(send);
    free(counts);
    free(displs);
}

void iot_hosts_free(iot_hosts *h)
{
    free(h->names);
    memset(h, 0, sizeof *h);
}
