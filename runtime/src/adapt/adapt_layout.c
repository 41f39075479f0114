/* The adaptive mode's layout insights (insights.tsv: layout, filters, fill_time,
 * chunk_bytes_max, chunk_cache_bytes, chunk_cache_needed, fully_written), computed online as
 * iotune.insights computes them offline: each dataset's creation and access lists are read back
 * when it is created or opened, each write's file selection is kept as a box, and at the
 * phase's close the ranks of the file agree on them. fully_written says yes only on a proof:
 * the ranks' boxes of each dataset written are pairwise disjoint and their elements add up to
 * the dataset's extent (a selection that is not a box, or too many boxes, leaves it unknown),
 * because IOT-1 (fill time never) relies on it. */
#include <float.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "adapt/adapt.h"
#include "adapt/adapt_state.h"
#include "base/hash.h"
#include "platform/h5api.h"

#define SLOTS IOT_LAYOUT_SLOTS /* datasets per phase whose coverage is followed */
#define BOXES 8                /* boxes per dataset and rank */
#define DIMS 8                 /* dimensions of a followed dataset */
#define OPEN_IDS 32            /* open dataset ids per file mapped to their slot */
#define MAX_BOXES 4096         /* boxes of one dataset over all ranks that are checked pairwise */

enum { FILL_IFSET, FILL_ALLOC, FILL_NEVER, FILLS };
/* Why a dataset's coverage is not proven, the highest over its ranks; then the whole phase's. */
enum { BAD_NOT_BOX = 1, BAD_DIMS, BAD_TWICE, BAD_BOXES, BAD_UNMAPPED, BAD_SLOTS, BAD_ALL_BOXES };
enum { BAD_MEMORY = BAD_ALL_BOXES + 1, BAD_DIFFER, BAD_MORE, BAD_OVERLAP, BAD_NONE, BAD_LATER };
static const char *const bad_why[] = {
    NULL,
    "a rank wrote a dataset through a selection that is not one box",
    "a dataset has no dimensions or more than 8",
    "a rank wrote an element of a dataset twice",
    "a rank wrote a dataset in more than 8 separate boxes",
    "a dataset was written that the runtime did not follow (opened before the phase?)",
    "more than 16 datasets were written",
    "more than 4096 boxes over all ranks",
    "a rank had no memory for its boxes",
    "the ranks saw a dataset differently (path or extent)",
    "more elements were written than a dataset holds",
    "the boxes the ranks wrote overlap",
    "no dataset was written",
    "computed in a class's learning phase only"};
enum { L_CONTIGUOUS, L_CHUNKED, L_COMPACT, LAYOUTS };

typedef struct {
    int64_t lo[DIMS], hi[DIMS]; /* inclusive element bounds */
    int64_t slot;               /* the dataset's slot, for the boxes gathered from all ranks */
} box;

typedef struct {
    uint32_t hash;           /* of the dataset's path, 0: empty */
    int collided;            /* more datasets than slots */
    int ndims, bad, nboxes;  /* bad: why its coverage cannot be proven (BAD_*), 0 while it can */
    double elements, points; /* the extent; elements this rank wrote */
    box boxes[BOXES];
} slot;

typedef struct {
    int layouts[LAYOUTS], fills[FILLS], filters;
    double chunk_max, cache_min; /* bytes; cache_min < 0: none seen */
    slot slots[SLOTS];
    struct {
        int64_t id;
        int slot;
    } open[OPEN_IDS];
} file_layout;

static file_layout *layouts[IOT_MAX_FILES];
static pthread_mutex_t layout_lock = PTHREAD_MUTEX_INITIALIZER;

static file_layout *layout_of(int rec)
{
    if (rec < 0 || rec >= IOT_MAX_FILES)
        return NULL;
    if (!layouts[rec])
        layouts[rec] = calloc(1, sizeof *layouts[rec]);
    return layouts[rec];
}

void iot_adapt_layout_reset(int rec)
{
    pthread_mutex_lock(&layout_lock);
    file_layout *f = layout_of(rec);
    if (f) {
        memset(f, 0, sizeof *f);
        f->cache_min = -1;
    }
    pthread_mutex_unlock(&layout_lock);
}

/* A dataset's storage and extent, read back from HDF5 (outside the lock). */
typedef struct {
    int layout, fill, filters, ndims;
    double chunk_bytes, cache, elements;
} dataset_facts;

