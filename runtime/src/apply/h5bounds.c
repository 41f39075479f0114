/* An HDF5 file's access settings judged against the machine's limits (h5bounds.h). */
#include "apply/h5bounds.h"

#include <stdio.h>
#include <string.h>

#include "apply/apply_mpiio.h"
#include "capture/capture.h"
#include "config/bounds.h"
#include "core/core.h"
#include "platform/budget.h"

int iot_h5_is_mdc(int p)
{
    return p == IOT_P_MDC_INITIAL_SIZE || p == IOT_P_MDC_MIN_SIZE || p == IOT_P_MDC_MAX_SIZE;
}

typedef struct {
    const iot_entry *e[2 * IOT_P_COUNT];
    int n;
} cost_list;

static void gather_hint(void *ctx, const iot_entry *e)
{
    cost_list *l = ctx;
    const iot_cost_def *c = iot_cost_of(e->param);
    if (c && c->resource == IOT_RES_MEMORY && l->n < 2 * IOT_P_COUNT)
        l->e[l->n++] = e;
}

/* What the buffers of l cost together (the three metadata cache sizes are one cache: the
 * largest counts); *largest: the costliest one. */
static double file_total(const cost_list *l, int *largest)
{
    double sum = 0, mdc = 0, top = -1;
    *largest = -1;
    for (int i = 0; i < l->n; i++) {
        double c = iot_cost(l->e[i]->param, &l->e[i]->value, 1);
        if (iot_h5_is_mdc(l->e[i]->param))
            mdc = c > mdc ? c : mdc;
        else
            sum += c;
        if (c > top) {
            top = c;
            *largest = i;
        }
    }
    return sum + mdc;
}

/* The file's buffers together (file access settings still in force and the MPI-IO hints HDF5's
 * MPI_File_open will get, each under its own limit): while they cost more than
 * 1/IOT_FILE_TOTAL_SHARE of the memory budget, the costliest is withdrawn, one message each.
 * The budget is agreed at MPI_Init and the settings are the same on every rank of the file,
 * so every rank withdraws alike. */
void iot_h5_judge_total(iot_file_settings *rules, const char *name, int leader, int *gone,
                        iot_h5_report *r, iot_h5_outcome *out)
{
    iot_budget b = iot_limits_budget();
    cost_list l = {.n = 0};
    for (int p = 0; p < IOT_P_COUNT; p++) {
        const iot_entry *e = iot_resolved_file(rules, p);
        const iot_cost_def *c = iot_cost_of(p);
        if (e && !gone[p] && iot_params[p].target == IOT_TARGET_FAPL && c &&
            c->resource == IOT_RES_MEMORY)
            l.e[l.n++] = e;
    }
    int nfapl = l.n;
    iot_settings_each_hint(&iot_g.settings, name, gather_hint, &l);
    for (int i = nfapl; i < l.n; i++) /* one over its own limit goes by itself at the open */
        if (iot_bounds_exceeds(l.e[i]->param, l.e[i]->name, l.e[i]->value.text,
                               iot_cost(l.e[i]->param, &l.e[i]->value, 1), &b, NULL, 0)) {
            memmove(&l.e[i], &l.e[i + 1], (size_t)(l.n - i - 1) * sizeof l.e[0]);
            l.n--;
            i--;
        }
    int at;
    double total;
    char why[1536];
    while ((total = file_total(&l, &at)) > 0 && at >= 0) {
        const iot_entry *e = l.e[at];
        if (!iot_bounds_total_exceeds(e->name, e->value.text, iot_cost(e->param, &e->value, 1),
                                      total, &b, why, sizeof why))
            break;
        if (at < nfapl) {
            iot_h5_withdraw_costly(e, name, why, leader, r, out);
            gone[e->param] = 1;
            rules->file[e->param] = NULL;
            nfapl--;
        } else {
            char where[96], key[IOT_NAME_MAX + IOT_VALUE_TEXT_MAX + 16];
            snprintf(key, sizeof key, "total:%s=%s", e->name, e->value.text);
            if (leader)
                iot_warn_once(key, "%s: %s [%s]", name, why, iot_origin(e, where, sizeof where));
            iot_rec_withdraw(name, IOT_L_MPIIO, e->name, e->value.text, why);
            iot_mpiio_withdraw_total(name, e->param);
        }
        /* in order: the first of equal costs goes first, as iotune.costs.file_total */
        memmove(&l.e[at], &l.e[at + 1], (size_t)(l.n - at - 1) * sizeof l.e[0]);
        l.n--;
    }
}

/* Marks in gone[] the file access settings that cost more than the machine allows, judged
 * alike on every rank of the file (comm; MPI_COMM_NULL for a serial file): the file access
 * list must be the same on all of them. They are taken out of the file's resolved settings:
 * nothing later (notes on the application's own values, read-back) takes them for asked. */
void iot_h5_judge_fapl(iot_file_settings *rules, const char *name, MPI_Comm comm, int leader,
                       int *gone, iot_h5_report *r, iot_h5_outcome *out)
{
    iot_budget b = iot_limits_budget();
    int mine[IOT_P_COUNT] = {0}, any = 0;
    for (int p = 0; p < IOT_P_COUNT; p++) {
        const iot_entry *e = iot_resolved_file(rules, p);
        if (!e || iot_params[p].target != IOT_TARGET_FAPL || !iot_cost_of(p))
            continue;
        if (!any++)
            iot_limits_disk(name, &b);
        mine[p] =
            iot_bounds_exceeds(p, e->name, e->value.text, iot_cost(p, &e->value, 1), &b, NULL, 0);
    }
    memcpy(gone, mine, sizeof mine);
    /* every rank has the same settings for the file: all of them reduce, or none */
    if (any && comm != MPI_COMM_NULL)
        PMPI_Allreduce(mine, gone, IOT_P_COUNT, MPI_INT, MPI_MAX, comm);
    for (int p = 0; p < IOT_P_COUNT; p++) {
        const iot_entry *e = iot_resolved_file(rules, p);
        char why[1536];
        if (!gone[p] || !e)
            continue;
        if (!iot_bounds_exceeds(p, e->name, e->value.text, iot_cost(p, &e->value, 1), &b, why,
                                sizeof why))
            snprintf(why, sizeof why,
                     "%s=%s costs more than another rank of the file can afford: withdrawn",
                     e->name, e->value.text);
        iot_h5_withdraw_costly(e, name, why, leader, r, out);
        rules->file[p] = NULL;
    }
}
