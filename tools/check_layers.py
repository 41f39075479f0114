"""The runtime's layers kept one way (docs/architecture.md): reads every `#include "..."` line of
runtime/src and the declared order of its layer folders (runtime/src/LAYERS, lowest first), and
fails on

- a file outside the layer folders, or in a folder LAYERS does not name;
- an upward include: a file including a header of a higher layer than its own;
- a cycle of units (a unit: x.c with its x.h), also within one layer;
- a file of more than MAX_LINES lines (one job per file: split it along its seams).

Each problem is one line naming the offending file:line. Entries of runtime/src/LAYERS.known
(same text as the problem lines, without the line number) are problems known and tolerated while
they are being removed; one that no longer occurs is a problem too, so that the list only
shrinks. Standard library only.

    python3 tools/check_layers.py [--src runtime/src]
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

MAX_LINES = 450
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def layer_lines(path: Path) -> list[list[str]]:
    """The words of each line of a LAYERS file that has any, comments (#...) left out; a line
    that starts with a blank continues the one before."""
    out: list[list[str]] = []
    for line in path.read_text().splitlines():
        words = line.split("#", 1)[0].split()
        if words and out and line[:1].isspace():
            out[-1].extend(words)
        elif words:
            out.append(words)
    return out


def read_layers(src: Path) -> list[str]:
    return [words[0] for words in layer_lines(src / "LAYERS")]


def sources(src: Path) -> list[Path]:
    return sorted(p for p in src.rglob("*") if p.suffix in (".c", ".h") and p.is_file())


def resolve(src: Path, by_name: dict[str, list[str]], file: str, inc: str) -> str | None:
    """The file (relative to src) an include names: from the including file's folder, from
    src itself, else one file of that name anywhere in src; None for a header from outside
    (system, generated)."""
    here = (src / file).parent
    for base in (here, src):
        p = (base / inc).resolve()
        if p.is_file() and src.resolve() in p.parents:
            return p.relative_to(src.resolve()).as_posix()
    names = by_name.get(Path(inc).name, [])
    return names[0] if len(names) == 1 and "/" not in inc else None


def unit(file: str) -> str:
    return file.rsplit(".", 1)[0]


def layer_of(file: str) -> str | None:
    return file.split("/", 1)[0] if "/" in file else None


def cycles(edges: dict[str, dict[str, tuple[str, int]]]) -> list[list[str]]:
    """Strongly connected components of more than one unit (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out = []
    counter = 0
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            advanced = False
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(edges.get(w, {})))))
                    advanced = True
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return out


def cycle_path(comp: list[str], edges: dict[str, dict[str, tuple[str, int]]]) -> list[str]:
    """One closed path through the component, from its first unit (breadth-first)."""
    members = set(comp)
    start = comp[0]
    prev: dict[str, str] = {}
    queue = [start]
    while queue:
        v = queue.pop(0)
        for w in sorted(edges.get(v, {})):
            if w not in members:
                continue
            if w == start:
                path = [v]
                while path[-1] != start:
                    path.append(prev[path[-1]])
                return [start, *reversed(path[:-1]), start] if len(path) > 1 else [start, v, start]
            if w not in prev:
                prev[w] = v
                queue.append(w)
    return [start, start]


def check(src: Path) -> list[tuple[str, str]]:
    """The problems as (key, message): the key without a line number (for LAYERS.known)."""
    layers = read_layers(src)
    rank = {name: i for i, name in enumerate(layers)}
    files = [p.relative_to(src).as_posix() for p in sources(src)]
    by_name: dict[str, list[str]] = {}
    for f in files:
        by_name.setdefault(Path(f).name, []).append(f)
    problems = []
    edges: dict[str, dict[str, tuple[str, int]]] = {unit(f): {} for f in files}
    for f in files:
        lay = layer_of(f)
        if lay is None:
            problems.append((f"{f}: not in a layer folder", f"{f}:1: not in a layer folder"))
        elif lay not in rank:
            msg = f"folder {lay}/ is not a layer of LAYERS"
            problems.append((f"{f}: {msg}", f"{f}:1: {msg}"))
        lines = (src / f).read_text().splitlines()
        if len(lines) > MAX_LINES:
            msg = f"{len(lines)} lines, more than {MAX_LINES}"
            problems.append((f"{f}: more than {MAX_LINES} lines", f"{f}:{MAX_LINES + 1}: {msg}"))
        for no, line in enumerate(lines, 1):
            m = INCLUDE.match(line)
            if not m:
                continue
            target = resolve(src, by_name, f, m.group(1))
            if target is None:
                continue
            if unit(target) != unit(f):
                edges[unit(f)].setdefault(unit(target), (f, no))
            to = layer_of(target)
            if lay in rank and to in rank and rank[to] > rank[lay]:
                msg = f"includes {target} (layer {to} is above {lay})"
                problems.append((f"{f}: {msg}", f"{f}:{no}: {msg}"))
    for comp in cycles(edges):
        path = cycle_path(comp, edges)
        steps = ", ".join(
            f"{edges[a][b][0]}:{edges[a][b][1]} -> {b}"
            for a, b in zip(path, path[1:], strict=False)
        )
        key = f"cycle of {len(comp)} units: {' '.join(comp)}"
        problems.append((key, f"{key}: {steps}"))
    return problems


def read_known(known_file: Path) -> set[str]:
    if not known_file.is_file():
        return set()
    return {
        ln.strip()
        for ln in known_file.read_text().splitlines()
        if ln.strip() and not ln.startswith("#")
    }


def report(problems: list[tuple[str, str]], known_file: Path, tool: str, kept: str) -> int:
    """Prints the problems not in known_file and the known ones that no longer occur; 1 when
    there is any, else 0 after the line `tool: kept`. Shared with tools/check_imports.py."""
    known = read_known(known_file)
    bad = 0
    for key, message in problems:
        if key in known:
            continue
        print(message)
        bad += 1
    for key in sorted(known - {k for k, _ in problems}):
        print(f"{known_file}: no longer occurs, remove it: {key}")
        bad += 1
    tolerated = len(known & {k for k, _ in problems})
    if bad:
        print(f"{tool}: {bad} problem(s) ({tolerated} known)", file=sys.stderr)
        return 1
    known_note = f" ({tolerated} known problem(s) in {known_file.name})" if known else ""
    print(f"{tool}: {kept}{known_note}")
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--src", type=Path, default=Path(__file__).resolve().parents[1] / "runtime" / "src"
    )
    args = ap.parse_args(argv)
    src = args.src
    try:
        problems = check(src)
    except OSError as e:
        print(f"check_layers: {e}", file=sys.stderr)
        return 2
    kept = f"layers kept, {len(list(sources(src)))} files"
    return report(problems, src / "LAYERS.known", "check_layers", kept)


if __name__ == "__main__":
    sys.exit(main())
