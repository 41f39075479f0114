/* kcommon: helpers shared by the iotune I/O kernels (see kcommon.h). */
#define _POSIX_C_SOURCE 200809L /* pread, pwrite, fsync, access, unlink */
#include "kcommon.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---------------------------------------------------------------- process context */

void kc_init(kc_ctx *ctx, const char *kernel, int *argc, char ***argv)
{
    MPI_Init(argc, argv);
    ctx->kernel = kernel;
    ctx->comm = MPI_COMM_WORLD;
    MPI_Comm_rank(ctx->comm, &ctx->rank);
    MPI_Comm_size(ctx->comm, &ctx->nranks);
}

int kc_finish(kc_ctx *ctx, int code)
{
    (void)ctx;
    fflush(stdout);
    MPI_Finalize();
    return code;
}

static int build_path(char *out, size_t size, const char *dir, const char *name, int step,
                      int rank);

/* The output being written (see kc_writing); name NULL when none. */
static struct {
    const char *dir, *name;
    int step, per_rank, nranks;
} writing;

void kc_writing(const kc_ctx *ctx, const char *dir, const char *name, int step, int per_rank)
{
    writing.dir = dir;
    writing.name = name;
    writing.step = step;
    writing.per_rank = per_rank;
    writing.nranks = ctx->nranks;
}

void kc_written(void)
{
    writing.name = NULL;
}

/* A run that ends in an error leaves no partial output: it could pass for a result. With one
 * file per rank this rank removes them all, as MPI_Abort kills the others before they could. */
static void remove_partial_output(void)
{
    char path[KC_PATH_MAX];
    for (int r = 0; writing.name && r < (writing.per_rank ? writing.nranks : 1); r++)
        if (build_path(path, sizeof path, writing.dir, writing.name, writing.step,
                       writing.per_rank ? r : -1) == 0)
            (void)unlink(path);
}

void kc_die(const kc_ctx *ctx, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fflush(stdout);
    if (ctx->nranks > 1)
        fprintf(stderr, "%s: error (rank %d): %s\n", ctx->kernel, ctx->rank, msg);
    else
        fprintf(stderr, "%s: error: %s\n", ctx->kernel, msg);
    fflush(stderr);
    remove_partial_output();
    MPI_Abort(MPI_COMM_WORLD, KC_EXIT_ERROR);
    exit(KC_EXIT_ERROR); /* not reached */
}

void kc_fail_all(const kc_ctx *ctx, int code, const char *fmt, ...)
{
    if (ctx->rank == 0) {
        char msg[1024];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof msg, fmt, ap);
        va_end(ap);
        fflush(stdout);
        fprintf(stderr, "%s: error: %s\n", ctx->kernel, msg);
        fflush(stderr);
    }
    remove_partial_output();
    MPI_Finalize();
    exit(code);
}

static KC_NORETURN KC_PRINTF(2, 3) void usage_error(const kc_ctx *ctx, const char *fmt, ...)
{
    if (ctx->rank == 0) {
        char msg[1024];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof msg, fmt, ap);
        va_end(ap);
        fprintf(stderr, "%s: %s (try --help)\n", ctx->kernel, msg);
        fflush(stderr);
    }
    MPI_Finalize();
    exit(KC_EXIT_USAGE);
}

/* ---------------------------------------------------------------- options */

int kc_parse_size(const char *text, long long *out)
{
    if (text == NULL || *text == '\0')
        return -1;
    errno = 0;
    char *end = NULL;
    long long v = strtoll(text, &end, 10);
    if (errno != 0 || end == text)
        return -1;
    long long mult = 1;
    if (*end != '\0') {
        switch (*end) {
        case 'k':
        case 'K': mult = 1LL << 10; break;
        case 'm':
        case 'M': mult = 1LL << 20; break;
        case 'g':
        case 'G': mult = 1LL << 30; break;
        case 't':
        case 'T': mult = 1LL << 40; break;
        default: return -1;
        }
        end++;
        if (*end == 'i' || *end == 'I') /* accept "Ki", "MiB" too */
            end++;
        if (*end == 'b' || *end == 'B')
            end++;
        if (*end != '\0')
            return -1;
    }
    if (v != 0 && (v > INT64_MAX / mult || v < INT64_MIN / mult))
        return -1;
    *out = v * mult;
    return 0;
}

