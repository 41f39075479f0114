/* An MPI datatype flattened into byte blocks by walking its constructors
 * (MPI_Type_get_envelope / MPI_Type_get_contents), as ROMIO flattens a file view. A dense part
 * (size equal to its true extent) is one block without looking inside, so a contiguous
 * million-element type costs one step; the walk is bounded in blocks and in steps. */
#include "platform/mpitype.h"

#include <stdlib.h>

#define MAX_DEPTH 16
#define MAX_STEPS (1l << 20) /* blocks emitted before merging, over the whole walk */

typedef struct {
    iot_block *b;
    int n, max;
    long steps;
} sink;

static int emit(sink *s, int64_t off, int64_t len)
{
    if (len <= 0)
        return 0;
    if (++s->steps > MAX_STEPS)
        return -1;
    if (s->n && s->b[s->n - 1].off + s->b[s->n - 1].len == off) {
        s->b[s->n - 1].len += len;
        return 0;
    }
    if (s->n == s->max)
        return -1;
    s->b[s->n++] = (iot_block){off, len};
    return 0;
}

static int place(sink *s, MPI_Datatype t, int64_t base, int depth);

static int64_t extent_of(MPI_Datatype t)
{
    MPI_Count lb = 0, extent = 0;
    PMPI_Type_get_extent_x(t, &lb, &extent);
    return (int64_t)extent;
}

/* count instances of t, the k-th at base + k * step; a dense t with step equal to its size
 * is one block */
static int place_n(sink *s, MPI_Datatype t, int64_t base, int64_t count, int64_t step, int depth)
{
    MPI_Count size = 0, tlb = 0, textent = 0;
    PMPI_Type_size_x(t, &size);
    PMPI_Type_get_true_extent_x(t, &tlb, &textent);
    if (size == textent && step == (int64_t)size)
        return emit(s, base + (int64_t)tlb, count * (int64_t)size);
    for (int64_t k = 0; k < count; k++)
        if (place(s, t, base + k * step, depth) != 0)
            return -1;
    return 0;
}

/* The instances of a subarray's old type, a run along the fastest dimension at a time. */
static int place_subarray(sink *s, const int *ints, MPI_Datatype old, int64_t base, int depth)
{
    int nd = ints[0];
    const int *sizes = ints + 1, *sub = ints + 1 + nd, *starts = ints + 1 + 2 * nd;
    int fortran = ints[1 + 3 * nd] == MPI_ORDER_FORTRAN;
    if (nd < 1 || nd > 32)
        return -1;
    int64_t ext = extent_of(old), idx[32] = {0};
    int fast = fortran ? 0 : nd - 1;
    for (int d = 0; d < nd; d++)
        if (sub[d] == 0)
            return 0;
    for (;;) {
        int64_t lin = 0; /* element index of the run's first element */
        for (int k = 0; k < nd; k++) {
            int d = fortran ? nd - 1 - k : k;
            lin = lin * sizes[d] + starts[d] + (d == fast ? 0 : idx[d]);
        }
        if (place_n(s, old, base + lin * ext, sub[fast], ext, depth) != 0)
            return -1;
        int d = fortran ? 1 : nd - 2; /* the next index, fastest after the run's dimension */
        for (; d >= 0 && d < nd; d += fortran ? 1 : -1) {
            if (++idx[d] < sub[d])
                break;
            idx[d] = 0;
        }
        if (d < 0 || d >= nd)
            return 0;
    }
}

/* Derived types handed out by MPI_Type_get_contents are the caller's to free. */
static void free_contents(MPI_Datatype *types, int n)
{
    for (int i = 0; i < n; i++) {
        int ni, na, nd, comb;
        if (PMPI_Type_get_envelope(types[i], &ni, &na, &nd, &comb) == MPI_SUCCESS &&
            comb != MPI_COMBINER_NAMED)
            PMPI_Type_free(&types[i]);
    }
}

