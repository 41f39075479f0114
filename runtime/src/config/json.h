/* Small JSON writing helpers shared by the profile writer and iotune-parse. */
#ifndef IOTUNE_JSON_H
#define IOTUNE_JSON_H

#include <stdio.h>

#include "config/settings.h"

void iot_json_string(FILE *f, const char *s); /* NULL -> null */

/* The normalised settings as a JSON array (the form of `iotune check --json`). */
void iot_json_settings(FILE *f, const iot_settings *s);

extern const char *const iot_layer_names[];

#endif
