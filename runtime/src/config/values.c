#include "config/values.h"

#include <ctype.h>
#include <errno.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

__attribute__((format(printf, 3, 4))) static int fail(char *err, size_t errlen, const char *fmt,
                                                      ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return -1;
}

/* A whole number of bytes with an optional binary suffix: 65536, 64K, 4MiB, 1gb. A number
 * too large for 63 bits becomes LLONG_MAX: above every maximum, as the Python side says. */
static int parse_size(const char *s, long long *out)
{
    if (!isdigit((unsigned char)*s))
        return -1;
    errno = 0;
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    int huge = errno == ERANGE;
    int shift = 0;
    switch (*end) {
    case 'k':
    case 'K': shift = 10; break;
    case 'm':
    case 'M': shift = 20; break;
    case 'g':
    case 'G': shift = 30; break;
    case 't':
    case 'T': shift = 40; break;
    default: break;
    }
    if (shift) {
        end++;
        if (strcasecmp(end, "b") == 0 || strcasecmp(end, "ib") == 0)
            end += strlen(end);
    }
    if (*end != '\0')
        return -1;
    *out = huge || v > (unsigned long long)LLONG_MAX >> shift ? LLONG_MAX : (long long)(v << shift);
    return 0;
}

/* A plain whole number without sign or suffix. */
static int parse_whole(const char *s, long long *out)
{
    if (*s == '\0' || strspn(s, "0123456789") != strlen(s))
        return -1;
    return parse_size(s, out);
}

static int parse_int(const char *s, long long *out)
{
    const char *p = (*s == '+' || *s == '-') ? s + 1 : s;
    if (!isdigit((unsigned char)*p))
        return -1;
    char *end;
    long long v = strtoll(s, &end, 10); /* saturates: beyond every bound */
    if (*end != '\0')
        return -1;
    *out = v;
    return 0;
}

static int count_items(const char *text)
{
    int n = 1;
    for (; *text; text++)
        n += *text == ',';
    return n;
}

/* Splits "a, b, c" (at most max items) into numbers; sizes allow suffixes, dims are plain
 * whole numbers. Each item is trimmed. */
static int parse_list(const char *text, int max, int (*parse)(const char *, long long *),
                      iot_value *out)
{
    out->n = 0;
    if (count_items(text) > max)
        return -1;
    char *copy = strdup(text);
    int rc = copy ? 0 : -1;
    for (char *b = copy, *e; !rc && b; b = e) {
        if ((e = strchr(b, ',')))
            *e++ = '\0';
        while (isspace((unsigned char)*b))
            b++;
        for (char *z = b + strlen(b); z > b && isspace((unsigned char)z[-1]);)
            *--z = '\0';
        rc = parse(b, &out->v[out->n++]);
    }
    free(copy);
    return rc;
}

/* The number of bytes of the first n characters of UTF-8 text (Python slices characters). */
static int utf8_prefix(const char *text, int n)
{
    int i = 0;
    for (; text[i]; i++)
        if (((unsigned char)text[i] & 0xC0) != 0x80 && n-- == 0)
            break;
    return i;
}

const char *iot_value_shown(const char *text, char buf[IOT_SHOWN_MAX])
{
    int chars = 0;
    for (const char *c = text; *c && chars <= IOT_SHOWN_CHARS; c++)
        chars += ((unsigned char)*c & 0xC0) != 0x80;
    if (chars <= IOT_SHOWN_CHARS)
        return text;
    snprintf(buf, IOT_SHOWN_MAX, "%.*s...", utf8_prefix(text, 40), text);
    return buf;
}

const char *iot_name_shown(const char *text, char buf[IOT_SHOWN_MAX])
{
    long chars = 0;
    for (const char *c = text; *c; c++)
        chars += ((unsigned char)*c & 0xC0) != 0x80;
    if (chars <= IOT_SHOWN_CHARS)
        return text;
    snprintf(buf, IOT_SHOWN_MAX, "%.*s... (%ld characters)", utf8_prefix(text, IOT_SHOWN_CHARS / 2),
             text, chars);
    return buf;
}

static int check_bounds(const iot_param_def *def, const char *text, const iot_value *out, char *err,
                        size_t errlen)
{
    for (int i = 0; i < out->n; i++) {
        double x = def->type == IOT_T_DOUBLE ? out->d : (double)out->v[i];
        if (x < def->min)
            return fail(err, errlen, "\"%s\" is below the minimum %.15g", text, def->min);
        if (x > def->max)
            return fail(err, errlen, "\"%s\" is above the maximum %.15g", text, def->max);
    }
    return 0;
}

