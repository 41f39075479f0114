"""The comparison of A and B: sections of rows, each row a figure of A and of B and the ratio
B/A. Profiles: the run, the control file's settings that differ, totals, per layer and per data
file (time, bytes, calls). Studies: the headline figures, the settings and options that differ,
and the same per-layer and per-file comparison of their baseline runs when both have one.

Files are matched by name; the rest by name pattern (every run of digits made `*`, as
`iotune advise` groups files: chk_0001.h5 and chk_0002.h5 are chk_*.h5): a pattern with one file
on each side pairs them, a pattern with several files on either side is compared as a group
(their figures summed). Files matched by neither are listed.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

from iotune import profile as prof
from iotune.compare.read import Side
from iotune.inputs import InputError
from iotune.insights import group_pattern


@dataclass
class Row:
    metric: str
    unit: str  # "s", "B" (bytes), "n" (a count), "" (a number), "text"
    a: Any
    b: Any

    @property
    def ratio(self) -> float | None:
        """B/A; None when not two numbers or A is 0 and B is not (new), 1.0 when both are 0."""
        a, b = self.a, self.b
        if self.unit == "text" or not _num(a) or not _num(b):
            return None
        if a == 0:
            return 1.0 if b == 0 else None
        return b / a

    @property
    def change(self) -> float:
        """How different A and B are: |ln(B/A)|; infinite for a figure new or gone."""
        if self.unit == "text" or not _num(self.a) or not _num(self.b):
            return 0.0 if self.a == self.b else math.inf
        r = self.ratio
        if r is None or r <= 0:
            return math.inf
        return abs(math.log(r))


@dataclass
class Item:
    name: str
    rows: list[Row]
    note: str = ""  # how it was matched, when not by name

    def key(self) -> tuple[float, float]:
        """Biggest differences first: the change of the first figure (time) in absolute terms,
        then the largest ratio of any figure."""
        first = self.rows[0] if self.rows else None
        delta = abs(first.b - first.a) if first and _num(first.a) and _num(first.b) else 0.0
        return (-delta, -max((r.change for r in self.rows), default=0.0))


@dataclass
class Section:
    title: str
    items: list[Item]
    grouped: bool = False  # rows grouped under an item (layer, file); else one row per item
    empty: str = ""  # what to say when there are no items
    notes: list[str] = field(default_factory=list)
    limited: bool = False  # a long list (files): the text and HTML show the first --top


@dataclass
class Comparison:
    kind: str
    a: Side
    b: Side
    sections: list[Section]
    only_a: list[str] = field(default_factory=list)
    only_b: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def _num(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def compare(a: Side, b: Side) -> Comparison:
    """A and B compared; InputError when they are not of the same kind."""
    if a.kind != b.kind:
        raise InputError(
            f"cannot compare a {a.kind} ({a.path}) with a {b.kind} ({b.path}): give two "
            "profiles or two studies (a study's output directory or its summary.json)"
        )
    if a.kind == "profile":
        assert a.profile is not None and b.profile is not None
        sections = [_run(a.profile, b.profile), _config(a.profile, b.profile)]
        io, only_a, only_b = _io(a.profile, b.profile, "")
        return Comparison("profile", a, b, sections + io, only_a, only_b)
    assert a.study is not None and b.study is not None
    sections = [_headline(a, b), *_study_settings(a, b), _options(a, b)]
    c = Comparison("study", a, b, sections, notes=[
        f"{which}: {n}" for which, side in (("A", a), ("B", b)) for n in side.notes])  # fmt: skip
    if a.profile is not None and b.profile is not None:
        io, c.only_a, c.only_b = _io(a.profile, b.profile, "baseline run: ")
        sections += io
    else:
        c.notes.append("per layer and per file: compared only when both studies have their "
                       "baseline profile (kb-profile.json, written unless --no-kb)")  # fmt: skip
    return c


# ----------------------------------------------------------------------------- studies


def _flat(title: str, rows: list[Row], empty: str = "") -> Section:
    return Section(title, [Item(r.metric, [r]) for r in rows], empty=empty)


def _headline(a: Side, b: Side) -> Section:
    ha, hb = a.study.headline, b.study.headline  # type: ignore[union-attr]
    keys = [*ha, *(k for k in hb if k not in ha)]
    rows = []
    for k in keys:
        x, y = ha.get(k), hb.get(k)
        unit = "text" if not (_num(x) or _num(y)) else ("s" if k.endswith("median") else "")
        rows.append(Row(k, unit, x, y))
    return _flat("headline", rows)


def _differ(title: str, x: dict[str, Any], y: dict[str, Any], absent: str) -> Section:
    names = sorted(set(x) | set(y))
    rows = [Row(n, "text", x.get(n, absent), y.get(n, absent)) for n in names
            if x.get(n, absent) != y.get(n, absent)]  # fmt: skip
    same = len(names) - len(rows)
    s = _flat(title, rows, empty=f"none ({same} the same)" if names else "none")
    if rows and same:
        s.notes.append(f"{same} the same, not shown")
    return s


def _study_settings(a: Side, b: Side) -> list[Section]:
    sa, sb = a.study, b.study
    return [
        _differ("settings that differ: recommended (best.xml)", sa.recommended, sb.recommended,
                "default"),
        _differ("settings that differ: the search's winner", sa.best, sb.best, "default"),
    ]  # fmt: skip


def _options(a: Side, b: Side) -> Section:
    return _differ("options that differ", a.study.options, b.study.options, "-")


# ----------------------------------------------------------------------------- profiles


def _run(pa: prof.Profile, pb: prof.Profile) -> Section:
    def facts(p: prof.Profile) -> dict[str, Any]:
        d = p.data
        lib = d.get("mpi_library") if isinstance(d.get("mpi_library"), dict) else {}
        return {
            "program": " ".join(d.get("argv") or [d.get("program") or "?"]),
            "ranks": p.ranks,
            "hosts": p.nodes if p.nodes is not None else "-",
            "MPI": " ".join(str(lib.get(k)) for k in ("family", "io_component") if lib.get(k))
            or "-",
            "control file": (p.config.get("digest") or "none"),
        }

    fa, fb = facts(pa), facts(pb)
    return _flat("run", [Row(k, "n" if _num(fa[k]) and _num(fb[k]) else "text", fa[k], fb[k])
                         for k in fa])  # fmt: skip


def _config_settings(p: prof.Profile) -> dict[str, str]:
    """The control file's settings as "name[@file][:variable]" -> value."""
    out = {}
    for s in p.config.get("settings") or []:
        if not isinstance(s, dict) or not isinstance(s.get("name"), str):
            continue
        name = s["name"]
        if isinstance(s.get("file"), str) and s["file"]:
            name += f"@{s['file']}"
        if isinstance(s.get("variable"), str) and s["variable"]:
            name += f":{s['variable']}"
        out[name[:500]] = str(s.get("value"))[:500]
    return out


