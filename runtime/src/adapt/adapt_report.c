/* The profile's "adaptive" section (docs/profile.md): per phase its role (learning, optimised,
 * default), the rules that fired, the settings they applied, the guard's verdict, the overhead
 * split, the insights; then the prediction's section (adapt_predict.c). */
#include <string.h>

#include "adapt/adapt.h"
#include "adapt/adapt_state.h"
#include "config/json.h"
#include "core/core.h"

static void write_codes(FILE *f, uint64_t mask)
{
    fputc('[', f);
    int n = 0;
    for (int r = 0; r < IOT_RULE_COUNT; r++)
        if (mask >> r & 1) {
            fputs(n++ ? ", " : "", f);
            iot_json_string(f, iot_rules[r].code);
        }
    if (mask & IOT_KB_MASK)
        fputs(n ? ", \"KB\"" : "\"KB\"", f);
    fputc(']', f);
}

static void write_insights(FILE *f, const iot_insights *in)
{
    fputc('{', f);
    for (int i = 0; i < IOT_I_COUNT; i++) {
        fputs(i ? ", " : "", f);
        iot_json_string(f, iot_insight_names[i]);
        fputs(": ", f);
        if (!in->v[i].known)
            fputs("null", f);
        else if (in->v[i].word)
            iot_json_string(f, in->v[i].word);
        else
            fprintf(f, "%.17g", in->v[i].number);
    }
    fputc('}', f);
}

/* Why the unknown insights are unknown, where the runtime knows: {name: text}. */
static void write_unknown_why(FILE *f, const iot_insights *in)
{
    fputc('{', f);
    for (int i = 0, n = 0; i < IOT_I_COUNT; i++)
        if (!in->v[i].known && in->why[i]) {
            fputs(n++ ? ", " : "", f);
            iot_json_string(f, iot_insight_names[i]);
            fputs(": ", f);
            iot_json_string(f, in->why[i]);
        }
    fputc('}', f);
}

/* The settings a phase's rules gave it (those a control file left to the rules). */
static const iot_adapt_class *class_of(const iot_phase_log *lg)
{
    for (int c = 0; c < iot_adapt_nclasses; c++)
        if (strcmp(iot_adapt_classes[c].name, lg->cls) == 0)
            return &iot_adapt_classes[c];
    return NULL;
}

static void write_applied(FILE *f, const iot_phase_log *lg)
{
    const iot_adapt_class *k = class_of(lg);
    fputc('[', f);
    int n = 0;
    for (int r = 0; r < IOT_RULE_COUNT; r++) {
        if (!(lg->applied >> r & 1))
            continue;
        for (int j = 0; j < iot_rules[r].nsettings; j++) {
            const iot_rule_setting *s = &iot_rules[r].settings[j];
            const char *name = iot_params[s->param].name;
            char buf[64];
            const char *text = k ? iot_adapt_setting_text(k, s, buf, sizeof buf) : s->value;
            if (!text || iot_adapt_control_sets(&iot_g.settings, s->param, name) ||
                (k && (lg->applied & IOT_KB_MASK) && iot_adapt_kb_sets(k, s->param)))
                continue;
            fputs(n++ ? ", " : "", f);
            fputs("{\"rule\": ", f);
            iot_json_string(f, iot_rules[r].code);
            fputs(", \"name\": ", f);
            iot_json_string(f, name);
            fputs(", \"value\": ", f);
            iot_json_string(f, text);
            fputc('}', f);
        }
    }
    if (lg->applied & IOT_KB_MASK)
        iot_adapt_kb_write_applied(f, k, &n);
    fputc(']', f);
}

void iot_adapt_write_json(FILE *f)
{
    if (!iot_adapt_on)
        return;
    pthread_mutex_lock(&iot_adapt_lock);
    fprintf(f,
            "\"adaptive\": {\"mode\": \"adaptive\", \"insights_version\": %d, \"guard_ratio\": "
            "%.2f, \"guard_strikes\": %d, \"dropped_phases\": %d, \"phases\": [",
            IOT_INSIGHTS_VERSION, IOT_GUARD_RATIO, IOT_GUARD_STRIKES, iot_adapt_dropped);
    for (int i = 0; i < iot_adapt_nlog; i++) {
        const iot_phase_log *lg = iot_adapt_log[i];
        double bps = lg->busy > 0 ? lg->bytes / lg->busy : 0;
        fputs(i ? ", {\"class\": " : "{\"class\": ", f);
        iot_json_string(f, lg->cls);
        fputs(", \"file\": ", f);
        iot_json_string(f, lg->file);
        fprintf(f,
                ", \"index\": %d, \"role\": \"%s\", \"ranks\": %d, \"elapsed_s\": %.9f, "
                "\"transfer_s\": %.9f, \"busy_s\": %.9f, "
                "\"bytes\": %.0f, \"bytes_per_s\": %.1f, \"fired\": ",
                lg->index,
                lg->idle       ? "no data"
                : lg->learning ? "learning"
                : lg->applied  ? "optimised"
                               : "default",
                lg->ranks, lg->elapsed, lg->transfer, lg->busy, lg->bytes, bps);
        write_codes(f, lg->fired);
        fputs(", \"offline\": ", f);
        write_codes(f, lg->offline);
        fputs(", \"applied\": ", f);
        write_applied(f, lg);
        fputs(", \"guard\": ", f);
        if (!lg->learning && lg->applied && !lg->idle && lg->unlike) {
            fputs("{\"ratio\": null, \"slow\": false, \"reverted\": [], \"unlike\": ", f);
            iot_json_string(f, lg->unlike == IOT_UNLIKE_POSTED ? "nonblocking"
                                                               : iot_adapt_mix(&lg->in));
            fputc('}', f);
        } else if (!lg->learning && lg->applied && !lg->idle) {
            fprintf(f, "{\"ratio\": %.4f, \"slow\": %s, \"reverted\": ", lg->ratio,
                    lg->slow ? "true" : "false");
            write_codes(f, lg->reverted);
            fputc('}', f);
        } else {
            fputs("null", f);
        }
        fprintf(f,
                ", \"overhead_s\": {\"extraction\": %.9f, \"optimisation\": %.9f, \"wait\": "
                "%.9f}",
                lg->extract_s, lg->optimise_s, lg->wait_s);
        if (lg->learning && !lg->idle) {
            fputs(", \"kb\": ", f);
            iot_adapt_kb_write(f, lg);
        }
        if (lg->relearned_from)
            fprintf(f, ", \"relearned_from_ranks\": %d", lg->relearned_from);
        if (lg->fewer && !lg->idle)
            fputs(", \"fewer_ranks\": true", f);
        fputs(", \"insights\": ", f);
        write_insights(f, &lg->in);
        fputs(", \"unknown_why\": ", f);
        write_unknown_why(f, &lg->in);
        fputc('}', f);
    }
    fputc(']', f);
    iot_adapt_write_predictions(f);
    fputs("}, ", f);
    pthread_mutex_unlock(&iot_adapt_lock);
}
