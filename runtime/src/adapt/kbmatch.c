#include "adapt/kbmatch.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/jsonread.h"

const char *const iot_kb_motif_names[IOT_KB_MOTIF] = {
    "interface", "transfer_mode", "access_pattern", "size_class", "file_mode",
    "io_mix",    "layout",        "filters",        "fs_kind",    "element_type"};
#define ELEMENT_TYPE 9 /* iotune.kb.signature.LENIENT_FIELDS: not compared when unknown */

/* iotune.kb.signature: SMALL_TRANSFER, SCALE_WEIGHT, CAP_DOUBLINGS */
#define SMALL_TRANSFER (64 * 1024)
#define SCALE_WEIGHT 0.25
#define ELEMENT_TYPE_WEIGHT 2.0 /* iotune.kb.signature.WEIGHTS: half of it for an unknown */
#define CAP_DOUBLINGS 4.0

static const char *word_or(const iot_insights *in, int id, const char *dflt)
{
    const iot_insight *v = &in->v[id];
    return v->known && v->word && v->word[0] ? v->word : dflt;
}

static double number_or(const iot_insights *in, int id, double dflt)
{
    const iot_insight *v = &in->v[id];
    return v->known && !v->word ? v->number : dflt;
}

/* The bytes the distance weighs: per file (iotune.kb.signature._per_file), so that a phase
 * (one file) and a stored study of the same program (all its files) are the same scale; an
 * entry stored before signatures counted files (files < 0) keeps its group's bytes, as the
 * distance then compares them. */
static double per_file(double bytes, double files)
{
    return bytes > 0 && files > 1 ? bytes / files : bytes;
}

void iot_kb_signature_of(const iot_insights *in, iot_kb_signature *out)
{
    const char *interface = word_or(in, IOT_I_INTERFACE, "none");
    int hdf5 = strcmp(interface, "hdf5") == 0;
    double median = number_or(in, IOT_I_TRANSFER_SIZE_MEDIAN, -1);
    const char *mode = word_or(in, IOT_I_FILE_MODE, "unknown");
    if (strcmp(mode, "single") == 0) { /* one rank: one file is shared, several per process */
        double files = number_or(in, IOT_I_FILES, 0);
        mode = files == 0 || files == 1 ? "shared" : "per_process";
    }
    const char *fs = word_or(in, IOT_I_FS, NULL);
    const char *parallel = word_or(in, IOT_I_PARALLEL_FS, "");
    const char *m[IOT_KB_MOTIF] = {interface,
                                   word_or(in, IOT_I_TRANSFER_MODE, "none"),
                                   word_or(in, IOT_I_ACCESS_PATTERN, "unknown"),
                                   median < 0                ? "unknown"
                                   : median < SMALL_TRANSFER ? "small"
                                                             : "large",
                                   mode,
                                   word_or(in, IOT_I_IO_MIX, "none"),
                                   hdf5 ? word_or(in, IOT_I_LAYOUT, "unknown") : "none",
                                   hdf5 ? word_or(in, IOT_I_FILTERS, "no") : "no",
                                   !fs                            ? "unknown"
                                   : strcmp(parallel, "yes") == 0 ? "parallel"
                                                                  : "local",
                                   hdf5 ? word_or(in, IOT_I_ELEMENT_TYPE, "unknown") : "none"};
    memcpy(out->motif, m, sizeof m);
    out->ranks = number_or(in, IOT_I_RANKS, 1);
    out->transfer_median = median;
    out->bytes =
        per_file(number_or(in, IOT_I_BYTES_WRITTEN, 0) + number_or(in, IOT_I_BYTES_READ, 0),
                 number_or(in, IOT_I_FILES, 1));
}

/* ------------------------------------------------------------------------------ parsing */

static char *dup(const char *s)
{
    return s ? strdup(s) : NULL;
}

static double num(const iot_json *obj, const char *key)
{
    const iot_json *m = iot_json_get(obj, key);
    return m && m->type == IOT_J_NUMBER ? m->number : -1;
}

