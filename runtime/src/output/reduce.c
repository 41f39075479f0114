/* The ranks' records to rank 0 (reduce.h). Three steps, all collective:
 * 1. the shared files: every rank's name hashes, reduced (MPI_Allreduce, a custom operation)
 *    into the IOT_SKETCH smallest hashes of the job with the number of ranks that have each;
 *    a hash that two ranks or more have is a shared file, at the same index on every rank;
 * 2. the shared files' records reduced to rank 0 (MPI_Reduce, a custom non-commutative
 *    operation: the lowest rank's hints and names win, as when rank 0 merged the gathered
 *    records in rank order), one record per file whatever the number of ranks;
 * 3. the other records gathered (MPI_Gatherv), at most IOT_GATHER_MAX in all in rank order; the
 *    rest summed into one summary record, which travels with the reduction. */
#include "output/reduce.h"

#include <stdlib.h>
#include <string.h>

#include "base/hash.h"

/* How two values of a counter combine (counters.tsv, column merge). */
#define MERGE_sum_count(a, b) a += b;
#define MERGE_sum_seconds(a, b) a += b;
#define MERGE_sum_sizes(a, b)                                                                      \
    for (int i = 0; i < IOT_SIZE_BINS; i++)                                                        \
        a[i] += b[i];
#define MERGE_min_offset(a, b)                                                                     \
    if (b >= 0 && (a < 0 || b < a))                                                                \
        a = b;
#define MERGE_max_offset(a, b)                                                                     \
    if (b > a)                                                                                     \
        a = b;
#define MERGE(field, type, merge) MERGE_##merge##_##type(a->field, b->field)

static void merge_counters(iot_counters *a, const iot_counters *b)
{
    IOT_COUNTERS(MERGE)
}

#define KEEP_FIRST(field)                                                                          \
    if (!into->field[0])                                                                           \
        memcpy(into->field, r->field, sizeof into->field);

void iot_rec_merge(iot_file_rec *into, const iot_file_rec *r)
{
    into->layers |= r->layers;
    if (r->start >= 0 && (into->start < 0 || r->start < into->start))
        into->start = r->start;
    if (r->end > into->end)
        into->end = r->end;
    KEEP_FIRST(hints)
    KEEP_FIRST(h5applied)
    KEEP_FIRST(striping)
    KEEP_FIRST(mpapplied)
    KEEP_FIRST(h5notes)
    KEEP_FIRST(h5dsets)
    KEEP_FIRST(h5driver)
    KEEP_FIRST(fs)
    KEEP_FIRST(withdrawn)
    for (int l = 0; l < IOT_NLAYERS; l++)
        merge_counters(&into->c[l], &r->c[l]);
}

/* Bytes at a record's outermost layer (stdio and POSIX are side by side). */
void iot_rec_outer_bytes(const iot_file_rec *f, uint64_t *written, uint64_t *read)
{
    int l = (f->layers & (1 << IOT_L_HDF5))    ? IOT_L_HDF5
            : (f->layers & (1 << IOT_L_MPIIO)) ? IOT_L_MPIIO
                                               : -1;
    if (l >= 0) {
        *written += f->c[l].bytes_written;
        *read += f->c[l].bytes_read;
        return;
    }
    for (l = IOT_L_POSIX; l <= IOT_L_STDIO; l++) {
        *written += f->c[l].bytes_written;
        *read += f->c[l].bytes_read;
    }
}

#define PR_SET(field, layer, key)                                                                  \
    v->val[0][k] = v->min[k] = v->max[k] = r->c[layer].field;                                      \
    k++;

void iot_reduced_from(iot_reduced *x, const iot_file_rec *r)
{
    memset(x, 0, sizeof *x);
    x->rec = *r;
    double t = r->outer_time;
    x->st = (iot_file_stats){t, t, t, r->rank, 1};
    iot_rank_values *v = &x->pr;
    v->listed = 1;
    v->rank[0] = r->rank;
    int k = 0;
    IOT_COUNTERS_PER_RANK(PR_SET)
    (void)k;
    x->present = 1;
    iot_rec_outer_bytes(r, &x->outer_written, &x->outer_read);
}

