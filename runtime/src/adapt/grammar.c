#include "adapt/grammar.h"

#include <stdlib.h>
#include <string.h>

/* Symbols live in one array (no allocation after the start): prev/next indices, the value
 * (a terminal, or NT_BIT | rule), and guards mark each rule's circular list. */
#define NT_BIT 0x80000000u
#define MAX_RULES (IOT_GRAMMAR_MAX / 2)
#define TABLE_BITS 17 /* twice the symbols: the digram table stays at most half full */
#define TABLE_SIZE (1u << TABLE_BITS)
/* Table slots hold a key's complement, so that zeroed memory is empty and the tables cost
 * nothing until used (no key is all ones or all ones but the last bit: no rule id is that
 * high) */
#define EMPTY 0
#define TOMB 1

typedef struct {
    int32_t prev, next;
    uint32_t v;
    int32_t guard; /* 1 for a rule's guard (v is then the rule) */
} node;

typedef struct {
    int32_t guard; /* -1: free */
    int32_t uses;  /* occurrences of the rule in other rules */
} rule;

struct iot_grammar {
    node n[IOT_GRAMMAR_MAX];
    rule r[MAX_RULES];
    int32_t free_nodes, free_rules;   /* free lists through node.next and rule.uses */
    int32_t fresh_nodes, fresh_rules; /* never used from here on (zeroed memory) */
    size_t used_nodes;
    int nrules, full;
    uint64_t keys[TABLE_SIZE];
    int32_t at[TABLE_SIZE];
    uint32_t table_used;
};

static int is_nt(const node *x)
{
    return !x->guard && (x->v & NT_BIT);
}

static uint64_t hash64(uint64_t k)
{
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdULL;
    k ^= k >> 33;
    return k;
}

static int32_t new_node(iot_grammar *g)
{
    int32_t i = g->free_nodes;
    if (i >= 0)
        g->free_nodes = g->n[i].next;
    else if (g->fresh_nodes < IOT_GRAMMAR_MAX)
        i = g->fresh_nodes++;
    else
        return -1;
    g->used_nodes++;
    return i;
}

static void free_node(iot_grammar *g, int32_t i)
{
    g->n[i] = (node){-1, g->free_nodes, 0, -1}; /* guard -1: free */
    g->free_nodes = i;
    g->used_nodes--;
}

static int32_t new_rule(iot_grammar *g)
{
    int32_t id = g->free_rules >= 0           ? g->free_rules
                 : g->fresh_rules < MAX_RULES ? g->fresh_rules
                                              : -1;
    if (id < 0)
        return -1;
    int32_t gd = new_node(g);
    if (gd < 0)
        return -1;
    if (id == g->free_rules)
        g->free_rules = g->r[id].uses;
    else
        g->fresh_rules++;
    g->r[id] = (rule){gd, 0};
    g->n[gd] = (node){gd, gd, (uint32_t)id, 1};
    g->nrules++;
    return id;
}

static uint64_t key_of(const iot_grammar *g, int32_t a)
{
    return ((uint64_t)g->n[a].v << 32) | g->n[g->n[a].next].v;
}

/* A table entry is trusted only while its digram is still there. */
static int holds(const iot_grammar *g, int32_t a, uint64_t key)
{
    if (a < 0 || g->n[a].guard != 0)
        return 0;
    int32_t b = g->n[a].next;
    return b >= 0 && g->n[b].guard == 0 && key_of(g, a) == key;
}

/* The slot of key, or where it would go (the first tombstone or empty slot). */
static uint32_t slot_of(const iot_grammar *g, uint64_t key, int *found)
{
    uint32_t i = (uint32_t)hash64(key) & (TABLE_SIZE - 1), tomb = TABLE_SIZE;
    for (uint32_t probes = 0; probes < TABLE_SIZE; probes++, i = (i + 1) & (TABLE_SIZE - 1)) {
        if (g->keys[i] == ~key) {
            *found = 1;
            return i;
        }
        if (g->keys[i] == TOMB && tomb == TABLE_SIZE)
            tomb = i;
        if (g->keys[i] == EMPTY)
            break;
    }
    *found = 0;
    return tomb < TABLE_SIZE ? tomb : i;
}

