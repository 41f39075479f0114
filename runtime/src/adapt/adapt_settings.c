/* The settings set the adaptive mode's rules make: for each class, the settings of its rules in
 * effect (file pattern: the class), placed before the control file's entries so that a control
 * file's setting of the same parameter wins. */
#include <stdlib.h>
#include <string.h>

#include "adapt/adapt.h"
#include "adapt/adapt_state.h"
#include "config/values.h"
#include "core/core.h"

static const iot_settings *current; /* adaptive entries, then the control file's */

int iot_adapt_control_sets(const iot_settings *control, int param, const char *name)
{
    for (int i = 0; i < control->count; i++)
        if (control->entries[i].param == param && strcmp(control->entries[i].name, name) == 0)
            return 1;
    return 0;
}

const char *iot_adapt_setting_text(const iot_adapt_class *k, const iot_rule_setting *s, char *buf,
                                   size_t len)
{
    return iot_rule_setting_text(s, &k->learned, buf, len);
}

/* Rebuilds the set (lock held). Old sets are kept: a thread may be reading one. */
void iot_adapt_rebuild(void)
{
    const iot_settings *control = &iot_g.settings;
    int n = 0;
    for (int c = 0; c < iot_adapt_nclasses; c++)
        for (int r = 0; r < IOT_RULE_COUNT; r++)
            if (iot_adapt_active(&iot_adapt_classes[c]) >> r & 1)
                n += iot_rules[r].nsettings;
    for (int c = 0; c < iot_adapt_nclasses; c++)
        n += iot_adapt_kb_settings(&iot_adapt_classes[c], NULL, control);
    iot_settings *s = calloc(1, sizeof *s);
    iot_entry *e = s ? calloc((size_t)(n + control->count) + 1, sizeof *e) : NULL;
    if (!e) {
        free(s);
        iot_warn_once("adapt-oom", "out of memory: adaptive settings not updated");
        return;
    }
    int k = 0;
    for (int c = 0; c < iot_adapt_nclasses; c++)
        for (int r = 0; r < IOT_RULE_COUNT; r++) {
            const iot_adapt_class *cls = &iot_adapt_classes[c];
            if (!(iot_adapt_active(cls) >> r & 1))
                continue;
            for (int j = 0; j < iot_rules[r].nsettings; j++) {
                const iot_rule_setting *rs = &iot_rules[r].settings[j];
                const iot_param_def *def = &iot_params[rs->param];
                char err[128], buf[64];
                const char *text = iot_adapt_setting_text(cls, rs, buf, sizeof buf);
                if (!text || iot_adapt_control_sets(control, rs->param, def->name) ||
                    ((iot_adapt_active(cls) & IOT_KB_MASK) && /* a measured study wins */
                     iot_adapt_kb_sets(cls, rs->param)) ||
                    iot_value_parse(def, text, &e[k].value, err, sizeof err) != 0)
                    continue;
                e[k].param = rs->param;
                e[k].line = -1; /* iot_origin: "adaptive mode" */
                e[k].layer = def->layer;
                snprintf(e[k].name, sizeof e[k].name, "%s", def->name);
                _Static_assert(IOT_CLASS_MAX == IOT_PATTERN_MAX, "a class is a file pattern");
                memcpy(e[k].file_pat, cls->name, sizeof e[k].file_pat);
                k++;
            }
        }
    for (int c = 0; c < iot_adapt_nclasses; c++)
        k += iot_adapt_kb_settings(&iot_adapt_classes[c], e + k, control);
    memcpy(e + k, control->entries, (size_t)control->count * sizeof *e);
    *s = *control;
    s->entries = e;
    s->count = k + control->count;
    __atomic_store_n(&current, s, __ATOMIC_RELEASE);
}

const iot_settings *iot_adapt_settings(const iot_settings *control)
{
    const iot_settings *s =
        iot_adapt_on && !iot_frozen ? __atomic_load_n(&current, __ATOMIC_ACQUIRE) : NULL;
    return s ? s : control;
}
