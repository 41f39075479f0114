/* Whether the HDF5 library of the process supports a parameter (h5support.h). */
#include "apply/h5support.h"

#include <stdio.h>

#include "capture/capture.h"
#include "core/core.h"

static void release(unsigned packed, char *buf, size_t len)
{
    snprintf(buf, len, "%u.%u.%u", packed / 10000, packed / 100 % 100, packed % 100);
}

int iot_h5_unsupported(int p, int mpio, char *why, size_t len)
{
    const iot_param_def *d = &iot_params[p];
    const iot_h5_api *h = iot_h5();
    char need[32];
    if (!h || d->layer != IOT_LAYER_HDF5 || !d->since)
        return 0;
    const unsigned *v = h->version;
    if (v[0] && !iot_h5_at_least(d->since / 10000, d->since / 100 % 100, d->since % 100)) {
        release(d->since, need, sizeof need);
        snprintf(why, len, "%s needs HDF5 %s or later; this process runs HDF5 %u.%u.%u", d->name,
                 need, v[0], v[1], v[2]);
        return 1;
    }
    if (d->builds == IOT_BUILDS_SERIAL && h->parallel) {
        snprintf(why, len,
                 "%s: a parallel build of HDF5 (%u.%u.%u here) refuses it for every file; "
                 "serial builds only",
                 d->name, v[0], v[1], v[2]);
        return 1;
    }
    if (d->builds == IOT_BUILDS_NOMPIO && mpio) {
        snprintf(why, len, "%s: HDF5 does not support it for files opened with the MPI-IO driver",
                 d->name);
        return 1;
    }
    return 0;
}

int iot_h5_libver(const iot_entry *e, char *why, size_t len)
{
    static const char *const formats[] = {"earliest", "v18", "v110", "v112", "v114", "v200"};
    int want = (int)e->value.v[0], latest = iot_h5_latest_format();
    if (want == 6) /* latest */
        return latest;
    if (want <= latest)
        return want;
    const unsigned *v = iot_h5()->version;
    snprintf(why, len, "libver_low=%s: HDF5 %u.%u.%u writes file formats up to %s", e->value.text,
             v[0], v[1], v[2], latest < 6 ? formats[latest] : "a later one");
    return -1;
}

void iot_h5_withdraw(const iot_entry *e, const char *file, const char *why, int leader,
                     iot_h5_report *r, iot_h5_outcome *out)
{
    char key[96], where[96];
    snprintf(key, sizeof key, "h5support:%s", e->name);
    if (leader)
        iot_warn_once(key, "%s: %s: skipped [%s]", file, why, iot_origin(e, where, sizeof where));
    iot_rec_withdraw(file, IOT_L_HDF5, e->name, e->value.text, why);
    if (out) { /* not read back as "NOT in effect": it was never asked for */
        char line[IOT_NAME_MAX + 1];
        snprintf(line, sizeof line, "%s", e->name);
        iot_outcome_add(out->withdrawn, sizeof out->withdrawn, line);
    }
    iot_h5_report_add(r, "%s=%s SKIPPED: %s [%s]", e->name, e->value.text, why,
                      iot_origin(e, where, sizeof where));
}

int iot_h5_skip_unsupported(const iot_entry *e, int mpio, const char *file, int leader,
                            iot_h5_report *r, iot_h5_outcome *out)
{
    char why[400];
    if (!iot_h5_unsupported(e->param, mpio, why, sizeof why) &&
        (e->param != IOT_P_LIBVER_LOW || iot_h5_libver(e, why, sizeof why) >= 0))
        return 0;
    iot_h5_withdraw(e, file, why, leader, r, out);
    return 1;
}
