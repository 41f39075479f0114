/* The trace file of one rank (schema 4, docs/profile.md): the files, datasets, views, signatures
 * and runs trace.c and trace_objects.c kept, as JSON in columns, gzip-compressed on the way out;
 * and the same as parts (trace_store.h) for the host's file (trace_host.c). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/real.h"
#include "config/json.h"
#include "trace/trace.h"
#include "trace/trace_gz.h"
#include "trace/trace_store.h"

/* Times are written in ticks of 100 ns, as integers (they compress better than decimals). */
#define TICK 1e-7

static long long ticks(double seconds)
{
    return llround(seconds / TICK);
}

/* Columns of numbers are most of a trace: formatted here rather than by printf, into a buffer
 * handed to the FILE in large pieces (a fifth of the instructions of fprintf per number). */
static char col[1 << 14];
static size_t col_used;

static void col_flush(FILE *f)
{
    fwrite_unlocked(col, 1, col_used, f);
    col_used = 0;
}

static void put_raw(const char *text, FILE *f) /* as fputs */
{
    size_t n = strlen(text);
    if (col_used + n > sizeof col)
        col_flush(f);
    if (n > sizeof col) {
        fputs_unlocked(text, f);
        return;
    }
    memcpy(col + col_used, text, n);
    col_used += n;
}

static void put_int(FILE *f, size_t i, long long v)
{
    if (col_used + 24 > sizeof col)
        col_flush(f);
    char text[24], *p = text + sizeof text;
    unsigned long long u = v < 0 ? 0ull - (unsigned long long)v : (unsigned long long)v;
    do
        *--p = (char)('0' + u % 10);
    while (u /= 10);
    if (v < 0)
        *--p = '-';
    if (i) {
        col[col_used++] = ',';
        col[col_used++] = ' ';
    }
    size_t n = (size_t)(text + sizeof text - p);
    memcpy(col + col_used, p, n);
    col_used += n;
}

static void put_text(FILE *f, size_t i, const char *text)
{
    if (i)
        put_raw(", ", f);
    put_raw(text, f);
}

static const char *const layer_names[] = {"\"hdf5\"", "\"mpiio\"", "\"posix\"", "\"stdio\""};

static void write_signatures(FILE *f, int with_step)
{
    put_raw("\"signatures\": {\"layer\": [", f);
    for (uint32_t i = 0; i < trace_nsigs; i++)
        put_text(f, i, layer_names[trace_sigs[i].layer]);
    put_raw("], \"func\": [", f);
    for (uint32_t i = 0; i < trace_nsigs; i++) {
        put_text(f, i, "\"");
        put_raw(trace_sigs[i].func, f);
        put_raw("\"", f);
    }
    put_raw("], \"file\": [", f);
    for (uint32_t i = 0; i < trace_nsigs; i++)
        put_int(f, i, trace_sigs[i].rec);
    put_raw("], \"dataset\": [", f);
    for (uint32_t i = 0; i < trace_nsigs; i++)
        put_int(f, i, trace_sigs[i].dset);
    put_raw("], \"dims\": [", f);
    for (uint32_t i = 0; i < trace_nsigs; i++)
        put_text(f, i, trace_sigs[i].dims >= 0 ? trace_dims_tab.s[trace_sigs[i].dims] : "null");
    put_raw("], \"size\": [", f);
    for (uint32_t i = 0; i < trace_nsigs; i++)
        put_int(f, i, (long long)trace_sigs[i].size);
    put_raw("]", f);
    if (with_step) {
        put_raw(", \"step\": ", f);
        trace_put_steps(f);
    }
    put_raw(", \"mode\": [", f);
    for (uint32_t i = 0; i < trace_nsigs; i++)
        put_int(f, i, trace_sigs[i].mode);
    put_raw("]}", f);
    col_flush(f);
}

void trace_put_steps(FILE *f)
{
    put_raw("[", f);
    for (uint32_t i = 0; i < trace_nsigs; i++) {
        if (trace_sigs[i].has_step)
            put_int(f, i, trace_sigs[i].step);
        else
            put_text(f, i, "null");
    }
    put_raw("]", f);
    col_flush(f);
}

static uint64_t first_seq(const trace_event *e)
{
    return e->last - (uint64_t)(e->count - 1) * e->stride;
}

