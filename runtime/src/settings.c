#include "settings.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <mxml.h>

#include "xmlscan.h"

typedef struct {
    iot_diag_fn diag;
    void *ctx;
    int problems;
    iot_settings *out;
    int capacity;
    int full; /* IOT_MAX_SETTINGS reached: the rest of the file is ignored */
} parser;

__attribute__((format(printf, 5, 6))) static void report(parser *p, int line, const char *element,
                                                         const char *value, const char *fmt, ...)
{
    int fatal = p->out->fatal;
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    p->problems++;
    if (p->diag)
        p->diag(p->ctx, line, element, value, msg, fatal);
}

static int is_markup(const char *name)
{
    return name[0] == '!' || name[0] == '?'; /* comments, <?xml ...?>, CDATA */
}

static int node_line(mxml_node_t *node)
{
    return (int)(intptr_t)mxmlGetUserData(node);
}

/* Gives every element node its start tag's line (a pre-order walk is document order). */
static void number_elements(const iot_xml_scan *x, mxml_node_t *tree)
{
    int i = 0;
    for (mxml_node_t *node = tree; node && i < x->n; node = mxmlWalkNext(node, tree, MXML_DESCEND))
        if (mxmlGetType(node) == MXML_ELEMENT && !is_markup(mxmlGetElement(node)))
            mxmlSetUserData(node, (void *)(intptr_t)x->lines[i++]);
}

static const char *trimmed(const char *s, char *buf, size_t len)
{
    const char *e = s + strlen(s);
    while (*s && isspace((unsigned char)*s))
        s++;
    while (e > s && isspace((unsigned char)e[-1]))
        e--;
    size_t n = (size_t)(e - s) < len - 1 ? (size_t)(e - s) : len - 1;
    memcpy(buf, s, n);
    buf[n] = '\0';
    return buf;
}

/* The character data of a child node: text, or a CDATA section's contents (MiniXML keeps
 * those as an element named "![CDATA[...]"); NULL for anything else. *n is its length. */
static const char *node_text(mxml_node_t *c, size_t *n)
{
    if (mxmlGetType(c) == MXML_OPAQUE) {
        const char *t = mxmlGetOpaque(c);
        *n = strlen(t);
        return t;
    }
    const char *name = mxmlGetType(c) == MXML_ELEMENT ? mxmlGetElement(c) : NULL;
    if (!name || strncmp(name, "![CDATA[", 8) != 0)
        return NULL;
    *n = strlen(name + 8);
    *n -= *n > 0 && name[8 + *n - 1] == ']';
    return name + 8;
}

/* The text of an element (comments skipped); sets *has_children for nested elements. */
static void element_text(mxml_node_t *el, char *buf, size_t len, int *has_text, int *has_children)
{
    char raw[4096] = "";
    size_t used = 0, n;
    *has_text = *has_children = 0;
    for (mxml_node_t *c = mxmlGetFirstChild(el); c; c = mxmlGetNextSibling(c)) {
        const char *t = node_text(c, &n);
        if (t) {
            *has_text = 1;
            n = n < sizeof raw - 1 - used ? n : sizeof raw - 1 - used;
            memcpy(raw + used, t, n);
            raw[used += n] = '\0';
        } else if (mxmlGetType(c) == MXML_ELEMENT && !is_markup(mxmlGetElement(c))) {
            *has_children = 1;
        }
    }
    trimmed(raw, buf, len);
}

static int param_index(const char *name)
{
    for (int i = 0; i < IOT_P_COUNT; i++)
        if (strcmp(iot_params[i].name, name) == 0)
            return i;
    return -1;
}

static iot_entry *new_entry(parser *p)
{
    iot_settings *s = p->out;
    if (s->count == p->capacity) {
        int cap = p->capacity ? 2 * p->capacity : 16;
        iot_entry *grown = realloc(s->entries, (size_t)cap * sizeof *grown);
        if (!grown)
            return NULL;
        s->entries = grown;
        p->capacity = cap;
    }
    iot_entry *e = &s->entries[s->count];
    memset(e, 0, sizeof *e);
    return e;
}

