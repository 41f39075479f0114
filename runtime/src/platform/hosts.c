/* The job's hosts, with O(1) bytes per rank into rank 0 for their count: the ranks of one host
 * name form a communicator (MPI_Comm_split by two 31-bit hashes of the name: 62 bits, so that
 * two hosts share one only if their names collide in both); its rank 0, the job's lowest rank
 * on that host, is the host's leader. The leaders are counted with one MPI_Reduce and numbered
 * with one MPI_Exscan; the names (64 bytes each) of the first IOT_HOSTS_LISTED hosts reach
 * rank 0 through a communicator of those leaders alone. The host communicator stays for the
 * traces (one file per host). */
#include "platform/hosts.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/hash.h"

static int by_name(const void *a, const void *b)
{
    return strncmp(a, b, IOT_HOST_LEN);
}

void iot_host_name(char name[IOT_HOST_LEN])
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

/* The ranks of comm on this host (by name), in comm's rank order. */
static MPI_Comm host_comm(MPI_Comm comm, int rank, const char *name)
{
    uint64_t h = iot_fnv1a(name);
    MPI_Comm first = MPI_COMM_NULL, host = MPI_COMM_NULL;
    if (PMPI_Comm_split(comm, (int)(h & 0x7fffffff), rank, &first) != MPI_SUCCESS)
        return MPI_COMM_NULL;
    if (PMPI_Comm_split(first, (int)((h >> 32) & 0x7fffffff), rank, &host) != MPI_SUCCESS)
        host = MPI_COMM_NULL;
    PMPI_Comm_free(&first);
    return host;
}

/* Rank 0 of comm receives the names of the first IOT_HOSTS_LISTED hosts' leaders (leader: this
 * rank is its host's first; index: its host's number). */
static void gather_names(MPI_Comm comm, int rank, int leader, int index, const char *mine,
                         iot_hosts *h)
{
    MPI_Comm leaders = MPI_COMM_NULL;
    int color = leader && index < IOT_HOSTS_LISTED ? 0 : MPI_UNDEFINED, n = 0, ok = 1;
    if (PMPI_Comm_split(comm, color, rank, &leaders) != MPI_SUCCESS || leaders == MPI_COMM_NULL)
        return;
    PMPI_Comm_size(leaders, &n);
    if (rank == 0) {
        h->names = malloc((size_t)n * IOT_HOST_LEN);
        ok = h->names != NULL;
    }
    PMPI_Bcast(&ok, 1, MPI_INT, 0, leaders);
    if (ok &&
        PMPI_Gather(mine, IOT_HOST_LEN, MPI_CHAR, h->names, IOT_HOST_LEN, MPI_CHAR, 0, leaders) ==
            MPI_SUCCESS &&
        rank == 0) {
        h->listed = n;
        sort_names(h);
    }
    PMPI_Comm_free(&leaders);
}

void iot_hosts_gather(MPI_Comm comm, iot_hosts *h)
{
    char mine[IOT_HOST_LEN];
    iot_host_name(mine);
    memset(h, 0, sizeof *h);
    h->comm = MPI_COMM_NULL;
    h->leader = 1;
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
    h->comm = host_comm(comm, rank, mine);
    int ok = h->comm != MPI_COMM_NULL, all = 0;
    PMPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, comm);
    if (!all) { /* the count stays unknown (0): no rank is sure of its host */
        if (h->comm != MPI_COMM_NULL)
            PMPI_Comm_free(&h->comm);
        h->comm = MPI_COMM_NULL;
        return;
    }
    int host_rank = 0;
    PMPI_Comm_rank(h->comm, &host_rank);
    h->leader = host_rank == 0;
    PMPI_Reduce(&h->leader, &h->count, 1, MPI_INT, MPI_SUM, 0, comm);
    int before = 0; /* MPI_Exscan leaves rank 0's result undefined: it is 0 */
    PMPI_Exscan(&h->leader, &before, 1, MPI_INT, MPI_SUM, comm);
    h->index = rank == 0 ? 0 : before;
    gather_names(comm, rank, h->leader, h->index, mine, h);
}

void iot_hosts_free(iot_hosts *h)
{
    if (h->comm != MPI_COMM_NULL)
        PMPI_Comm_free(&h->comm);
    free(h->names);
    memset(h, 0, sizeof *h);
    h->comm = MPI_COMM_NULL;
}