static void rebuild_table(iot_grammar *g);

static void put_digram(iot_grammar *g, int32_t a)
{
    if (g->n[a].guard || g->n[g->n[a].next].guard)
        return;
    int found;
    uint64_t key = key_of(g, a);
    uint32_t s = slot_of(g, key, &found);
    if (!found) {
        if (g->keys[s] == EMPTY)
            g->table_used++;
        g->keys[s] = ~key;
    }
    g->at[s] = a;
    if (g->table_used > TABLE_SIZE / 4 * 3)
        rebuild_table(g);
}

static void del_digram(iot_grammar *g, int32_t a)
{
    if (g->n[a].guard || g->n[g->n[a].next].guard)
        return;
    int found;
    uint32_t s = slot_of(g, key_of(g, a), &found);
    if (found && g->at[s] == a)
        g->keys[s] = TOMB;
}

/* Too many tombstones: every rule's digrams again (the first occurrence of each). */
static void rebuild_table(iot_grammar *g)
{
    memset(g->keys, 0, sizeof g->keys); /* EMPTY */
    g->table_used = 0;
    for (int id = 0; id < g->fresh_rules; id++) {
        if (g->r[id].guard < 0)
            continue;
        int32_t gd = g->r[id].guard;
        for (int32_t a = g->n[gd].next; a != gd && g->n[a].next != gd; a = g->n[a].next) {
            int found;
            uint32_t s = slot_of(g, key_of(g, a), &found);
            if (!found) {
                g->keys[s] = ~key_of(g, a);
                g->at[s] = a;
                g->table_used++;
            }
        }
    }
}

static void join(iot_grammar *g, int32_t left, int32_t right)
{
    node *l = &g->n[left];
    if (l->next >= 0) {
        del_digram(g, left);
        /* triples (aaa): only the second pair was recorded; keep the first one known */
        node *r = &g->n[right];
        if (r->prev >= 0 && r->next >= 0 && !r->guard && !g->n[r->prev].guard &&
            !g->n[r->next].guard && r->v == g->n[r->prev].v && r->v == g->n[r->next].v)
            put_digram(g, right);
        if (l->prev >= 0 && !l->guard && !g->n[l->prev].guard && !g->n[l->next].guard &&
            l->v == g->n[l->next].v && l->v == g->n[l->prev].v)
            put_digram(g, l->prev);
    }
    g->n[left].next = right;
    g->n[right].prev = left;
}

static void insert_after(iot_grammar *g, int32_t at, int32_t y)
{
    join(g, y, g->n[at].next);
    join(g, at, y);
}

/* Removes symbol a from its rule (a nonterminal uses its rule once less). */
static void remove_symbol(iot_grammar *g, int32_t a)
{
    join(g, g->n[a].prev, g->n[a].next);
    del_digram(g, a);
    if (is_nt(&g->n[a]))
        g->r[g->n[a].v & ~NT_BIT].uses--;
    free_node(g, a);
}

static int32_t symbol(iot_grammar *g, uint32_t v)
{
    int32_t a = new_node(g);
    if (a < 0)
        return -1;
    g->n[a] = (node){-1, -1, v, 0};
    if (v & NT_BIT)
        g->r[v & ~NT_BIT].uses++;
    return a;
}

static int check(iot_grammar *g, int32_t a);