def _config(pa: prof.Profile, pb: prof.Profile) -> Section:
    return _differ("settings that differ (control file)", _config_settings(pa),
                   _config_settings(pb), "default")  # fmt: skip


def _call_keys() -> dict[str, tuple[str, ...]]:
    """Per layer, the counters that count calls (data/counters.tsv); where a layer splits its
    writes or reads into collective and independent only (MPI-IO), both parts."""
    text = (resources.files("iotune") / "data" / "counters.tsv").read_text(encoding="utf-8")
    lines = [ln.split("\t") for ln in text.splitlines() if ln.strip() and not ln.startswith("#")]
    header, rows = lines[0], {r[0]: r for r in lines[1:]}
    calls = ("creates", "opens", "dups", "closes", "dset_creates", "dset_opens", "writes",
             "reads", "syncs", "set_views", "seeks")  # fmt: skip
    split = {"writes": ("coll_writes", "indep_writes"), "reads": ("coll_reads", "indep_reads")}
    out = {}
    for layer in prof.LAYERS:
        col = header.index(layer)
        keys: list[str] = []
        for f in calls:
            if f in rows and rows[f][col] != "-":
                keys.append(rows[f][col])
            elif f in split:
                keys += [rows[s][col] for s in split[f] if s in rows and rows[s][col] != "-"]
        out[layer] = tuple(keys)
    return out


