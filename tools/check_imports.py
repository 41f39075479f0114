"""The Python package's layers kept one way (docs/architecture.md), as tools/check_layers.py
keeps the runtime's: reads every import of src/iotune (module-level and inside functions; those
under `if TYPE_CHECKING:` are left out, they do not run) and the declared order of its modules
in layers (src/iotune/LAYERS, lowest first: a layer's name, then its modules, a package's
__init__.py by the package's folder, the top one as __init__, fnmatch patterns such as `kb/*`
allowed, a name given exactly winning over a pattern), and fails on

- a module in no layer, in two layers (by patterns), or a LAYERS entry that names no module;
- an upward import: a module importing one of a higher layer than its own;
- a cycle of modules, also within one layer;
- a file Python cannot parse.

Each problem is one line naming the offending file:line (paths relative to the package's parent
folder). `from P import n` is an import of the module P.n when there is one, else of P;
`importlib.import_module` is not seen. Known problems: src/iotune/LAYERS.known, as for the
runtime. Standard library only.

    python3 tools/check_imports.py [--src src/iotune]
"""

from __future__ import annotations

import argparse
import ast
import sys
from fnmatch import fnmatchcase
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from check_layers import cycle_path, cycles, layer_lines, report  # noqa: E402


def modules(src: Path) -> dict[str, Path]:
    """Every module of the package by its LAYERS name: adapt, kb/cli, kb (kb/__init__.py),
    __init__ (the package's own)."""
    out = {}
    for p in sorted(src.rglob("*.py")):
        if not p.is_file():
            continue
        rel = p.relative_to(src).with_suffix("").as_posix()
        if rel.endswith("/__init__"):
            rel = rel[: -len("/__init__")]
        out[rel] = p
    return out


def is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def imports(tree: ast.AST) -> list[tuple[ast.Import | ast.ImportFrom, int]]:
    """Every import statement with its line, wherever it is, but under `if TYPE_CHECKING:`."""
    out = []
    todo = [tree]
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            out.append((node, node.lineno))
            continue
        if isinstance(node, ast.If) and is_type_checking(node.test):
            todo.extend(node.orelse)
            continue
        todo.extend(ast.iter_child_nodes(node))
    return sorted(out, key=lambda x: x[1])


class Package:
    def __init__(self, src: Path):
        self.src = src
        self.name = src.name
        self.mods = modules(src)

    def dotted(self, dotted: str) -> str | None:
        """The module (LAYERS name) a dotted name means: the longest prefix that is one."""
        parts = dotted.split(".")
        if parts[0] != self.name:
            return None
        while len(parts) > 1:
            rel = "/".join(parts[1:])
            if rel in self.mods:
                return rel
            parts.pop()
        return "__init__" if "__init__" in self.mods else None

    def targets(self, mod: str, node: ast.Import | ast.ImportFrom) -> list[str]:
        """The modules of this package an import statement of mod imports."""
        if isinstance(node, ast.Import):
            found = [self.dotted(a.name) for a in node.names]
            return [t for t in found if t]
        if node.level:
            here = [self.name, *([] if mod == "__init__" else mod.split("/"))]
            if not self.mods[mod].name == "__init__.py":
                here.pop()
            here = here[: len(here) - (node.level - 1)] if node.level > 1 else here
            base = ".".join(here + ([node.module] if node.module else []))
        else:
            base = node.module or ""
        found = []
        for alias in node.names:
            sub = self.dotted(f"{base}.{alias.name}")
            whole = self.dotted(base)
            if sub is not None and sub != whole:
                found.append(sub)
            elif whole is not None:
                found.append(whole)
        return found


def assign_layers(
    pkg: Package, entries: list[list[str]], where: str
) -> tuple[dict[str, str], list[tuple[str, str]]]:
    """Each module's layer; problems for a module in none or in two, and for stale entries."""
    problems = []
    exact: dict[str, str] = {}
    patterns: list[tuple[str, str]] = []
    for words in entries:
        layer, names = words[0].rstrip(":"), words[1:]
        for name in names:
            if any(c in name for c in "*?["):
                patterns.append((layer, name))
            else:
                exact[name] = layer
    layer_of: dict[str, str] = {}
    used = set()
    for mod in pkg.mods:
        if mod in exact:
            layer_of[mod] = exact[mod]
            used.add(mod)
            continue
        hits = sorted({(lay, pat) for lay, pat in patterns if fnmatchcase(mod, pat)})
        used.update(pat for _, pat in hits)
        layers = sorted({lay for lay, _ in hits})
        file = f"{pkg.name}/{pkg.mods[mod].relative_to(pkg.src).as_posix()}"
        if not layers:
            msg = f"module {mod} is in no layer of {where}"
            problems.append((f"{file}: {msg}", f"{file}:1: {msg}"))
        elif len(layers) > 1:
            msg = f"module {mod} is in layers {' and '.join(layers)} of {where} (by patterns)"
            problems.append((f"{file}: {msg}", f"{file}:1: {msg}"))
        else:
            layer_of[mod] = layers[0]
    for name in [*exact, *(pat for _, pat in patterns)]:
        if name not in used:
            msg = f"{name} names no module of {pkg.name}"
            problems.append((f"{where}: {msg}", f"{where}:1: {msg}"))
    return layer_of, problems


def check(src: Path) -> list[tuple[str, str]]:
    """The problems as (key, message): the key without a line number (for LAYERS.known)."""
    pkg = Package(src)
    entries = layer_lines(src / "LAYERS")
    rank = {words[0].rstrip(":"): i for i, words in enumerate(entries)}
    layer_of, problems = assign_layers(pkg, entries, f"{pkg.name}/LAYERS")
    edges: dict[str, dict[str, tuple[str, int]]] = {m: {} for m in pkg.mods}
    for mod, path in pkg.mods.items():
        file = f"{pkg.name}/{path.relative_to(src).as_posix()}"
        try:
            tree = ast.parse(path.read_bytes(), filename=str(path))
        except (SyntaxError, ValueError) as e:
            msg = f"cannot parse it: {e.msg if isinstance(e, SyntaxError) else e}"
            line = getattr(e, "lineno", None) or 1
            problems.append((f"{file}: cannot parse it", f"{file}:{line}: {msg}"))
            continue
        lay = layer_of.get(mod)
        for node, no in imports(tree):
            for target in pkg.targets(mod, node):
                if target == mod or target in edges[mod]:
                    continue
                edges[mod][target] = (file, no)
                to = layer_of.get(target)
                if lay in rank and to in rank and rank[to] > rank[lay]:
                    msg = f"imports {target} (layer {to} is above {lay})"
                    problems.append((f"{file}: {msg}", f"{file}:{no}: {msg}"))
    for comp in cycles(edges):
        path = cycle_path(comp, edges)
        steps = ", ".join(
            f"{edges[a][b][0]}:{edges[a][b][1]} -> {b}"
            for a, b in zip(path, path[1:], strict=False)
        )
        key = f"cycle of {len(comp)} modules: {' '.join(comp)}"
        problems.append((key, f"{key}: {steps}"))
    return problems


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--src", type=Path, default=Path(__file__).resolve().parents[1] / "src" / "iotune"
    )
    args = ap.parse_args(argv)
    src = args.src
    try:
        problems = check(src)
    except OSError as e:
        print(f"check_imports: {e}", file=sys.stderr)
        return 2
    kept = f"layers kept, {len(modules(src))} modules"
    return report(problems, src / "LAYERS.known", "check_imports", kept)


if __name__ == "__main__":
    sys.exit(main())