/* Whether obj's key, when present, is a number or null (what the export writes): a value of
 * another type is refused with the file, not read as missing (an outside tester's
 * "speedup": "fast" was taken silently). */
static int number_or_null(const iot_json *obj, const char *key, char *err, size_t errlen)
{
    const iot_json *m = iot_json_get(obj, key);
    if (!m || m->type == IOT_J_NUMBER || m->type == IOT_J_NULL)
        return 0;
    snprintf(err, errlen, "'%s' must be a number or null", key);
    return -1;
}

/* One entry: 0, or -1 with what is wrong in err. */
static int entry(const iot_json *e, iot_kb_entry *out, char *err, size_t errlen)
{
    const iot_json *sig = iot_json_get(e, "signature"), *motif = iot_json_get(sig, "motif");
    const iot_json *settings = iot_json_get(e, "settings");
    if (!e || e->type != IOT_J_OBJECT)
        return snprintf(err, errlen, "an entry must be an object"), -1;
    if (!settings || settings->type != IOT_J_OBJECT)
        return snprintf(err, errlen, "an entry needs a 'settings' object"), -1;
    if (!motif || motif->type != IOT_J_OBJECT)
        return snprintf(err, errlen, "a signature needs a 'motif' object"), -1;
    if (iot_kb_key_check(sig, err, errlen) != 0)
        return -1;
    const iot_json *version = iot_json_get(sig, "version");
    out->version =
        version && version->type == IOT_J_NUMBER ? (int)version->number : IOT_KB_SIGNATURE_VERSION;
    for (int i = 0; i < IOT_KB_MOTIF; i++) /* a field missing compares as unknown */
        out->motif[i] = dup(iot_json_str(motif, iot_kb_motif_names[i]));
    const iot_json *scale = iot_json_get(sig, "scale");
    if (number_or_null(e, "speedup", err, errlen) || number_or_null(scale, "ranks", err, errlen) ||
        number_or_null(scale, "transfer_size_median", err, errlen) ||
        number_or_null(scale, "bytes", err, errlen) || number_or_null(scale, "files", err, errlen))
        return -1;
    out->ranks = num(scale, "ranks");
    out->transfer_median = num(scale, "transfer_size_median");
    out->bytes = per_file(num(scale, "bytes"), num(scale, "files")); /* files: 2026-11-28 on */
    out->speedup = num(e, "speedup");
    const iot_json *improved = iot_json_get(e, "improved");
    out->improved = improved && improved->type == IOT_J_TRUE;
    out->uid = dup(iot_json_str(e, "uid"));
    out->study = dup(iot_json_str(e, "study"));
    int n = 0;
    for (const iot_json *s = settings->child; s; s = s->next)
        n++;
    out->names = calloc((size_t)n + 1, sizeof *out->names);
    out->values = calloc((size_t)n + 1, sizeof *out->values);
    out->lines = calloc((size_t)n + 1, sizeof *out->lines);
    if (!out->names || !out->values || !out->lines)
        return snprintf(err, errlen, "out of memory"), -1;
    for (const iot_json *s = settings->child; s; s = s->next) {
        char buf[64];
        const char *text = s->string;
        if (s->type == IOT_J_NUMBER) { /* Python writes them as strings; a number is taken */
            snprintf(buf, sizeof buf, "%.17g", s->number);
            text = buf;
        } else if (s->type != IOT_J_STRING) {
            return snprintf(err, errlen, "setting '%s' (line %d) is not a string", s->key, s->line),
                   -1;
        }
        out->lines[out->nsettings] = s->line;
        out->names[out->nsettings] = dup(s->key);
        out->values[out->nsettings++] = dup(text);
    }
    return 0;
}