static void values_combine(const iot_rank_values *lo, iot_rank_values *hi)
{
    for (int k = 0; k < IOT_NPR; k++) {
        if (lo->min[k] < hi->min[k])
            hi->min[k] = lo->min[k];
        if (lo->max[k] > hi->max[k])
            hi->max[k] = lo->max[k];
    }
    if (lo->listed < 0 || hi->listed < 0 || lo->listed + hi->listed > IOT_LISTED_RANKS) {
        hi->listed = -1;
        return;
    }
    size_t n = (size_t)lo->listed, m = (size_t)hi->listed;
    memmove(hi->rank + n, hi->rank, m * sizeof *hi->rank);
    memcpy(hi->rank, lo->rank, n * sizeof *hi->rank);
    memmove(hi->val + n, hi->val, m * sizeof *hi->val);
    memcpy(hi->val, lo->val, n * sizeof *hi->val);
    hi->listed += lo->listed;
}

void iot_reduced_combine(const iot_reduced *lo, iot_reduced *hi)
{
    if (!lo->present)
        return;
    if (!hi->present) {
        *hi = *lo;
        return;
    }
    iot_file_rec merged = lo->rec; /* lo first: its names and hints win */
    iot_rec_merge(&merged, &hi->rec);
    hi->rec = merged;
    iot_file_stats *s = &hi->st;
    if (lo->st.max >= s->max) { /* ties: the lowest rank, as in rank order */
        s->max = lo->st.max;
        s->slowest = lo->st.slowest;
    }
    if (lo->st.min < s->min)
        s->min = lo->st.min;
    s->sum = lo->st.sum + s->sum;
    s->ranks += lo->st.ranks;
    values_combine(&lo->pr, &hi->pr);
    hi->files += lo->files;
    hi->outer_written += lo->outer_written;
    hi->outer_read += lo->outer_read;
}

static void reduce_op(void *in, void *inout, int *len, MPI_Datatype *type)
{
    (void)type;
    const iot_reduced *lo = in;
    iot_reduced *hi = inout;
    for (int i = 0; i < *len; i++)
        iot_reduced_combine(&lo[i], &hi[i]);
}

/* The sketch: the IOT_SKETCH smallest name keys, sorted, each with the number of ranks that
 * have it, in one 8-byte word: the hash's top 56 bits, and the count in the low 8 (saturated at
 * 255: only "two or more" matters); 0 is an empty slot, after the others. Merging keeps the
 * smallest of the union, so the operation is associative and commutative, and a key among the
 * job's IOT_SKETCH smallest is never dropped on the way. */
#define SK_KEY(x) ((x) & ~(uint64_t)0xff)
#define SK_COUNT(x) ((x)&0xff)

static void sketch_op(void *in, void *inout, int *len, MPI_Datatype *type)
{
    (void)type;
    for (int s = 0; s < *len; s++) {
        const uint64_t *a = (const uint64_t *)in + (size_t)s * IOT_SKETCH;
        uint64_t *b = (uint64_t *)inout + (size_t)s * IOT_SKETCH, out[IOT_SKETCH];
        int i = 0, j = 0, n = 0;
        while (n < IOT_SKETCH) {
            int ai = i < IOT_SKETCH && a[i], bj = j < IOT_SKETCH && b[j];
            if (!ai && !bj)
                break;
            if (ai && bj && SK_KEY(a[i]) == SK_KEY(b[j])) {
                uint64_t c = SK_COUNT(a[i]) + SK_COUNT(b[j]);
                out[n++] = SK_KEY(a[i]) | (c > 255 ? 255 : c);
                i++;
                j++;
            } else if (ai && (!bj || a[i] < b[j])) {
                out[n++] = a[i++];
            } else {
                out[n++] = b[j++];
            }
        }
        memset(out + n, 0, (size_t)(IOT_SKETCH - n) * sizeof *out);
        memcpy(b, out, sizeof out);
    }
}

static int by_key(const void *a, const void *b)
{
    uint64_t x = SK_KEY(*(const uint64_t *)a), y = SK_KEY(*(const uint64_t *)b);
    return (x > y) - (x < y);
}

/* Runs a reduction with a custom operation over count elements of size bytes, freeing what it
 * creates before it returns. all: MPI_Allreduce, else MPI_Reduce to rank 0. */
static void reduce_with(MPI_User_function *fn, int commute, const void *in, void *out, int count,
                        size_t size, int all, MPI_Comm comm)
{
    MPI_Datatype type;
    MPI_Op op;
    PMPI_Type_contiguous((int)size, MPI_BYTE, &type);
    PMPI_Type_commit(&type);
    PMPI_Op_create(fn, commute, &op);
    if (all)
        PMPI_Allreduce(in, out, count, type, op, comm);
    else
        PMPI_Reduce(in, out, count, type, op, 0, comm);
    PMPI_Op_free(&op);
    PMPI_Type_free(&type);
}