CALLS = _call_keys()


def _count(c: dict[str, Any], key: str) -> float:
    v = c.get(key, 0)
    return v if _num(v) else 0


def _calls(layer: str, c: dict[str, Any]) -> float:
    return sum(_count(c, k) for k in CALLS.get(layer, ()))


def _outer(f: dict[str, Any]) -> tuple[str | None, dict[str, Any]]:
    for layer in prof.LAYERS:
        if isinstance(f.get(layer), dict):
            return layer, f[layer]
    return None, {}


def _file_time(f: dict[str, Any]) -> float:
    t = f.get("time_s")
    v = t.get("max", 0) if isinstance(t, dict) else 0
    return v if _num(v) else 0


def _file_figures(files: list[dict[str, Any]]) -> dict[str, float]:
    """I/O time (slowest rank, summed over the files), bytes and calls at each file's
    outermost layer."""
    fig = {"time": 0.0, "written": 0, "read": 0, "calls": 0}
    for f in files:
        layer, c = _outer(f)
        fig["time"] += _file_time(f)
        fig["written"] += _count(c, "bytes_written")
        fig["read"] += _count(c, "bytes_read")
        fig["calls"] += _calls(layer, c) if layer else 0
    return fig


def _applied(f: dict[str, Any]) -> str:
    by_layer = f.get("applied") if isinstance(f.get("applied"), dict) else {}
    pairs = sorted(f"{k}={v}" for s in by_layer.values() if isinstance(s, dict)
                   for k, v in s.items())  # fmt: skip
    return "; ".join(pairs)[:2000] or "none"


def _layers(p: prof.Profile) -> dict[str, dict[str, Any]]:
    data = p.data_files
    if len(data) != len(p.files):  # the data files' own layers: not the interpreter's reads
        return prof._sum_layers(data)
    return {k: v for k, v in p.data["layers"].items() if isinstance(v, dict)}


def _io(
    pa: prof.Profile, pb: prof.Profile, prefix: str
) -> tuple[list[Section], list[str], list[str]]:
    """The totals, per-layer and per-file sections; the files only in A, only in B."""
    fa, fb = _file_figures(pa.data_files), _file_figures(pb.data_files)
    totals = [
        Row("I/O time (slowest rank)", "s", pa.io_time, pb.io_time),
        Row("wall time", "s", pa.wall_time, pb.wall_time),
        Row("written", "B", pa.bytes_written, pb.bytes_written),
        Row("read", "B", pa.bytes_read, pb.bytes_read),
        Row("calls (data files)", "n", fa["calls"], fb["calls"]),
        Row("data files", "n", len(pa.data_files), len(pb.data_files)),
    ]
    la, lb = _layers(pa), _layers(pb)
    layers = []
    for layer in prof.LAYERS:
        ca, cb = la.get(layer) or {}, lb.get(layer) or {}
        if not (ca or cb):
            continue
        rows = []
        for p, c in ((pa, ca), (pb, cb)):
            busy = sum(_count(c, k) for k in ("write_time_s", "read_time_s", "meta_time_s"))
            rows.append([busy / max(p.ranks, 1), _count(c, "bytes_written"),
                         _count(c, "bytes_read"), _calls(layer, c)])  # fmt: skip
        if not any(rows[0]) and not any(rows[1]):
            continue  # a layer neither run used
        layers.append(Item(layer, [
            Row("time/rank", "s", rows[0][0], rows[1][0]),
            Row("written", "B", rows[0][1], rows[1][1]),
            Row("read", "B", rows[0][2], rows[1][2]),
            Row("calls", "n", rows[0][3], rows[1][3]),
        ]))  # fmt: skip
    layers.sort(key=Item.key)
    matched, only_a, only_b = _matching(pa, pb)
    files = [_file_item(name, xs, ys, note) for name, xs, ys, note in matched]
    files.sort(key=Item.key)
    hidden = len(pa.files) - len(pa.data_files), len(pb.files) - len(pb.data_files)
    per_file = Section(f"{prefix}per data file, biggest differences first", files, grouped=True,
                       empty="no file matched", limited=True)  # fmt: skip
    if any(hidden):
        per_file.notes.append(f"files the applications did not ask for (interpreter, libraries, "
                              f"/proc) left out: {hidden[0]} in A, {hidden[1]} in B")  # fmt: skip
    sections = [
        _flat(f"{prefix}totals", totals),
        Section(
            f"{prefix}per layer (data files), biggest differences first",
            layers,
            grouped=True,
            empty="no I/O",
        ),  # fmt: skip
        per_file,
    ]
    return sections, only_a, only_b


