/* The adaptive mode reading an exported knowledge base (IOTUNE_ADAPT_KB, `iotune kb export`):
 * at a class's learning phase the phase's motif signature (kbmatch.c, the definition of
 * iotune.kb.signature) is matched against the stored entries, and the settings of the nearest
 * entry of the same motif are given to the class's later phases like a rule's (the IOT_KB_BIT
 * of the class's rules: agreed at the open, judged and reverted by the guard), but those it must
 * not apply (left_out). Loaded once, on first use; a file that cannot be read or is not an
 * export is said once and left out. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adapt/adapt_state.h"
#include "base/env.h"
#include "config/json.h"
#include "config/settings.h"
#include "config/values.h"
#include "core/core.h"

/* Every rank parses the whole file (about 8 bytes of memory per byte of it): 16 MiB, some
 * 10,000 entries, keeps that near 130 MB a rank. */
#define MAX_KB_BYTES (16 << 20)

static iot_kb kb;
static int kb_state; /* 0 not read yet, 1 read, -1 unusable (said once) */

static void load(void)
{
    kb_state = -1;
    char err[300] = "";
    size_t n = 0;
    char *text = iot_read_regular(iot_env.adapt_kb, MAX_KB_BYTES, &n, err, sizeof err);
    if (text && iot_kb_parse(text, n, &kb, err, sizeof err) == 0)
        kb_state = 1;
    free(text);
    if (kb_state < 0 && !err[0]) /* an allocation refused (ulimit -v) says nothing itself */
        snprintf(err, sizeof err, "not enough memory to read it");
    if (kb_state < 0)
        iot_warn_once("adapt-kb", "IOTUNE_ADAPT_KB=%s: %s; the adaptive mode goes on without it",
                      iot_env.adapt_kb, err);
}

void iot_adapt_kb_learn(iot_adapt_class *k, iot_phase_log *lg)
{
    k->kb_entry = lg->kb_entry = -1;
    if (!iot_env.adapt_kb)
        return;
    if (!kb_state)
        load();
    lg->kb_looked = 1;
    if (kb_state < 0)
        return;
    iot_kb_signature sig;
    iot_kb_signature_of(&lg->in, &sig);
    k->kb_entry = lg->kb_entry = iot_kb_nearest(&kb, &sig, &lg->kb_distance);
    if (k->kb_entry >= 0) {
        k->fired |= IOT_KB_MASK;
        lg->fired |= IOT_KB_MASK;
    }
}

/* Why the adaptive mode leaves setting i of entry index out, or NULL: then *param is its
 * parameter and *v its value. Chunk dimensions describe the stored study's datasets, not this
 * application's: the entry matched by its motif, not by its datasets' shapes, and a shape taken
 * from another program can be absurd here (1x1 chunks of a 10^6-element dataset); a chunk size
 * in bytes (chunk_size) is derived from each dataset's own shape. A parameter that params.tsv
 * says is offline advice only (transfer_mode: a rule proposing it is never applied online
 * either) is left out too. A parameter params.tsv guards by a rule (fill_time=never keeps the
 * data only when every element is written: IOT-1's fully_written) is left out where that rule
 * does not hold on `in`, the class's learning phase's insights, as the rule itself would be.
 * Those three are said in the profile's not_applied; a name that is not a parameter and a
 * value the registry refuses (chunk_size=1, below its minimum) also once on stderr, with the
 * file, the entry and its line. */
static const char *guard_fails(const char *name, const iot_insights *in, char *buf, size_t len)
{
    for (int k = 0; iot_params_guarded[k].name; k++) {
        if (strcmp(iot_params_guarded[k].name, name) != 0)
            continue;
        const char *code = iot_params_guarded[k].rule;
        char term[200];
        for (int r = 0; r < IOT_RULE_COUNT; r++)
            if (strcmp(iot_rules[r].code, code) == 0) {
                if (iot_rule_failing(&iot_rules[r], in, term, sizeof term) < 0)
                    return NULL;
                return snprintf(buf, len, "only where rule %s holds: %s", code, term), buf;
            }
        return snprintf(buf, len, "only where rule %s holds, which the runtime lacks", code), buf;
    }
    return NULL;
}

static const char *left_out(int index, int i, const iot_insights *in, int *param, iot_value *v,
                            char *buf, size_t len)
{
    const iot_kb_entry *e = &kb.entries[index];
    const char *name = e->names[i];
    if (strcmp(name, iot_params[IOT_P_CHUNK].name) == 0)
        return "the stored study's dataset shapes, not this program's";
    for (int k = 0; iot_params_offline[k].name; k++)
        if (strcmp(iot_params_offline[k].name, name) == 0)
            return snprintf(buf, len, "offline advice only: %s", iot_params_offline[k].why), buf;
    char err[256] = "not a parameter of the registry";
    *param = -1;
    for (int k = 0; k < IOT_P_COUNT && *param < 0; k++)
        if (strcmp(iot_params[k].name, name) == 0)
            *param = k;
    if (*param >= 0 && iot_value_parse(&iot_params[*param], e->values[i], v, err, sizeof err) == 0)
        return guard_fails(name, in, buf, len);
    char shown[IOT_SHOWN_MAX];
    snprintf(buf, len, "%s", err);
    iot_warn_once(
        "adapt-kb-value", "IOTUNE_ADAPT_KB=%s: entry %d (line %d): %s=%s: %s; not applied",
        iot_env.adapt_kb, index, e->lines[i], name, iot_value_shown(e->values[i], shown), err);
    return buf;
}

