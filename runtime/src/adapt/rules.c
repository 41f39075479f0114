#include "adapt/rules.h"

#include <stdio.h>
#include <string.h>

/* a == b, a < b, ... for numbers; words only compare for (in)equality */
static int compare(const iot_insight *a, iot_op op, const iot_insight *b)
{
    if (!a->word && !b->word) {
        double x = a->number, y = b->number;
        switch (op) {
        case IOT_OP_EQ: return x == y;
        case IOT_OP_NE: return x != y;
        case IOT_OP_LT: return x < y;
        case IOT_OP_LE: return x <= y;
        case IOT_OP_GT: return x > y;
        case IOT_OP_GE: return x >= y;
        }
        return 0;
    }
    char nx[64], ny[64];
    const char *x = a->word, *y = b->word;
    if (!x)
        snprintf(nx, sizeof nx, "%.17g", a->number), x = nx;
    if (!y)
        snprintf(ny, sizeof ny, "%.17g", b->number), y = ny;
    if (op == IOT_OP_EQ)
        return strcmp(x, y) == 0;
    if (op == IOT_OP_NE)
        return strcmp(x, y) != 0;
    return 0;
}

static int term_holds(const iot_rule_term *term, const iot_insights *in)
{
    const iot_insight *left = &in->v[term->insight];
    if (!left->known)
        return 0;
    int any = 0, all = 1;
    for (int k = 0; k < term->nvalues; k++) {
        const iot_rule_value *v = &term->values[k];
        iot_insight right = {1, v->number, v->word};
        if (v->is_insight) {
            right = in->v[v->insight];
            if (!right.known)
                return 0;
        }
        int c = compare(left, term->op == IOT_OP_NE ? IOT_OP_NE : term->op, &right);
        any |= c;
        all &= c;
        if (term->op != IOT_OP_EQ && term->op != IOT_OP_NE)
            break; /* an order takes one value */
    }
    return term->op == IOT_OP_NE ? all : any;
}

int iot_rule_holds(const iot_rule_def *r, const iot_insights *in)
{
    for (int t = 0; t < r->nterms; t++)
        if (!term_holds(&r->terms[t], in))
            return 0;
    return 1;
}

static void shown(char *buf, size_t len, const char *word, double number)
{
    if (word)
        snprintf(buf, len, "%s", word);
    else
        snprintf(buf, len, "%.17g", number);
}

int iot_rule_failing(const iot_rule_def *r, const iot_insights *in, char *buf, size_t len)
{
    static const char *const ops[] = {"==", "!=", "<", "<=", ">", ">="};
    for (int t = 0; t < r->nterms; t++) {
        const iot_rule_term *term = &r->terms[t];
        if (term_holds(term, in))
            continue;
        char want[160] = "", v[64], here[64] = "unknown";
        size_t used = 0;
        for (int k = 0; k < term->nvalues && used + 1 < sizeof want; k++) {
            const iot_rule_value *x = &term->values[k];
            if (x->is_insight)
                snprintf(v, sizeof v, "%s", iot_insight_names[x->insight]);
            else
                shown(v, sizeof v, x->word, x->number);
            used += (size_t)snprintf(want + used, sizeof want - used, "%s%s", k ? "|" : "", v);
        }
        const iot_insight *left = &in->v[term->insight];
        if (left->known)
            shown(here, sizeof here, left->word, left->number);
        snprintf(buf, len, "%s %s %s (here %s)", iot_insight_names[term->insight], ops[term->op],
                 want, here);
        return t;
    }
    return -1;
}

const char *iot_rule_setting_text(const iot_rule_setting *s, const iot_insights *in, char *buf,
                                  size_t len)
{
    if (s->value)
        return s->value;
    const iot_insight *v = &in->v[s->from_insight];
    if (!v->known)
        return NULL;
    if (v->word)
        snprintf(buf, len, "%s", v->word);
    else
        snprintf(buf, len, "%lld", (long long)v->number);
    return buf;
}
