/*
 * kcommon: the small helper library shared by the iotune I/O kernels.
 *
 * - option parsing (long options "--name value" or "--name=value", --help, K/M/G sizes),
 * - the options and the main flow all kernels share (--file, --dir, --read, --read-only,
 *   --cleanup; write, read back, clean up), so each kernel keeps only its motif,
 * - phase timing with MPI_Wtime between barriers (open / io / close),
 * - deterministic data: every value is a pure function of (global element index, variable,
 *   time step), so two runs write identical bytes and a read can check every element,
 * - verification counters reduced over all ranks,
 * - the one report format of all kernels (a human line plus an "IOTUNE_RESULT {json}" line),
 * - error exits and file-name helpers.
 *
 * Nothing here depends on HDF5 (see kh5.h for the HDF5 helpers), so MPI-IO/POSIX kernels
 * do not link HDF5 at all.
 */
#ifndef IOTUNE_KCOMMON_H
#define IOTUNE_KCOMMON_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __GNUC__
#define KC_PRINTF(a, b) __attribute__((format(printf, a, b)))
#define KC_NORETURN __attribute__((noreturn))
#else
#define KC_PRINTF(a, b)
#define KC_NORETURN
#endif

/* Exit codes shared by all kernels. */
enum { KC_EXIT_OK = 0, KC_EXIT_ERROR = 1, KC_EXIT_USAGE = 2, KC_EXIT_VERIFY = 3 };

/* ---------------------------------------------------------------- process context */

typedef struct {
    const char *kernel; /* program name used in every message */
    MPI_Comm comm;      /* MPI_COMM_WORLD */
    int rank;
    int nranks;
} kc_ctx;

/* MPI_Init plus context; call first. */
void kc_init(kc_ctx *ctx, const char *kernel, int *argc, char ***argv);
/* MPI_Finalize and return `code` (use as `return kc_finish(&ctx, code);`). */
int kc_finish(kc_ctx *ctx, int code);

/* Fatal error on this rank: "<kernel>: error: ..." on stderr, then MPI_Abort. Like kc_fail_all,
 * it first removes the output being written (kc_writing). */
KC_NORETURN void kc_die(const kc_ctx *ctx, const char *fmt, ...) KC_PRINTF(2, 3);
/* Error reached by all ranks together (e.g. bad argument combination): rank 0 prints, all
 * ranks finalize and exit with `code`. Must be called collectively. */
KC_NORETURN void kc_fail_all(const kc_ctx *ctx, int code, const char *fmt, ...) KC_PRINTF(3, 4);

/* ---------------------------------------------------------------- options */

typedef enum {
    KC_OPT_INT,    /* long long; accepts K/M/G/T suffixes (powers of 1024) */
    KC_OPT_STR,    /* const char * (points into argv) */
    KC_OPT_FLAG,   /* int set to 1 when present; takes no value */
    KC_OPT_CHOICE, /* int index into the '|'-separated `choices` */
    KC_OPT_LIST    /* `count` long longs separated by commas, e.g. 100,100,60 */
} kc_opt_type;

typedef struct {
    const char *name; /* without the leading "--" */
    kc_opt_type type;
    void *value;         /* where the parsed value goes; holds the default on entry */
    const char *choices; /* KC_OPT_CHOICE: "collective|independent" */
    int count;           /* KC_OPT_LIST: number of elements */
    long long min;       /* KC_OPT_INT/LIST: smallest legal value */
    const char *help;
} kc_opt;

/* Parse argv against `opts` (terminated by an entry with name == NULL). --help prints the
 * usage on rank 0 and exits 0; an unknown option or a bad value prints a message on rank 0 and
 * exits 2. All ranks parse the same argv, so all take the same decision without communication.
 * `synopsis` is the one-paragraph description shown by --help. */
void kc_parse(const kc_ctx *ctx, int argc, char **argv, const kc_opt *opts, const char *synopsis);

/* The options every kernel has, listed after its own: --file, --dir, --read, --read-only,
 * --cleanup. Set the defaults (file; dir NULL means ".") and, where the kernel words them its
 * own way, the help texts (NULL: the texts of a kernel that writes one HDF5 file). */
typedef struct {
    const char *file;
    const char *dir;
    int read;      /* after writing, read back and verify */
    int read_only; /* only read and verify */
    int cleanup;   /* delete the file(s) at the end */
    const char *file_help, *dir_help, *read_only_help, *cleanup_help;
} kc_common;

/* kc_parse of the kernel's own `opts` followed by the common options into `common`. */
void kc_parse_common(const kc_ctx *ctx, int argc, char **argv, const kc_opt *opts,
                     kc_common *common, const char *synopsis);

