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