static int valid_hint_key(const char *key)
{
    return *key && strlen(key) < IOT_NAME_MAX &&
           strspn(key, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-") ==
               strlen(key);
}

/* One parameter element (or <hint>): validate it and add it, or report why not. */
static void parse_param(parser *p, mxml_node_t *el)
{
    const char *tag = mxmlGetElement(el);
    int line = node_line(el);
    int is_hint = strcmp(tag, "hint") == 0;
    char text[IOT_TEXT_MAX + 64];
    int has_text, has_children;
    element_text(el, text, sizeof text, &has_text, &has_children);
    const char *key = is_hint ? mxmlElementGetAttr(el, "key") : tag;
    const char *value_attr = is_hint ? mxmlElementGetAttr(el, "value") : NULL;
    char valbuf[IOT_TEXT_MAX + 64];
    if (value_attr)
        trimmed(value_attr, valbuf, sizeof valbuf);
    const char *value = value_attr ? valbuf : (has_text ? text : NULL);
    if (value && !*value)
        value = NULL; /* blank: reported as no value, whatever the white space */

    if (has_children) {
        report(p, line, tag, NULL, "a parameter holds a value, not elements");
        return;
    }
    int param = param_index(key ? key : "");
    if (is_hint && !key) {
        report(p, line, tag, value, "<hint> needs a key=\"...\" attribute");
        return;
    }
    if (is_hint && !valid_hint_key(key)) {
        report(p, line, tag, value, "\"%s\" is not a valid MPI-IO hint key", key);
        return;
    }
    if (!is_hint && param < 0) {
        report(p, line, tag, value, "unknown parameter (see `iotune check --list`)");
        return;
    }
    if (is_hint && param >= 0 && iot_params[param].target != IOT_TARGET_HINT) {
        report(p, line, tag, value, "%s is an HDF5 setting, not an MPI-IO hint: use <%s>", key,
               key);
        return;
    }
    const char *file_pat = "", *var_pat = "";
    int nattr = mxmlElementGetAttrCount(el);
    for (int i = 0; i < nattr; i++) {
        const char *aname;
        const char *aval = mxmlElementGetAttrByIndex(el, i, &aname);
        if (strcmp(aname, "FileName") == 0) {
            file_pat = aval;
        } else if (strcmp(aname, "VariableName") == 0 &&
                   (param < 0 || iot_params[param].scope != IOT_SCOPE_DATASET)) {
            report(p, line, tag, value,
                   "VariableName= is only for dataset settings; %s is "
                   "set per file",
                   key);
            return;
        } else if (strcmp(aname, "VariableName") == 0) {
            var_pat = aval;
        } else if (!(is_hint && (strcmp(aname, "key") == 0 || strcmp(aname, "value") == 0))) {
            report(p, line, tag, value, "unknown attribute %s= (expected FileName=%s)", aname,
                   param >= 0 && iot_params[param].scope == IOT_SCOPE_DATASET ? " or VariableName="
                                                                              : "");
            return;
        }
    }
    if (strlen(file_pat) >= IOT_PATTERN_MAX || strlen(var_pat) >= IOT_PATTERN_MAX ||
        (value_attr && has_text)) {
        report(p, line, tag, value,
               value_attr ? "give the value once: in value= or as text" : "pattern too long");
        return;
    }
    iot_value v;
    char err[400];
    int rc = param >= 0
                 ? iot_value_parse(&iot_params[param], value ? value : "", &v, err, sizeof err)
                 : (value && *value ? iot_value_parse_string(value, &v, err, sizeof err)
                                    : (snprintf(err, sizeof err, "empty value"), -1));
    if (rc) {
        report(p, line, tag, value, "%s", err);
        return;
    }
    if (p->out->count == IOT_MAX_SETTINGS) {
        report(p, line, tag, value,
               "more than %d settings in one control file: this one and all after it are "
               "ignored",
               IOT_MAX_SETTINGS);
        p->full = 1;
        return;
    }
    iot_entry *e = new_entry(p);
    if (!e) {
        report(p, line, tag, value, "out of memory");
        return;
    }
    e->param = param;
    e->line = line;
    e->layer = param >= 0 ? iot_params[param].layer : IOT_LAYER_MPIIO;
    snprintf(e->name, sizeof e->name, "%s", key);
    snprintf(e->file_pat, sizeof e->file_pat, "%s", file_pat);
    snprintf(e->var_pat, sizeof e->var_pat, "%s", var_pat);
    e->value = v;
    p->out->count++;
}

static const char *const sections[] = {"High_Level_IO_Library", "Middleware_Layer",
                                       "Parallel_File_System"};

/* Reports non-blank text directly inside el (a section or the root). */
static void check_stray_text(parser *p, mxml_node_t *el)
{
    char text[IOT_TEXT_MAX + 64];
    int has_text, has_children;
    element_text(el, text, sizeof text, &has_text, &has_children);
    if (text[0])
        report(p, node_line(el), mxmlGetElement(el), text, "text outside a parameter element");
}

/* The root and the sections take no attributes (their contents still apply). */
static void check_no_attributes(parser *p, mxml_node_t *el)
{
    if (mxmlElementGetAttrCount(el) > 0) {
        const char *name;
        mxmlElementGetAttrByIndex(el, 0, &name);
        report(p, node_line(el), mxmlGetElement(el), NULL, "unknown attribute %s=", name);
    }
}

static void parse_tree(parser *p, mxml_node_t *root)
{
    check_no_attributes(p, root);
    check_stray_text(p, root);
    for (mxml_node_t *sec = mxmlGetFirstChild(root); sec && !p->full;
         sec = mxmlGetNextSibling(sec)) {
        if (mxmlGetType(sec) != MXML_ELEMENT || is_markup(mxmlGetElement(sec)))
            continue;
        const char *name = mxmlGetElement(sec);
        int known = 0;
        for (size_t i = 0; i < sizeof sections / sizeof *sections; i++)
            known |= strcmp(name, sections[i]) == 0;
        if (!known) {
            char text[IOT_TEXT_MAX + 64];
            int has_text, has_children;
            element_text(sec, text, sizeof text, &has_text, &has_children);
            report(p, node_line(sec), name, text[0] ? text : NULL,
                   "unknown section (expected High_Level_IO_Library, Middleware_Layer or "
                   "Parallel_File_System): its contents are");
            continue;
        }
        check_no_attributes(p, sec);
        check_stray_text(p, sec);
        for (mxml_node_t *el = mxmlGetFirstChild(sec); el && !p->full; el = mxmlGetNextSibling(el))
            if (mxmlGetType(el) == MXML_ELEMENT && !is_markup(mxmlGetElement(el)))
                parse_param(p, el);
    }
}

static char xml_error[512];

static void keep_xml_error(const char *message)
{
    if (!xml_error[0])
        snprintf(xml_error, sizeof xml_error, "%s", message);
}

int iot_settings_parse(const char *text, size_t len, iot_settings *out, iot_diag_fn diag, void *ctx)
{
    parser p = {diag, ctx, 0, out, 0, 0};
    memset(out, 0, sizeof *out);
    out->fatal = 1;
    if (len > IOT_CONFIG_MAX_BYTES || strlen(text) != len) {
        report(&p, 0, NULL, NULL, "not a control file (larger than 1 MiB or binary)");
        return p.problems;
    }
    /* the document as an XML processor sees it: every line break (CR LF, CR) one LF */
    char *doc = malloc(len + 1);
    if (!doc) {
        report(&p, 0, NULL, NULL, "out of memory");
        return p.problems;
    }
    size_t n = 0;
    for (size_t i = 0; i < len; i++)
        if (text[i] != '\r' || text[i + 1] != '\n')
            doc[n++] = text[i] == '\r' ? '\n' : text[i];
    doc[n] = '\0';
    iot_xml_scan scan = {.n = 0};
    if (iot_xml_scan_text(&scan, doc)) {
        /* a refused declaration has a line for certain; other mistakes as near as we can */
        report(&p, scan.line, NULL, NULL, "%s", scan.problem);
        free(scan.lines);
        free(doc);
        return p.problems;
    }
    xml_error[0] = '\0';
    mxmlSetErrorCallback(keep_xml_error);
    mxml_node_t *tree = mxmlLoadString(NULL, doc, MXML_OPAQUE_CALLBACK);
    mxmlSetErrorCallback(NULL);
    free(doc);
    if (!tree) {
        int line = 0;
        const char *on = strstr(xml_error, "on line ");
        if (on)
            line = atoi(on + 8);
        report(&p, line, NULL, NULL, "not well-formed XML: %s",
               xml_error[0] ? xml_error : "empty document");
        free(scan.lines);
        return p.problems;
    }
    number_elements(&scan, tree);
    free(scan.lines);
    mxml_node_t *root = tree;
    while (root && (mxmlGetType(root) != MXML_ELEMENT || is_markup(mxmlGetElement(root))))
        root = mxmlWalkNext(root, tree, MXML_DESCEND);
    if (!root) {
        report(&p, 0, NULL, NULL, "not well-formed XML: no root element");
    } else if (strcmp(mxmlGetElement(root), "Parameters") != 0) {
        report(&p, node_line(root), mxmlGetElement(root), NULL,
               "the root element must be <Parameters>");
    } else {
        out->fatal = 0;
        parse_tree(&p, root);
    }
    mxmlDelete(tree);
    return p.problems;
}

/* Reads a regular file of at most IOT_CONFIG_MAX_BYTES; never blocks on a FIFO or device
 * (O_NONBLOCK, and fstat before any read). The open is a raw system call and the reading goes
 * through stdio, so that the runtime's own POSIX wrappers (capture) never see this file.
 * Returns the text or NULL with why in err. */
static char *read_config(const char *path, size_t *len, char *err, size_t errlen)
{
    int fd = (int)syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
        st.st_size > IOT_CONFIG_MAX_BYTES) {
        snprintf(err, errlen, "%s",
                 fd < 0 ? strerror(errno) : "not a regular file of at most 1 MiB");
        if (fd >= 0)
            syscall(SYS_close, fd);
        return NULL;
    }
    FILE *f = fdopen(fd, "rb");
    char *text = f ? malloc((size_t)st.st_size + 1) : NULL;
    size_t n = text ? fread(text, 1, (size_t)st.st_size, f) : 0;
    if (f)
        fclose(f);
    else
        syscall(SYS_close, fd);
    if (!text) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    text[n] = '\0';
    *len = n;
    return text;
}

int iot_settings_load(const char *path, iot_settings *out, iot_diag_fn diag, void *ctx)
{
    memset(out, 0, sizeof *out);
    out->fatal = 1;
    char err[300], msg[340];
    size_t n = 0;
    char *text = read_config(path, &n, err, sizeof err);
    if (!text) {
        snprintf(msg, sizeof msg, "cannot read the control file: %s", err);
        if (diag)
            diag(ctx, 0, NULL, NULL, msg, 1);
        return 1;
    }
    int problems = iot_settings_parse(text, n, out, diag, ctx);
    unsigned long long h = 0xcbf29ce484222325ULL; /* FNV-1a, 64 bit */
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)text[i]) * 0x100000001b3ULL;
    snprintf(out->digest, sizeof out->digest, "fnv1a64:%016llx", h);
    free(text);
    return problems;
}

void iot_settings_free(iot_settings *s)
{
    free(s->entries);
    memset(s, 0, sizeof *s);
}
