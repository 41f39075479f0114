/* One trace file per host (schema 5, docs/profile.md): at the end each rank packs its trace as
 * texts (trace_write.c) and sends it to its host's leader, one rank at a time; the leader writes
 * each rank as a member of the file as it arrives, and stores once what ranks have in common.
 * A member's shape (datasets, views, memory layouts, signatures without their offset steps) is
 * stored once for every rank that has the same; its steps are left out when they are those of
 * the shape's first rank plus (rank - first) times a step per rank (a regular pattern: offsets
 * an affine function of the rank); its file names and the order of its runs (signature, count,
 * place in the call order, stride) when they are those of the shape's first rank. The times of
 * its runs are its own (where runs merge depends on times: ranks may differ there). The leader
 * keeps at most SHAPES_MAX bytes of shapes and one member at a time; a member whose shape does not
 * fit carries it whole. */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config/json.h"
#include "trace/trace.h"
#include "trace/trace_gz.h"
#include "trace/trace_store.h"

#define SHAPES_MAX (64u << 20) /* bytes of shapes the leader keeps */
#define PACK_MAX (1u << 30)    /* a rank's packed trace: larger ones are written alone */
#define TAG 0x10a7

enum { SHAPE, ORDER, FILES, TIMES, NPARTS }; /* the texts of a packed trace, in order */

typedef struct { /* a packed trace: this head, steps, has_step, then the texts */
    int32_t rank, nsigs;
    uint64_t dropped, len[NPARTS];
    double epoch; /* the job's start on this rank's wall clock */
} pack_head;

typedef struct {
    pack_head h;
    const int64_t *steps;
    const unsigned char *has_step;
    const char *text[NPARTS];
} member;

typedef struct {
    char *data; /* the first member's pack, copied */
    member m;
    int64_t *slope; /* step per rank, per signature */
    int slope_known;
    uint64_t hash;
} shape;

typedef struct {
    FILE *f;
    shape *shapes;
    int nshapes, cap;
    size_t kept, members;
} host_file;

static uint64_t hash_bytes(const char *p, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)p[i]) * 1099511628211ull;
    return h;
}

static int put_part(void (*put)(FILE *), char **text, size_t *len)
{
    FILE *m = open_memstream(text, len);
    if (!m)
        return -1;
    put(m);
    return fclose(m) == 0 ? 0 : -1;
}

static double times_origin;
static void put_times(FILE *f)
{
    trace_put_times(f, times_origin);
}

/* This rank's trace packed into one buffer (malloc'ed; NULL when out of memory). */
static char *pack(int rank, double origin, double epoch, size_t *len)
{
    void (*put[NPARTS])(FILE *) = {trace_put_shape, trace_put_order, trace_put_files, put_times};
    char *part[NPARTS] = {0};
    pack_head h = {rank, (int32_t)trace_nsigs, trace_dropped, {0}, epoch};
    size_t n = trace_nsigs, plen[NPARTS] = {0};
    *len = sizeof h + n * (sizeof(int64_t) + 1);
    times_origin = origin;
    int ok = 1;
    for (int i = 0; i < NPARTS && ok; i++) {
        ok = put_part(put[i], &part[i], &plen[i]) == 0;
        h.len[i] = plen[i];
        *len += plen[i];
    }
    char *buf = ok && *len < PACK_MAX ? malloc(*len) : NULL;
    if (buf) {
        char *p = buf + sizeof h;
        memcpy(buf, &h, sizeof h);
        for (size_t i = 0; i < n; i++, p += sizeof(int64_t))
            memcpy(p, &trace_sigs[i].step, sizeof(int64_t));
        for (size_t i = 0; i < n; i++)
            *p++ = (char)trace_sigs[i].has_step;
        for (int i = 0; i < NPARTS; p += plen[i++])
            memcpy(p, part[i], plen[i]);
    }
    for (int i = 0; i < NPARTS; i++)
        free(part[i]);
    return buf;
}

static int unpack(const char *buf, size_t len, member *m)
{
    if (len < sizeof m->h)
        return -1;
    memcpy(&m->h, buf, sizeof m->h);
    size_t n = m->h.nsigs >= 0 ? (size_t)m->h.nsigs : SIZE_MAX / 16;
    size_t need = sizeof m->h + n * (sizeof(int64_t) + 1);
    if (need > len)
        return -1;
    m->steps = (const int64_t *)(const void *)(buf + sizeof m->h);
    m->has_step = (const unsigned char *)buf + sizeof m->h + n * sizeof(int64_t);
    for (int i = 0; i < NPARTS; i++) {
        if (m->h.len[i] > len - need)
            return -1;
        m->text[i] = buf + need;
        need += m->h.len[i];
    }
    return need == len ? 0 : -1;
}