static int read_facts(const iot_h5_api *h, hid_t id, dataset_facts *d)
{
    memset(d, 0, sizeof *d);
    d->layout = d->fill = d->cache = -1;
    hid_t dcpl = h->H5Dget_create_plist(id);
    if (dcpl < 0)
        return -1;
    H5D_layout_t lay = h->H5Pget_layout(dcpl);
    d->layout = lay == H5D_CONTIGUOUS ? L_CONTIGUOUS
                : lay == H5D_CHUNKED  ? L_CHUNKED
                : lay == H5D_COMPACT  ? L_COMPACT
                                      : -1;
    hid_t type = h->H5Dget_type(id);
    size_t elem = type >= 0 ? h->H5Tget_size(type) : 0;
    if (type >= 0)
        h->H5Tclose(type);
    if (d->layout == L_CHUNKED) {
        hsize_t cdims[32];
        int n = IOT_H5_CALL(H5Pget_chunk, dcpl, 32, cdims);
        double bytes = (double)elem;
        for (int i = 0; i < n; i++)
            bytes *= (double)cdims[i];
        d->chunk_bytes = n > 0 && elem ? bytes : 0;
        d->filters = h->H5Pget_nfilters(dcpl) > 0;
        H5D_fill_time_t ft;
        if (IOT_H5_CALL(H5Pget_fill_time, dcpl, &ft) >= 0)
            d->fill = ft == H5D_FILL_TIME_NEVER   ? FILL_NEVER
                      : ft == H5D_FILL_TIME_ALLOC ? FILL_ALLOC
                                                  : FILL_IFSET;
        hid_t dapl = IOT_H5_CALL(H5Dget_access_plist, id);
        size_t nslots = 0, nbytes = 0;
        double w0 = 0;
        if (dapl >= 0 && IOT_H5_CALL(H5Pget_chunk_cache, dapl, &nslots, &nbytes, &w0) >= 0)
            d->cache = (double)nbytes;
        if (dapl >= 0)
            h->H5Pclose(dapl);
    }
    h->H5Pclose(dcpl);
    hid_t space = h->H5Dget_space(id);
    hsize_t dims[32];
    int n = space >= 0 ? h->H5Sget_simple_extent_ndims(space) : -1;
    if (n >= 0 && n <= 32 && h->H5Sget_simple_extent_dims(space, dims, NULL) == n) {
        d->ndims = n;
        d->elements = 1;
        for (int i = 0; i < n; i++)
            d->elements *= (double)dims[i];
    } else {
        d->ndims = -1;
    }
    if (space >= 0)
        h->H5Sclose(space);
    return 0;
}

void iot_adapt_dataset(int rec, int64_t id, const char *path)
{
    if (!iot_adapt_on || rec < 0 || rec >= IOT_MAX_FILES || !iot_h5_real()->H5Pget_layout)
        return;
    dataset_facts d;
    iot_h5_quiet quiet; /* nothing printed, the application's stack untouched */
    iot_h5_failure kept;
    iot_h5_failure_keep(&kept);
    iot_h5_quiet_begin(&quiet);
    int ok = read_facts(iot_h5_real(), (hid_t)id, &d) == 0;
    iot_h5_quiet_end(&quiet);
    iot_h5_failure_give_back(&kept);
    if (!ok)
        return;
    uint64_t h64 = iot_fnv1a(path);
    uint32_t hash = ((uint32_t)(h64 ^ (h64 >> 32)) & 0x7fffffffu) | 1; /* never 0: empty */
    pthread_mutex_lock(&layout_lock);
    file_layout *f = layouts[rec]; /* only in a followed phase (reset at its open) */
    if (f) {
        if (d.layout >= 0)
            f->layouts[d.layout] = 1;
        if (d.layout == L_CHUNKED) {
            f->filters |= d.filters;
            if (d.fill >= 0)
                f->fills[d.fill] = 1;
            f->chunk_max = fmax(f->chunk_max, d.chunk_bytes);
            if (d.cache >= 0 && (f->cache_min < 0 || d.cache < f->cache_min))
                f->cache_min = d.cache;
        }
        /* probed from the hash: ranks that create the same datasets in the same order (as
         * parallel HDF5 asks) give each the same slot; the close checks that they agree */
        int at = -1;
        for (int j = 0; j < SLOTS && at < 0; j++) {
            int i = (int)((hash + (uint32_t)j) % SLOTS);
            if (!f->slots[i].hash || f->slots[i].hash == hash)
                at = i;
        }
        slot *s = &f->slots[at >= 0 ? at : (int)(hash % SLOTS)];
        if (at < 0) {
            s->collided = 1; /* more datasets than slots */
        } else if (!s->hash) {
            s->hash = hash;
            s->ndims = d.ndims;
            s->elements = d.elements;
            s->bad = d.ndims < 1 || d.ndims > DIMS ? BAD_DIMS : 0;
        }
        int k = -1;
        for (int i = 0; i < OPEN_IDS && k < 0; i++)
            if (f->open[i].id == id || f->open[i].id == 0)
                k = i;
        if (k >= 0) {
            f->open[k].id = id;
            f->open[k].slot = at;
        } else { /* the write of an unmapped dataset cannot be placed: nothing proven */
            for (int i = 0; i < SLOTS; i++)
                f->slots[i].bad = BAD_UNMAPPED;
        }
    }
    pthread_mutex_unlock(&layout_lock);
}