def _file_item(name: str, xs: list[dict[str, Any]], ys: list[dict[str, Any]], note: str) -> Item:
    fa, fb = _file_figures(xs), _file_figures(ys)
    many = len(xs) > 1 or len(ys) > 1
    rows = [
        Row("I/O time (slowest rank" + (", summed)" if many else ")"), "s", fa["time"],
            fb["time"]),
        Row("written", "B", fa["written"], fb["written"]),
        Row("read", "B", fa["read"], fb["read"]),
        Row("calls", "n", fa["calls"], fb["calls"]),
    ]  # fmt: skip
    if not many:
        sa, sb = _applied(xs[0]), _applied(ys[0])
        if sa != sb:
            rows.append(Row("settings applied", "text", sa, sb))
    return Item(name, rows, note)


_DIGITS = re.compile(r"\d+")


def pattern(name: str) -> str:
    """A file's name with its numbering made `*`: the directory's digits and the base name's
    as iotune advise groups files (insights.group_pattern)."""
    head, slash, _ = name.rpartition("/")
    return _DIGITS.sub("*", head) + slash + group_pattern(name)


def _matching(pa: prof.Profile, pb: prof.Profile) -> tuple[
    list[tuple[str, list[dict[str, Any]], list[dict[str, Any]], str]], list[str], list[str]
]:  # fmt: skip
    """(matched, only in A, only in B): by name, then by pattern."""
    by_a: dict[str, list[dict[str, Any]]] = {}
    by_b: dict[str, list[dict[str, Any]]] = {}
    for f in pa.data_files:
        by_a.setdefault(f["name"], []).append(f)
    for f in pb.data_files:
        by_b.setdefault(f["name"], []).append(f)
    matched = [(n, by_a[n], by_b[n], "") for n in by_a if n in by_b]
    left_a: dict[str, list[str]] = {}
    left_b: dict[str, list[str]] = {}
    for n in by_a:
        if n not in by_b:
            left_a.setdefault(pattern(n), []).append(n)
    for n in by_b:
        if n not in by_a:
            left_b.setdefault(pattern(n), []).append(n)
    only_a: list[str] = []
    for pat, names in left_a.items():
        others = left_b.pop(pat, None)
        if not others:
            only_a += names
            continue
        xs = [f for n in names for f in by_a[n]]
        ys = [f for n in others for f in by_b[n]]
        if len(names) == 1 and len(others) == 1:
            matched.append((f"{names[0]} / {others[0]}", xs, ys, f"matched by pattern {pat}"))
        else:
            matched.append((f"{pat} ({len(names)} vs {len(others)} files)", xs, ys,
                            f"grouped by pattern {pat}"))  # fmt: skip
    only_b = [n for names in left_b.values() for n in names]
    return matched, only_a, only_b