static int choice_index(const char *choices, const char *value)
{
    size_t vlen = strlen(value);
    int index = 0;
    const char *p = choices;
    while (*p) {
        const char *bar = strchr(p, '|');
        size_t len = bar ? (size_t)(bar - p) : strlen(p);
        if (len == vlen && strncmp(p, value, len) == 0)
            return index;
        index++;
        if (!bar)
            break;
        p = bar + 1;
    }
    return -1;
}

void kc_choice_name(const char *choices, int index, char *out, size_t size)
{
    const char *p = choices;
    for (int i = 0; i < index && p; i++) {
        p = strchr(p, '|');
        if (p)
            p++;
    }
    if (!p) {
        snprintf(out, size, "?");
        return;
    }
    const char *bar = strchr(p, '|');
    size_t len = bar ? (size_t)(bar - p) : strlen(p);
    snprintf(out, size, "%.*s", (int)len, p);
}

static void print_usage(const kc_ctx *ctx, const kc_opt *opts, const char *synopsis)
{
    printf("usage: mpiexec -n N %s [options]\n\n%s\n\noptions:\n", ctx->kernel, synopsis);
    for (const kc_opt *o = opts; o->name; o++) {
        char left[128], def[256] = "";
        switch (o->type) {
        case KC_OPT_INT:
            snprintf(left, sizeof left, "--%s N", o->name);
            snprintf(def, sizeof def, " (default %lld)", *(long long *)o->value);
            break;
        case KC_OPT_STR: {
            const char *s = *(const char **)o->value;
            snprintf(left, sizeof left, "--%s S", o->name);
            if (s && *s)
                snprintf(def, sizeof def, " (default %s)", s);
            break;
        }
        case KC_OPT_FLAG: snprintf(left, sizeof left, "--%s", o->name); break;
        case KC_OPT_CHOICE: {
            char name[64];
            kc_choice_name(o->choices, *(int *)o->value, name, sizeof name);
            snprintf(left, sizeof left, "--%s %s", o->name, o->choices);
            snprintf(def, sizeof def, " (default %s)", name);
            break;
        }
        case KC_OPT_LIST: {
            const long long *v = o->value;
            size_t n = 0;
            snprintf(left, sizeof left, "--%s A,B,...", o->name);
            n += (size_t)snprintf(def + n, sizeof def - n, " (default ");
            for (int i = 0; i < o->count && n < sizeof def; i++)
                n += (size_t)snprintf(def + n, sizeof def - n, "%s%lld", i ? "," : "", v[i]);
            if (n < sizeof def)
                snprintf(def + n, sizeof def - n, ")");
            break;
        }
        }
        if (strlen(left) > 26)
            printf("  %s\n  %-26s %s%s\n", left, "", o->help, def);
        else
            printf("  %-26s %s%s\n", left, o->help, def);
    }
    printf("  %-26s %s\n", "--help", "print this help and exit");
    printf("\nSizes accept K, M, G suffixes (powers of 1024). Rank 0 prints one report line and\n"
           "one 'IOTUNE_RESULT {json}' line per phase. Exit codes: 0 ok, 1 error, 2 usage,\n"
           "3 verification failed.\n");
}

static int parse_number(const char *text, long long min, long long *out)
{
    long long v;
    if (kc_parse_size(text, &v) != 0 || v < min)
        return -1;
    *out = v;
    return 0;
}