/* Runs in columns; sig, seq and start as differences from the previous run's (small numbers
 * that repeat), times in ticks on the job's clock (origin), the period in thousandths of a
 * tick (an integer; precise to 0.05 ps a call, so 50 ns over a million calls). The columns of
 * the calls' order first, then those of their times. */
static void write_run_order(FILE *f)
{
    put_raw("\"sig\": [", f);
    for (size_t i = 0; i < trace_nevents; i++)
        put_int(f, i,
                (long long)trace_events[i].sig - (i ? (long long)trace_events[i - 1].sig : 0));
    put_raw("], \"count\": [", f);
    for (size_t i = 0; i < trace_nevents; i++)
        put_int(f, i, trace_events[i].count);
    put_raw("], \"seq\": [", f);
    for (size_t i = 0; i < trace_nevents; i++)
        put_int(
            f, i,
            (long long)(first_seq(&trace_events[i]) - (i ? first_seq(&trace_events[i - 1]) : 0)));
    put_raw("], \"stride\": [", f);
    for (size_t i = 0; i < trace_nevents; i++)
        put_int(f, i, trace_events[i].count > 1 ? trace_events[i].stride : 0);
    put_raw("]", f);
    col_flush(f);
}

static void write_run_times(FILE *f, double origin)
{
    put_raw("\"start\": [", f);
    long long before = 0;
    for (size_t i = 0; i < trace_nevents; i++) {
        long long t = ticks(trace_events[i].start - origin);
        put_int(f, i, t - before);
        before = t;
    }
    put_raw("], \"period\": [", f);
    for (size_t i = 0; i < trace_nevents; i++) {
        const trace_event *e = &trace_events[i];
        put_int(f, i, e->count > 1 ? llround((e->p_lo + e->p_hi) / 2 / TICK * 1000) : 0);
    }
    put_raw("], \"busy\": [", f);
    for (size_t i = 0; i < trace_nevents; i++)
        put_int(f, i, ticks(trace_events[i].busy));
    put_raw("], \"idle\": [", f); /* span minus busy: 0 for a single call */
    for (size_t i = 0; i < trace_nevents; i++) {
        const trace_event *e = &trace_events[i];
        long long idle = ticks(e->end - origin) - ticks(e->start - origin) - ticks(e->busy);
        put_int(f, i, idle > 0 ? idle : 0); /* never below by rounding */
    }
    put_raw("]", f);
    col_flush(f);
}

void trace_put_times(FILE *f, double origin)
{
    write_run_times(f, origin);
}

static const char *text_or_null(const trace_strtab *t, int id)
{
    return id >= 0 ? t->s[id] : "null";
}

/* HDF5's type classes (H5T_class_t, from H5T_INTEGER = 0) and byte orders (H5T_order_t). */
static const char *const type_classes[] = {
    "\"integer\"",  "\"float\"",     "\"time\"", "\"string\"", "\"bitfield\"", "\"opaque\"",
    "\"compound\"", "\"reference\"", "\"enum\"", "\"vlen\"",   "\"array\""};
#define NCLASSES ((int)(sizeof type_classes / sizeof type_classes[0]))
static const char *const byte_orders[] = {"\"LE\"", "\"BE\""};
static const char *const fill_times[] = {"\"alloc\"", "\"never\"", "\"ifset\""};

static const char *name_or_null(const char *const *names, int n, int i)
{
    return i >= 0 && i < n ? names[i] : "null";
}

void trace_put_files(FILE *f)
{
    int nrecs = 0;
    iot_file_rec *recs = iot_recs(&nrecs);
    fputs("[", f); /* signatures name files by index here */
    for (int i = 0; i < nrecs; i++) {
        fputs(i ? ", " : "", f);
        iot_json_string(f, recs[i].name);
    }
    fputs("]", f);
}

/* Everything but the files, the offsets' steps and the times; names: the datasets name their
 * file and the steps are in (schema 4), else a dataset gives its file's index in the files and
 * the steps are left out (the host's file, schema 5). */