int iot_kb_parse(const char *text, size_t len, iot_kb *kb, char *err, size_t errlen)
{
    memset(kb, 0, sizeof *kb);
    iot_json *root = iot_json_parse(text, len, err, errlen);
    if (!root)
        return -1;
    const char *schema = iot_json_str(root, "schema");
    const iot_json *version = iot_json_get(root, "version"), *list = iot_json_get(root, "entries");
    int rc = -1;
    if (!schema || strcmp(schema, IOT_KB_EXPORT_SCHEMA) != 0) {
        snprintf(err, errlen, "not an iotune knowledge-base export (schema '%s', expected '%s')",
                 schema ? schema : "none", IOT_KB_EXPORT_SCHEMA);
    } else if (version && version->type == IOT_J_NUMBER &&
               version->number > IOT_KB_EXPORT_VERSION) {
        snprintf(err, errlen, "made by a newer iotune (version %g)", version->number);
    } else if (!list || list->type != IOT_J_ARRAY) {
        snprintf(err, errlen, "'entries' must be a list");
    } else {
        int n = 0;
        for (const iot_json *e = list->child; e; e = e->next)
            n++;
        kb->entries = calloc((size_t)n + 1, sizeof *kb->entries);
        rc = kb->entries ? 0 : -1;
        for (const iot_json *e = list->child; e && rc == 0; e = e->next) {
            char why[200] = "";
            if (entry(e, &kb->entries[kb->n++], why, sizeof why) != 0) {
                snprintf(err, errlen, "entry %d (line %d): %s", kb->n - 1, e->line, why);
                rc = -1;
            }
        }
        if (rc != 0)
            iot_kb_free(kb);
    }
    iot_json_free(root);
    return rc;
}

void iot_kb_free(iot_kb *kb)
{
    for (int i = 0; i < kb->n; i++) {
        iot_kb_entry *e = &kb->entries[i];
        free(e->uid);
        free(e->study);
        for (int k = 0; k < IOT_KB_MOTIF; k++)
            free(e->motif[k]);
        for (int k = 0; e->names && k < e->nsettings; k++)
            free(e->names[k]), free(e->values[k]);
        free(e->names);
        free(e->values);
        free(e->lines);
    }
    free(kb->entries);
    memset(kb, 0, sizeof *kb);
}

/* ------------------------------------------------------------------------------ matching */

static double doublings(double a, double b)
{
    if (a <= 0 || b <= 0)
        return 0;
    double d = fabs(log2(a / b));
    return d < CAP_DOUBLINGS ? d : CAP_DOUBLINGS;
}

int iot_kb_nearest(const iot_kb *kb, const iot_kb_signature *sig, double *distance)
{
    int best = -1;
    double best_d = 0, best_speedup = 0;
    for (int i = 0; i < kb->n; i++) {
        const iot_kb_entry *e = &kb->entries[i];
        if (e->version != IOT_KB_SIGNATURE_VERSION || !e->improved || !e->nsettings)
            continue;
        int same = 1;
        for (int k = 0; k < IOT_KB_MOTIF && same; k++)
            same = (k == ELEMENT_TYPE && strcmp(sig->motif[k], "unknown") == 0) ||
                   strcmp(e->motif[k] ? e->motif[k] : "unknown", sig->motif[k]) == 0;
        if (!same)
            continue;
        /* an element type known on one side only: half its weight, as the distance adds */
        int lenient = strcmp(sig->motif[ELEMENT_TYPE], "unknown") == 0 && e->motif[ELEMENT_TYPE] &&
                      strcmp(e->motif[ELEMENT_TYPE], "unknown") != 0;
        double d = lenient * ELEMENT_TYPE_WEIGHT / 2 +
                   SCALE_WEIGHT * (doublings(e->ranks, sig->ranks) +
                                   doublings(e->transfer_median, sig->transfer_median) +
                                   doublings(e->bytes, sig->bytes));
        d = round(d * 1e4) / 1e4; /* as Python rounds it: ties compare equal */
        double speedup = e->speedup > 0 ? e->speedup : 0;
        if (best < 0 || d < best_d || (d == best_d && speedup > best_speedup)) {
            best = i;
            best_d = d;
            best_speedup = speedup;
        }
    }
    if (distance)
        *distance = best_d;
    return best;
}