void kc_parse(const kc_ctx *ctx, int argc, char **argv, const kc_opt *opts, const char *synopsis)
{
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
            if (ctx->rank == 0) {
                print_usage(ctx, opts, synopsis);
                fflush(stdout);
            }
            MPI_Finalize();
            exit(KC_EXIT_OK);
        }
        if (strncmp(arg, "--", 2) != 0 || arg[2] == '\0')
            usage_error(ctx, "unexpected argument '%s'", arg);
        const char *name = arg + 2;
        const char *eq = strchr(name, '=');
        size_t len = eq ? (size_t)(eq - name) : strlen(name);
        const kc_opt *o = opts;
        while (o->name && !(strlen(o->name) == len && strncmp(o->name, name, len) == 0))
            o++;
        if (!o->name)
            usage_error(ctx, "unknown option '--%.*s'", (int)len, name);
        if (o->type == KC_OPT_FLAG) {
            if (eq)
                usage_error(ctx, "option --%s takes no value", o->name);
            *(int *)o->value = 1;
            continue;
        }
        const char *value = eq ? eq + 1 : (i + 1 < argc ? argv[++i] : NULL);
        if (value == NULL)
            usage_error(ctx, "option --%s needs a value", o->name);
        switch (o->type) {
        case KC_OPT_INT:
            if (parse_number(value, o->min, (long long *)o->value) != 0)
                usage_error(ctx, "option --%s: '%s' is not an integer >= %lld", o->name, value,
                            o->min);
            break;
        case KC_OPT_STR:
            if (*value == '\0')
                usage_error(ctx, "option --%s: empty value", o->name);
            *(const char **)o->value = value;
            break;
        case KC_OPT_CHOICE: {
            int idx = choice_index(o->choices, value);
            if (idx < 0)
                usage_error(ctx, "option --%s: '%s' is not one of %s", o->name, value, o->choices);
            *(int *)o->value = idx;
            break;
        }
        case KC_OPT_LIST: {
            long long tmp[16];
            int n = 0;
            const char *p = value;
            char item[64];
            while (n < 16) {
                const char *comma = strchr(p, ',');
                size_t ilen = comma ? (size_t)(comma - p) : strlen(p);
                if (ilen >= sizeof item)
                    ilen = sizeof item - 1;
                memcpy(item, p, ilen);
                item[ilen] = '\0';
                if (parse_number(item, o->min, &tmp[n]) != 0)
                    usage_error(ctx, "option --%s: '%s' is not a list of %d integers >= %lld",
                                o->name, value, o->count, o->min);
                n++;
                if (!comma)
                    break;
                p = comma + 1;
            }
            if (n != o->count)
                usage_error(ctx, "option --%s: '%s' is not a list of %d integers", o->name, value,
                            o->count);
            memcpy(o->value, tmp, sizeof(long long) * (size_t)n);
            break;
        }
        case KC_OPT_FLAG: break;
        }
    }
}

static const char *or_default(const char *text, const char *fallback)
{
    return text ? text : fallback;
}

void kc_parse_common(const kc_ctx *ctx, int argc, char **argv, const kc_opt *opts,
                     kc_common *common, const char *synopsis)
{
    if (common->dir == NULL)
        common->dir = ".";
    const kc_opt tail[] = {
        {"file", KC_OPT_STR, &common->file, NULL, 0, 0,
         or_default(common->file_help, "HDF5 file name")},
        {"dir", KC_OPT_STR, &common->dir, NULL, 0, 0,
         or_default(common->dir_help, "directory of the file (unless --file is absolute)")},
        {"read", KC_OPT_FLAG, &common->read, NULL, 0, 0, "after writing, read back and verify"},
        {"read-only", KC_OPT_FLAG, &common->read_only, NULL, 0, 0,
         or_default(common->read_only_help,
                    "only read and verify an existing file written with the same arguments")},
        {"cleanup", KC_OPT_FLAG, &common->cleanup, NULL, 0, 0,
         or_default(common->cleanup_help, "delete the file at the end")},
    };
    enum { MAX_OWN = 32, NTAIL = sizeof tail / sizeof tail[0] };
    kc_opt all[MAX_OWN + NTAIL + 1];
    size_t n = 0;
    for (; opts[n].name; n++) {
        if (n == MAX_OWN)
            kc_die(ctx, "more than %d options", MAX_OWN);
        all[n] = opts[n];
    }
    memcpy(all + n, tail, sizeof tail);
    all[n + NTAIL] = (kc_opt){NULL, KC_OPT_FLAG, NULL, NULL, 0, 0, NULL}; /* the end */
    kc_parse(ctx, argc, argv, all, synopsis);
}

