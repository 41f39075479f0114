/* Escaping text from outside for the terminal (printable.h). */
#include "base/printable.h"

#include <stdio.h>
#include <string.h>

int iot_utf8_length(const unsigned char *s)
{
    unsigned char c = s[0];
    if (c < 0x80)
        return 1;
    int n = c >= 0xC2 && c <= 0xDF   ? 2
            : c >= 0xE0 && c <= 0xEF ? 3
            : c >= 0xF0 && c <= 0xF4 ? 4
                                     : 0;
    if (!n)
        return 0;
    unsigned char lo = 0x80, hi = 0xBF; /* the second byte's range */
    if (c == 0xE0)
        lo = 0xA0;
    else if (c == 0xED)
        hi = 0x9F;
    else if (c == 0xF0)
        lo = 0x90;
    else if (c == 0xF4)
        hi = 0x8F;
    if (s[1] < lo || s[1] > hi)
        return 0;
    for (int i = 2; i < n; i++)
        if ((s[i] & 0xC0) != 0x80)
            return 0;
    return n;
}

/* code when it is a separator or a bidirectional control (they forge a line break or reorder
 * what follows), else -1. */
static int forging(int code)
{
    return code == 0x2028 || code == 0x2029 || code == 0x200E || code == 0x200F ||
                   (code >= 0x202A && code <= 0x202E) || (code >= 0x2066 && code <= 0x2069)
               ? code
               : -1;
}

/* The code to show escaped of the character at s (its length in *take), or -1 to keep it. */
static int escaped(const unsigned char *s, int *take)
{
    int code = -1;
    *take = iot_utf8_length(s);
    if (*take == 0)
        code = *s, *take = 1; /* not UTF-8: the byte */
    else if (*take == 1 && (*s < 0x20 || *s == 0x7F))
        code = *s;
    else if (*take == 2 && s[0] == 0xC2 && s[1] < 0xA0)
        code = s[1];                     /* a C1 control, U+0080..U+009F */
    else if (*take == 3 && s[0] == 0xE2) /* U+2000..U+2FFF */
        code = forging(0x2000 | (s[1] & 0x3F) << 6 | (s[2] & 0x3F));
    return code;
}

const char *iot_printable(const char *text, char *buf, size_t len)
{
    size_t out = 0;
    const unsigned char *s = (const unsigned char *)(text ? text : "");
    while (*s) {
        char piece[8];
        int take, code = escaped(s, &take);
        size_t n;
        if (code == '\n' || code == '\r' || code == '\t')
            n = (size_t)snprintf(piece, sizeof piece, "\\%c",
                                 code == '\n'   ? 'n'
                                 : code == '\r' ? 'r'
                                                : 't');
        else if (code >= 0)
            n = (size_t)snprintf(piece, sizeof piece, code < 0x100 ? "\\x%02x" : "\\u%04x",
                                 (unsigned)code);
        else
            memcpy(piece, s, n = (size_t)take);
        if (out + n >= len)
            break;
        memcpy(buf + out, piece, n);
        out += n;
        s += take;
    }
    if (len)
        buf[out] = '\0';
    return buf;
}

const char *iot_shell_ansi(const char *text, char *buf, size_t len)
{
    const unsigned char *s = (const unsigned char *)(text ? text : "");
    int take, any = 0;
    for (const unsigned char *p = s; *p && !any; p += take)
        any = escaped(p, &take) >= 0;
    if (!any || len < 4)
        return NULL;
    size_t out = 2;
    memcpy(buf, "$'", 2);
    for (; *s; s += take) {
        char piece[20];
        size_t n = 0;
        if (escaped(s, &take) >= 0)
            for (int i = 0; i < take; i++)
                n += (size_t)snprintf(piece + n, sizeof piece - n, "\\x%02x", s[i]);
        else if (*s == '\\' || *s == '\'')
            n = (size_t)snprintf(piece, sizeof piece, "\\%c", *s);
        else
            memcpy(piece, s, n = (size_t)take);
        if (out + n + 2 > len) /* room for the closing quote and the NUL */
            break;
        memcpy(buf + out, piece, n);
        out += n;
    }
    memcpy(buf + out, "'", 2);
    return buf;
}