static int place_contents(sink *s, int comb, const int *in, const MPI_Aint *ad, MPI_Datatype *ty,
                          int64_t base, int depth)
{
    int64_t ext = extent_of(ty[0]);
    switch (comb) {
    case MPI_COMBINER_DUP:
    case MPI_COMBINER_RESIZED: /* the extent changes the tiling, not the blocks of one */
        return place(s, ty[0], base, depth);
    case MPI_COMBINER_CONTIGUOUS: return place_n(s, ty[0], base, in[0], ext, depth);
    case MPI_COMBINER_VECTOR:
    case MPI_COMBINER_HVECTOR:
        for (int i = 0; i < in[0]; i++) {
            int64_t at = comb == MPI_COMBINER_VECTOR ? (int64_t)i * in[2] * ext : i * ad[0];
            if (place_n(s, ty[0], base + at, in[1], ext, depth) != 0)
                return -1;
        }
        return 0;
    case MPI_COMBINER_INDEXED:
    case MPI_COMBINER_HINDEXED:
    case MPI_COMBINER_INDEXED_BLOCK:
    case MPI_COMBINER_HINDEXED_BLOCK:
    case MPI_COMBINER_STRUCT:
        for (int i = 0; i < in[0]; i++) {
            int block = comb == MPI_COMBINER_INDEXED_BLOCK || comb == MPI_COMBINER_HINDEXED_BLOCK;
            int len = block ? in[1] : in[1 + i];
            int64_t at = comb == MPI_COMBINER_INDEXED         ? (int64_t)in[1 + in[0] + i] * ext
                         : comb == MPI_COMBINER_INDEXED_BLOCK ? (int64_t)in[2 + i] * ext
                                                              : (int64_t)ad[i];
            MPI_Datatype t = comb == MPI_COMBINER_STRUCT ? ty[i] : ty[0];
            if (place_n(s, t, base + at, len, extent_of(t), depth) != 0)
                return -1;
        }
        return 0;
    case MPI_COMBINER_SUBARRAY: return place_subarray(s, in, ty[0], base, depth);
    default: /* darray, Fortran types */ return -1;
    }
}

static int place(sink *s, MPI_Datatype t, int64_t base, int depth)
{
    MPI_Count size = 0, tlb = 0, textent = 0;
    PMPI_Type_size_x(t, &size);
    PMPI_Type_get_true_extent_x(t, &tlb, &textent);
    if (size == 0)
        return 0;
    if (size == textent)
        return emit(s, base + (int64_t)tlb, (int64_t)size);
    int ni, na, nd, comb;
    if (depth >= MAX_DEPTH || PMPI_Type_get_envelope(t, &ni, &na, &nd, &comb) != MPI_SUCCESS ||
        comb == MPI_COMBINER_NAMED || nd < 1)
        return -1;
    int *in = malloc(sizeof *in * (size_t)(ni + 1));
    MPI_Aint *ad = malloc(sizeof *ad * (size_t)(na + 1));
    MPI_Datatype *ty = malloc(sizeof *ty * (size_t)nd);
    int rc = -1;
    if (in && ad && ty && PMPI_Type_get_contents(t, ni, na, nd, in, ad, ty) == MPI_SUCCESS) {
        rc = place_contents(s, comb, in, ad, ty, base, depth + 1);
        free_contents(ty, nd);
    }
    free(in);
    free(ad);
    free(ty);
    return rc;
}

int iot_type_blocks(MPI_Datatype type, iot_block *out, int max)
{
    sink s = {out, 0, max, 0};
    return place(&s, type, 0, 0) == 0 ? s.n : -1;
}

int iot_blocks_runs(const iot_block *b, int n, iot_run *out, int max)
{
    int runs = 0;
    for (int i = 0; i < n;) {
        int j = i + 1;
        int64_t stride = j < n ? b[j].off - b[i].off : 0;
        while (j < n && b[j].len == b[i].len && b[j].off - b[j - 1].off == stride)
            j++;
        if (j == i + 1)
            stride = 0;
        if (runs == max)
            return -1;
        out[runs++] = (iot_run){b[i].off, b[i].len, j - i, stride};
        i = j;
    }
    return runs;
}
