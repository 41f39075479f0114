/* The verbose report of the settings put on HDF5 property lists, and the settings withdrawn for
 * their cost (h5report.h). */
#include "apply/h5report.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "capture/capture.h"
#include "config/bounds.h"
#include "core/core.h"
#include "platform/budget.h"

static __thread int deferring, deferred;
static __thread char deferred_header[2200], deferred_lines[8192];

void iot_h5_report_log(const char *header, const char *lines)
{
    if (!deferring) {
        iot_log_block(header, lines);
        return;
    }
    snprintf(deferred_header, sizeof deferred_header, "%s", header);
    snprintf(deferred_lines, sizeof deferred_lines, "%s", lines);
    deferred = 1;
}

void iot_h5_defer_reports(void)
{
    deferring = 1;
    deferred = 0;
}

void iot_h5_end_deferral(int show)
{
    if (show && deferred)
        iot_log_block(deferred_header, deferred_lines);
    deferring = deferred = 0;
}

__attribute__((format(printf, 2, 3))) void iot_h5_report_add(iot_h5_report *r, const char *fmt, ...)
{
    if (r->len >= sizeof r->text - 1)
        return;
    if (r->items++)
        r->len += (size_t)snprintf(r->text + r->len, sizeof r->text - r->len, "\n");
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(r->text + r->len, sizeof r->text - r->len, fmt, ap);
    va_end(ap);
    r->len = r->len + (size_t)n < sizeof r->text ? r->len + (size_t)n : sizeof r->text - 1;
}

void iot_h5_report_entry(iot_h5_report *r, const iot_entry *e, herr_t rc)
{
    char where[96];
    if (rc >= 0)
        iot_h5_report_add(r, "%s=%s [%s]", e->name, e->value.text,
                          iot_origin(e, where, sizeof where));
    else
        iot_h5_report_add(r, "%s=%s NOT applied: HDF5 refused it [%s]", e->name, e->value.text,
                          iot_origin(e, where, sizeof where));
}

/* Copies (or creates) a property list the first time a setting needs changing it. */
hid_t iot_h5_writable(hid_t *copy, hid_t orig, hid_t cls)
{
    const iot_h5_api *h = iot_h5();
    if (*copy < 0)
        *copy = orig == H5P_DEFAULT ? h->H5Pcreate(cls) : h->H5Pcopy(orig);
    return *copy;
}

/* A setting that costs more than the machine allows (bounds.h): withdrawn before the call,
 * said once per run (by the file's leader) and kept in the file's profile record. */
void iot_h5_withdraw_costly(const iot_entry *e, const char *file, const char *why, int leader,
                            iot_h5_report *r, iot_h5_outcome *out)
{
    char where[96], key[IOT_NAME_MAX + IOT_VALUE_TEXT_MAX + 16], brief[400];
    snprintf(key, sizeof key, "bounds:%s=%s", e->name, e->value.text);
    if (leader)
        iot_warn_once(key, "%s: %s [%s]", file, why, iot_origin(e, where, sizeof where));
    iot_rec_withdraw(file, IOT_L_HDF5, e->name, e->value.text,
                     iot_bounds_brief(why, brief, sizeof brief));
    if (out) { /* not read back as "NOT in effect": it was never asked for */
        char line[IOT_NAME_MAX + 1];
        snprintf(line, sizeof line, "%s", e->name);
        iot_outcome_add(out->withdrawn, sizeof out->withdrawn, line);
    }
    iot_h5_report_add(r, "%s=%s WITHDRAWN: too costly for this machine [%s]", e->name,
                      e->value.text, iot_origin(e, where, sizeof where));
}

/* A dataset setting's cost judged against this process's memory (agreed over the job's ranks
 * at MPI_Init, so that a collective H5Dcreate's ranks judge alike): 1 when withdrawn. */
int iot_h5_too_costly(const iot_entry *e, double cost, const char *file, int leader,
                      iot_h5_report *r, iot_h5_outcome *out)
{
    char why[1536];
    iot_budget b = iot_limits_budget();
    if (!iot_bounds_exceeds(e->param, e->name, e->value.text, cost, &b, why, sizeof why))
        return 0;
    iot_h5_withdraw_costly(e, file, why, leader, r, out);
    return 1;
}

/* Copies the report's "NOT applied" lines (settings held back, and why) into notes. */
void iot_h5_keep_refusals(const iot_h5_report *r, iot_h5_outcome *out)
{
    if (!out)
        return;
    for (const char *line = r->text; *line;) {
        size_t len = strcspn(line, "\n");
        char one[1024];
        snprintf(one, sizeof one, "%.*s", (int)len, line);
        if (strstr(one, "NOT applied"))
            iot_outcome_add(out->notes, sizeof out->notes, one);
        line += len + (line[len] == '\n');
    }
}
