/* The control file: its XML tree (xmldoc.c, libexpat as on the Python side) -> validated
 * settings. Every check follows src/iotune/controlfile.py, in the same order and words: the
 * shared vectors in tests/vectors hold both sides to the same reading. */
#include "config/settings.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "config/xmldoc.h"

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
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    p->problems++;
    if (p->diag)
        p->diag(p->ctx, line, element, value, msg, p->out->fatal);
}

/* ------------------------------------------------------------------ checking the tree */

static int param_index(const char *name)
{
    for (int i = 0; i < IOT_P_COUNT; i++)
        if (strcmp(iot_params[i].name, name) == 0)
            return i;
    return -1;
}

/* Open MPI's MCA parameters of the registry (params.tsv, target mca): not in the table, which
 * holds what the runtime applies; `iotune run` sets them before MPI starts. */
static int is_mca(const char *name)
{
    for (int i = 0; iot_params_mca[i]; i++)
        if (strcmp(iot_params_mca[i], name) == 0)
            return 1;
    return 0;
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

/* The setting of the same name for the same files (and datasets) read before, if any: the
 * later one replaces it (it wins the tie in matching), which is said, as a likely mistake. */
static const iot_entry *earlier_same(const iot_settings *s, const iot_entry *e)
{
    for (int i = 0; i < s->count; i++) {
        const iot_entry *o = &s->entries[i];
        if (o != e && !strcmp(o->name, e->name) && !strcmp(o->file_pat, e->file_pat) &&
            !strcmp(o->var_pat, e->var_pat))
            return o;
    }
    return NULL;
}

/* One parameter element (or <hint>): add it, or report why not. -1 when the settings are
 * full and nothing after this element is read. */
static int parse_setting(parser *p, const iot_xml_node *x)
{
    int is_hint = strcmp(x->name, "hint") == 0;
    char *value_attr = is_hint ? iot_xml_attr(x, "value") : NULL;
    const char *value = value_attr ? iot_xml_trim(value_attr) : x->text;
#define FAIL(...) return report(p, x->line, x->name, value, __VA_ARGS__), 0
    if (x->first != IOT_XML_NONE)
        FAIL("a parameter holds a value, not elements");
    const char *key = is_hint ? iot_xml_attr(x, "key") : x->name;
    if (!key || !*key)
        FAIL("<hint> needs a key=\"...\" attribute");
    char shown[IOT_SHOWN_MAX];
    if (is_hint && !valid_hint_key(key))
        FAIL("\"%s\" is not a valid MPI-IO hint key", iot_value_shown(key, shown));
    if (value_attr && x->text)
        FAIL("give the value once: in value= or as text");
    int param = param_index(key);
    const iot_param_def *def = param >= 0 ? &iot_params[param] : NULL;
    if (is_hint && is_mca(key))
        FAIL("%s is an Open MPI parameter, not an MPI-IO hint: use <%s>", key, key);
    if (!def && is_mca(key))
        FAIL("an Open MPI parameter, applied only by `iotune run` (or by OMPI_MCA_%s in the "
             "environment before MPI starts), not by the preloaded runtime",
             key);
    if (!def && !is_hint)
        FAIL("unknown parameter (see `iotune check --list`)");
    if (is_hint && def && def->target != IOT_TARGET_HINT)
        FAIL("%s is an HDF5 setting, not an MPI-IO hint: use <%s>", key, key);
    int per_dataset = def && def->scope == IOT_SCOPE_DATASET;
    for (char **a = x->attrs; *a; a += 2)
        if (strcmp(a[0], "FileName") && strcmp(a[0], "VariableName") &&
            !(is_hint && (!strcmp(a[0], "key") || !strcmp(a[0], "value"))))
            FAIL("unknown attribute %s= (expected FileName=%s)", iot_value_shown(a[0], shown),
                 per_dataset ? " or VariableName=" : "");
    const char *file_pat = iot_xml_attr(x, "FileName"), *var_pat = iot_xml_attr(x, "VariableName");
    file_pat = file_pat ? file_pat : "";
    var_pat = var_pat ? var_pat : "";
    if (*var_pat && !per_dataset)
        FAIL("VariableName= is only for dataset settings; %s is set per file", key);
    if (strlen(file_pat) >= IOT_PATTERN_MAX || strlen(var_pat) >= IOT_PATTERN_MAX)
        FAIL("a pattern is longer than %d bytes", IOT_PATTERN_MAX - 1);
    if (!value)
        FAIL("empty value");
    iot_value v;
    char err[1024]; /* a quoted value (IOT_SHOWN_MAX) and an enum's choices fit */
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
    const iot_entry *same = earlier_same(p->out, e);
    if (same && p->diag) {
        p->problems++;
        char msg[300];
        snprintf(msg, sizeof msg,
                 "%s was already set for the same files%s at line %d: that earlier setting is "
                 "ignored",
                 key, *var_pat ? " and datasets" : "", same->line);
        p->diag(p->ctx, x->line, x->name, value, msg, IOT_DIAG_OVERRIDE);
    }
    return 0;
}

/* The root or a section: no attributes, no text of its own. */
static void check_container(parser *p, const iot_xml_node *x)
{
    char shown[IOT_SHOWN_MAX];
    if (x->attrs[0])
        report(p, x->line, x->name, x->text,
               "unknown attribute %s=", iot_value_shown(x->attrs[0], shown));
    else if (x->text)
        report(p, x->line, x->name, x->text, "text outside a parameter element");
}

static int is_section(const char *name)
{
    return !strcmp(name, "High_Level_IO_Library") || !strcmp(name, "Middleware_Layer") ||
           !strcmp(name, "Parallel_File_System");
}

static void walk(parser *p, const iot_xml_doc *t)
{
    const iot_xml_node *root = &t->nodes[0];
    if (strcmp(root->name, "Parameters") != 0) {
        char shown[IOT_SHOWN_MAX];
        report(p, root->line, root->name, root->text,
               "the root element must be <Parameters>, not <%s>",
               iot_value_shown(root->name, shown));
        return;
    }
    p->out->fatal = 0;
    check_container(p, root);
    for (int s = root->first; s != IOT_XML_NONE; s = t->nodes[s].next) {
        const iot_xml_node *sec = &t->nodes[s];
        if (!is_section(sec->name)) {
            report(p, sec->line, sec->name, sec->text,
                   "unknown section (expected High_Level_IO_Library, Middleware_Layer or "
                   "Parallel_File_System)");
            continue;
        }
        check_container(p, sec);
        for (int c = sec->first; c != IOT_XML_NONE; c = t->nodes[c].next)
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
    iot_xml_doc doc;
    if (iot_xml_read(&doc, text, len) == 0)
        walk(&p, &doc);
    else
        report(&p, doc.line, NULL, NULL, "%s", doc.problem);
    iot_xml_free(&doc);
    return p.problems;
}

/* ------------------------------------------------------------------ reading the file */

/* Reads a regular file of at most max bytes with plain system calls: never through the
 * runtime's own wrappers (which would capture it), and the same in the iotune-parse tool,
 * which has none. Never blocks on a FIFO or device (O_NONBLOCK, and fstat before any read):
 * anything but a regular file is refused. Read to its end, whatever its size says: a file of
 * /proc says 0 bytes and has text (IOTUNE_CONFIG=/proc/cpuinfo was read as empty), and one may
 * grow while read; past max bytes it is refused as one larger. Returns the text
 * (NUL-terminated), or NULL with the reason in err ("not a regular file", "larger than N
 * bytes", the system's message). */
char *iot_read_regular(const char *path, size_t max, size_t *len, char *err, size_t errlen)
{
    int fd = (int)syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    struct stat st;
    char *text = NULL;
    size_t n = 0, cap = 0;
    int larger = 0, oserr = 0;
    if (fd < 0 || syscall(SYS_fstat, fd, &st) != 0) {
        snprintf(err, errlen, "%s", strerror(errno));
    } else if (!S_ISREG(st.st_mode)) {
        snprintf(err, errlen, "not a regular file");
    } else if ((unsigned long long)st.st_size > max) {
        snprintf(err, errlen, "larger than %zu bytes", max);
    } else {
        cap = (size_t)st.st_size + 1; /* + 1: the end is seen without growing */
        cap = cap < 4096 ? 4096 : cap > max + 1 ? max + 1 : cap;
        text = malloc(cap + 1);
        while (text) {
            if (n == cap && (larger = cap > max))
                break;
            if (n == cap) {
                size_t more = cap > max / 2 ? max + 1 : 2 * cap;
                char *bigger = realloc(text, more + 1);
                if (!bigger)
                    free(text);
                text = bigger, cap = more;
                continue;
            }
            long got = syscall(SYS_read, fd, text + n, cap - n);
            if (got < 0 && errno == EINTR)
                continue;
            if (got <= 0) {
                oserr = got < 0 ? errno : 0;
                break;
            }
            n += (size_t)got;
        }
        if (!text)
            snprintf(err, errlen, "out of memory");
        else if (larger)
            snprintf(err, errlen, "larger than %zu bytes", max);
        else if (oserr)
            snprintf(err, errlen, "%s", strerror(oserr));
        if (text && (larger || oserr))
            free(text), text = NULL;
        if (text)
            text[n] = '\0';
    }
    if (fd >= 0)
        syscall(SYS_close, fd);
    *len = text ? n : 0;
    return text;
}

static char *read_config(const char *path, size_t *len, char *err, size_t errlen)
{
    char why[200];
    char *text = iot_read_regular(path, IOT_CONFIG_MAX_BYTES, len, why, sizeof why);
    if (!text && strncmp(why, "larger", 6) == 0)
        snprintf(err, errlen, "the control file is %s", why);
    else if (!text)
        snprintf(err, errlen, "cannot read the control file: %s", why);
    return text;
}

int iot_settings_load(const char *path, iot_settings *out, iot_diag_fn diag, void *ctx)
{
    memset(out, 0, sizeof *out);
    out->fatal = 1;
    char err[300];
    size_t n = 0;
    char *text = read_config(path, &n, err, sizeof err);
    if (!text) {
        if (diag)
            diag(ctx, 0, NULL, NULL, err, 1);
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
