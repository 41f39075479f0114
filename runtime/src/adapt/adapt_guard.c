/* The adaptive mode's learning and guard: a class's first phase decides the online rules that
 * hold on its insights; each later phase that applied them is compared with the learning phase,
 * and the rules are reverted for the phases after IOT_GUARD_STRIKES slower ones in a row. A phase
 * that moved data another way than the learning phase (it read where that one wrote) is not
 * compared: its rate would judge the settings against unlike work. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adapt/adapt_state.h"
#include "base/env.h"
#include "core/core.h"

static int slow_rule = -1; /* IOTUNE_TEST_SLOW_RULE: a rule whose phases look slower */
static double slow_factor = 1;

static int rule_index(const char *code)
{
    if (strcmp(code, "KB") == 0)
        return IOT_KB_BIT;
    for (int i = 0; i < IOT_RULE_COUNT; i++)
        if (strcmp(iot_rules[i].code, code) == 0)
            return i;
    return -1;
}

void iot_adapt_guard_init(void)
{
    if (!iot_env.slow_rule) /* "CODE" or "CODE:FACTOR" */
        return;
    char code[32];
    snprintf(code, sizeof code, "%s", iot_env.slow_rule);
    char *colon = strchr(code, ':');
    if (colon) {
        *colon = '\0';
        slow_factor = atof(colon + 1);
    } else {
        slow_factor = 10;
    }
    slow_rule = rule_index(code);
    if (slow_rule < 0 || slow_factor <= 0)
        iot_warn_once("slow-rule", "IOTUNE_TEST_SLOW_RULE=%s: no such rule or factor; ignored",
                      iot_env.slow_rule);
}

double iot_adapt_test_seconds(uint64_t applied, double seconds)
{
    if (slow_rule >= 0 && slow_factor > 0 && (applied >> slow_rule & 1)) /* see env.c */
        return seconds * slow_factor;
    return seconds;
}

int iot_adapt_fit(const iot_adapt_class *k, int ranks)
{
    if (!k || k->learn_ranks == 0 || k->learn_ranks == ranks)
        return IOT_FIT_SAME;
    return ranks > k->learn_ranks ? IOT_FIT_MORE : IOT_FIT_FEWER;
}

/* The offline-only setting rules that hold on a phase's insights: advice `iotune advise` and
 * `iotune tune` would give, said so that a setting the mode cannot apply is not silently
 * missing (on every phase with data: a class's later phases may meet one its learning phase
 * did not). */
static uint64_t offline_rules(const iot_insights *in)
{
    uint64_t m = 0;
    for (int r = 0; r < IOT_RULE_COUNT; r++)
        if (!iot_rules[r].online && iot_rules[r].kind == IOT_RULE_SETTING &&
            iot_rules[r].nsettings > 0 && iot_rule_holds(&iot_rules[r], in))
            m |= (uint64_t)1 << r;
    return m;
}

static const char *mix_of(const iot_insights *in)
{
    const iot_insight *v = &in->v[IOT_I_IO_MIX];
    return v->known && v->word ? v->word : "";
}

/* Whether a phase moved data the way its class's learning phase did (writes, reads or both):
 * only then are their rates comparable. */
static int same_mix(const iot_adapt_class *k, const iot_phase_log *lg)
{
    return strcmp(mix_of(&k->learned), mix_of(&lg->in)) == 0;
}

const char *iot_adapt_mix(const iot_insights *in)
{
    return mix_of(in);
}

/* The measure is bytes per second of the slowest rank's time in the outermost layer's transfers
 * and metadata calls: the dataset creation, where parallel HDF5 writes the fill values, counts
 * (IOT-1 acts there); the time between the calls (the application's own work) does not.
 * A phase that moved no data (a file created or truncated before it is written, its size asked
 * through an open of its own) has no insights to learn from and no rate to judge: it is left
 * out of the class's count, so that the class learns from its first phase with data. */
void iot_adapt_judge(iot_adapt_class *k, uint64_t applied, iot_phase_log *lg, double bytes,
                     double seconds)
{
    if (bytes <= 0) {
        lg->idle = 1;
        return;
    }
    lg->offline = offline_rules(&lg->in);
    double bps = seconds > 0 ? bytes / seconds : 0;
    if (lg->learning) {
        if (k->learn_ranks > 0) { /* a phase on more ranks replaces the learning phase */
            lg->relearned_from = k->learn_ranks;
            k->fired = k->reverted = 0;
            k->strikes = 0;
            k->kb_entry = -1;
        }
        k->learn_ranks = lg->ranks;
        k->learn_bps = bps;
        k->learn_posted = lg->posted;
        iot_insights_copy(&k->learned, &lg->in);
        for (int r = 0; r < IOT_RULE_COUNT; r++)
            if (iot_rules[r].online && iot_rules[r].kind == IOT_RULE_SETTING &&
                iot_rules[r].nsettings > 0 && iot_rule_holds(&iot_rules[r], &lg->in))
                k->fired |= (uint64_t)1 << r;
        lg->fired = k->fired;
        iot_adapt_kb_learn(k, lg);
    } else if (applied && !lg->fewer && k->learn_bps > 0 && (lg->posted || k->learn_posted)) {
        lg->unlike = IOT_UNLIKE_POSTED; /* the wait is not timed: their rate is the posting's */
    } else if (applied && !lg->fewer && k->learn_bps > 0 && !same_mix(k, lg)) {
        lg->unlike = IOT_UNLIKE_MIX; /* a read phase's rate says nothing of the writes learned */
    } else if (applied && !lg->fewer && k->learn_bps > 0) {
        lg->ratio = bps / k->learn_bps;
        lg->slow = lg->ratio < IOT_GUARD_RATIO;
        k->strikes = lg->slow ? k->strikes + 1 : 0;
        if (k->strikes >= IOT_GUARD_STRIKES) {
            lg->reverted = applied & ~k->reverted;
            k->reverted |= applied;
            k->strikes = 0;
        }
    }
    k->phases++;
}