/* Every rank agrees that all have what they need (1), or none goes on. */
static int all_ok(int ok, MPI_Comm comm)
{
    int all = ok;
    PMPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, comm);
    return all;
}

static int local(iot_job_files *out, const iot_file_rec *recs, int nrecs)
{
    out->files = calloc((size_t)(nrecs ? nrecs : 1), sizeof *out->files);
    if (!out->files)
        return -1;
    for (int i = 0; i < nrecs; i++)
        iot_reduced_from(&out->files[i], &recs[i]);
    out->nfiles = out->gathered = nrecs;
    out->io_time = iot_rank_io_time;
    return 0;
}

/* Rank 0: the gathered records merged by name (rank order) after the shared files. */
static void add_gathered(iot_job_files *out, const iot_file_rec *g, int n)
{
    int first = out->nfiles;
    uint64_t *hashes = malloc((size_t)(n ? n : 1) * sizeof *hashes);
    iot_reduced *one = malloc(sizeof *one);
    for (int i = 0; hashes && one && i < n; i++) {
        uint64_t h = iot_fnv1a(g[i].name);
        int k = first;
        while (k < out->nfiles &&
               (hashes[k - first] != h || strcmp(out->files[k].rec.name, g[i].name)))
            k++;
        iot_reduced_from(one, &g[i]);
        if (k < out->nfiles) {
            iot_reduced_combine(&out->files[k], one);
            out->files[k] = *one;
            continue;
        }
        hashes[k - first] = h;
        out->files[out->nfiles++] = *one;
    }
    free(one);
    free(hashes);
}

static int log2_ceil(int n)
{
    int s = 0;
    while ((1 << s) < n)
        s++;
    return s;
}

/* This rank's sketch, from its records' keys (keys[i] for recs[i]). */
static int own_sketch(uint64_t *mine, const uint64_t *keys, int nrecs)
{
    uint64_t *sorted = malloc((size_t)(nrecs ? nrecs : 1) * sizeof *sorted);
    if (!sorted)
        return 0;
    memcpy(sorted, keys, (size_t)nrecs * sizeof *sorted);
    qsort(sorted, (size_t)nrecs, sizeof *sorted, by_key);
    for (int i = 0, n = 0; i < nrecs && n < IOT_SKETCH; i++)
        if (!n || sorted[i] != SK_KEY(mine[n - 1]))
            mine[n++] = sorted[i] | 1;
    free(sorted);
    return 1;
}

