/* The control file: XML -> validated settings, and which settings apply to a file or dataset. */
#ifndef IOTUNE_SETTINGS_H
#define IOTUNE_SETTINGS_H

#include <stddef.h>

#include "config/values.h"
#include "params_gen.h"

#define IOT_PATTERN_MAX 256
#define IOT_NAME_MAX 64
#define IOT_CONFIG_MAX_BYTES (1024 * 1024)
/* Settings one control file may hold: enough for any real file, and it bounds the work of
 * every open. The Python side applies the same cap. */
#define IOT_MAX_SETTINGS 1024
/* Problems of one control file the runtime prints, each on its line; one more line counts the
 * rest and names `iotune check --all`, which lists them all (controlfile.PROBLEMS_SHOWN on the
 * Python side, the same cap for `iotune check`). */
#define IOT_PROBLEMS_SHOWN 10

/* One setting. Plain data, so that rank 0 can broadcast the parsed array as bytes. */
typedef struct {
    int param; /* enum iot_param_id, or -1 for an MPI-IO hint the registry does not know */
    int line;
    iot_layer layer;
    char name[IOT_NAME_MAX];        /* registry name or hint key */
    char file_pat[IOT_PATTERN_MAX]; /* FileName pattern, "" for every file */
    char var_pat[IOT_PATTERN_MAX];  /* VariableName pattern, "" for every dataset */
    iot_value value;
} iot_entry;

typedef struct {
    int count;
    int fatal; /* nothing could be applied */
    iot_entry *entries;
    char digest[32]; /* "fnv1a64:<16 hex>" of the file's bytes, "" when it was not read */
} iot_settings;

/* diag's kind: an element refused, the whole file refused, or an element that silently
 * replaces an earlier one (the same name for the same files: kept, said) */
enum { IOT_DIAG_ERROR = 0, IOT_DIAG_FATAL = 1, IOT_DIAG_OVERRIDE = 2 };

/* Called once per problem; line 0 when unknown, element/value NULL when there is none;
 * kind IOT_DIAG_FATAL when nothing from the file can be applied. */
typedef void (*iot_diag_fn)(void *ctx, int line, const char *element, const char *value,
                            const char *message, int kind);

/* Parses a control file's text. Always fills out (possibly empty); returns the number of
 * problems reported through diag. */
int iot_settings_parse(const char *text, size_t len, iot_settings *out, iot_diag_fn diag,
                       void *ctx);

/* Reads and parses a file (size capped at IOT_CONFIG_MAX_BYTES). */
/* A regular file of at most max bytes, read without blocking (see settings.c); NULL with the
 * reason in err. */
char *iot_read_regular(const char *path, size_t max, size_t *len, char *err, size_t errlen);

int iot_settings_load(const char *path, iot_settings *out, iot_diag_fn diag, void *ctx);

void iot_settings_free(iot_settings *s);

/* Matching (match.c; the rules in docs/control-file.md, the cases in tests/vectors/match.json).
 * The entry of param that applies to file (and dataset, NULL for file scope), or NULL.
 * A dataset pattern beats a file pattern beats neither; the later entry wins a tie. */
const iot_entry *iot_settings_find(const iot_settings *s, int param, const char *file,
                                   const char *dataset);

/* Calls fn for each MPI-IO hint (layer mpiio or fs) in effect for file, best entry per key. */
void iot_settings_each_hint(const iot_settings *s, const char *file,
                            void (*fn)(void *ctx, const iot_entry *e), void *ctx);

/* Does a FileName pattern ("" for any) match a file name as the application gave it? */
int iot_match_file(const char *pattern, const char *path);
/* Does a VariableName pattern ("" for any) match a dataset path (NULL: file level, no dataset)? */
int iot_match_dataset(const char *pattern, const char *path);
/* "lustre:/scratch/x.h5" -> "/scratch/x.h5": a ROMIO file system prefix (2+ characters, no
 * '/', then ':') names a driver, not a file. */
const char *iot_strip_romio_prefix(const char *path);

#endif