static int disjoint(const box *a, const box *b, int n)
{
    for (int d = 0; d < n; d++)
        if (a->hi[d] < b->lo[d] || b->hi[d] < a->lo[d])
            return 1;
    return 0;
}

/* b joined to a box of s that it extends along one dimension (equal in the others): a
 * dataset written piece after piece stays one box per rank instead of overflowing BOXES. */
static int merged(slot *s, const box *b, int n)
{
    for (int i = 0; i < s->nboxes; i++) {
        box *a = &s->boxes[i];
        int along = -1, fits = 1;
        for (int d = 0; d < n && fits; d++) {
            if (a->lo[d] == b->lo[d] && a->hi[d] == b->hi[d])
                continue;
            fits = along < 0 && (a->hi[d] + 1 == b->lo[d] || b->hi[d] + 1 == a->lo[d]);
            along = d;
        }
        if (fits && along >= 0) {
            a->lo[along] = a->lo[along] < b->lo[along] ? a->lo[along] : b->lo[along];
            a->hi[along] = a->hi[along] > b->hi[along] ? a->hi[along] : b->hi[along];
            return 1;
        }
    }
    return 0;
}

void iot_adapt_layout_write(int rec, int64_t dset, int n, const uint64_t *start,
                            const uint64_t *end, double points, int is_box)
{
    pthread_mutex_lock(&layout_lock);
    file_layout *f = rec >= 0 && rec < IOT_MAX_FILES ? layouts[rec] : NULL;
    int k = -1;
    for (int i = 0; f && i < OPEN_IDS && k < 0; i++)
        if (f->open[i].id == dset)
            k = f->open[i].slot;
    slot *s = k >= 0 ? &f->slots[k] : NULL;
    if (f && !s) { /* a dataset written that is not mapped: its coverage is unknown */
        for (int i = 0; i < SLOTS; i++)
            f->slots[i].bad = BAD_UNMAPPED;
    } else if (s && !s->bad) {
        s->points += points;
        box b = {.slot = s - f->slots};
        for (int d = 0; d < n && d < DIMS; d++)
            b.lo[d] = (int64_t)start[d], b.hi[d] = (int64_t)end[d];
        s->bad = !is_box || n != s->ndims ? BAD_NOT_BOX : 0;
        for (int i = 0; i < s->nboxes && !s->bad; i++) /* the same rank wrote an element twice */
            s->bad = disjoint(&s->boxes[i], &b, n) ? 0 : BAD_TWICE;
        if (!s->bad && !merged(s, &b, n)) {
            s->bad = s->nboxes >= BOXES ? BAD_BOXES : 0;
            if (!s->bad)
                s->boxes[s->nboxes++] = b;
        }
    }
    pthread_mutex_unlock(&layout_lock);
}

