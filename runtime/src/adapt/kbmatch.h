/* The knowledge base as the adaptive mode reads it: the motif signature of a phase from its
 * insights, with the definition of iotune.kb.signature (motif_of, version 2; shared test vectors
 * tests/vectors/kb/signature.json hold both to it), an exported knowledge base (`iotune kb
 * export`) parsed, and the stored entry of the same motif nearest in scale, as
 * iotune.kb.match.nearest orders them. No MPI, no HDF5, no file I/O. */
#ifndef IOTUNE_KBMATCH_H
#define IOTUNE_KBMATCH_H

#include <stddef.h>

#include "adapt/phase.h"

#define IOT_KB_SIGNATURE_VERSION 2 /* iotune.kb.signature.VERSION */
#define IOT_KB_EXPORT_SCHEMA "iotune-kb-export"
#define IOT_KB_EXPORT_VERSION 1 /* iotune.kb.store.SCHEMA_VERSION: newer files are refused */
#define IOT_KB_MOTIF 10

/* The motif fields, in the order of iotune.kb.signature.MOTIF_FIELDS. */
extern const char *const iot_kb_motif_names[IOT_KB_MOTIF];

typedef struct {
    const char *motif[IOT_KB_MOTIF];      /* static words, or the insights' own words */
    double ranks, transfer_median, bytes; /* the scale (bytes per file); < 0 unknown */
} iot_kb_signature;

/* The signature of insights (a phase's, or a group's). */
void iot_kb_signature_of(const iot_insights *in, iot_kb_signature *out);

typedef struct {
    char *uid, *study;
    char *motif[IOT_KB_MOTIF];
    double ranks, transfer_median, bytes, speedup; /* < 0 unknown; bytes per file */
    int version, improved, nsettings;
    char **names, **values; /* the recommended settings, as a control file writes them */
    int *lines;             /* each setting's line in the file */
} iot_kb_entry;

typedef struct {
    iot_kb_entry *entries;
    int n;
} iot_kb;

/* An export's text into kb: 0, or -1 with the reason (line, or entry number) in err; kb is then
 * empty. */
int iot_kb_parse(const char *text, size_t len, iot_kb *kb, char *err, size_t errlen);
void iot_kb_free(iot_kb *kb);

/* A stored signature (the JSON object) checked as `iotune kb import` checks its key (kbkey.c):
 * 0 when it has none or its motif's; else -1 with why in err. */
struct iot_json;
int iot_kb_key_check(const struct iot_json *sig, char *err, size_t errlen);

/* The entry to apply to a phase of signature sig: of the same signature version and motif (a
 * motif field of iotune.kb.signature.LENIENT_FIELDS, the element type, is not compared when the
 * phase does not know it: the adaptive mode's insights never do),
 * an improvement with settings, nearest in scale (then the highest speedup, then the first);
 * -1 when none. *distance: its distance (iotune.kb.signature.distance without the platform,
 * which the runtime does not know). */
int iot_kb_nearest(const iot_kb *kb, const iot_kb_signature *sig, double *distance);

#endif
