/* The adaptive mode's prediction (SmartIO Sec. 3.2): this rank's call stream (phase opens, data
 * calls by layer and size, closes) feeds an online Sequitur grammar (grammar.c); at a phase's
 * open the grammar predicts its calls, which are compared with the calls that come, and the
 * accuracy per phase goes into the profile. */
#include <stdlib.h>
#include <string.h>

#include "adapt/adapt.h"
#include "adapt/adapt_state.h"
#include "adapt/grammar.h"
#include "config/json.h"
#include "core/core.h"

#define PREDICT_MAX 4096 /* calls predicted per phase */
#define MAX_PREDICTIONS 256

/* The prediction of a phase in progress, per capture record (capture lock held). */
typedef struct {
    uint32_t pred[PREDICT_MAX];
    size_t n, pos;
    uint64_t matched, actual;
    uint32_t close_sig;
    char cls[IOT_CLASS_MAX];
} prediction;

typedef struct {
    char cls[IOT_CLASS_MAX], file[IOT_REC_NAME];
    uint64_t predicted, actual, matched;
} prediction_log;

static iot_grammar *grammar; /* this rank's call stream */
static prediction *predictions[IOT_MAX_FILES];
static prediction_log *pred_log[MAX_PREDICTIONS];
static int npred_log;
static double predict_s; /* time in the grammar and the predictions */
static uint64_t stream_calls;

static uint32_t signature(const char *what, const char *cls, uint64_t a, uint64_t b)
{
    uint64_t h = 1469598103934665603ULL;
    for (const char *s = what; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    for (const char *s = cls; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    h = (h ^ a) * 1099511628211ULL;
    h = (h ^ b) * 1099511628211ULL;
    return (uint32_t)(h ^ (h >> 32)) & 0x7fffffffu;
}

static void stream_add(uint32_t sig)
{
    if (!grammar && !(grammar = iot_grammar_new()))
        return;
    stream_calls++;
    iot_grammar_add(grammar, sig); /* a full grammar stops growing; predictions go on */
}

/* The phase's calls after sig: the most used rule that starts with the current symbol,
 * expanded, then again from its last symbol, until the close or PREDICT_MAX. */
static size_t predict_phase(uint32_t sig, uint32_t close_sig, uint32_t *out)
{
    size_t n = 0;
    uint32_t cur = sig;
    for (int round = 0; round < 64 && n < PREDICT_MAX; round++) {
        size_t k = iot_grammar_predict(grammar, cur, out + n, PREDICT_MAX - n);
        if (!k)
            break;
        for (size_t i = 0; i < k; i++)
            if (out[n + i] == close_sig)
                return n + i + 1;
        n += k;
        cur = out[n - 1];
    }
    return n;
}

void iot_adapt_phase_begin(int rec, const char *name)
{
    double t = iot_now();
    char cls[IOT_CLASS_MAX];
    if (rec < 0 || rec >= IOT_MAX_FILES || !iot_phase_class(name, cls, sizeof cls))
        return;
    uint32_t sig = signature("open", cls, 0, 0);
    stream_add(sig);
    prediction *p = predictions[rec];
    if (!p && !(p = predictions[rec] = malloc(sizeof *p)))
        return;
    p->pos = p->matched = p->actual = 0;
    p->close_sig = signature("close", cls, 0, 0);
    memcpy(p->cls, cls, sizeof cls);
    p->n = grammar ? predict_phase(sig, p->close_sig, p->pred) : 0;
    predict_s += iot_now() - t;
}

static void compare(prediction *p, uint32_t sig)
{
    if (p->pos < p->n)
        p->matched += p->pred[p->pos++] == sig;
    p->actual++;
}

void iot_adapt_call(int rec, int layer, int is_write, uint64_t bytes)
{
    double t = iot_now();
    uint32_t sig = signature(is_write ? "write" : "read", "", (uint64_t)layer, bytes);
    stream_add(sig);
    if (rec >= 0 && rec < IOT_MAX_FILES && predictions[rec])
        compare(predictions[rec], sig);
    predict_s += iot_now() - t;
}

void iot_adapt_phase_end(int rec)
{
    if (rec < 0 || rec >= IOT_MAX_FILES || !predictions[rec])
        return;
    double t = iot_now();
    prediction *p = predictions[rec];
    stream_add(p->close_sig);
    compare(p, p->close_sig);
    prediction_log *lg = npred_log < MAX_PREDICTIONS ? calloc(1, sizeof *lg) : NULL;
    if (lg) {
        memcpy(lg->cls, p->cls, sizeof lg->cls);
        snprintf(lg->file, sizeof lg->file, "%s", iot_rec(rec)->name);
        lg->predicted = p->n;
        lg->actual = p->actual;
        lg->matched = p->matched;
        pred_log[npred_log++] = lg;
    }
    free(p);
    predictions[rec] = NULL;
    predict_s += iot_now() - t;
}

void iot_adapt_write_predictions(FILE *f)
{
    fprintf(f, ", \"prediction\": {\"calls\": %llu, \"seconds\": %.9f, ",
            (unsigned long long)stream_calls, predict_s);
    fprintf(f, "\"grammar\": {\"symbols\": %zu, \"rules\": %d, \"full\": %s}, \"phases\": [",
            grammar ? iot_grammar_symbols(grammar) : 0, grammar ? iot_grammar_rules(grammar) : 0,
            grammar && iot_grammar_full(grammar) ? "true" : "false");
    for (int i = 0; i < npred_log; i++) {
        const prediction_log *lg = pred_log[i];
        fputs(i ? ", {\"class\": " : "{\"class\": ", f);
        iot_json_string(f, lg->cls);
        fputs(", \"file\": ", f);
        iot_json_string(f, lg->file);
        fprintf(f, ", \"predicted\": %llu, \"actual\": %llu, \"matched\": %llu, \"accuracy\": ",
                (unsigned long long)lg->predicted, (unsigned long long)lg->actual,
                (unsigned long long)lg->matched);
        if (lg->predicted)
            fprintf(f, "%.4f}", lg->actual ? (double)lg->matched / (double)lg->actual : 0.0);
        else
            fputs("null}", f);
    }
    fputs("]}", f);
}