/* What the ranks agree on, in the phase's own two reductions (adapt.c). */
enum {
    S_LAYOUT,
    S_FILL = S_LAYOUT + LAYOUTS,
    S_FILTERS = S_FILL + FILLS,
    S_POINTS,
    S_BOXES = S_POINTS + SLOTS, /* per slot: boxes over all ranks */
    S_N = S_BOXES + SLOTS
};
enum {
    M_CHUNK,
    M_NEG_CACHE,
    M_NO_COPY,                   /* a rank could not keep its copy: nothing is proven */
    M_HASH,                      /* per slot: hash, -hash (empty: -1, -DBL_MAX), collided or bad, */
    M_NEG_HASH = M_HASH + SLOTS, /* extent and -extent */
    M_BAD = M_NEG_HASH + SLOTS,
    M_EXTENT = M_BAD + SLOTS,
    M_NEG_EXTENT = M_EXTENT + SLOTS,
    M_N = M_NEG_EXTENT + SLOTS
};
_Static_assert(S_N == IOT_LAYOUT_NSUM && M_N == IOT_LAYOUT_NMAX, "adapt_state.h's sizes");

void *iot_adapt_layout_begin(int rec, double *sum, double *max)
{
    static const file_layout none; /* a rank that saw no dataset */
    file_layout *f = malloc(sizeof *f);
    pthread_mutex_lock(&layout_lock);
    const file_layout *src = rec >= 0 && rec < IOT_MAX_FILES && layouts[rec] ? layouts[rec] : &none;
    if (f)
        *f = *src;
    memset(sum, 0, S_N * sizeof *sum);
    for (int i = 0; i < LAYOUTS; i++)
        sum[S_LAYOUT + i] = src->layouts[i];
    for (int i = 0; i < FILLS; i++)
        sum[S_FILL + i] = src->fills[i];
    sum[S_FILTERS] = src->filters;
    max[M_CHUNK] = src->chunk_max;
    max[M_NEG_CACHE] = src == &none || src->cache_min < 0 ? -DBL_MAX : -src->cache_min;
    max[M_NO_COPY] = !f;
    for (int i = 0; i < SLOTS; i++) {
        const slot *s = &src->slots[i];
        sum[S_POINTS + i] = s->points;
        sum[S_BOXES + i] = s->nboxes;
        max[M_HASH + i] = s->hash ? (double)s->hash : -1;
        max[M_NEG_HASH + i] = s->hash ? -(double)s->hash : -DBL_MAX;
        max[M_BAD + i] = s->collided ? BAD_SLOTS : s->bad;
        max[M_EXTENT + i] = s->hash ? s->elements : -1;
        max[M_NEG_EXTENT + i] = s->hash ? -s->elements : -DBL_MAX;
    }
    if (src != &none) { /* the phase is over: the next open of the file starts afresh */
        free(layouts[rec]);
        layouts[rec] = NULL;
    }
    pthread_mutex_unlock(&layout_lock);
    return f;
}

/* yes (0) when, within each written slot, the boxes of all ranks are pairwise disjoint; else why
 * not proven (BAD_*). Collective over comm: every rank reaches it with the same totals. */
static int boxes_disjoint(const file_layout *f, const int *written, const double *total,
                          MPI_Comm comm, int size)
{
    int all_boxes = 0, mine = 0;
    for (int s = 0; s < SLOTS; s++)
        if (written[s])
            all_boxes += (int)total[s], mine += f->slots[s].nboxes;
    if (all_boxes > MAX_BOXES) /* the same on every rank */
        return BAD_ALL_BOXES;
    int words = (int)(sizeof(box) / sizeof(int64_t));
    int *counts = malloc(sizeof(int) * (size_t)size), *displs = malloc(sizeof(int) * (size_t)size);
    box *send = malloc(sizeof(box) * (size_t)(mine + 1));
    box *all = malloc(sizeof(box) * (size_t)(all_boxes + 1));
    int ok = counts && displs && send && all, all_ok = ok;
    if (comm != MPI_COMM_NULL)
        PMPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, comm);
    int verdict = all_ok ? 0 : BAD_MEMORY;
    if (all_ok) {
        int k = 0;
        for (int s = 0; s < SLOTS; s++)
            for (int b = 0; written[s] && b < f->slots[s].nboxes; b++)
                send[k++] = f->slots[s].boxes[b];
        int n = mine * words;
        if (comm != MPI_COMM_NULL) {
            PMPI_Allgather(&n, 1, MPI_INT, counts, 1, MPI_INT, comm);
            for (int r = 0, at = 0; r < size; r++)
                displs[r] = at, at += counts[r];
            PMPI_Allgatherv(send, n, MPI_INT64_T, all, counts, displs, MPI_INT64_T, comm);
        } else {
            memcpy(all, send, sizeof(box) * (size_t)mine);
        }
        for (int i = 0; i < all_boxes && !verdict; i++)
            for (int j = i + 1; j < all_boxes && !verdict; j++)
                if (all[i].slot == all[j].slot &&
                    !disjoint(&all[i], &all[j], f->slots[all[i].slot].ndims))
                    verdict = BAD_OVERLAP;
    }
    free(counts);
    free(displs);
    free(send);
    free(all);
    return verdict;
}