/* Does m's text i equal that of the shape's first member? */
static int same_text(const member *a, const member *b, int i)
{
    return a->h.len[i] == b->h.len[i] && memcmp(a->text[i], b->text[i], a->h.len[i]) == 0;
}

static void put_steps(FILE *f, const member *m)
{
    fputc('[', f);
    for (int i = 0; i < m->h.nsigs; i++) {
        int64_t s;
        memcpy(&s, &m->steps[i], sizeof s);
        if (m->has_step[i])
            fprintf(f, "%s%lld", i ? ", " : "", (long long)s);
        else
            fprintf(f, "%snull", i ? ", " : "");
    }
    fputc(']', f);
}

static int same_shape(const shape *s, const member *m, uint64_t hash)
{
    return s->hash == hash && s->m.h.nsigs == m->h.nsigs && same_text(&s->m, m, SHAPE) &&
           memcmp(s->m.has_step, m->has_step, (size_t)m->h.nsigs) == 0;
}

/* Are m's steps those of shape s's first rank plus (rank - first) x s's step per rank? The
 * first member after the first fixes that step per rank, where it divides exactly. */
static int affine(shape *s, const member *m)
{
    int64_t dr = (int64_t)m->h.rank - s->m.h.rank; /* members come in rank order: dr > 0 */
    if (dr <= 0)
        return 0;
    for (int pass = s->slope_known; pass < 2; pass++)
        for (int i = 0; i < m->h.nsigs; i++) {
            int64_t a, b, want;
            memcpy(&a, &s->m.steps[i], sizeof a);
            memcpy(&b, &m->steps[i], sizeof b);
            if (!m->has_step[i])
                continue;
            if (pass == 0) { /* finding the step per rank */
                int64_t d;
                if (__builtin_sub_overflow(b, a, &d) || d % dr != 0)
                    return 0;
                s->slope[i] = d / dr;
            } else if (__builtin_mul_overflow(s->slope[i], dr, &want) ||
                       __builtin_add_overflow(a, want, &want) || want != b) {
                return 0;
            }
        }
    s->slope_known = 1;
    return 1;
}

/* The shape of m kept (a copy of its pack), or -1 when it does not fit. */
static int keep_shape(host_file *hf, const char *buf, size_t len, uint64_t hash)
{
    if (hf->kept + len > SHAPES_MAX)
        return -1;
    if (hf->nshapes == hf->cap) {
        int cap = hf->cap ? 2 * hf->cap : 16;
        shape *grown = realloc(hf->shapes, (size_t)cap * sizeof *grown);
        if (!grown)
            return -1;
        hf->shapes = grown;
        hf->cap = cap;
    }
    shape *s = &hf->shapes[hf->nshapes];
    s->data = malloc(len);
    pack_head h;
    memcpy(&h, buf, sizeof h);
    s->slope = calloc((size_t)h.nsigs + 1, sizeof *s->slope);
    if (!s->data || !s->slope) {
        free(s->data);
        free(s->slope);
        return -1;
    }
    memcpy(s->data, buf, len);
    unpack(s->data, len, &s->m);
    s->slope_known = 0;
    s->hash = hash;
    hf->kept += len;
    return hf->nshapes++;
}

/* Writes one rank's trace as a member of the host's file. */
static int add_member(host_file *hf, const char *buf, size_t len)
{
    member m;
    if (unpack(buf, len, &m) != 0)
        return -1;
    uint64_t hash = hash_bytes(m.text[SHAPE], m.h.len[SHAPE]);
    int id = -1, steps = 1, files = 1, order = 1;
    for (int i = 0; i < hf->nshapes && id < 0; i++)
        if (same_shape(&hf->shapes[i], &m, hash)) {
            id = i;
            steps = !affine(&hf->shapes[i], &m);
        }
    if (id < 0 && (id = keep_shape(hf, buf, len, hash)) >= 0)
        steps = 0; /* the shape's first rank */
    if (id >= 0) {
        files = !same_text(&hf->shapes[id].m, &m, FILES);
        order = !same_text(&hf->shapes[id].m, &m, ORDER);
    }
    FILE *f = hf->f;
    fprintf(f, "%s{\"rank\": %d, \"start\": %.6f, \"dropped_calls\": %llu, \"shape\": ",
            hf->members++ ? ", " : "", m.h.rank, m.h.epoch, (unsigned long long)m.h.dropped);
    if (id >= 0) {
        fprintf(f, "%d", id);
    } else { /* not kept: the shape whole, here */
        fputc('{', f);
        fwrite(m.text[SHAPE], 1, m.h.len[SHAPE], f);
        fputc('}', f);
    }
    if (files) {
        fputs(", \"files\": ", f);
        fwrite(m.text[FILES], 1, m.h.len[FILES], f);
    }
    if (steps) {
        fputs(", \"step\": ", f);
        put_steps(f, &m);
    }
    fputs(", \"runs\": {", f);
    if (order) {
        fwrite(m.text[ORDER], 1, m.h.len[ORDER], f);
        fputs(", ", f);
    }
    fwrite(m.text[TIMES], 1, m.h.len[TIMES], f);
    fputs("}}", f);
    return ferror(f) ? -1 : 0;
}

