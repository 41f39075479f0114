/* A small strict JSON reader (RFC 8259) for the few JSON files the runtime reads (an exported
 * knowledge base): the text to a tree, with the line of a syntax error. No MPI, no HDF5. */
#ifndef IOTUNE_JSONREAD_H
#define IOTUNE_JSONREAD_H

#include <stddef.h>

typedef enum {
    IOT_J_NULL,
    IOT_J_FALSE,
    IOT_J_TRUE,
    IOT_J_NUMBER,
    IOT_J_STRING,
    IOT_J_ARRAY,
    IOT_J_OBJECT
} iot_jtype;

typedef struct iot_json iot_json;
struct iot_json {
    iot_jtype type;
    double number;
    char *string;    /* a string's text (NUL-terminated; \u0000 is refused) */
    char *key;       /* the member's name, inside an object */
    iot_json *child; /* first element or member */
    iot_json *next;  /* next sibling */
    int line;
    int key_line; /* the line of the member's name */
};

/* Parses text (len bytes; one UTF-8 byte order mark first is read past): the tree, or NULL
 * with "line N: what" in err. Nesting is limited (64 levels); an object with a name twice and
 * a string with \u0000 are refused, as iotune.inputs refuses them (shared vectors:
 * tests/vectors/kb/import.json). */
iot_json *iot_json_parse(const char *text, size_t len, char *err, size_t errlen);
void iot_json_free(iot_json *j);

/* An object's member by name (NULL when absent or j is not an object). */
const iot_json *iot_json_get(const iot_json *j, const char *key);
/* A member's string, or NULL when absent or not a string. */
const char *iot_json_str(const iot_json *j, const char *key);

#endif
