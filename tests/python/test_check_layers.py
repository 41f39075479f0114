"""tools/check_layers.py: the runtime's layers kept one way (docs/architecture.md). The real tree
passes; a planted upward include and a planted cycle in a copy of it fail, naming file:line."""

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "runtime" / "src"
CHECK = ROOT / "tools" / "check_layers.py"


def run(src: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, CHECK, "--src", src], capture_output=True, text=True, timeout=60
    )


def copy(tmp_path: Path) -> Path:
    dst = tmp_path / "src"
    shutil.copytree(SRC, dst)
    return dst


def layered(src: Path) -> list[tuple[str, Path]]:
    """(layer, file) of every C file in a layer folder, in the declared order."""
    order = [ln.split()[0] for ln in (src / "LAYERS").read_text().splitlines()
             if ln.split() and not ln.startswith("#")]  # fmt: skip
    return [(lay, p) for lay in order for p in sorted((src / lay).glob("*.[ch]"))]


def test_the_runtime_keeps_its_layers():
    r = run(SRC)
    assert r.returncode == 0, r.stdout + r.stderr


def test_an_upward_include_fails_with_its_file_and_line(tmp_path):
    src = copy(tmp_path)
    files = layered(src)
    low_layer, low = next((lay, p) for lay, p in files if p.suffix == ".c")
    high_layer, high = next((lay, p) for lay, p in reversed(files) if p.suffix == ".h")
    assert low_layer != high_layer
    text = low.read_text().splitlines()
    text.insert(1, f'#include "{high.relative_to(src).as_posix()}"')
    low.write_text("\n".join(text) + "\n")
    r = run(src)
    assert r.returncode == 1
    rel = low.relative_to(src).as_posix()
    assert f"{rel}:2: includes {high.relative_to(src).as_posix()} (layer {high_layer} is above" in (
        r.stdout
    )


def test_a_cycle_within_one_layer_fails(tmp_path):
    src = copy(tmp_path)
    layer = next(lay for lay, _ in layered(src))
    (src / layer / "planted_a.h").write_text('#include "planted_b.h"\n')
    (src / layer / "planted_b.h").write_text('#include "planted_a.h"\n')
    r = run(src)
    assert r.returncode == 1
    assert f"cycle of 2 units: {layer}/planted_a {layer}/planted_b" in r.stdout
    assert f"{layer}/planted_a.h:1 -> {layer}/planted_b" in r.stdout


def test_a_known_problem_that_is_gone_fails(tmp_path):
    src = copy(tmp_path)
    with (src / "LAYERS.known").open("a") as f:
        f.write("gone.c: not in a layer folder\n")
    r = run(src)
    assert r.returncode == 1
    assert "no longer occurs, remove it: gone.c: not in a layer folder" in r.stdout


def test_a_file_too_long_fails(tmp_path):
    src = copy(tmp_path)
    _, first = layered(src)[0]
    first.write_text(first.read_text() + "\n" * 451)
    r = run(src)
    assert r.returncode == 1
    assert f"{first.relative_to(src).as_posix()}:451: " in r.stdout and "more than 450" in r.stdout
