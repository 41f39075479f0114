/* Which settings apply to a file or a dataset: name matching and precedence
 * (docs/control-file.md, "Matching"; the cases in tests/vectors/match.json, shared with the
 * Python side, pin every rule). */
#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>

#include "config/settings.h"

const char *iot_strip_romio_prefix(const char *path)
{
    const char *colon = strchr(path, ':');
    if (colon && colon - path >= 2 && !memchr(path, '/', (size_t)(colon - path)))
        return colon + 1;
    return path;
}

static const char *last_component(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

int iot_match_file(const char *pattern, const char *path)
{
    if (!*pattern)
        return 1;
    /* a ROMIO prefix says which driver, not which file: ignored on both sides */
    pattern = iot_strip_romio_prefix(pattern);
    path = iot_strip_romio_prefix(path);
    return fnmatch(pattern, strchr(pattern, '/') ? path : last_component(path), 0) == 0;
}

/* The last n components of a path ("/a/b/c", 2 -> "b/c"), or NULL when it has fewer. */
static const char *last_components(const char *path, int n)
{
    const char *at = path + strlen(path);
    while (n > 0 && at > path) {
        at--;
        if (*at == '/')
            n--;
    }
    if (n == 0)
        return at + 1;
    return n == 1 && at == path && *path != '/' ? path : NULL;
}

int iot_match_dataset(const char *pattern, const char *path)
{
    if (!*pattern)
        return 1;
    if (!path)
        return 0; /* file level: no dataset */
    if (pattern[0] == '/')
        return fnmatch(pattern, path, 0) == 0;
    /* "g2/x" matches the path's last two components: a suffix at a component boundary */
    int components = 1;
    for (const char *c = pattern; *c; c++)
        components += *c == '/';
    const char *tail = last_components(path, components);
    return tail && fnmatch(pattern, tail, 0) == 0;
}

static int specificity(const iot_entry *e)
{
    return (e->var_pat[0] ? 2 : 0) + (e->file_pat[0] ? 1 : 0);
}

static int applies(const iot_entry *e, const char *file, const char *dataset)
{
    return iot_match_file(e->file_pat, file) && iot_match_dataset(e->var_pat, dataset);
}

const iot_entry *iot_settings_find(const iot_settings *s, int param, const char *file,
                                   const char *dataset)
{
    const iot_entry *best = NULL;
    for (int i = 0; i < s->count; i++) {
        const iot_entry *e = &s->entries[i];
        if (e->param == param && applies(e, file, dataset) &&
            (!best || specificity(e) >= specificity(best)))
            best = e;
    }
    return best;
}

/* A hint that applies to the file, with what decides between entries of the same key. */
typedef struct {
    const char *key;
    int strength; /* specificity */
    int index;    /* in the file: the later wins a tie */
} candidate;

/* By key, and within a key from the weakest entry to the winning one. */
static int by_key_then_strength(const void *a, const void *b)
{
    const candidate *x = a, *y = b;
    int c = strcmp(x->key, y->key);
    if (c)
        return c;
    return x->strength != y->strength ? x->strength - y->strength : x->index - y->index;
}

static int by_index(const void *a, const void *b)
{
    return ((const candidate *)a)->index - ((const candidate *)b)->index;
}

void iot_settings_each_hint(const iot_settings *s, const char *file,
                            void (*fn)(void *ctx, const iot_entry *e), void *ctx)
{
    /* n log n: sort the hints that apply by key, keep the last of each key, and hand the
     * winners on in document order */
    candidate *c = s->count ? malloc((size_t)s->count * sizeof *c) : NULL;
    if (!c)
        return;
    int n = 0;
    for (int i = 0; i < s->count; i++) {
        const iot_entry *e = &s->entries[i];
        if ((e->param < 0 || iot_params[e->param].target == IOT_TARGET_HINT) &&
            applies(e, file, NULL))
            c[n++] = (candidate){e->name, specificity(e), i};
    }
    qsort(c, (size_t)n, sizeof *c, by_key_then_strength);
    int winners = 0;
    for (int i = 0; i < n; i++)
        if (i + 1 == n || strcmp(c[i].key, c[i + 1].key) != 0)
            c[winners++] = c[i];
    qsort(c, (size_t)winners, sizeof *c, by_index);
    for (int i = 0; i < winners; i++)
        fn(ctx, &s->entries[c[i].index]);
    free(c);
}