int iot_reduce_files(MPI_Comm comm, iot_job_files *out)
{
    memset(out, 0, sizeof *out);
    int nrecs, rank, nranks;
    iot_file_rec *recs = iot_recs(&nrecs);
    if (comm == MPI_COMM_NULL)
        return local(out, recs, nrecs);
    PMPI_Comm_rank(comm, &rank);
    PMPI_Comm_size(comm, &nranks);
    /* 1. which files are shared */
    uint64_t *mine = calloc(IOT_SKETCH, sizeof *mine), *job = calloc(IOT_SKETCH, sizeof *job);
    uint64_t *key = malloc((size_t)(nrecs ? nrecs : 1) * sizeof *key);
    int ok = mine && job && key, nshared = 0, ncand = 0, *cand = NULL;
    for (int i = 0; ok && i < nrecs; i++)
        key[i] = SK_KEY(iot_fnv1a(recs[i].name));
    ok = ok && own_sketch(mine, key, nrecs);
    iot_reduced *elems = NULL, *result = NULL, *tmp = NULL;
    if ((ok = all_ok(ok, comm))) {
        reduce_with(sketch_op, 1, mine, job, 1, sizeof *job * IOT_SKETCH, 1, comm);
        for (int i = 0; i < IOT_SKETCH && job[i]; i++)
            if (SK_COUNT(job[i]) >= 2)
                job[nshared++] = job[i]; /* in place: sorted still */
        elems = calloc((size_t)nshared + 1, sizeof *elems);
        tmp = malloc(sizeof *tmp);
        cand = malloc((size_t)(nrecs ? nrecs : 1) * sizeof *cand);
        if (rank == 0)
            result = calloc((size_t)nshared + 1, sizeof *result);
        ok = all_ok(elems && tmp && cand && (rank != 0 || result), comm);
    }
    for (int i = 0; ok && i < nrecs; i++) {
        const uint64_t *e = bsearch(&key[i], job, (size_t)nshared, sizeof *job, by_key);
        if (!e) {
            cand[ncand++] = i;
            continue;
        }
        iot_reduced *x = &elems[e - job];
        iot_reduced_from(tmp, &recs[i]);
        iot_reduced_combine(x, tmp);
        *x = *tmp;
    }
    /* 3 (first half): how many of its own files each rank sends (the first IOT_GATHER_MAX of
     * the job in rank order), and whether any rank has more (the summary) */
    int before = 0, allowed = 0, mine2[2] = {0, 0}, sums[2] = {0, 0};
    if (ok) {
        PMPI_Exscan(&ncand, &before, 1, MPI_INT, MPI_SUM, comm);
        if (rank == 0)
            before = 0; /* undefined there */
        allowed = before >= IOT_GATHER_MAX          ? 0
                  : ncand < IOT_GATHER_MAX - before ? ncand
                                                    : IOT_GATHER_MAX - before;
        mine2[0] = allowed;
        mine2[1] = ncand - allowed;
        PMPI_Allreduce(mine2, sums, 2, MPI_INT, MPI_SUM, comm);
        iot_reduced *sum = &elems[nshared];
        for (int c = allowed; c < ncand; c++) {
            iot_reduced_from(tmp, &recs[cand[c]]);
            tmp->rec.name[0] = '\0';
            tmp->files = 1;
            iot_reduced_combine(sum, tmp);
            *sum = *tmp;
        }
        /* 2. the shared files (and the summary when there is one), reduced */
        int count = nshared + (sums[1] > 0);
        if (count)
            reduce_with(reduce_op, 0, elems, result, count, sizeof *elems, 0, comm);
        PMPI_Reduce(&iot_rank_io_time, &out->io_time, 1, MPI_DOUBLE, MPI_MAX, 0, comm);
    }
    /* 3. the other records, gathered (nothing at all when no rank has any) */
    iot_file_rec *send = NULL, *got = NULL;
    int total = sums[0], *counts = NULL, *displs = NULL;
    if (ok) {
        send = malloc((size_t)(allowed ? allowed : 1) * sizeof *send);
        for (int c = 0; send && c < allowed; c++)
            send[c] = recs[cand[c]];
        if (rank == 0) {
            counts = calloc((size_t)nranks, sizeof *counts);
            displs = calloc((size_t)nranks, sizeof *displs);
            got = malloc((size_t)(total ? total : 1) * sizeof *got);
            out->files =
                calloc((size_t)(nshared + total ? nshared + total : 1), sizeof *out->files);
        }
        ok = all_ok(send && (rank != 0 || (counts && displs && got && out->files)), comm);
    }
    if (ok && total) {
        PMPI_Gather(&allowed, 1, MPI_INT, counts, 1, MPI_INT, 0, comm);
        for (int r = 0, at = 0; rank == 0 && r < nranks; r++) {
            displs[r] = at;
            at += counts[r];
        }
        MPI_Datatype rec;
        PMPI_Type_contiguous((int)sizeof(iot_file_rec), MPI_BYTE, &rec);
        PMPI_Type_commit(&rec);
        PMPI_Gatherv(send, allowed, rec, got, counts, displs, rec, 0, comm);
        PMPI_Type_free(&rec);
    }
    if (ok && rank == 0) {
        for (int i = 0; i < nshared; i++)
            if (result[i].present)
                out->files[out->nfiles++] = result[i];
        out->shared = out->nfiles;
        add_gathered(out, got, total);
        out->gathered = total;
        if (sums[1] > 0)
            out->summary = result[nshared];
        /* what rank 0 receives: the sketch, the reduced records, the gathered ones with their
         * counts, and 3 ints and 2 doubles of the small collectives */
        uint64_t reduced = (uint64_t)sizeof *job * IOT_SKETCH +
                           (uint64_t)(nshared + (sums[1] > 0)) * sizeof *elems,
                 direct =
                     (total ? (uint64_t)total * sizeof *got + sizeof(int) * (uint64_t)nranks : 0) +
                     3 * sizeof(int) + 2 * sizeof(double);
        out->bytes_in = reduced + direct;
        out->tree_bytes = reduced * (uint64_t)log2_ceil(nranks) + direct;
    }
    free(mine);
    free(job);
    free(key);
    free(cand);
    free(elems);
    free(result);
    free(tmp);
    free(counts);
    free(displs);
    free(send);
    free(got);
    if (!ok && rank == 0) {
        free(out->files);
        out->files = NULL;
    }
    return ok ? 0 : -1;
}

void iot_job_files_free(iot_job_files *j)
{
    free(j->files);
    j->files = NULL;
    j->nfiles = 0;
}
