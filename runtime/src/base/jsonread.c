#include "base/jsonread.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DEPTH 64

typedef struct {
    const char *s, *end;
    int line, depth;
    char *err;
    size_t errlen;
} reader;

static int fail(reader *r, const char *what)
{
    if (!r->err[0])
        snprintf(r->err, r->errlen, "line %d: %s", r->line, what);
    return -1;
}

static void skip_space(reader *r)
{
    while (r->s < r->end && (*r->s == ' ' || *r->s == '\t' || *r->s == '\n' || *r->s == '\r')) {
        r->line += *r->s == '\n';
        r->s++;
    }
}

static int literal(reader *r, const char *word)
{
    size_t n = strlen(word);
    if ((size_t)(r->end - r->s) < n || memcmp(r->s, word, n) != 0)
        return fail(r, "not JSON (expected a value)");
    r->s += n;
    return 0;
}

static int hex4(reader *r, unsigned *out)
{
    *out = 0;
    for (int i = 0; i < 4; i++, r->s++) {
        char c = r->s < r->end ? *r->s : 0;
        int v = c >= '0' && c <= '9'   ? c - '0'
                : c >= 'a' && c <= 'f' ? c - 'a' + 10
                : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                       : -1;
        if (v < 0)
            return fail(r, "bad \\u escape in a string");
        *out = *out * 16 + (unsigned)v;
    }
    return 0;
}

static size_t utf8(unsigned cp, char *out)
{
    if (cp < 0x80)
        return out[0] = (char)cp, 1;
    if (cp < 0x800)
        return out[0] = (char)(0xc0 | cp >> 6), out[1] = (char)(0x80 | (cp & 0x3f)), 2;
    if (cp < 0x10000)
        return out[0] = (char)(0xe0 | cp >> 12), out[1] = (char)(0x80 | (cp >> 6 & 0x3f)),
               out[2] = (char)(0x80 | (cp & 0x3f)), 3;
    return out[0] = (char)(0xf0 | cp >> 18), out[1] = (char)(0x80 | (cp >> 12 & 0x3f)),
           out[2] = (char)(0x80 | (cp >> 6 & 0x3f)), out[3] = (char)(0x80 | (cp & 0x3f)), 4;
}

/* A string (r->s at its opening quote) into a new buffer. */
static char *string(reader *r)
{
    r->s++;
    const char *start = r->s;
    while (r->s < r->end && *r->s != '"')
        r->s += *r->s == '\\' ? 2 : 1;
    if (r->s >= r->end)
        return fail(r, "a string is not closed"), NULL;
    char *out = malloc((size_t)(r->s - start) + 1), *o = out;
    if (!out)
        return fail(r, "out of memory"), NULL;
    for (r->s = start; *r->s != '"';) {
        unsigned char c = (unsigned char)*r->s++;
        if (c < 0x20)
            return free(out), fail(r, "a control character in a string"), NULL;
        if (c != '\\') {
            *o++ = (char)c;
            continue;
        }
        char e = *r->s++;
        const char *from = "\"\\/bfnrt", *to = "\"\\/\b\f\n\r\t", *at = strchr(from, e);
        if (e && at) {
            *o++ = to[at - from];
        } else if (e == 'u') {
            unsigned cp, low;
            if (hex4(r, &cp) != 0)
                return free(out), NULL;
            if (cp >= 0xd800 && cp < 0xdc00 && r->s + 1 < r->end && r->s[0] == '\\' &&
                r->s[1] == 'u') { /* a surrogate pair */
                r->s += 2;
                if (hex4(r, &low) != 0)
                    return free(out), NULL;
                cp = 0x10000 + ((cp - 0xd800) << 10) + (low - 0xdc00);
            }
            if (cp == 0) /* it would end the string here: Python's reader refuses it too */
                return free(out), fail(r, "a NUL character (\\u0000) in a string"), NULL;
            o += utf8(cp, o); /* never longer than the 6 to 12 escape characters */
        } else {
            return free(out), fail(r, "bad escape in a string"), NULL;
        }
    }
    r->s++;
    *o = '\0';
    return out;
}

static iot_json *value(reader *r);

static iot_json *node(reader *r, iot_jtype t)
{
    iot_json *j = calloc(1, sizeof *j);
    if (!j)
        fail(r, "out of memory");
    else
        j->type = t, j->line = r->line;
    return j;
}

typedef struct {
    const iot_json *m;
    size_t at; /* its place in the object */
} member;

static int by_name(const void *a, const void *b)
{
    const member *x = a, *y = b;
    int c = strcmp(x->m->key, y->m->key);
    return c ? c : (x->at > y->at) - (x->at < y->at);
}

/* An object's names are unique: a name given twice has no one meaning (Python's reader takes
 * the last, this one took the first), so the file is refused, at the second of the first name
 * given twice (in the order of the text, as iotune.inputs.refuse_duplicate_keys says it).
 * Sorted, not compared in pairs: an object of 10^6 members costs no 10^12 comparisons. */