/* A rule used once is put back in place of its one use (rule utility). */
static void expand(iot_grammar *g, int32_t a)
{
    int32_t id = (int32_t)(g->n[a].v & ~NT_BIT), gd = g->r[id].guard;
    int32_t left = g->n[a].prev, right = g->n[a].next;
    int32_t first = g->n[gd].next, last = g->n[gd].prev;
    del_digram(g, left);
    del_digram(g, a);
    /* unlink the body from its guard, and a from its rule, without touching digrams */
    free_node(g, gd);
    g->r[id] = (rule){-1, g->free_rules};
    g->free_rules = id;
    g->nrules--;
    free_node(g, a);
    g->n[left].next = -1; /* so that join does not delete a digram that is gone */
    join(g, left, first);
    g->n[last].next = -1;
    join(g, last, right);
    put_digram(g, last);
}

static void substitute(iot_grammar *g, int32_t a, int32_t id)
{
    int32_t q = g->n[a].prev;
    remove_symbol(g, g->n[q].next);
    remove_symbol(g, g->n[q].next);
    int32_t s = symbol(g, NT_BIT | (uint32_t)id); /* two nodes were just freed */
    insert_after(g, q, s);
    if (!check(g, q))
        check(g, g->n[q].next);
}

static void match(iot_grammar *g, int32_t ss, int32_t m)
{
    int32_t id;
    node *mp = &g->n[g->n[m].prev];
    if (mp->guard && g->n[g->n[g->n[m].next].next].guard) {
        id = (int32_t)mp->v; /* m is a whole rule: reuse it */
        substitute(g, ss, id);
    } else {
        /* a new rule of the digram: needs a guard and two symbols (and frees four) */
        if (g->used_nodes + 3 > IOT_GRAMMAR_MAX ||
            (g->free_rules < 0 && g->fresh_rules >= MAX_RULES)) {
            g->full = 1;
            return;
        }
        id = new_rule(g);
        int32_t gd = g->r[id].guard;
        int32_t a = symbol(g, g->n[ss].v), b = symbol(g, g->n[g->n[ss].next].v);
        insert_after(g, g->n[gd].prev, a);
        insert_after(g, g->n[gd].prev, b);
        substitute(g, m, id);
        substitute(g, ss, id);
        put_digram(g, g->n[gd].next);
    }
    int32_t gd = g->r[id].guard;
    if (gd >= 0) {
        int32_t first = g->n[gd].next;
        if (is_nt(&g->n[first]) && g->r[g->n[first].v & ~NT_BIT].uses == 1)
            expand(g, first);
    }
}

/* Digram uniqueness for the digram starting at a; returns 1 when it was replaced. */
static int check(iot_grammar *g, int32_t a)
{
    if (g->n[a].guard || g->n[g->n[a].next].guard)
        return 0;
    int found;
    uint64_t key = key_of(g, a);
    uint32_t s = slot_of(g, key, &found);
    if (!found || !holds(g, g->at[s], key)) {
        put_digram(g, a);
        return 0;
    }
    int32_t m = g->at[s];
    if (m != a && m != g->n[a].next && g->n[m].next != a)
        match(g, a, m);
    return 1;
}

iot_grammar *iot_grammar_new(void)
{
    /* zeroed: the pages are touched only as the grammar grows (EMPTY slots, fresh nodes) */
    iot_grammar *g = calloc(1, sizeof *g);
    if (!g)
        return NULL;
    g->free_nodes = g->free_rules = -1;
    new_rule(g); /* rule 0: the start rule */
    return g;
}

void iot_grammar_free(iot_grammar *g)
{
    free(g);
}

int iot_grammar_add(iot_grammar *g, uint32_t terminal)
{
    /* room for the symbol and a new rule's guard and digram (match frees what it uses) */
    if (g->full || g->used_nodes + 4 > IOT_GRAMMAR_MAX) {
        g->full = 1;
        return -1;
    }
    int32_t gd = g->r[0].guard;
    int32_t a = symbol(g, terminal & ~NT_BIT);
    insert_after(g, g->n[gd].prev, a);
    int32_t p = g->n[a].prev;
    if (p != gd)
        check(g, p);
    return 0;
}

