/* The control file: XML (libexpat, as the Python side) -> validated settings. Every check
 * follows src/iotune/controlfile.py, in the same order and words: the shared vectors in
 * tests/vectors hold both sides to the same reading. */
#include "settings.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <expat.h>

#define NONE (-1)

/* One element. The whole document becomes a small tree before any check: a document that
 * turns out not well-formed yields no settings, and a section's own problems come before
 * those of its children. */
typedef struct {
    char **attrs; /* name, value, ..., NULL; one allocation that also holds the name */
    const char *name;
    int line;
    int parent, first, last, next; /* children and siblings, NONE when there is none */
    char *text;                    /* own character data; once closed trimmed, NULL if blank */
    size_t len, cap;
} xnode;

typedef struct {
    XML_Parser xp;
    xnode *nodes;
    int n, cap;
    int open; /* the innermost open element, NONE outside the root */
    int refused_line, oom;
} tree;

typedef struct {
    iot_diag_fn diag;
    void *ctx;
    int problems;
    iot_settings *out;
    int capacity;
} parser;

__attribute__((format(printf, 5, 6))) static void report(parser *p, int line, const char *element,
                                                         const char *value, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    p->problems++;
    if (p->diag)
        p->diag(p->ctx, line, element, value, msg, p->out->fatal);
}

/* ------------------------------------------------------------------ building the tree */

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
    if (t->n == t->cap) {
        int cap = t->cap ? 2 * t->cap : 64;
        xnode *grown = realloc(t->nodes, (size_t)cap * sizeof *grown);
        if (!grown)
            return stop(t);
        t->nodes = grown;
        t->cap = cap;
    }
    char **attrs = copy_attrs(name, atts);
    if (!attrs)
        return stop(t);
    size_t nattrs = 0;
    while (attrs[nattrs])
        nattrs++;
    int id = t->n++;
    t->nodes[id] = (xnode){attrs,
                           attrs[nattrs + 1],
                           (int)XML_GetCurrentLineNumber(t->xp),
                           t->open,
                           NONE,
                           NONE,
                           NONE,
                           NULL,
                           0,
                           0};
    if (t->open != NONE) {
        xnode *parent = &t->nodes[t->open];
        if (parent->last != NONE)
            t->nodes[parent->last].next = id;
        else
            parent->first = id;
        parent->last = id;
    }
    t->open = id;
}