static int unique_names(reader *r, const iot_json *obj)
{
    size_t n = 0;
    for (const iot_json *m = obj->child; m; m = m->next)
        n++;
    if (n < 2)
        return 0;
    member *all = malloc(n * sizeof *all);
    if (!all)
        return fail(r, "out of memory");
    n = 0;
    for (const iot_json *m = obj->child; m; m = m->next, n++)
        all[n] = (member){m, n};
    qsort(all, n, sizeof *all, by_name);
    const member *twice = NULL;
    for (size_t i = 1; i < n; i++)
        if (strcmp(all[i].m->key, all[i - 1].m->key) == 0 && (!twice || all[i].at < twice->at) &&
            (i < 2 || strcmp(all[i].m->key, all[i - 2].m->key) != 0))
            twice = &all[i];
    int rc = 0;
    if (twice) {
        char what[200];
        snprintf(what, sizeof what, "the name \"%.60s\" twice in one object", twice->m->key);
        r->line = twice->m->key_line;
        r->err[0] = '\0';
        rc = fail(r, what);
    }
    free(all);
    return rc;
}

/* Elements of an array or members of an object (r->s at the opening bracket). */
static iot_json *container(reader *r, int object)
{
    iot_json *j = node(r, object ? IOT_J_OBJECT : IOT_J_ARRAY), **tail = j ? &j->child : NULL;
    if (!j)
        return NULL;
    if (++r->depth > MAX_DEPTH)
        return fail(r, "nested too deeply"), iot_json_free(j), NULL;
    r->s++;
    skip_space(r);
    char close = object ? '}' : ']';
    if (r->s < r->end && *r->s == close) {
        r->s++, r->depth--;
        return j;
    }
    for (;;) {
        char *key = NULL;
        skip_space(r);
        int key_line = r->line;
        if (object) {
            if (r->s >= r->end || *r->s != '"')
                return fail(r, "expected a member name"), iot_json_free(j), NULL;
            if (!(key = string(r)))
                return iot_json_free(j), NULL;
            skip_space(r);
            if (r->s >= r->end || *r->s != ':')
                return free(key), fail(r, "expected ':'"), iot_json_free(j), NULL;
            r->s++;
        }
        iot_json *v = value(r);
        if (!v)
            return free(key), iot_json_free(j), NULL;
        v->key = key;
        v->key_line = key_line;
        *tail = v;
        tail = &v->next;
        skip_space(r);
        if (r->s < r->end && *r->s == ',') {
            r->s++;
            continue;
        }
        if (r->s < r->end && *r->s == close) {
            r->s++, r->depth--;
            if (object && unique_names(r, j) != 0)
                return iot_json_free(j), NULL;
            return j;
        }
        return fail(r, object ? "expected ',' or '}'" : "expected ',' or ']'"), iot_json_free(j),
               NULL;
    }
}

static iot_json *number(reader *r)
{
    const char *p = r->s;
    if (p < r->end && *p == '-')
        p++;
    if (p >= r->end || *p < '0' || *p > '9')
        return fail(r, "not JSON (expected a value)"), NULL;
    char buf[64];
    size_t n = 0;
    while (r->s + n < r->end && r->s[n] && strchr("+-0123456789.eE", r->s[n]))
        n++;
    if (n >= sizeof buf)
        return fail(r, "a number too long"), NULL;
    memcpy(buf, r->s, n);
    buf[n] = '\0';
    char *stop;
    double x = strtod(buf, &stop);
    if (*stop)
        return fail(r, "not a number"), NULL;
    if (!isfinite(x)) /* 1e999: no double holds it, and written back it would not be JSON */
        return fail(r, "a number too large for a double"), NULL;
    iot_json *j = node(r, IOT_J_NUMBER);
    if (j)
        j->number = x;
    r->s += n;
    return j;
}

static iot_json *value(reader *r)
{
    skip_space(r);
    if (r->s >= r->end)
        return fail(r, "unexpected end of the file"), NULL;
    switch (*r->s) {
    case '{': return container(r, 1);
    case '[': return container(r, 0);
    case '"': {
        iot_json *j = node(r, IOT_J_STRING);
        if (j && !(j->string = string(r)))
            return iot_json_free(j), NULL;
        return j;
    }
    case 't': return literal(r, "true") == 0 ? node(r, IOT_J_TRUE) : NULL;
    case 'f': return literal(r, "false") == 0 ? node(r, IOT_J_FALSE) : NULL;
    case 'n': return literal(r, "null") == 0 ? node(r, IOT_J_NULL) : NULL;
    default: return number(r);
    }
}

iot_json *iot_json_parse(const char *text, size_t len, char *err, size_t errlen)
{
    char dummy[1];
    reader r = {text, text + len, 1, 0, errlen ? err : dummy, errlen ? errlen : 1};
    r.err[0] = '\0';
    if (len >= 3 && memcmp(text, "\xef\xbb\xbf", 3) == 0) /* a UTF-8 byte order mark */
        r.s += 3;
    iot_json *j = value(&r);
    skip_space(&r);
    if (j && r.s < r.end) {
        fail(&r, "text after the JSON value");
        iot_json_free(j);
        return NULL;
    }
    return j;
}

void iot_json_free(iot_json *j)
{
    while (j) {
        iot_json *next = j->next;
        iot_json_free(j->child);
        free(j->string);
        free(j->key);
        free(j);
        j = next;
    }
}

const iot_json *iot_json_get(const iot_json *j, const char *key)
{
    if (!j || j->type != IOT_J_OBJECT)
        return NULL;
    for (const iot_json *m = j->child; m; m = m->next)
        if (strcmp(m->key, key) == 0)
            return m;
    return NULL;
}

const char *iot_json_str(const iot_json *j, const char *key)
{
    const iot_json *m = iot_json_get(j, key);
    return m && m->type == IOT_J_STRING ? m->string : NULL;
}