/* ---------------------------------------------------------------- timing */

void kc_timer_start(kc_timer *t, MPI_Comm comm)
{
    t->comm = comm;
    for (int i = 0; i < KC_NSLOTS; i++)
        t->slot[i] = 0.0;
    MPI_Barrier(comm);
    t->last = MPI_Wtime();
}

void kc_timer_mark(kc_timer *t, int slot)
{
    MPI_Barrier(t->comm);
    double now = MPI_Wtime();
    if (slot >= 0 && slot < KC_NSLOTS)
        t->slot[slot] += now - t->last;
    t->last = now;
}

void kc_timer_reduce(kc_timer *t)
{
    double out[KC_NSLOTS];
    MPI_Allreduce(t->slot, out, KC_NSLOTS, MPI_DOUBLE, MPI_MAX, t->comm);
    memcpy(t->slot, out, sizeof out);
}

/* ---------------------------------------------------------------- data */

uint64_t kc_hash(uint64_t index, uint32_t var, uint32_t step)
{
    /* splitmix64-style finalizer over the index offset by a per-(var, step) constant */
    uint64_t key = ((uint64_t)var << 32) | step;
    uint64_t z = index + 0x9E3779B97F4A7C15ULL * (key + 1);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

float kc_val_f32(uint64_t index, uint32_t var, uint32_t step)
{
    return (float)(kc_hash(index, var, step) >> 40) * 0x1p-24f;
}

double kc_val_f64(uint64_t index, uint32_t var, uint32_t step)
{
    return (double)(kc_hash(index, var, step) >> 11) * 0x1p-53;
}

int32_t kc_val_i32(uint64_t index, uint32_t var, uint32_t step)
{
    return (int32_t)(uint32_t)(kc_hash(index, var, step) >> 32);
}

int64_t kc_val_i64(uint64_t index, uint32_t var, uint32_t step)
{
    return (int64_t)kc_hash(index, var, step);
}

uint16_t kc_val_u16(uint64_t index, uint32_t var, uint32_t step)
{
    return (uint16_t)(kc_hash(index, var, step) >> 48);
}

uint64_t kc_val_u64(uint64_t index, uint32_t var, uint32_t step)
{
    return kc_hash(index, var, step);
}

size_t kc_type_size(kc_type type)
{
    switch (type) {
    case KC_F32:
    case KC_I32: return 4;
    case KC_F64:
    case KC_I64:
    case KC_U64: return 8;
    case KC_U16: return 2;
    }
    return 0;
}

const char *kc_type_name(kc_type type)
{
    switch (type) {
    case KC_F32: return "float32";
    case KC_F64: return "float64";
    case KC_I32: return "int32";
    case KC_I64: return "int64";
    case KC_U16: return "uint16";
    case KC_U64: return "uint64";
    }
    return "?";
}

#define KC_FILL_LOOP(T, FN)                                                                        \
    do {                                                                                           \
        T *p = buf;                                                                                \
        for (size_t i = 0; i < n; i++)                                                             \
            p[i] = FN(first + (uint64_t)i * stride, var, step);                                    \
    } while (0)

void kc_fill(void *buf, kc_type type, size_t n, uint64_t first, uint64_t stride, uint32_t var,
             uint32_t step)
{
    switch (type) {
    case KC_F32: KC_FILL_LOOP(float, kc_val_f32); break;
    case KC_F64: KC_FILL_LOOP(double, kc_val_f64); break;
    case KC_I32: KC_FILL_LOOP(int32_t, kc_val_i32); break;
    case KC_I64: KC_FILL_LOOP(int64_t, kc_val_i64); break;
    case KC_U16: KC_FILL_LOOP(uint16_t, kc_val_u16); break;
    case KC_U64: KC_FILL_LOOP(uint64_t, kc_val_u64); break;
    }
}

/* ---------------------------------------------------------------- verification */

void kc_verify_init(kc_verify *v)
{
    v->checked = 0;
    v->mismatches = 0;
    v->first[0] = '\0';
}

static void describe(char *out, size_t size, kc_type type, const void *p)
{
    switch (type) {
    case KC_F32: {
        float x;
        memcpy(&x, p, sizeof x);
        snprintf(out, size, "%.9g", (double)x);
        break;
    }
    case KC_F64: {
        double x;
        memcpy(&x, p, sizeof x);
        snprintf(out, size, "%.17g", x);
        break;
    }
    case KC_I32: {
        int32_t x;
        memcpy(&x, p, sizeof x);
        snprintf(out, size, "%" PRId32, x);
        break;
    }
    case KC_I64: {
        int64_t x;
        memcpy(&x, p, sizeof x);
        snprintf(out, size, "%" PRId64, x);
        break;
    }
    case KC_U16: {
        uint16_t x;
        memcpy(&x, p, sizeof x);
        snprintf(out, size, "%u", (unsigned)x);
        break;
    }
    case KC_U64: {
        uint64_t x;
        memcpy(&x, p, sizeof x);
        snprintf(out, size, "%" PRIu64, x);
        break;
    }
    }
}

long long kc_check(kc_verify *v, const void *buf, kc_type type, size_t n, uint64_t first,
                   uint64_t stride, uint32_t var, uint32_t step, const char *what)
{
    size_t es = kc_type_size(type);
    const unsigned char *p = buf;
    unsigned char want[8];
    long long bad = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t index = first + (uint64_t)i * stride;
        kc_fill(want, type, 1, index, 1, var, step);
        if (memcmp(p + i * es, want, es) != 0) {
            if (bad == 0 && v->mismatches == 0) {
                char got_s[40], want_s[40];
                describe(got_s, sizeof got_s, type, p + i * es);
                describe(want_s, sizeof want_s, type, want);
                snprintf(v->first, sizeof v->first,
                         "%s: element %" PRIu64 " (%s) is %s, expected %s", what, index,
                         kc_type_name(type), got_s, want_s);
            }
            bad++;
        }
    }
    v->checked += (long long)n;
    v->mismatches += bad;
    return bad;
}

