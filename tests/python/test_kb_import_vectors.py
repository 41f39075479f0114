"""One reading of an exported knowledge base for `iotune kb import` and the runtime's adaptive
mode (IOTUNE_ADAPT_KB): the shared vectors tests/vectors/kb/import.json run against Python
(inputs.load_json(strict=True), store.import_json) and against the runtime's reader (jsonread.c,
kbmatch.c, kbkey.c, compiled here with a small harness). An outside tester found that the runtime
applied an entry whose signature key the import refuses as edited, that a name given twice
was the first for C and the last for Python, and that \\u0000 ended a string in C only."""

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import mpi_info

from iotune.inputs import InputError, load_json
from iotune.kb import store

REPO = Path(__file__).resolve().parents[2]
VECTORS = json.loads((REPO / "tests" / "vectors" / "kb" / "import.json").read_text())["cases"]
HARNESS = r"""
#include <stdio.h>
#include <stdlib.h>
#include "adapt/kbmatch.h"
int main(int argc, char **argv) {
    (void)argc;
    FILE *f = fopen(argv[1], "rb");
    char *text = malloc(1 << 20), err[300];
    size_t n = fread(text, 1, 1 << 20, f);
    fclose(f);
    iot_kb kb;
    if (iot_kb_parse(text, n, &kb, err, sizeof err) != 0) { printf("error %s\n", err); return 0; }
    printf("taken %d\n", kb.n);
    iot_kb_free(&kb);
    free(text);
    return 0;
}
"""


@pytest.fixture(scope="module")
def harness(tmp_path_factory, build_dir):
    cc = mpi_info(build_dir).get("mpicc") or shutil.which("mpicc") or pytest.skip("no mpicc")
    d = tmp_path_factory.mktemp("kbimport")
    (d / "h.c").write_text(HARNESS)
    src = REPO / "runtime" / "src"
    exe = d / "h"
    sources = ["adapt/kbmatch.c", "adapt/kbkey.c", "base/jsonread.c", "base/sha256.c"]
    subprocess.run([cc, "-std=c11", "-Wall", "-Wextra", "-Werror", "-D_GNU_SOURCE", "-I", src,
                    "-I", build_dir / "runtime" / "generated", d / "h.c",
                    *[src / s for s in sources], "-lm", "-o", exe], check=True)  # fmt: skip
    return exe


def _file(case, tmp_path):
    path = tmp_path / "kb.json"
    path.write_bytes((b"\xef\xbb\xbf" if case.get("bom") else b"") + case["text"].encode())
    return path


def _python(path):
    try:
        entries = store.import_json(load_json(path, "knowledge-base export", strict=True), path)
    except InputError as e:
        return str(e)
    return f"taken {len(entries)}"


@pytest.mark.parametrize("case", VECTORS, ids=lambda c: c["name"][:60])
def test_python_and_the_runtime_read_an_export_alike(case, harness, tmp_path):
    path = _file(case, tmp_path)
    said = {"python": _python(path)}
    said["c"] = subprocess.run([harness, path], capture_output=True, text=True,
                               check=True).stdout.strip()  # fmt: skip
    taken = f"taken {case['text'].count(chr(34) + 'uid' + chr(34))}"
    for side in ("python", "c"):
        if case[side] == "taken":
            assert said[side] == taken, (side, said)
            continue
        assert case[side] in said[side] and not said[side].startswith("taken"), (side, said)
        if "line" in case:
            where = f"{path}:{case['line']}:" if side == "python" else f"line {case['line']}:"
            assert where in said[side], (side, said)


@pytest.mark.parametrize("case", [c for c in VECTORS if "line" in c], ids=lambda c: c["name"][:60])
def test_kb_import_says_the_file_line_and_name(case, tmp_path, capsys):
    """`iotune kb import` reads the export as the vectors say: one line, nothing imported."""
    from iotune.cli import main

    path = _file(case, tmp_path)
    assert main(["kb", "--kb", str(tmp_path / "kb.sqlite"), "import", str(path)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{path}:{case['line']}: " in err and case["python"] in err