static void word(iot_insights *in, int id, const char *w)
{
    in->v[id] = (iot_insight){1, 0, w};
}

static void num(iot_insights *in, int id, double x)
{
    in->v[id] = (iot_insight){1, x, NULL};
}

void iot_adapt_layout_end(void *copy, const double *asum, const double *amax, MPI_Comm comm,
                          int learning, iot_insights *in)
{
    file_layout *f = copy;
    int size = 1;
    if (comm != MPI_COMM_NULL)
        PMPI_Comm_size(comm, &size);
    int kinds = 0, kind = -1;
    for (int i = 0; i < LAYOUTS; i++)
        if (asum[S_LAYOUT + i] > 0)
            kinds++, kind = i;
    if (kinds) {
        static const char *const layout_words[LAYOUTS] = {"contiguous", "chunked", "compact"};
        word(in, IOT_I_LAYOUT, kinds == 1 ? layout_words[kind] : "mixed");
        int chunked = asum[S_LAYOUT + L_CHUNKED] > 0;
        word(in, IOT_I_FILTERS, chunked && asum[S_FILTERS] > 0 ? "yes" : "no");
        if (chunked) {
            /* as iotune.insights: never only when every chunked dataset says never */
            if (asum[S_FILL + FILL_ALLOC] > 0)
                word(in, IOT_I_FILL_TIME, "alloc");
            else if (asum[S_FILL + FILL_IFSET] > 0)
                word(in, IOT_I_FILL_TIME, "ifset");
            else if (asum[S_FILL + FILL_NEVER] > 0)
                word(in, IOT_I_FILL_TIME, "never");
            if (amax[M_CHUNK] > 0) {
                const double mib = 1024.0 * 1024.0;
                num(in, IOT_I_CHUNK_BYTES_MAX, amax[M_CHUNK]);
                num(in, IOT_I_CHUNK_CACHE_NEEDED, ceil(amax[M_CHUNK] / mib) * mib);
            }
            if (amax[M_NEG_CACHE] > -DBL_MAX)
                num(in, IOT_I_CHUNK_CACHE_BYTES, -amax[M_NEG_CACHE]);
        }
    }
    /* fully_written: over the datasets written in the phase; why, when it stays unknown */
    int written[SLOTS], any = 0, why = amax[M_NO_COPY] > 0 ? BAD_MEMORY : 0, short_of = 0;
    for (int i = 0; i < SLOTS; i++) {
        written[i] = asum[S_POINTS + i] > 0;
        if (!written[i])
            continue;
        any = 1;
        int agreed = amax[M_HASH + i] == -amax[M_NEG_HASH + i] &&
                     amax[M_EXTENT + i] == -amax[M_NEG_EXTENT + i];
        int bad = !agreed ? BAD_DIFFER : (int)amax[M_BAD + i];
        if (!bad && asum[S_POINTS + i] < amax[M_EXTENT + i])
            short_of = 1; /* fewer elements written than the extent holds: certainly not all */
        else if (!bad && asum[S_POINTS + i] > amax[M_EXTENT + i])
            bad = BAD_MORE; /* written twice somewhere: coverage not proven */
        why = why ? why : bad;
    }
    why = why ? why : !kinds || !any ? BAD_NONE : !learning ? BAD_LATER : 0;
    if (kinds && any && short_of)
        word(in, IOT_I_FULLY_WRITTEN, "no");
    else if (!why) /* every rank takes this branch alike */
        why = boxes_disjoint(f, written, asum + S_BOXES, comm, size);
    if (!in->v[IOT_I_FULLY_WRITTEN].known && !why)
        word(in, IOT_I_FULLY_WRITTEN, "yes");
    else if (!in->v[IOT_I_FULLY_WRITTEN].known && why > 0 && why <= BAD_LATER)
        in->why[IOT_I_FULLY_WRITTEN] = bad_why[why];
    free(f);
}