void kc_verify_fail(kc_verify *v, const char *fmt, ...)
{
    if (v->mismatches == 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(v->first, sizeof v->first, fmt, ap);
        va_end(ap);
    }
    v->checked++; /* counted as one checked value, so mismatches never exceed checked */
    v->mismatches++;
}

long long kc_file_size(const kc_ctx *ctx, int fd, MPI_File fh)
{
    if (fd >= 0) {
        struct stat st;
        if (fstat(fd, &st) != 0)
            kc_die(ctx, "fstat failed: %s", strerror(errno));
        return (long long)st.st_size;
    }
    MPI_Offset size;
    kc_mpi_check(ctx, MPI_File_get_size(fh, &size), "MPI_File_get_size");
    return (long long)size;
}

void kc_check_file_size(kc_verify *v, const char *path, long long have, long long need)
{
    if (have < need)
        kc_verify_fail(v, "%s: file too short: %lld bytes, expected %lld", path, have, need);
}

int kc_verify_reduce(const kc_ctx *ctx, const kc_verify *v)
{
    long long mine[2] = {v->checked, v->mismatches}, sum[2];
    MPI_Allreduce(mine, sum, 2, MPI_LONG_LONG, MPI_SUM, ctx->comm);
    int failing = v->mismatches ? ctx->rank : ctx->nranks, lowest;
    MPI_Allreduce(&failing, &lowest, 1, MPI_INT, MPI_MIN, ctx->comm);
    if (sum[1] != 0) {
        if (ctx->rank == lowest) {
            fprintf(stderr, "%s: verification failed (rank %d): %s\n", ctx->kernel, ctx->rank,
                    v->first);
            fflush(stderr);
        }
        if (ctx->rank == 0) {
            fprintf(stderr, "%s: verification failed: %lld of %lld checked values differ\n",
                    ctx->kernel, sum[1], sum[0]);
            fflush(stderr);
        }
    }
    return sum[1] == 0;
}