/* The name of choice `index` in a '|'-separated choice list ("?" if out of range). */
void kc_choice_name(const char *choices, int index, char *out, size_t size);

/* Size string to bytes: "4096", "64K", "1M", "2G" (powers of 1024). Returns 0 on success. */
int kc_parse_size(const char *text, long long *out);

/* ---------------------------------------------------------------- timing */

enum { KC_SKIP = -1, KC_OPEN = 0, KC_IO = 1, KC_CLOSE = 2, KC_NSLOTS = 3 };

/* Phase timer: every mark is a barrier followed by MPI_Wtime, so each slot holds the time all
 * ranks spent between two barriers (the slowest rank's time). Slots accumulate, so a phase
 * repeated over steps or files adds up. */
typedef struct {
    MPI_Comm comm;
    double last;
    double slot[KC_NSLOTS];
} kc_timer;

void kc_timer_start(kc_timer *t, MPI_Comm comm);
/* Barrier, then charge the time since the previous mark to `slot` (KC_SKIP: charge nothing,
 * e.g. after generating the next step's data or verifying what was read). */
void kc_timer_mark(kc_timer *t, int slot);
/* Reduce each slot to its maximum over ranks (collective). */
void kc_timer_reduce(kc_timer *t);

/* ---------------------------------------------------------------- data */

/* 64-bit hash of (global element index, variable id, time step): the source of all data. */
uint64_t kc_hash(uint64_t index, uint32_t var, uint32_t step);

/* Typed values derived from kc_hash; floats are exact multiples of 2^-24 (2^-53) in [0, 1). */
float kc_val_f32(uint64_t index, uint32_t var, uint32_t step);
double kc_val_f64(uint64_t index, uint32_t var, uint32_t step);
int32_t kc_val_i32(uint64_t index, uint32_t var, uint32_t step);
int64_t kc_val_i64(uint64_t index, uint32_t var, uint32_t step);
uint16_t kc_val_u16(uint64_t index, uint32_t var, uint32_t step);
uint64_t kc_val_u64(uint64_t index, uint32_t var, uint32_t step);

/* Element types understood by the fill/check helpers. */
typedef enum { KC_F32, KC_F64, KC_I32, KC_I64, KC_U16, KC_U64 } kc_type;
size_t kc_type_size(kc_type type);
const char *kc_type_name(kc_type type);

/* buf[i] = value(first + i*stride, var, step) for i < n. */
void kc_fill(void *buf, kc_type type, size_t n, uint64_t first, uint64_t stride, uint32_t var,
             uint32_t step);

/* ---------------------------------------------------------------- verification */

typedef struct {
    long long checked;    /* elements compared on this rank */
    long long mismatches; /* elements that differ on this rank */
    char first[256];      /* description of this rank's first mismatch */
} kc_verify;

void kc_verify_init(kc_verify *v);
/* Compare buf[i] with value(first + i*stride, var, step), bit for bit; `what` names the data
 * (e.g. "/Step#0/x") for the first-mismatch message. Returns the number of mismatches. */
long long kc_check(kc_verify *v, const void *buf, kc_type type, size_t n, uint64_t first,
                   uint64_t stride, uint32_t var, uint32_t step, const char *what);
/* Record a failure that is not an element mismatch (bad header, wrong shape, ...). */
void kc_verify_fail(kc_verify *v, const char *fmt, ...) KC_PRINTF(2, 3);
/* Record "<path>: file too short: <have> bytes, expected <need>" if have < need: the raw
 * (MPI-IO, POSIX) read phases check the file size first, as a short file read through MPI-IO
 * gives no error, only zeros. */
void kc_check_file_size(kc_verify *v, const char *path, long long have, long long need);
/* Size of an open raw file: through POSIX (fh ignored) when fd >= 0, else through MPI-IO. */
long long kc_file_size(const kc_ctx *ctx, int fd, MPI_File fh);
/* Collective: sum over ranks; the lowest failing rank prints its first mismatch on stderr.
 * Returns 1 if every rank verified cleanly, else 0. */
int kc_verify_reduce(const kc_ctx *ctx, const kc_verify *v);

/* Collective end of a phase: reduce the timer and, after a read, the verification `v` (NULL
 * after a write). Returns the report's `verified`: -1 without `v`, 1 if every rank verified
 * cleanly, else 0. */
int kc_phase_end(const kc_ctx *ctx, kc_timer *t, const kc_verify *v);

/* ---------------------------------------------------------------- report */

typedef struct {
    const char *phase;   /* "write" or "read" */
    long long bytes;     /* bytes moved by all ranks together */
    const char *objects; /* human text after the rank count, e.g. "8 datasets" */
    int verified;        /* -1: not applicable (write), 0: failed, 1: ok */
    const char *extra;   /* extra JSON members without braces, e.g. "\"steps\":2", or NULL */
} kc_report_info;