int iot_adapt_kb_settings(const iot_adapt_class *k, iot_entry *out, const iot_settings *control)
{
    if (k->kb_entry < 0 || kb_state <= 0 || !(iot_adapt_active(k) & IOT_KB_MASK))
        return 0;
    const iot_kb_entry *e = &kb.entries[k->kb_entry];
    int n = 0;
    for (int i = 0; i < e->nsettings; i++) {
        int param;
        iot_value v;
        char why[300];
        if (left_out(k->kb_entry, i, &k->learned, &param, &v, why, sizeof why) ||
            iot_adapt_control_sets(control, param, iot_params[param].name))
            continue;
        if (out) {
            const iot_param_def *def = &iot_params[param];
            out[n].value = v;
            out[n].param = param;
            out[n].line = -1; /* iot_origin: "adaptive mode" */
            out[n].layer = def->layer;
            snprintf(out[n].name, sizeof out[n].name, "%s", def->name);
            memcpy(out[n].file_pat, k->name, sizeof out[n].file_pat);
        }
        n++;
    }
    return n;
}

int iot_adapt_kb_sets(const iot_adapt_class *k, int param)
{
    if (k->kb_entry < 0 || kb_state <= 0)
        return 0;
    const iot_kb_entry *e = &kb.entries[k->kb_entry];
    for (int i = 0; i < e->nsettings; i++) { /* a setting left out sets nothing */
        int p;
        iot_value v;
        char why[300];
        if (strcmp(e->names[i], iot_params[param].name) == 0 &&
            !left_out(k->kb_entry, i, &k->learned, &p, &v, why, sizeof why))
            return 1;
    }
    return 0;
}

void iot_adapt_kb_write_applied(FILE *f, const iot_adapt_class *k, int *n)
{
    if (!k || k->kb_entry < 0 || kb_state <= 0)
        return;
    const iot_kb_entry *e = &kb.entries[k->kb_entry];
    for (int i = 0; i < e->nsettings; i++) {
        int param;
        iot_value v;
        char why[300];
        if (left_out(k->kb_entry, i, &k->learned, &param, &v, why, sizeof why) ||
            iot_adapt_control_sets(&iot_g.settings, param, e->names[i]))
            continue; /* not applied: as the settings set leaves it */
        fputs((*n)++ ? ", {\"rule\": \"KB\", \"name\": " : "{\"rule\": \"KB\", \"name\": ", f);
        iot_json_string(f, e->names[i]);
        fputs(", \"value\": ", f);
        iot_json_string(f, e->values[i]);
        fputc('}', f);
    }
}

void iot_adapt_kb_write(FILE *f, const iot_phase_log *lg)
{
    if (!lg->kb_looked) {
        fputs("null", f);
        return;
    }
    iot_kb_signature sig;
    iot_kb_signature_of(&lg->in, &sig);
    fputs("{\"file\": ", f);
    iot_json_string(f, iot_env.adapt_kb);
    fprintf(f, ", \"entries\": %d, \"signature_version\": %d, \"motif\": {", kb.n,
            IOT_KB_SIGNATURE_VERSION);
    for (int i = 0; i < IOT_KB_MOTIF; i++) {
        fputs(i ? ", " : "", f);
        iot_json_string(f, iot_kb_motif_names[i]);
        fputs(": ", f);
        iot_json_string(f, sig.motif[i]);
    }
    fputs("}, \"match\": ", f);
    if (lg->kb_entry < 0 || kb_state <= 0) {
        fputs(kb_state < 0 ? "null, \"error\": \"unusable (see the warning)\"}" : "null}", f);
        return;
    }
    const iot_kb_entry *e = &kb.entries[lg->kb_entry];
    fputs("{\"uid\": ", f);
    iot_json_string(f, e->uid ? e->uid : "");
    fputs(", \"study\": ", f);
    iot_json_string(f, e->study ? e->study : "");
    fprintf(f, ", \"index\": %d, \"distance\": %.4f, \"speedup\": ", lg->kb_entry, lg->kb_distance);
    if (e->speedup > 0)
        fprintf(f, "%.4f", e->speedup);
    else
        fputs("null", f);
    fputs(", \"not_applied\": [", f);
    int n = 0;
    for (int i = 0; i < e->nsettings; i++) {
        int param;
        iot_value v;
        char buf[300];
        const char *why = left_out(lg->kb_entry, i, &lg->in, &param, &v, buf, sizeof buf);
        if (!why)
            continue;
        fputs(n++ ? ", {\"name\": " : "{\"name\": ", f);
        iot_json_string(f, e->names[i]);
        fputs(", \"value\": ", f);
        iot_json_string(f, e->values[i]);
        fputs(", \"why\": ", f);
        iot_json_string(f, why);
        fputc('}', f);
    }
    fputs("]}}", f);
}