int kc_phase_end(const kc_ctx *ctx, kc_timer *t, const kc_verify *v)
{
    kc_timer_reduce(t);
    return v ? kc_verify_reduce(ctx, v) : -1;
}

/* ---------------------------------------------------------------- report */

/* Length of `s` once JSON-escaped. */
static size_t json_escaped_len(const char *s)
{
    size_t n = 0;
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        n += (c == '"' || c == '\\') ? 2 : c < 0x20 ? 6 : 1;
    }
    return n;
}

/* Write `s` JSON-escaped at `out` (which has room, see json_escaped_len); returns the end. */
static char *json_escape(char *out, const char *s)
{
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') {
            *out++ = '\\';
            *out++ = (char)c;
        } else if (c < 0x20) {
            out += snprintf(out, 7, "\\u%04x", c);
        } else {
            *out++ = (char)c;
        }
    }
    return out;
}

static void json_append(char *buf, size_t size, const char *member)
{
    size_t len = strlen(buf);
    if (len + (len ? 1 : 0) + strlen(member) >= size)
        return; /* as kc_json_str: never a cut member */
    snprintf(buf + len, size - len, "%s%s", len ? "," : "", member);
}

void kc_json_str(char *buf, size_t size, const char *key, const char *value)
{
    size_t len = strlen(buf);
    /* [,]"key":"value" with the value escaped in place: no intermediate buffer to cut it */
    size_t need = (len ? 1 : 0) + strlen(key) + json_escaped_len(value) + 5;
    if (len + need >= size)
        return; /* left out rather than cut, so the line stays valid JSON */
    char *p = buf + len;
    p += snprintf(p, size - len, "%s\"%s\":\"", len ? "," : "", key);
    p = json_escape(p, value);
    p[0] = '"';
    p[1] = '\0';
}

void kc_json_int(char *buf, size_t size, const char *key, long long value)
{
    char member[128];
    snprintf(member, sizeof member, "\"%s\":%lld", key, value);
    json_append(buf, size, member);
}

void kc_report(const kc_ctx *ctx, const kc_timer *t, const kc_report_info *info)
{
    if (ctx->rank != 0)
        return;
    double open_s = t->slot[KC_OPEN], io_s = t->slot[KC_IO], close_s = t->slot[KC_CLOSE];
    double total = open_s + io_s + close_s;
    double mbs = total > 0.0 ? (double)info->bytes / total / 1e6 : 0.0;
    const char *ver = info->verified < 0 ? "" : info->verified ? ", verified" : ", NOT VERIFIED";
    printf("%s %s: %d rank%s, %s, %lld bytes, open %.4f s, io %.4f s, close %.4f s, %.1f MB/s%s\n",
           ctx->kernel, info->phase, ctx->nranks, ctx->nranks == 1 ? "" : "s", info->objects,
           info->bytes, open_s, io_s, close_s, mbs, ver);
    const char *vjson = info->verified < 0 ? "null" : info->verified ? "true" : "false";
    printf("IOTUNE_RESULT {\"kernel\":\"%s\",\"phase\":\"%s\",\"ranks\":%d,\"bytes\":%lld,"
           "\"open_s\":%.9g,\"io_s\":%.9g,\"close_s\":%.9g,\"total_s\":%.9g,\"mb_s\":%.3f,"
           "\"verified\":%s%s%s}\n",
           ctx->kernel, info->phase, ctx->nranks, info->bytes, open_s, io_s, close_s, total, mbs,
           vjson, info->extra && *info->extra ? "," : "", info->extra ? info->extra : "");
    fflush(stdout);
}

/* ---------------------------------------------------------------- main flow */