/* Terminals of rule id's expansion (or of v itself) into out, depth-first. */
static size_t emit(const iot_grammar *g, uint32_t v, uint32_t *out, size_t n, size_t max, int depth)
{
    if (n >= max)
        return n;
    if (!(v & NT_BIT)) {
        out[n++] = v;
        return n;
    }
    if (depth > 64) /* the grammar is acyclic; this only bounds the stack */
        return n;
    int32_t gd = g->r[v & ~NT_BIT].guard;
    for (int32_t a = g->n[gd].next; a != gd && n < max; a = g->n[a].next)
        n = emit(g, g->n[a].v, out, n, max, depth + 1);
    return n;
}

size_t iot_grammar_expand(const iot_grammar *g, uint32_t *out, size_t max)
{
    return emit(g, NT_BIT | 0u, out, 0, max, 0);
}

/* The terminal a rule's expansion starts with. */
static uint32_t first_terminal(const iot_grammar *g, int32_t id)
{
    for (int depth = 0; depth < 64; depth++) {
        uint32_t v = g->n[g->n[g->r[id].guard].next].v;
        if (!(v & NT_BIT))
            return v;
        id = (int32_t)(v & ~NT_BIT);
    }
    return NT_BIT;
}

/* The continuation after the first `current` in rule id's expansion (at most max terminals),
 * or 0 when it has none; *work counts the terminals expanded. */
static size_t continuation(const iot_grammar *g, int id, uint32_t current, uint32_t *out,
                           size_t max, uint32_t *tmp, size_t tmp_max, size_t *work)
{
    size_t n = emit(g, NT_BIT | (uint32_t)id, tmp, 0, tmp_max, 0);
    *work += n;
    for (size_t i = 0; i + 1 < n; i++)
        if (tmp[i] == current) {
            size_t k = n - i - 1 < max ? n - i - 1 : max;
            memcpy(out, tmp + i + 1, k * sizeof *out);
            return k;
        }
    return 0;
}

size_t iot_grammar_predict(const iot_grammar *g, uint32_t current, uint32_t *out, size_t max)
{
    if (max == 0)
        return 0;
    /* SmartIO: the rules whose expansion starts with the current symbol, the most used one */
    int best = -1;
    for (int id = 1; id < g->fresh_rules; id++) { /* rule 0 is the input itself */
        if (g->r[id].guard < 0 || first_terminal(g, id) != current)
            continue;
        if (best < 0 || g->r[id].uses > g->r[best].uses)
            best = id;
    }
    size_t tmp_max = max + 1 < 4096 ? 4096 : max + 1;
    uint32_t *tmp = malloc(tmp_max * sizeof *tmp);
    if (!tmp)
        return 0;
    size_t k = 0, work = 0;
    if (best >= 0) {
        k = continuation(g, best, current, out, max, tmp, tmp_max, &work);
    } else {
        /* a rule boundary need not fall on the current symbol (Sequitur makes "close open"
         * a rule as readily as "open write"): the most used rule that holds it, continued
         * after it; the work is bounded */
        int used = -1;
        for (int id = 1; id < g->fresh_rules && work < ((size_t)1 << 20); id++) {
            if (g->r[id].guard < 0 || g->r[id].uses <= used)
                continue;
            uint32_t probe[1];
            if (continuation(g, id, current, probe, 1, tmp, tmp_max, &work)) {
                used = g->r[id].uses;
                best = id;
            }
        }
        if (best >= 0)
            k = continuation(g, best, current, out, max, tmp, tmp_max, &work);
    }
    free(tmp);
    return k;
}

int iot_grammar_rules(const iot_grammar *g)
{
    return g->nrules - 1;
}

size_t iot_grammar_symbols(const iot_grammar *g)
{
    return g->used_nodes;
}

int iot_grammar_full(const iot_grammar *g)
{
    return g->full;
}
