#include "config/xmldoc.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <expat.h>

typedef struct {
    XML_Parser xp;
    iot_xml_doc *doc;
    int cap;
    int open; /* the innermost open element, IOT_XML_NONE outside the root */
    int refused_line, oom;
} tree;

__attribute__((format(printf, 3, 4))) static int refuse(iot_xml_doc *d, int line, const char *fmt,
                                                        ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(d->problem, sizeof d->problem, fmt, ap);
    va_end(ap);
    d->line = line;
    return -1;
}

static void stop(tree *t)
{
    t->oom = 1;
    XML_StopParser(t->xp, XML_FALSE);
}

/* Copies expat's name and attributes into one block: pointers first, then the strings. */
static char **copy_attrs(const char *name, const char **atts)
{
    size_t n = 0, bytes = strlen(name) + 1;
    for (; atts[n]; n++)
        bytes += strlen(atts[n]) + 1;
    char **block = malloc((n + 2) * sizeof *block + bytes);
    if (!block)
        return NULL;
    char *at = (char *)(block + n + 2);
    for (size_t i = 0; i <= n; i++) {
        const char *s = i < n ? atts[i] : name;
        size_t len = strlen(s) + 1;
        block[i] = memcpy(at, s, len);
        at += len;
    }
    block[n + 1] = block[n]; /* the name, after the NULL that ends the attributes */
    block[n] = NULL;
    return block;
}

static void XMLCALL on_start(void *data, const XML_Char *name, const XML_Char **atts)
{
    tree *t = data;
    iot_xml_doc *d = t->doc;
    if (d->n == t->cap) {
        int cap = t->cap ? 2 * t->cap : 64;
        iot_xml_node *grown = realloc(d->nodes, (size_t)cap * sizeof *grown);
        if (!grown)
            return stop(t);
        d->nodes = grown;
        t->cap = cap;
    }
    char **attrs = copy_attrs(name, atts);
    if (!attrs)
        return stop(t);
    size_t nattrs = 0;
    while (attrs[nattrs])
        nattrs++;
    int id = d->n++;
    iot_xml_node *x = &d->nodes[id];
    memset(x, 0, sizeof *x);
    x->attrs = attrs;
    x->name = attrs[nattrs + 1];
    x->line = (int)XML_GetCurrentLineNumber(t->xp);
    x->parent = t->open;
    x->first = x->last = x->next = IOT_XML_NONE;
    if (t->open != IOT_XML_NONE) {
        iot_xml_node *parent = &d->nodes[t->open];
        if (parent->last != IOT_XML_NONE)
            d->nodes[parent->last].next = id;
        else
            parent->first = id;
        parent->last = id;
    }
    t->open = id;
}

static void XMLCALL on_text(void *data, const XML_Char *s, int len)
{
    tree *t = data;
    if (t->open == IOT_XML_NONE)
        return;
    iot_xml_node *x = &t->doc->nodes[t->open];
    if (x->len + (size_t)len + 1 > x->cap) {
        size_t cap = 2 * (x->len + (size_t)len + 1);
        char *grown = realloc(x->text, cap);
        if (!grown)
            return stop(t);
        x->text = grown;
        x->cap = cap;
    }
    memcpy(x->text + x->len, s, (size_t)len);
    x->len += (size_t)len;
    x->text[x->len] = '\0';
}

char *iot_xml_trim(char *s)
{
    if (!s)
        return NULL;
    while (isspace((unsigned char)*s))
        s++;
    char *e = s + strlen(s);
    while (e > s && isspace((unsigned char)e[-1]))
        *--e = '\0';
    return *s ? s : NULL;
}

static void XMLCALL on_end(void *data, const XML_Char *name)
{
    tree *t = data;
    iot_xml_node *x = &t->doc->nodes[t->open];
    char *text = iot_xml_trim(x->text);
    if (text)
        memmove(x->text, text, strlen(text) + 1);
    else
        free(x->text), x->text = NULL;
    t->open = x->parent;
}

/* Nothing is ever expanded or fetched: a DOCTYPE (the only place an entity can be declared)
 * stops the parse. */
static void XMLCALL on_doctype(void *data, const XML_Char *name, const XML_Char *sysid,
                               const XML_Char *pubid, int internal)
{
    tree *t = data;
    t->refused_line = (int)XML_GetCurrentLineNumber(t->xp);
    XML_StopParser(t->xp, XML_FALSE);
}

static void XMLCALL on_entity(void *data, const XML_Char *name, int parameter,
                              const XML_Char *value, int len, const XML_Char *base,
                              const XML_Char *sysid, const XML_Char *pubid,
                              const XML_Char *notation)
{
    on_doctype(data, name, sysid, pubid, 0);
}