static int parse_enum(const iot_param_def *def, const char *text, iot_value *out)
{
    const char *c = def->choices;
    for (int idx = 0; c && *c; idx++) {
        size_t len = strcspn(c, "|");
        if (strlen(text) == len && strncasecmp(text, c, len) == 0) {
            memcpy(out->text, c, len);
            out->text[len] = '\0';
            out->v[0] = idx;
            out->n = 1;
            return 0;
        }
        c += len + (c[len] == '|');
    }
    return -1;
}

static int parse_bool(const char *text, iot_value *out)
{
    static const char *yes[] = {"true", "yes", "on", "1"};
    static const char *no[] = {"false", "no", "off", "0"};
    for (int i = 0; i < 4; i++) {
        if (strcasecmp(text, yes[i]) == 0 || strcasecmp(text, no[i]) == 0) {
            out->v[0] = strcasecmp(text, yes[i]) == 0;
            out->n = 1;
            strcpy(out->text, out->v[0] ? "true" : "false");
            return 0;
        }
    }
    return -1;
}

int iot_value_parse_string(const char *text, iot_value *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    char q[IOT_SHOWN_MAX];
    if (strpbrk(text, "\r\n"))
        return fail(err, errlen, "\"%s\" has a line break", iot_value_shown(text, q));
    if (strlen(text) >= IOT_TEXT_MAX)
        return fail(err, errlen, "\"%.*s...\" is longer than %d bytes", utf8_prefix(text, 40), text,
                    IOT_TEXT_MAX - 1);
    strcpy(out->text, text);
    return 0;
}

int iot_value_parse(const iot_param_def *def, const char *text, iot_value *out, char *err,
                    size_t errlen)
{
    memset(out, 0, sizeof *out);
    if (*text == '\0')
        return fail(err, errlen, "empty value");
    char shown[IOT_SHOWN_MAX];
    const char *q = iot_value_shown(text, shown); /* the text as messages quote it */
    switch (def->type) {
    case IOT_T_SIZE:
        if (parse_size(text, &out->v[0]))
            return fail(err, errlen, "\"%s\" is not a size in bytes (e.g. 65536, 64K, 4MiB)", q);
        out->n = 1;
        break;
    case IOT_T_INT:
        if (parse_int(text, &out->v[0]))
            return fail(err, errlen, "\"%s\" is not a whole number", q);
        out->n = 1;
        break;
    case IOT_T_BOOL:
        if (parse_bool(text, out))
            return fail(err, errlen, "\"%s\" is not true or false (or yes/no, on/off, 1/0)", q);
        return 0;
    case IOT_T_ENUM:
        if (parse_enum(def, text, out)) {
            char list[256];
            size_t n = 0;
            for (const char *c = def->choices; *c && n + 3 < sizeof list; c++)
                n += (size_t)snprintf(list + n, sizeof list - n, *c == '|' ? ", " : "%c", *c);
            return fail(err, errlen, "\"%s\" is not one of %s", q, list);
        }
        return 0;
    case IOT_T_PAIR:
        if (parse_list(text, 2, parse_size, out) || out->n != 2)
            return fail(err, errlen, "\"%s\" is not two sizes \"threshold, boundary\"", q);
        if (out->v[1] < 1)
            return fail(err, errlen, "\"%s\": the boundary must be at least 1", q);
        break;
    case IOT_T_DIMS:
        if (count_items(text) > IOT_MAX_DIMS)
            return fail(err, errlen, "\"%s\" has %d dimensions, at most %d", q, count_items(text),
                        IOT_MAX_DIMS);
        if (parse_list(text, IOT_MAX_DIMS, parse_whole, out))
            return fail(err, errlen, "\"%s\" is not whole numbers separated by commas", q);
        break;
    case IOT_T_DOUBLE: {
        char *end;
        out->d = strtod(text, &end);
        if (*end != '\0' || strspn(text, "0123456789.eE+-") != strlen(text))
            return fail(err, errlen, "\"%s\" is not a number", q);
        /* overflow, and underflow to zero or a subnormal, as the Python side refuses them */
        size_t mantissa = strcspn(text, "eE");
        int nonzero = strcspn(text, "123456789") < mantissa;
        if (!isfinite(out->d) || (fabs(out->d) < DBL_MIN && nonzero))
            return fail(err, errlen, "\"%s\" is out of the range of a double", q);
        out->n = 1;
        if (check_bounds(def, q, out, err, errlen))
            return -1;
        snprintf(out->text, sizeof out->text, "%.6g", out->d);
        return 0;
    }
    case IOT_T_STRING: return iot_value_parse_string(text, out, err, errlen);
    }
    if (check_bounds(def, q, out, err, errlen))
        return -1;
    /* never past the end, even if a longer list were ever allowed (snprintf returns what it
     * would have written) */
    size_t used = 0;
    for (int i = 0; i < out->n && used < sizeof out->text; i++)
        used += (size_t)snprintf(out->text + used, sizeof out->text - used, i ? ",%lld" : "%lld",
                                 out->v[i]);
    return 0;
}
