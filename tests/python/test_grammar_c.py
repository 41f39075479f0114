"""The runtime's online Sequitur grammar (runtime/src/adapt/grammar.c) on its own: the grammar
always expands back to its input, memory stays bounded (the grammar says when it is full and stops
growing), and the prediction after a phase's first symbol is the rest of the phase."""

import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
HARNESS = r"""
#include <stdio.h>
#include <stdlib.h>
#include "adapt/grammar.h"
int main(int argc, char **argv) {
    (void)argc;
    int n = atoi(argv[1]), alpha = atoi(argv[2]);
    unsigned seed = (unsigned)atoi(argv[3]);
    iot_grammar *g = iot_grammar_new();
    uint32_t *in = malloc(sizeof *in * (size_t)n), *out = malloc(sizeof *out * (size_t)n);
    int added = 0;
    for (int i = 0; i < n; i++) {
        seed = seed * 1103515245u + 12345u; /* a period of 17 with 5 random symbols */
        in[i] = (i % 17 < 12) ? (uint32_t)(i % 17) : 100 + (seed >> 16) % (unsigned)alpha;
        if (iot_grammar_add(g, in[i]) != 0)
            break;
        added++;
    }
    size_t k = iot_grammar_expand(g, out, (size_t)n);
    int same = k == (size_t)added;
    for (int i = 0; same && i < added; i++)
        same = in[i] == out[i];
    uint32_t pred[64];
    size_t np = iot_grammar_predict(g, 0, pred, 64);
    printf("%d %d %d %zu %zu", added, same, iot_grammar_full(g), iot_grammar_symbols(g), np);
    for (size_t i = 0; i < np && i < 11; i++)
        printf(" %u", pred[i]);
    printf("\n");
    iot_grammar_free(g);
    free(in);
    free(out);
    return 0;
}
"""


@pytest.fixture(scope="module")
def harness(tmp_path_factory):
    cc = shutil.which("cc") or pytest.skip("no C compiler")
    d = tmp_path_factory.mktemp("grammar")
    (d / "h.c").write_text(HARNESS)
    exe = d / "h"
    src = REPO / "runtime" / "src"
    subprocess.run([cc, "-std=c11", "-O1", "-g", "-fsanitize=address,undefined", "-Wall",
                    "-Wextra", "-Werror", "-I", src, d / "h.c", src / "adapt" / "grammar.c", "-o",
                    exe],
                   check=True)  # fmt: skip
    return exe


def _run(exe, n, alpha, seed):
    r = subprocess.run([exe, str(n), str(alpha), str(seed)], capture_output=True, text=True,
                       timeout=120, check=True)  # fmt: skip
    return [int(x) for x in r.stdout.split()]


@pytest.mark.parametrize("n,alpha", [(100, 3), (5000, 4), (100000, 1), (200000, 3)])
def test_expands_to_its_input_and_predicts_the_period(harness, n, alpha):
    added, same, full, symbols, npred, *pred = _run(harness, n, alpha, 7)
    assert added == n and same == 1 and full == 0
    assert n < 1000 or symbols < n / 4  # a periodic input compresses
    assert pred[:11] == list(range(1, 12))  # after 0 come 1 ... 11, the fixed part


def test_memory_is_bounded(harness):
    added, same, full, symbols, *_ = _run(harness, 400000, 1000, 3)
    assert full == 1 and same == 1 and added < 400000
    assert symbols <= 65536