/* The encoding an XML declaration at the very start names (as controlfile._ENCODING_RE), or
 * NULL; *n is its length. */
static const char *declared_encoding(const char *s, size_t len, size_t *n)
{
    if (len < 6 || strncmp(s, "<?xml", 5) != 0 || !isspace((unsigned char)s[5]))
        return NULL;
    for (size_t j = 6; j < len && s[j] != '>'; j++) {
        if (len - j < 8 || strncmp(s + j, "encoding", 8) != 0)
            continue;
        size_t k = j + 8;
        while (k < len && isspace((unsigned char)s[k]))
            k++;
        if (k == len || s[k++] != '=')
            continue;
        while (k < len && isspace((unsigned char)s[k]))
            k++;
        if (k == len || (s[k] != '"' && s[k] != '\''))
            continue;
        size_t v = ++k;
        while (k < len && s[k] != '"' && s[k] != '\'')
            k++;
        if (k < len) {
            *n = k - v;
            return s + v;
        }
    }
    return NULL;
}

/* Refuses what is not XML at all, and encodings other than UTF-8, before expat. */
static int check_start(iot_xml_doc *d, const char *s, size_t len)
{
    if (len >= 3 && memcmp(s, "\xEF\xBB\xBF", 3) == 0)
        s += 3, len -= 3;
    size_t blank = 0;
    int line = 1;
    while (blank < len &&
           (s[blank] == ' ' || s[blank] == '\t' || s[blank] == '\r' || s[blank] == '\n'))
        line += s[blank++] == '\n';
    if (blank < len && s[blank] != '<')
        return refuse(d, line, "not an XML control file: it does not start with a tag");
    size_t n;
    const char *enc = declared_encoding(s, len, &n);
    if (enc && !(n == 5 && strncasecmp(enc, "UTF-8", 5) == 0) &&
        !(n == 8 && strncasecmp(enc, "US-ASCII", 8) == 0)) {
        /* its first 40 bytes, each one not printable ASCII as U+FFFD (as the Python side) */
        char name[40 * 3 + 1], *at = name;
        for (size_t i = 0; i < n && i < 40; i++)
            if (enc[i] >= ' ' && enc[i] < 0x7F)
                *at++ = enc[i];
            else
                at += sprintf(at, "\xEF\xBF\xBD");
        *at = '\0';
        return refuse(d, 1, "encoding \"%s\" is not supported: a control file is UTF-8", name);
    }
    return 0;
}

int iot_xml_read(iot_xml_doc *d, const char *text, size_t len)
{
    memset(d, 0, sizeof *d);
    if (check_start(d, text, len))
        return -1;
    tree t = {XML_ParserCreate("UTF-8"), d, 0, IOT_XML_NONE, 0, 0};
    if (!t.xp)
        return refuse(d, 0, "out of memory");
    /* UTF-8 whatever the declaration says (check_start refused any other) */
    XML_SetUserData(t.xp, &t);
    XML_SetElementHandler(t.xp, on_start, on_end);
    XML_SetCharacterDataHandler(t.xp, on_text);
    XML_SetStartDoctypeDeclHandler(t.xp, on_doctype);
    XML_SetEntityDeclHandler(t.xp, on_entity);
    XML_SetParamEntityParsing(t.xp, XML_PARAM_ENTITY_PARSING_NEVER);
    int ok = XML_Parse(t.xp, text, (int)len, XML_TRUE) == XML_STATUS_OK;
    int rc = 0;
    if (t.refused_line)
        rc = refuse(d, t.refused_line,
                    "document type declarations and entities are not allowed in a control file");
    else if (t.oom)
        rc = refuse(d, 0, "out of memory");
    else if (!ok)
        rc = refuse(d, (int)XML_GetCurrentLineNumber(t.xp), "not well-formed XML: %s",
                    XML_ErrorString(XML_GetErrorCode(t.xp)));
    else if (d->n == 0)
        rc = refuse(d, 0, "not well-formed XML: no root element");
    XML_ParserFree(t.xp);
    return rc;
}

void iot_xml_free(iot_xml_doc *d)
{
    for (int i = 0; i < d->n; i++) {
        free(d->nodes[i].attrs);
        free(d->nodes[i].text);
    }
    free(d->nodes);
    memset(d, 0, sizeof *d);
}

char *iot_xml_attr(const iot_xml_node *x, const char *name)
{
    for (char **a = x->attrs; *a; a += 2)
        if (strcmp(a[0], name) == 0)
            return a[1];
    return NULL;
}
