/* The rule table (src/iotune/data/rules.tsv, through the header tools/gen_rules.py makes)
 * evaluated on a phase's insights, as iotune.rules.evaluate does: a comparison with an unknown
 * insight is false, so a rule never fires on what was not measured. */
#ifndef IOTUNE_RULES_H
#define IOTUNE_RULES_H

#include "adapt/phase.h"

/* Does rule r hold on the insights? */
int iot_rule_holds(const iot_rule_def *r, const iot_insights *in);

/* The first comparison of rule r that does not hold on the insights, or -1 when r holds: its
 * index, and in buf as "fully_written == yes (here no)" ("here unknown": not measured). */
int iot_rule_failing(const iot_rule_def *r, const iot_insights *in, char *buf, size_t len);

/* The text of a rule's setting s on the insights (a literal, or the insight it names formatted
 * as a whole number); NULL when that insight is unknown. */
const char *iot_rule_setting_text(const iot_rule_setting *s, const iot_insights *in, char *buf,
                                  size_t len);

#endif