/* Rank 0 prints the human line and the IOTUNE_RESULT line. `t` must have been reduced.
 * Bandwidth = bytes / (open + io + close) in MB/s (1e6 bytes). */
void kc_report(const kc_ctx *ctx, const kc_timer *t, const kc_report_info *info);

/* Longest file name the kernels handle, with its NUL (Linux's PATH_MAX). */
#define KC_PATH_MAX 4096
/* Size of a report's `extra` buffer: a few members and one file name even if every byte of it
 * needs a 6-character \u00XX escape. */
#define KC_EXTRA_MAX (6 * KC_PATH_MAX + 1024)

/* Append a JSON string member ("key":"escaped value") to `buf`. A member that does not fit is
 * left out whole, so `buf` stays valid JSON. */
void kc_json_str(char *buf, size_t size, const char *key, const char *value);
/* Append a JSON integer member (left out whole if it does not fit). */
void kc_json_int(char *buf, size_t size, const char *key, long long value);

/* ---------------------------------------------------------------- main flow */

/* The phases of a kernel, as kc_main runs them. */
typedef struct {
    void (*write)(const kc_ctx *ctx, void *arg);
    int (*read)(const kc_ctx *ctx, void *arg); /* returns 1 if every value verified */
    void *arg;                                 /* the kernel's state, passed to each phase */
    /* The one file (per rank) of the kernel: --read-only first checks that it is readable, and
     * --cleanup removes it (`shared` as in kc_remove_file). NULL: the read phase checks its
     * files itself and `cleanup` removes them. */
    const char *path;
    int shared;
    void (*cleanup)(const kc_ctx *ctx, void *arg);
} kc_phases;

/* What every kernel's main() does once its options are parsed: --read-only reads; otherwise
 * write and, with --read, read back; then --cleanup. Returns the exit code for kc_finish:
 * KC_EXIT_VERIFY if a read found wrong data, else KC_EXIT_OK. */
int kc_main(const kc_ctx *ctx, const kc_common *common, const kc_phases *phases);

/* ---------------------------------------------------------------- files */

/* Build "<dir>/<name>" with optional tags inserted before the extension of `name`:
 * step >= 0 adds ".<step>", rank >= 0 adds ".r<rank>" (e.g. iorio.h5 -> iorio.3.r1.h5).
 * dir may be NULL or "" (no prefix). Dies on overflow. */
void kc_path(const kc_ctx *ctx, char *out, size_t size, const char *dir, const char *name, int step,
             int rank);

/* Collective: every rank checks that its `path` is readable (the same name or its own file);
 * if one is not, the first such rank prints a clean message and all ranks exit 1. */
void kc_require_file(const kc_ctx *ctx, const char *path);

/* Name the output about to be created and written, as kc_path(dir, name, step, rank) builds
 * it: one file (rank -1), or with `per_rank` one file per rank (every rank's tag). Until
 * kc_written, a run that ends in an error (kc_die, kc_fail_all) removes it rather than leave
 * a partial file; the failing rank removes every rank's file, as MPI_Abort kills the others.
 * Files already completed, and files being read, are never removed. `dir` and `name` must
 * stay valid (argv or static strings). */
void kc_writing(const kc_ctx *ctx, const char *dir, const char *name, int step, int per_rank);
void kc_written(void);

/* Die with MPI's error text when an MPI call did not return MPI_SUCCESS. */
void kc_mpi_check(const kc_ctx *ctx, int rc, const char *what);

/* Collective: remove `path` if it exists, errors ignored. shared != 0: one file named the same
 * on all ranks, removed by rank 0; shared == 0: every rank removes its own file. */
void kc_remove_file(const kc_ctx *ctx, const char *path, int shared);

/* ---------------------------------------------------------------- sizes and memory */

/* a * b (both >= 0) for a size every rank computes alike from the arguments and the rank count.
 * On overflow all ranks exit 2 with "too large: <what> does not fit in 64 bits". Checking the
 * largest product of a kernel (its bytes per phase) shows every smaller size fits too. */
long long kc_mul(const kc_ctx *ctx, long long a, long long b, const char *what);

/* Collective: each rank gives the bytes of buffers it is about to allocate. If any rank needs
 * more than the machine's physical memory, all ranks exit 1 with a clear message: such a run
 * could only swap or be killed, and with overcommit its malloc would succeed. */
void kc_check_memory(const kc_ctx *ctx, long long bytes);

/* malloc that dies with a message instead of returning NULL (returns non-NULL for n == 0). */
void *kc_malloc(const kc_ctx *ctx, size_t n);

#endif
