/* What a setting costs and whether it fits (bounds.h); the rows come from costs.tsv. */
#include "config/bounds.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "costs_gen.h"

const iot_cost_def *iot_cost_of(int param)
{
    if (param < 0 || param >= IOT_P_COUNT || iot_costs[param].resource == IOT_RES_NONE)
        return NULL;
    return &iot_costs[param];
}

double iot_cost(int param, const iot_value *v, double elem)
{
    const iot_cost_def *c = iot_cost_of(param);
    if (!c || v->n <= 0)
        return 0;
    double units = 1;
    if (c->item < 0) {
        for (int i = 0; i < v->n; i++)
            units *= (double)v->v[i];
        units *= elem > 0 ? elem : 1;
    } else {
        units = c->item < v->n ? (double)v->v[c->item] : 0;
    }
    return units * c->factor;
}

const char *iot_format_bytes(double n, char *buf, size_t len)
{
    static const char *units[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    if (n < 1024) {
        snprintf(buf, len, "%.0f bytes", n);
        return buf;
    }
    int u = -1;
    while (n >= 1024 && u < 5) {
        n /= 1024;
        u++;
    }
    /* beyond a million EiB (chunk dimensions multiplied out): three digits are enough */
    snprintf(buf, len, n >= 1e6 ? "%.3g %s" : n == floor(n) ? "%.0f %s" : "%.1f %s", n, units[u]);
    return buf;
}

int iot_bounds_exceeds(int param, const char *name, const char *value, double cost,
                       const iot_budget *b, char *why, size_t len)
{
    const iot_cost_def *c = iot_cost_of(param);
    if (!c)
        return 0;
    int mem = c->resource == IOT_RES_MEMORY;
    double budget = mem ? b->memory : b->disk;
    if (budget < 0 || cost <= budget / c->share)
        return 0;
    char what[48], whole[48];
    snprintf(why, len,
             "%s=%s would cost %s of %s per %s%s (%s), more than 1/%.0f of %s (%s): withdrawn",
             name, value, iot_format_bytes(cost, what, sizeof what), mem ? "memory" : "disk space",
             mem ? "open " : "", c->per, c->why, c->share,
             iot_format_bytes(budget, whole, sizeof whole), mem ? b->memory_what : b->disk_what);
    return 1;
}

int iot_bounds_total_exceeds(const char *name, const char *value, double cost, double total,
                             const iot_budget *b, char *why, size_t len)
{
    if (b->memory < 0 || total <= b->memory / IOT_FILE_TOTAL_SHARE)
        return 0;
    char one[48], sum[48], whole[48];
    if (why)
        snprintf(why, len,
                 "%s=%s (%s) withdrawn: the file's buffers would cost %s of memory together per "
                 "open file, more than 1/%d of %s (%s)",
                 name, value, iot_format_bytes(cost, one, sizeof one),
                 iot_format_bytes(total, sum, sizeof sum), IOT_FILE_TOTAL_SHARE,
                 iot_format_bytes(b->memory, whole, sizeof whole), b->memory_what);
    return 1;
}

const char *iot_bounds_brief(const char *why, char *buf, size_t len)
{
    const char *start = strstr(why, " would cost "), *open = start ? strstr(start, " (") : NULL;
    const char *close = open ? strstr(open, "), more than ") : NULL;
    size_t end = strlen(why), tail = strlen(": withdrawn");
    if (!close || end < tail || strcmp(why + end - tail, ": withdrawn") != 0) {
        snprintf(buf, len, "%s", why);
        return buf;
    }
    snprintf(buf, len, "%.*s%.*s", (int)(open - start - 1), start + 1,
             (int)(why + end - tail - close - 1), close + 1);
    return buf;
}
