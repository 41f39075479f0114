"""One motif signature for Python and the runtime: the shared vectors
tests/vectors/kb/signature.json run against iotune.kb (signature.motif_of, match.nearest) and
against the runtime's C (runtime/src/adapt/kbmatch.c, compiled here with a small harness), which
reads the very export files that `iotune kb export` writes (store.export_json)."""

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import mpi_info

from iotune import insights
from iotune.kb import match, signature, store

REPO = Path(__file__).resolve().parents[2]
VECTOR_FILE = REPO / "tests" / "vectors" / "kb" / "signature.json"
VECTORS = json.loads(VECTOR_FILE.read_text())
HARNESS = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "base/jsonread.h"
#include "adapt/kbmatch.h"
static char *slurp(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    char *buf = malloc(1 << 20);
    *n = fread(buf, 1, 1 << 20, f);
    fclose(f);
    return buf;
}
static void insights_of(const iot_json *obj, iot_insights *in) {
    memset(in, 0, sizeof *in);
    for (const iot_json *m = obj ? obj->child : NULL; m; m = m->next)
        for (int i = 0; i < IOT_I_COUNT; i++)
            if (strcmp(iot_insight_names[i], m->key) == 0)
                in->v[i] = m->type == IOT_J_STRING ? (iot_insight){1, 0, m->string}
                                                   : (iot_insight){1, m->number, NULL};
}
int main(int argc, char **argv) {
    size_t n;
    char err[256], *text = slurp(argv[1], &n);
    iot_json *v = iot_json_parse(text, n, err, sizeof err);
    if (!v) { printf("error %s\n", err); return 1; }
    printf("version %d\n", IOT_KB_SIGNATURE_VERSION);
    const iot_json *motifs = iot_json_get(v, "motifs");
    if (argc == 2) { /* the motif of each case, one JSON object a line */
        for (const iot_json *c = motifs->child; c; c = c->next) {
            iot_insights in;
            iot_kb_signature sig;
            insights_of(iot_json_get(c, "insights"), &in);
            iot_kb_signature_of(&in, &sig);
            printf("{");
            for (int i = 0; i < IOT_KB_MOTIF; i++)
                printf("%s\"%s\": \"%s\"", i ? ", " : "", iot_kb_motif_names[i], sig.motif[i]);
            printf("}\n");
        }
        return 0;
    }
    /* an export, a query case and its scale: the entry chosen */
    size_t kn;
    char *kt = slurp(argv[2], &kn);
    iot_kb kb;
    if (iot_kb_parse(kt, kn, &kb, err, sizeof err) != 0) { printf("error %s\n", err); return 1; }
    const iot_json *q = motifs->child;
    for (int i = atoi(argv[3]); i > 0; i--) q = q->next;
    iot_insights in;
    iot_kb_signature sig;
    insights_of(iot_json_get(q, "insights"), &in);
    iot_kb_signature_of(&in, &sig);
    /* the bytes and files through the insights: the signature's own bytes per file */
    in.v[IOT_I_BYTES_WRITTEN] = (iot_insight){1, atof(argv[6]), NULL};
    in.v[IOT_I_BYTES_READ] = (iot_insight){1, 0, NULL};
    in.v[IOT_I_FILES] = (iot_insight){1, atof(argv[7]), NULL};
    iot_kb_signature_of(&in, &sig);
    sig.ranks = atof(argv[4]), sig.transfer_median = atof(argv[5]);
    double d;
    int best = iot_kb_nearest(&kb, &sig, &d);
    printf("%s\n%.4f\n", best < 0 ? "none" : kb.entries[best].study, d);
    iot_kb_free(&kb);
    return 0;
}
"""


@pytest.fixture(scope="module")
def harness(tmp_path_factory, build_dir):
    cc = mpi_info(build_dir).get("mpicc") or shutil.which("mpicc") or pytest.skip("no mpicc")
    d = tmp_path_factory.mktemp("kbmatch")
    (d / "h.c").write_text(HARNESS)
    src = REPO / "runtime" / "src"
    exe = d / "h"
    subprocess.run([cc, "-std=c11", "-Wall", "-Wextra", "-Werror", "-D_GNU_SOURCE", "-I", src,
                    "-I", build_dir / "runtime" / "generated", d / "h.c",
                    src / "adapt" / "kbmatch.c", src / "adapt" / "kbkey.c",
                    src / "base" / "jsonread.c", src / "base" / "sha256.c", "-lm", "-o", exe],
                   check=True)  # fmt: skip
    return exe


def _group(values):
    return insights.Group(pattern="x", files=["x"], values=dict(values))


def test_python_motifs_match_the_vectors():
    assert VECTORS["signature_version"] == signature.VERSION
    assert list(VECTORS["motifs"][0]["motif"]) == list(signature.MOTIF_FIELDS)
    for case in VECTORS["motifs"]:
        assert signature.motif_of(_group(case["insights"])) == case["motif"], case["name"]


def test_c_motifs_match_the_vectors(harness):
    vectors = VECTOR_FILE
    out = subprocess.run([harness, vectors], capture_output=True, text=True, check=True)
    out = out.stdout.splitlines()
    assert out[0] == f"version {signature.VERSION}"
    got = [json.loads(line) for line in out[1:]]
    assert got == [c["motif"] for c in VECTORS["motifs"]]


def _entries(names):
    out = []
    for name in names:
        e = VECTORS["entries"][name]
        version = e.get("version", signature.VERSION)
        sig = signature.Signature(motif=dict(VECTORS["motifs"][e["motif"]]["motif"]),
                                  scale=dict(e["scale"]), version=version)  # fmt: skip
        out.append(store.Entry(signature=sig, settings=dict(e["settings"]), speedup=e["speedup"],
                               improved=e["improved"], study=name))  # fmt: skip
    return out


def _python_choice(case):
    query = signature.Signature(motif=dict(VECTORS["motifs"][case["query"]]["motif"]),
                                scale=dict(case["scale"]))  # fmt: skip
    same = [m for m in match.nearest(_entries(case["entries"]), query, k=100) if m.same_motif]
    return (same[0].entry.study, same[0].distance) if same else (None, None)


@pytest.mark.parametrize("case", VECTORS["matches"], ids=lambda c: c["name"])
def test_python_and_c_choose_the_same_entry(case, harness, tmp_path):
    chosen, distance = _python_choice(case)
    assert chosen == case["expect"]
    export = tmp_path / "kb.json"
    export.write_text(json.dumps(store.export_json(_entries(case["entries"]))))
    s = case["scale"]
    r = subprocess.run([harness, VECTOR_FILE, export,
                        str(case["query"]), str(s["ranks"]), str(s["transfer_size_median"]),
                        str(s["bytes"]), str(s.get("files", 1))],
                       capture_output=True, text=True, check=True)  # fmt: skip
    out = r.stdout.splitlines()
    assert out[1] == (case["expect"] or "none")
    # one distance: what `iotune adapt` says of a phase's entry is what `kb suggest` says of it
    # (an outside tester read "same motif, distance 0.3962" against "distance 0 (same motif)")
    if chosen is not None:
        assert float(out[2]) == distance
    if "distance" in case:
        assert distance == case["distance"]


@pytest.mark.parametrize(
    "text,error",
    [('{"schema": "other", "entries": []}', "not an iotune knowledge-base export"),
     ('{"schema": "iotune-kb-export", "version": 9, "entries": []}', "newer iotune"),
     ('{"schema": "iotune-kb-export",\n "entries": [{"settings": {}}]}', "entry 0 (line 2)"),
     ('{"schema": "iotune-kb-export",\n\n "entries": [}', "line 3"),
     ("", "line 1: unexpected end")],
)  # fmt: skip
def test_c_refuses_what_is_not_an_export(harness, tmp_path, text, error):
    bad = tmp_path / "bad.json"
    bad.write_text(text)
    out = subprocess.run([harness, VECTOR_FILE, bad, "0", "1",
                          "1", "1"], capture_output=True, text=True)  # fmt: skip
    assert out.returncode == 1 and error in out.stdout, out.stdout