static void XMLCALL on_text(void *data, const XML_Char *s, int len)
{
    tree *t = data;
    if (t->open == NONE)
        return;
    xnode *x = &t->nodes[t->open];
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

/* Trims white space (C's isspace, as params.trim) in place; NULL when nothing is left. */
static char *trim(char *s)
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
    xnode *x = &t->nodes[t->open];
    char *text = trim(x->text);
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

static void free_tree(tree *t)
{
    for (int i = 0; i < t->n; i++) {
        free(t->nodes[i].attrs);
        free(t->nodes[i].text);
    }
    free(t->nodes);
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
static int check_start(parser *p, const char *s, size_t len)
{
    if (len >= 3 && memcmp(s, "\xEF\xBB\xBF", 3) == 0)
        s += 3, len -= 3;
    size_t blank = 0;
    int line = 1;
    while (blank < len &&
           (s[blank] == ' ' || s[blank] == '\t' || s[blank] == '\r' || s[blank] == '\n'))
        line += s[blank++] == '\n';
    if (blank < len && s[blank] != '<') {
        report(p, line, NULL, NULL, "not an XML control file: it does not start with a tag");
        return -1;
    }
    size_t n;
    const char *enc = declared_encoding(s, len, &n);
    if (enc && !(n == 5 && strncasecmp(enc, "UTF-8", 5) == 0) &&
        !(n == 8 && strncasecmp(enc, "US-ASCII", 8) == 0)) {
        report(p, 1, NULL, NULL, "encoding \"%.*s\" is not supported: a control file is UTF-8",
               (int)(n < 40 ? n : 40), enc);
        return -1;
    }
    return 0;
}

/* Parses the text into t; 0, or -1 after reporting why it is refused. */
static int build_tree(parser *p, tree *t, const char *text, size_t len)
{
    if (check_start(p, text, len))
        return -1;
    /* UTF-8 whatever the declaration says (check_start refused any other) */
    t->xp = XML_ParserCreate("UTF-8");
    if (!t->xp) {
        report(p, 0, NULL, NULL, "out of memory");
        return -1;
    }
    XML_SetUserData(t->xp, t);
    XML_SetElementHandler(t->xp, on_start, on_end);
    XML_SetCharacterDataHandler(t->xp, on_text);
    XML_SetStartDoctypeDeclHandler(t->xp, on_doctype);
    XML_SetEntityDeclHandler(t->xp, on_entity);
    XML_SetParamEntityParsing(t->xp, XML_PARAM_ENTITY_PARSING_NEVER);
    int ok = XML_Parse(t->xp, text, (int)len, XML_TRUE) == XML_STATUS_OK;
    int line = (int)XML_GetCurrentLineNumber(t->xp);
    if (t->refused_line)
        report(p, t->refused_line, NULL, NULL,
               "document type declarations and entities are not allowed in a control file");
    else if (t->oom)
        report(p, 0, NULL, NULL, "out of memory");
    else if (!ok)
        report(p, line, NULL, NULL, "not well-formed XML: %s",
               XML_ErrorString(XML_GetErrorCode(t->xp)));
    else if (t->n == 0)
        report(p, 0, NULL, NULL, "not well-formed XML: no root element");
    XML_ParserFree(t->xp);
    return ok && !t->refused_line && !t->oom && t->n ? 0 : -1;
}

/* ------------------------------------------------------------------ checking the tree */

static char *attr(const xnode *x, const char *name)
{
    for (char **a = x->attrs; *a; a += 2)
        if (strcmp(a[0], name) == 0)
            return a[1];
    return NULL;
}

static int param_index(const char *name)
{
    for (int i = 0; i < IOT_P_COUNT; i++)
        if (strcmp(iot_params[i].name, name) == 0)
            return i;
    return -1;
}

static int valid_hint_key(const char *key)
{
    size_t n = strlen(key);
    return n > 0 && n < IOT_NAME_MAX &&
           strspn(key, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-") == n;
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

/* One parameter element (or <hint>): add it, or report why not. -1 when the settings are
 * full and nothing after this element is read. */
static int parse_setting(parser *p, const xnode *x)
{
    int is_hint = strcmp(x->name, "hint") == 0;
    char *value_attr = is_hint ? attr(x, "value") : NULL;
    const char *value = value_attr ? trim(value_attr) : x->text;
#define FAIL(...) return report(p, x->line, x->name, value, __VA_ARGS__), 0
    if (x->first != NONE)
        FAIL("a parameter holds a value, not elements");
    const char *key = is_hint ? attr(x, "key") : x->name;
    if (!key || !*key)
        FAIL("<hint> needs a key=\"...\" attribute");
    if (is_hint && !valid_hint_key(key))
        FAIL("\"%s\" is not a valid MPI-IO hint key", key);
    if (value_attr && x->text)
        FAIL("give the value once: in value= or as text");
    int param = param_index(key);
    const iot_param_def *def = param >= 0 ? &iot_params[param] : NULL;
    if (!def && !is_hint)
        FAIL("unknown parameter (see `iotune check --list`)");
    if (is_hint && def && def->target != IOT_TARGET_HINT)
        FAIL("%s is an HDF5 setting, not an MPI-IO hint: use <%s>", key, key);
    int per_dataset = def && def->scope == IOT_SCOPE_DATASET;
    for (char **a = x->attrs; *a; a += 2)
        if (strcmp(a[0], "FileName") && strcmp(a[0], "VariableName") &&
            !(is_hint && (!strcmp(a[0], "key") || !strcmp(a[0], "value"))))
            FAIL("unknown attribute %s= (expected FileName=%s)", a[0],
                 per_dataset ? " or VariableName=" : "");
    const char *file_pat = attr(x, "FileName"), *var_pat = attr(x, "VariableName");
    file_pat = file_pat ? file_pat : "";
    var_pat = var_pat ? var_pat : "";
    if (*var_pat && !per_dataset)
        FAIL("VariableName= is only for dataset settings; %s is set per file", key);
    if (strlen(file_pat) >= IOT_PATTERN_MAX || strlen(var_pat) >= IOT_PATTERN_MAX)
        FAIL("a pattern is longer than %d bytes", IOT_PATTERN_MAX - 1);
    if (!value)
        FAIL("empty value");
    iot_value v;
    char err[400];
    if (def ? iot_value_parse(def, value, &v, err, sizeof err)
            : iot_value_parse_string(value, &v, err, sizeof err))
        FAIL("%s", err);
    if (p->out->count == IOT_MAX_SETTINGS) {
        report(p, x->line, x->name, value,
               "more than %d settings in one control file: this one and all after it are ignored",
               IOT_MAX_SETTINGS);
        return -1;
    }
#undef FAIL
    iot_entry *e = new_entry(p);
    if (!e)
        return report(p, x->line, x->name, value, "out of memory"), 0;
    e->param = param;
    e->line = x->line;
    e->layer = def ? def->layer : IOT_LAYER_MPIIO;
    snprintf(e->name, sizeof e->name, "%s", key);
    snprintf(e->file_pat, sizeof e->file_pat, "%s", file_pat);
    snprintf(e->var_pat, sizeof e->var_pat, "%s", var_pat);
    e->value = v;
    p->out->count++;
    return 0;
}

/* The root or a section: no attributes, no text of its own. */
static void check_container(parser *p, const xnode *x)
{
    if (x->attrs[0])
        report(p, x->line, x->name, x->text, "unknown attribute %s=", x->attrs[0]);
    else if (x->text)
        report(p, x->line, x->name, x->text, "text outside a parameter element");
}

static int is_section(const char *name)
{
    return !strcmp(name, "High_Level_IO_Library") || !strcmp(name, "Middleware_Layer") ||
           !strcmp(name, "Parallel_File_System");
}

static void walk(parser *p, const tree *t)
{
    const xnode *root = &t->nodes[0];
    if (strcmp(root->name, "Parameters") != 0) {
        report(p, root->line, root->name, root->text,
               "the root element must be <Parameters>, not <%s>", root->name);
        return;
    }
    p->out->fatal = 0;
    check_container(p, root);
    for (int s = root->first; s != NONE; s = t->nodes[s].next) {
        const xnode *sec = &t->nodes[s];
        if (!is_section(sec->name)) {
            report(p, sec->line, sec->name, sec->text,
                   "unknown section (expected High_Level_IO_Library, Middleware_Layer or "
                   "Parallel_File_System)");
            continue;
        }
        check_container(p, sec);
        for (int c = sec->first; c != NONE; c = t->nodes[c].next)
            if (parse_setting(p, &t->nodes[c]))
                return;
    }
}

int iot_settings_parse(const char *text, size_t len, iot_settings *out, iot_diag_fn diag, void *ctx)
{
    parser p = {diag, ctx, 0, out, 0};
    memset(out, 0, sizeof *out);
    out->fatal = 1;
    if (len > IOT_CONFIG_MAX_BYTES) {
        report(&p, 0, NULL, NULL, "the control file is larger than %d bytes", IOT_CONFIG_MAX_BYTES);
        return p.problems;
    }
    tree t = {.open = NONE};
    if (build_tree(&p, &t, text, len) == 0)
        walk(&p, &t);
    free_tree(&t);
    return p.problems;
}

/* ------------------------------------------------------------------ reading the file */

/* Reads a regular file of at most IOT_CONFIG_MAX_BYTES with plain system calls: never
 * through the runtime's own wrappers (which would capture it), and the same in the
 * iotune-parse tool, which has none. Never blocks on a FIFO or device (O_NONBLOCK, and fstat
 * before any read). Returns the text, or NULL with why in err. */
static char *read_config(const char *path, size_t *len, char *err, size_t errlen)
{
    int fd = (int)syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    struct stat st;
    char *text = NULL;
    size_t n = 0;
    if (fd < 0 || syscall(SYS_fstat, fd, &st) != 0) {
        snprintf(err, errlen, "%s", strerror(errno));
    } else if (!S_ISREG(st.st_mode) || st.st_size > IOT_CONFIG_MAX_BYTES) {
        snprintf(err, errlen, "not a regular file of at most 1 MiB");
    } else if (!(text = malloc((size_t)st.st_size + 1))) {
        snprintf(err, errlen, "out of memory");
    } else {
        /* the size may change under us: read what fits, then stop */
        long got;
        while (n < (size_t)st.st_size &&
               ((got = syscall(SYS_read, fd, text + n, (size_t)st.st_size - n)) > 0 ||
                (got < 0 && errno == EINTR)))
            n += got > 0 ? (size_t)got : 0;
        text[n] = '\0';
    }
    if (fd >= 0)
        syscall(SYS_close, fd);
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
