#include "xmlscan.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static int scan_fail(iot_xml_scan *x, int dtd, const char *message)
{
    snprintf(x->problem, sizeof x->problem, "%s", message);
    x->dtd = dtd;
    return -1;
}

/* Skips past the end marker of a comment, CDATA section or processing instruction. */
static int skip_past(iot_xml_scan *x, char **c, const char *close, const char *what)
{
    char *end = strstr(*c, close);
    if (!end) {
        char msg[96];
        snprintf(msg, sizeof msg, "not well-formed XML: unterminated %s", what);
        return scan_fail(x, 0, msg);
    }
    for (; *c < end; (*c)++)
        x->line += **c == '\n';
    *c = end + strlen(close);
    return 0;
}

static int name_start(char ch)
{
    return isalpha((unsigned char)ch) || ch == '_' || ch == ':' || (unsigned char)ch >= 0x80;
}

/* A start tag after its '<': records its line, checks its attributes, leaves *c after '>'.
 * Sets *empty for <x/>. */
static int scan_start_tag(iot_xml_scan *x, char **c, int *empty)
{
    if (!name_start(**c))
        return scan_fail(x, 0, "not well-formed XML: '<' that does not start a tag");
    if (x->n == x->cap) {
        int cap = x->cap ? 2 * x->cap : 64;
        int *grown = realloc(x->lines, (size_t)cap * sizeof *grown);
        if (!grown)
            return scan_fail(x, 0, "out of memory");
        x->lines = grown;
        x->cap = cap;
    }
    x->lines[x->n++] = x->line;
    for (;;) {
        while (**c && **c != '"' && **c != '\'' && **c != '>' && **c != '<' && **c != '=')
            x->line += *(*c)++ == '\n';
        if (**c == '=') {
            for ((*c)++; isspace((unsigned char)**c); (*c)++)
                x->line += **c == '\n';
            if (**c != '"' && **c != '\'')
                return scan_fail(x, 0, "not well-formed XML: an attribute value without quotes");
        }
        if (**c == '>') {
            *empty = (*c)[-1] == '/';
            (*c)++;
            return 0;
        }
        if (!**c || **c == '<')
            return scan_fail(x, 0, "not well-formed XML: unterminated tag");
        char quote = *(*c)++;
        for (; **c && **c != quote; (*c)++) {
            if (**c == '<')
                return scan_fail(x, 0, "not well-formed XML: '<' in an attribute value");
            x->line += **c == '\n';
            if (**c == '\n' || **c == '\t')
                **c = ' ';
        }
        if (!**c)
            return scan_fail(x, 0, "not well-formed XML: unterminated attribute value");
        (*c)++;
    }
}

/* The encoding of an XML declaration must be UTF-8 (or its subset US-ASCII). */
static int scan_declaration(iot_xml_scan *x, const char *decl, const char *end)
{
    const char *enc = strstr(decl, "encoding");
    if (!enc || enc > end)
        return 0;
    enc += strspn(enc + 8, " \t\r\n=") + 8;
    char quote = *enc++;
    size_t n = strcspn(enc, "\"'");
    if ((quote == '"' || quote == '\'') && ((n == 5 && strncasecmp(enc, "UTF-8", 5) == 0) ||
                                            (n == 8 && strncasecmp(enc, "US-ASCII", 8) == 0)))
        return 0;
    char msg[160];
    snprintf(msg, sizeof msg, "encoding \"%.*s\" is not supported: a control file is UTF-8",
             (int)(n < 40 ? n : 40), enc);
    return scan_fail(x, 0, msg);
}

int iot_xml_scan_text(iot_xml_scan *x, char *text)
{
    char *c = text;
    int depth = 0, roots = 0;
    x->line = 1;
    if (strncmp(c, "\xEF\xBB\xBF", 3) == 0)
        c += 3; /* a UTF-8 byte order mark */
    const char *first = c;
    size_t blank = strspn(c, " \t\r\n");
    if (c[blank] && c[blank] != '<') {
        for (size_t i = 0; i < blank; i++)
            x->line += c[i] == '\n';
        return scan_fail(x, 0, "not an XML control file: it does not start with a tag");
    }
    while (*c) {
        if (*c != '<') {
            if (strncmp(c, "]]>", 3) == 0)
                return scan_fail(x, 0, "not well-formed XML: \"]]>\" in text");
            if (depth == 0 && !isspace((unsigned char)*c))
                return scan_fail(x, 0,
                                 roots ? "not well-formed XML: text after the root element"
                                       : "not well-formed XML: text outside the root element");
            x->line += *c++ == '\n';
            continue;
        }
        int rc, empty = 0;
        if (strncmp(c, "<!--", 4) == 0) {
            const char *body = c += 4;
            rc = skip_past(x, &c, "-->", "comment");
            /* XML forbids "--" in a comment (expat refuses it) */
            for (const char *d = body; !rc && d < c - 3; d++)
                if (d[0] == '-' && (d[1] == '-' || d + 1 == c - 3))
                    rc = scan_fail(x, 0, "not well-formed XML: \"--\" inside a comment");
        } else if (strncmp(c, "<![CDATA[", 9) == 0) {
            c += 9;
            rc = depth ? skip_past(x, &c, "]]>", "CDATA section")
                       : scan_fail(x, 0, "not well-formed XML: CDATA outside the root element");
        } else if (c[1] == '?') {
            /* the target "xml" (any case) is reserved: only the declaration, at the start */
            char *start = c;
            int xml = strncasecmp(c + 2, "xml", 3) == 0 &&
                      (isspace((unsigned char)c[5]) || strncmp(c + 5, "?>", 2) == 0);
            c += 2;
            rc = skip_past(x, &c, "?>", "processing instruction");
            if (!rc && xml && (strncmp(start, "<?xml", 5) != 0 || start != first))
                rc = scan_fail(x, 0, "not well-formed XML: an XML declaration not at the start");
            else if (!rc && xml)
                rc = scan_declaration(x, start, c);
        } else if (c[1] == '!') { /* inside a comment, CDATA or PI it was skipped above */
            rc = scan_fail(x, 1,
                           "document type declarations and entities are not allowed in a "
                           "control file");
        } else if (c[1] == '/') {
            c = strchr(c, '>');
            rc = c && depth > 0 ? 0 : scan_fail(x, 0, "not well-formed XML: stray end tag");
            if (!rc) {
                c++;
                depth--;
            }
        } else if (depth == 0 && roots) {
            rc = scan_fail(x, 0, "not well-formed XML: a second element after the root");
        } else {
            c++;
            rc = scan_start_tag(x, &c, &empty);
            roots += depth == 0;
            depth += !empty;
        }
        if (rc)
            return rc;
    }
    if (depth > 0)
        return scan_fail(x, 0, "not well-formed XML: the root element is not closed");
    if (!roots)
        return scan_fail(x, 0, "not well-formed XML: no root element");
    return 0;
}