int kc_main(const kc_ctx *ctx, const kc_common *common, const kc_phases *phases)
{
    int ok = 1;
    if (common->read_only) {
        if (phases->path) /* a clean message instead of the library's open error */
            kc_require_file(ctx, phases->path);
        ok = phases->read(ctx, phases->arg);
    } else {
        phases->write(ctx, phases->arg);
        if (common->read)
            ok = phases->read(ctx, phases->arg);
    }
    if (common->cleanup) {
        if (phases->path)
            kc_remove_file(ctx, phases->path, phases->shared);
        else
            phases->cleanup(ctx, phases->arg);
    }
    return ok ? KC_EXIT_OK : KC_EXIT_VERIFY;
}

/* ---------------------------------------------------------------- files */

/* kc_path without the error: returns -1 if the name does not fit `size`. */
static int build_path(char *out, size_t size, const char *dir, const char *name, int step, int rank)
{
    char tags[64] = "";
    size_t tn = 0;
    if (step >= 0)
        tn += (size_t)snprintf(tags + tn, sizeof tags - tn, ".%d", step);
    if (rank >= 0)
        snprintf(tags + tn, sizeof tags - tn, ".r%d", rank);
    const char *base = strrchr(name, '/');
    base = base ? base + 1 : name;
    const char *dot = strrchr(base, '.');
    size_t stem = (dot && dot != base) ? (size_t)(dot - name) : strlen(name);
    const char *ext = name + stem;
    int use_dir = dir && *dir && strcmp(dir, ".") != 0 && name[0] != '/';
    int n = snprintf(out, size, "%s%s%.*s%s%s", use_dir ? dir : "",
                     use_dir && dir[strlen(dir) - 1] != '/' ? "/" : "", (int)stem, name, tags, ext);
    return n < 0 || (size_t)n >= size ? -1 : 0;
}

void kc_path(const kc_ctx *ctx, char *out, size_t size, const char *dir, const char *name, int step,
             int rank)
{
    if (build_path(out, size, dir, name, step, rank) != 0)
        kc_die(ctx, "file name too long: %s", name);
}

void kc_require_file(const kc_ctx *ctx, const char *path)
{
    int err = access(path, R_OK) != 0 ? (errno ? errno : ENOENT) : 0;
    int mine = err ? ctx->rank : ctx->nranks, first;
    MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, ctx->comm);
    if (first == ctx->nranks)
        return;
    if (ctx->rank == first) {
        fflush(stdout);
        fprintf(stderr, "%s: error: cannot read '%s': %s\n", ctx->kernel, path, strerror(err));
        fflush(stderr);
    }
    MPI_Finalize();
    exit(KC_EXIT_ERROR);
}

void kc_mpi_check(const kc_ctx *ctx, int rc, const char *what)
{
    if (rc == MPI_SUCCESS)
        return;
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, msg, &len);
    kc_die(ctx, "%s failed: %.*s", what, len, msg);
}

void kc_remove_file(const kc_ctx *ctx, const char *path, int shared)
{
    if (!shared || ctx->rank == 0)
        (void)unlink(path);
    MPI_Barrier(ctx->comm);
}

/* ---------------------------------------------------------------- sizes and memory */

long long kc_mul(const kc_ctx *ctx, long long a, long long b, const char *what)
{
    long long out;
    if (__builtin_mul_overflow(a, b, &out))
        kc_fail_all(ctx, KC_EXIT_USAGE, "too large: %s does not fit in 64 bits", what);
    return out;
}

void kc_check_memory(const kc_ctx *ctx, long long bytes)
{
    long long most;
    MPI_Allreduce(&bytes, &most, 1, MPI_LONG_LONG, MPI_MAX, ctx->comm);
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    if (pages <= 0 || page <= 0) /* unknown: let malloc decide */
        return;
    double phys = (double)pages * (double)page;
    if ((double)most > phys)
        kc_fail_all(ctx, KC_EXIT_ERROR,
                    "a rank needs %lld bytes (%.1f GiB) of buffers, more than the %.1f GiB of "
                    "physical memory",
                    most, (double)most / 1073741824.0, phys / 1073741824.0);
}

void *kc_malloc(const kc_ctx *ctx, size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p)
        kc_die(ctx, "out of memory (%zu bytes)", n);
    return p;
}
