/* Parsing and normalising one parameter value (the rules of docs/control-file.md, "Values"). */
#ifndef IOTUNE_VALUES_H
#define IOTUNE_VALUES_H

#include <stddef.h>

#include "config/registry.h"

#define IOT_MAX_DIMS 32
#define IOT_TEXT_MAX 256 /* a string value: at most IOT_TEXT_MAX - 1 bytes */
/* The longest normalised text: IOT_MAX_DIMS numbers of up to 20 characters, and commas. */
#define IOT_VALUE_TEXT_MAX (IOT_MAX_DIMS * 21)

typedef struct {
    int n;                         /* how many numbers in v (1 for scalars, 2 for pairs) */
    long long v[IOT_MAX_DIMS];     /* the numbers (bool: 0/1; enum: index of the choice) */
    double d;                      /* for doubles */
    char text[IOT_VALUE_TEXT_MAX]; /* normalised text, also the MPI-IO hint value */
} iot_value;

/* How a message quotes a value (or a name): whole up to IOT_SHOWN_CHARS characters, else its
 * first 40 characters and "..." (params.shown on the Python side). Returns text or buf. */
#define IOT_SHOWN_CHARS 80
#define IOT_SHOWN_MAX (4 * IOT_SHOWN_CHARS + 4)
const char *iot_value_shown(const char *text, char buf[IOT_SHOWN_MAX]);
/* How a message shows a name from outside (an element's): whole up to IOT_SHOWN_CHARS
 * characters, else its first half, "..." and its length in characters
 * (iotune.outputs.capped, word for word). */
const char *iot_name_shown(const char *text, char buf[IOT_SHOWN_MAX]);

/* Parses text (already trimmed) as a value of def. Returns 0, or -1 with a message in err. */
int iot_value_parse(const iot_param_def *def, const char *text, iot_value *out, char *err,
                    size_t errlen);

/* Parses a value for an MPI-IO hint unknown to the registry (a plain string). */
int iot_value_parse_string(const char *text, iot_value *out, char *err, size_t errlen);

#endif
