/* A stored signature's key checked as `iotune kb import` checks it (iotune.kb.validate): the key
 * is the first 12 hex digits of the SHA-256 of json.dumps([version, motif], sort_keys=True),
 * Python's text: ", " and ": " between items, members sorted by name (code points: the bytes
 * of UTF-8 sort the same), every character outside ' '..'~' escaped (\" \\ \n \r \t \b \f, else
 * \u00XX; beyond U+FFFF a surrogate pair), lowercase hex. A key that is not its motif's was
 * edited or damaged: the entry is refused, as the import refuses it (shared vectors:
 * tests/vectors/kb/import.json). No key at all is taken, as Python takes it. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adapt/kbmatch.h"
#include "base/jsonread.h"
#include "base/sha256.h"

#define KEY_DIGITS 12 /* iotune.kb.signature.Signature.key */

/* Appends s as Python's json.dumps (ensure_ascii) writes it; -1 when s is not UTF-8. */
static int put_string(char **o, const char *s)
{
    *(*o)++ = '"';
    for (const unsigned char *p = (const unsigned char *)s; *p;) {
        uint32_t cp = *p;
        int n = cp < 0x80             ? 1
                : (cp & 0xe0) == 0xc0 ? 2
                : (cp & 0xf0) == 0xe0 ? 3
                : (cp & 0xf8) == 0xf0 ? 4
                                      : 0;
        if (!n)
            return -1;
        if (n > 1)
            cp &= 0x3fu >> (n - 1);
        for (int i = 1; i < n; i++) {
            if ((p[i] & 0xc0) != 0x80)
                return -1;
            cp = cp << 6 | (p[i] & 0x3fu);
        }
        p += n;
        const char *from = "\"\\\n\r\t\b\f", *to = "\"\\nrtbf",
                   *at = cp && cp < 0x80 ? strchr(from, (int)cp) : NULL;
        if (at) {
            *o += sprintf(*o, "\\%c", to[at - from]);
        } else if (cp >= 0x20 && cp < 0x7f) {
            *(*o)++ = (char)cp;
        } else if (cp < 0x10000) {
            *o += sprintf(*o, "\\u%04x", (unsigned)cp);
        } else {
            cp -= 0x10000;
            *o += sprintf(*o, "\\u%04x\\u%04x", 0xd800u + (unsigned)(cp >> 10),
                          0xdc00u + (unsigned)(cp & 0x3ff));
        }
    }
    *(*o)++ = '"';
    return 0;
}

static int by_key(const void *a, const void *b)
{
    return strcmp((*(const iot_json *const *)a)->key, (*(const iot_json *const *)b)->key);
}

/* The key of version and motif (an object whose members are strings) into key; -1 when a
 * name or value is not UTF-8, or memory is short. */
static int motif_key(int version, const iot_json *motif, char key[KEY_DIGITS + 1])
{
    size_t n = 0, bytes = 32;
    for (const iot_json *m = motif->child; m; m = m->next, n++)
        bytes += 6 * (strlen(m->key) + strlen(m->string)) + 8; /* \u00XX: 6 a byte at most */
    const iot_json **sorted = malloc((n + 1) * sizeof *sorted);
    char *text = malloc(bytes), *o = text;
    int rc = sorted && text ? 0 : -1;
    n = 0;
    for (const iot_json *m = motif->child; m && rc == 0; m = m->next)
        sorted[n++] = m;
    if (rc == 0) {
        qsort(sorted, n, sizeof *sorted, by_key);
        o += sprintf(o, "[%d, {", version);
        for (size_t i = 0; i < n && rc == 0; i++) {
            o += i ? sprintf(o, ", ") : 0;
            rc = put_string(&o, sorted[i]->key);
            o += sprintf(o, ": ");
            rc = rc ? rc : put_string(&o, sorted[i]->string);
        }
        o += sprintf(o, "}]");
    }
    if (rc == 0) {
        char hex[65];
        iot_sha256_hex(text, (size_t)(o - text), hex);
        memcpy(key, hex, KEY_DIGITS);
        key[KEY_DIGITS] = '\0';
    }
    free(sorted);
    free(text);
    return rc;
}

int iot_kb_key_check(const iot_json *sig, char *err, size_t errlen)
{
    const iot_json *motif = iot_json_get(sig, "motif"), *key = iot_json_get(sig, "key");
    for (const iot_json *m = motif ? motif->child : NULL; m; m = m->next)
        if (m->type != IOT_J_STRING)
            return snprintf(err, errlen, "signature.motif.%.60s is not a string", m->key), -1;
    if (!key || key->type == IOT_J_NULL)
        return 0;
    const iot_json *v = iot_json_get(sig, "version");
    double version = v && v->type == IOT_J_NUMBER ? v->number : 0;
    if (version < 1 || version > 1e9 || version != (int)version)
        return snprintf(err, errlen, "signature.version is not a whole number from 1"), -1;
    char want[KEY_DIGITS + 1];
    if (motif_key((int)version, motif, want) != 0)
        return snprintf(err, errlen, "signature.motif is not UTF-8 text"), -1;
    if (key->type == IOT_J_STRING && strcmp(key->string, want) == 0)
        return 0;
    if (key->type == IOT_J_STRING)
        snprintf(err, errlen,
                 "signature.key '%.40s' is not its motif's key (%s): edited or damaged",
                 key->string, want);
    else
        snprintf(err, errlen, "signature.key is not a string: edited or damaged");
    return -1;
}
