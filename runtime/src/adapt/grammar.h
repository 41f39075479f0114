/* An online Sequitur grammar (Nevill-Manning and Witten, 1997) over a rank's call signatures,
 * as SmartIO uses it to predict the calls of the next I/O phase: each new symbol is appended
 * to the start rule, a digram that occurs twice becomes a rule, a rule used once is inlined.
 * Amortised linear time; memory bounded by IOT_GRAMMAR_MAX symbols (beyond it the grammar
 * stops growing and says so). Not thread-safe: the caller serialises. */
#ifndef IOTUNE_GRAMMAR_H
#define IOTUNE_GRAMMAR_H

#include <stddef.h>
#include <stdint.h>

#define IOT_GRAMMAR_MAX 65536

typedef struct iot_grammar iot_grammar;

iot_grammar *iot_grammar_new(void);
void iot_grammar_free(iot_grammar *g);

/* Appends a terminal (any value below 2^31). Returns 0, or -1 when the grammar is full. */
int iot_grammar_add(iot_grammar *g, uint32_t terminal);

/* Prediction of what follows `current`: the rules whose expansion starts with it, ranked by how
 * often they are used, the best expanded recursively to terminals (without `current` itself).
 * Writes at most max terminals to out; returns how many (0: no rule starts with it). */
size_t iot_grammar_predict(const iot_grammar *g, uint32_t current, uint32_t *out, size_t max);

/* The start rule expanded to terminals (tests: it must give back the input); and the number
 * of rules. */
size_t iot_grammar_expand(const iot_grammar *g, uint32_t *out, size_t max);
int iot_grammar_rules(const iot_grammar *g);
/* Symbols in use (memory) and whether the grammar is full. */
size_t iot_grammar_symbols(const iot_grammar *g);
int iot_grammar_full(const iot_grammar *g);

#endif