/* The shapes, after the members (the order of an object's keys carries nothing). */
static void put_shapes(host_file *hf)
{
    FILE *f = hf->f;
    fputs("], \"shapes\": [", f);
    for (int i = 0; i < hf->nshapes; i++) {
        shape *s = &hf->shapes[i];
        fprintf(f, "%s{\"first\": %d, ", i ? ", " : "", s->m.h.rank);
        fwrite(s->m.text[SHAPE], 1, s->m.h.len[SHAPE], f);
        fputs(", \"runs\": {", f);
        fwrite(s->m.text[ORDER], 1, s->m.h.len[ORDER], f);
        fputs("}, \"files\": ", f);
        fwrite(s->m.text[FILES], 1, s->m.h.len[FILES], f);
        fputs(", \"step\": ", f);
        put_steps(f, &s->m);
        fputs(", \"step_per_rank\": [", f);
        for (int k = 0; k < s->m.h.nsigs; k++)
            fprintf(f, "%s%lld", k ? ", " : "", s->slope_known ? (long long)s->slope[k] : 0ll);
        fputs("]}", f);
        free(s->data);
        free(s->slope);
    }
    fputs("]}\n", f);
    free(hf->shapes);
}

/* The leader: opens path and writes the header (NULL when it cannot). */
static FILE *open_file(const char *path, const iot_trace_meta *m, trace_gz **g)
{
    FILE *f = trace_gz_open(path, g);
    if (!f)
        return NULL;
    fputs("{\"schema\": \"iotune-trace\", \"version\": 5, \"session\": ", f);
    iot_json_string(f, m->session);
    fputs(", \"host\": ", f);
    iot_json_string(f, m->host);
    fprintf(f, ", \"host_index\": %d, \"ranks\": %d, \"start\": %.6f, ", m->host_index, m->nranks,
            m->epoch);
    trace_put_limits(f);
    fputs(", \"members\": [", f);
    return f;
}

/* The leader receives the other ranks' traces one at a time: each sends its size, is told
 * whether to send (0: too large, or no memory here: it writes its own file), then sends. */
static int receive_all(MPI_Comm hc, int n, host_file *hf)
{
    int err = 0;
    for (int src = 1; src < n; src++) {
        int64_t len = 0;
        PMPI_Recv(&len, 1, MPI_INT64_T, src, TAG, hc, MPI_STATUS_IGNORE);
        char *buf = len > 0 && len < PACK_MAX ? malloc((size_t)len) : NULL;
        int go = buf != NULL;
        PMPI_Send(&go, 1, MPI_INT, src, TAG, hc);
        if (!go)
            continue;
        PMPI_Recv(buf, (int)len, MPI_BYTE, src, TAG, hc, MPI_STATUS_IGNORE);
        if (!err && add_member(hf, buf, (size_t)len) != 0)
            err = EIO;
        free(buf);
    }
    return err;
}

int iot_trace_write_host(MPI_Comm hc, const char *path, const iot_trace_meta *m)
{
    int hr = 0, n = 1;
    PMPI_Comm_rank(hc, &hr);
    PMPI_Comm_size(hc, &n);
    size_t len = 0;
    char *buf = pack(m->rank, m->origin, m->epoch, &len);
    host_file hf = {0};
    trace_gz *g = NULL;
    int ok = hr != 0 || (hf.f = open_file(path, m, &g)) != NULL, mine = 0, err = 0;
    PMPI_Bcast(&ok, 1, MPI_INT, 0, hc);
    if (!ok) {
        free(buf);
        return 0;
    }
    if (hr == 0) {
        mine = buf && add_member(&hf, buf, len) == 0;
        err = receive_all(hc, n, &hf);
        put_shapes(&hf);
        int closed = trace_gz_close(hf.f, g);
        err = err ? err : closed;
        if (err)
            unlink(path);
    } else {
        int64_t size = buf ? (int64_t)len : 0;
        PMPI_Send(&size, 1, MPI_INT64_T, 0, TAG, hc);
        PMPI_Recv(&mine, 1, MPI_INT, 0, TAG, hc, MPI_STATUS_IGNORE);
        if (mine)
            PMPI_Send(buf, (int)len, MPI_BYTE, 0, TAG, hc);
    }
    free(buf);
    PMPI_Bcast(&err, 1, MPI_INT, 0, hc); /* a file not written: every rank writes its own */
    return mine && !err;
}
