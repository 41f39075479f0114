"""tools/check_imports.py: the Python package's layers kept one way, as the runtime's
(docs/architecture.md). The real package passes; a planted upward import, a planted cycle (also
through an import inside a function) and a module in no layer fail in a copy of it, naming
file:line; an import under `if TYPE_CHECKING:` is no edge."""

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src" / "iotune"
CHECK = ROOT / "tools" / "check_imports.py"


def run(src: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, CHECK, "--src", src], capture_output=True, text=True, timeout=60
    )


def copy(tmp_path: Path) -> Path:
    dst = tmp_path / "iotune"
    shutil.copytree(SRC, dst, ignore=shutil.ignore_patterns("__pycache__", "data", "c"))
    return dst


def plant(path: Path, line: str) -> int:
    """Adds line after the module's `from __future__` line (else at line 2); its line number."""
    text = path.read_text().splitlines()
    at = next((i + 1 for i, t in enumerate(text) if t.startswith("from __future__")), 1)
    text.insert(at, line)
    path.write_text("\n".join(text) + "\n")
    return at + 1


def test_the_package_keeps_its_layers():
    r = run(SRC)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "check_imports: layers kept" in r.stdout


def test_an_upward_import_fails_with_its_file_and_line(tmp_path):
    src = copy(tmp_path)
    no = plant(src / "inputs.py", "from iotune import cli")  # base imports the entry
    r = run(src)
    assert r.returncode == 1
    assert f"iotune/inputs.py:{no}: imports cli (layer entry is above base)" in r.stdout


def test_a_cycle_within_one_layer_fails_also_through_a_function(tmp_path):
    src = copy(tmp_path)
    (src / "planted_a.py").write_text("import iotune.planted_b\n")
    (src / "planted_b.py").write_text("def f():\n    from iotune import planted_a\n")
    with (src / "LAYERS").open("a") as f:
        f.write("planted: planted_a planted_b\n")
    r = run(src)
    assert r.returncode == 1
    assert "cycle of 2 modules: planted_a planted_b" in r.stdout
    assert "iotune/planted_a.py:1 -> planted_b, iotune/planted_b.py:2 -> planted_a" in r.stdout


def test_the_cycle_of_the_commands_through_the_entry_would_fail(tmp_path):
    src = copy(tmp_path)
    no = plant(src / "adapt.py", "from iotune import cli")
    r = run(src)
    assert r.returncode == 1
    assert f"iotune/adapt.py:{no}: imports cli (layer entry is above commands)" in r.stdout
    assert "cycle of 2 modules: adapt cli" in r.stdout


def test_a_relative_import_is_an_edge(tmp_path):
    src = copy(tmp_path)
    no = plant(src / "kb" / "store.py", "from . import cli")
    r = run(src)
    assert r.returncode == 1
    assert f"iotune/kb/store.py:{no}: imports kb/cli (layer commands is above analyses)" in r.stdout


def test_an_import_under_type_checking_is_no_edge(tmp_path):
    src = copy(tmp_path)
    plant(
        src / "inputs.py",
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import iotune.cli",
    )
    r = run(src)
    assert r.returncode == 0, r.stdout + r.stderr


def test_a_module_in_no_layer_and_a_stale_entry_fail(tmp_path):
    src = copy(tmp_path)
    (src / "planted.py").write_text("")
    with (src / "LAYERS").open("a") as f:
        f.write("extra: gone_module\n")
    r = run(src)
    assert r.returncode == 1
    assert "iotune/planted.py:1: module planted is in no layer of iotune/LAYERS" in r.stdout
    assert "iotune/LAYERS:1: gone_module names no module of iotune" in r.stdout


def test_a_file_that_does_not_parse_is_one_line(tmp_path):
    src = copy(tmp_path)
    (src / "outputs.py").write_text("def broken(:\n")
    r = run(src)
    assert r.returncode == 1
    assert "iotune/outputs.py:1: cannot parse it" in r.stdout
    assert "Traceback" not in r.stderr