static void write_shape(FILE *f, int names)
{
    fputs("\"datasets\": [", f);
    for (uint32_t i = 0; i < trace_dset_keys.n; i++) {
        fputs(i ? ", {\"file\": " : "{\"file\": ", f);
        if (names)
            iot_json_string(f, trace_dsets[i].rec >= 0 ? iot_rec(trace_dsets[i].rec)->name : NULL);
        else
            fprintf(f, "%d", trace_dsets[i].rec);
        fputs(", \"name\": ", f);
        iot_json_string(f, strchr(trace_dset_keys.s[i], '\x1f') + 1);
        const trace_dataset *d = &trace_dsets[i];
        fprintf(f, ", \"dims\": %s, \"maxdims\": %s, \"chunks\": %s, \"type_size\": %llu",
                text_or_null(&trace_dims_tab, d->dims), text_or_null(&trace_dims_tab, d->maxdims),
                text_or_null(&trace_dims_tab, d->chunks), (unsigned long long)d->type_size);
        fprintf(f, ", \"type_class\": %s, \"type_signed\": %s, \"type_order\": %s",
                name_or_null(type_classes, NCLASSES, d->type_class),
                d->type_signed < 0 ? "null"
                : d->type_signed   ? "true"
                                   : "false",
                name_or_null(byte_orders, 2, d->type_order));
        /* the fill value's time, and its bytes (hex) when the application set one */
        fprintf(
            f, ", \"fill\": {\"time\": %s, \"value\": ", name_or_null(fill_times, 3, d->fill_time));
        if (d->fill_len <= 0)
            fputs("null", f);
        for (int k = 0; k < d->fill_len; k++)
            fprintf(f, k ? "%02x" : "\"%02x", d->fill[k]);
        fputs(d->fill_len > 0 ? "\"}" : "}", f);
        /* its object header: times recorded, attribute creation order (flags) */
        fprintf(f, ", \"track_times\": %s, \"attr_order\": ",
                d->track_times < 0 ? "null"
                : d->track_times   ? "true"
                                   : "false");
        fprintf(f, d->attr_order < 0 ? "null}" : "%d}", d->attr_order);
    }
    fputs("], \"views\": [", f); /* MPI_File_set_view's signatures name them by index */
    for (uint32_t i = 0; i < trace_views.n; i++) {
        fputs(i ? ", " : "", f);
        fputs(trace_views.s[i], f);
    }
    fputs("], \"memory\": [", f); /* and MPI-IO transfers their memory layouts */
    for (uint32_t i = 0; i < trace_memory.n; i++) {
        fputs(i ? ", " : "", f);
        fputs(trace_memory.s[i], f);
    }
    fputs("], \"attributes\": [", f); /* and HDF5 attribute calls their attributes */
    for (uint32_t i = 0; i < trace_attrs.n; i++) {
        fputs(i ? ", " : "", f);
        fputs(trace_attrs.s[i], f);
    }
    fputs("], ", f);
    write_signatures(f, names);
}

void trace_put_shape(FILE *f)
{
    write_shape(f, 0);
}

void trace_put_order(FILE *f)
{
    write_run_order(f);
}

int iot_trace_write(const char *path, int rank, int nranks, const char *session, double origin,
                    double epoch)
{
    trace_gz *g;
    FILE *f = trace_gz_open(path, &g);
    if (!f)
        return errno ? errno : EIO;
    fputs("{\"schema\": \"iotune-trace\", \"version\": 4, \"session\": ", f);
    iot_json_string(f, session);
    fprintf(f, ", \"rank\": %d, \"ranks\": %d, \"start\": %.6f, ", rank, nranks, epoch);
    trace_put_limits(f);
    fprintf(f, ", \"truncated\": %s, \"dropped_calls\": %llu, \"files\": ",
            trace_dropped ? "true" : "false", (unsigned long long)trace_dropped);
    trace_put_files(f);
    fputs(", ", f);
    write_shape(f, 1);
    fputs(", \"runs\": {", f);
    write_run_order(f);
    fputs(", ", f);
    write_run_times(f, origin);
    fputs("}}\n", f);
    return trace_gz_close(f, g);
}

void trace_put_limits(FILE *f)
{
    fprintf(f,
            "\"limits\": {\"runs\": %zu, \"signatures\": %u}, \"tick_s\": %g, \"tolerance_s\": %g",
            trace_max_events, trace_max_sigs, TICK, TRACE_TIME_TOLERANCE);
}
