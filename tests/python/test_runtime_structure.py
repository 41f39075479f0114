"""The runtime's structure rules that a compiler cannot check (docs/architecture.md)."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "runtime" / "src"


def test_only_env_c_reads_iotune_variables():
    readers = sorted(
        p.name for p in SRC.rglob("*.[ch]") if re.search(r'getenv\("IOTUNE_', p.read_text())
    )
    assert readers == ["env.c"]


def test_readme_lists_every_variable_the_runtime_reads():
    env_c = (SRC / "base" / "env.c").read_text()
    names = set(re.findall(r'(?:value|flag|getenv)\("(IOTUNE_\w+)"\)', env_c))
    assert {"IOTUNE_CONFIG", "IOTUNE_PROFILE", "IOTUNE_SYNC"} <= names
    readme = (ROOT / "README.md").read_text()
    assert {n for n in names if f"| `{n}" not in readme} == set()


def test_architecture_md_names_every_runtime_file_under_its_layer():
    """docs/architecture.md has a section per layer folder (### n. `layer/`: ...), in the order of
    runtime/src/LAYERS, whose table names each .c file of the folder and each header without one."""
    doc = (ROOT / "docs" / "architecture.md").read_text()
    order = [ln.split()[0] for ln in (SRC / "LAYERS").read_text().splitlines()
             if ln.split() and not ln.startswith("#")]  # fmt: skip
    sections = re.findall(r"^### \d+\. `(\w+)/`", doc, re.M)
    assert sections == order
    parts = re.split(r"^### \d+\. `\w+/`.*$", doc, flags=re.M)[1:]
    missing = []
    for layer, text in zip(order, parts, strict=True):
        for p in sorted((SRC / layer).glob("*.[ch]")):
            if p.suffix == ".h" and p.with_suffix(".c").exists():
                continue
            if f"`{p.name}`" not in text.split("\n### ")[0].split("\n## ")[0]:
                missing.append(f"{layer}/{p.name}")
    assert missing == []
