"""Profiles written by the runtime (docs/profile.md): loading, checking and summarising them.

Files the application did not ask for (the interpreter's modules, shared libraries, /proc, MPI's
helper files) are classified by the rule table data/system_files.tsv and marked on loading
(`"system": CLASS` in the file's object): the summary leaves them out, the full list shows them.
"""

from __future__ import annotations

import fnmatch
import functools
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from iotune import profile_schema
from iotune.inputs import InputError, load_json
from iotune.outputs import printable

SCHEMA = "iotune-profile"
VERSION = 1


def _counter_table() -> tuple[tuple[str, ...], dict[str, tuple[str, ...]]]:
    """The layers and each layer's counter keys, from data/counters.tsv: the table the runtime's
    counters (C struct, merge, JSON names) are generated from."""
    text = (resources.files("iotune") / "data" / "counters.tsv").read_text(encoding="utf-8")
    lines = [ln.split("\t") for ln in text.splitlines() if ln.strip() and not ln.startswith("#")]
    header, rows = lines[0], lines[1:]
    layers = tuple(h for h in header[3:] if h != "per_rank")
    keys = {layer: tuple(r[header.index(layer)] for r in rows if r[header.index(layer)] != "-")
            for layer in layers}  # fmt: skip
    return layers, keys


def _per_rank_table() -> dict[str, tuple[str, ...]]:
    """{layer: keys} of the counters also written per rank (counters.tsv, column per_rank): a
    file's "per_rank" object holds "ranks" and, per such layer, one list per key."""
    text = (resources.files("iotune") / "data" / "counters.tsv").read_text(encoding="utf-8")
    lines = [ln.split("\t") for ln in text.splitlines() if ln.strip() and not ln.startswith("#")]
    header, rows = lines[0], lines[1:]
    out: dict[str, tuple[str, ...]] = {}
    for r in rows:
        layer = r[header.index("per_rank")]
        if layer != "-":
            out[layer] = (*out.get(layer, ()), r[header.index(layer)])
    return out


# LAYERS: the profile's layers, outermost first; COUNTERS: each layer's counter keys;
# PER_RANK: the counters also written per rank, by layer
LAYERS, COUNTERS = _counter_table()
PER_RANK = _per_rank_table()
SIZE_BINS = ("0-100", "100-1K", "1K-10K", "10K-100K", "100K-1M", "1M-4M", "4M-10M",
             "10M-100M", "100M-1G", "1G+")  # fmt: skip
# hints worth showing in a summary (ROMIO reports many more)
INTERESTING_HINTS = ("cb_buffer_size", "cb_nodes", "cb_config_list", "romio_cb_write",
                     "romio_cb_read", "romio_ds_write", "romio_ds_read", "ind_wr_buffer_size",
                     "ind_rd_buffer_size", "striping_factor", "striping_unit")  # fmt: skip


class ProfileError(InputError):
    """A file that is not a profile this version can read (an InputError: one message naming
    the file, printed by the CLI without a traceback)."""


# ----------------------------------------------------------------------------- classification

SYSTEM_CLASSES = {  # class -> how the summary names such files
    "kernel": "kernel interfaces",
    "system": "system files",
    "library": "shared libraries",
    "interpreter": "interpreter files",
    "mpi": "MPI helper files",
}
_ACCESS = ("any", "read")
_MATCH = ("file", "script")


@dataclass(frozen=True)
class FileRule:
    """One row of data/system_files.tsv."""

    pattern: str  # glob over the whole name; `*` matches `/` too
    match: str  # file: the pattern is the file's name; script: the program's (see script_of)
    cls: str  # one of SYSTEM_CLASSES
    read_only: bool  # applies only to files nothing was written to
    why: str


def parse_rules(text: str, where: str = "system_files.tsv") -> tuple[FileRule, ...]:
    """The rules of a table in the format of data/system_files.tsv; ValueError names the line."""
    rules = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        cells = line.split("\t")
        if cells[0] == "pattern":  # the header row
            continue
        if len(cells) != 5 or not all(c.strip() for c in cells):
            raise ValueError(f"{where}:{number}: want 5 tab-separated columns, got {len(cells)}")
        pattern, match, cls, access, why = (c.strip() for c in cells)
        if match not in _MATCH:
            raise ValueError(f"{where}:{number}: match is file or script, not {match!r}")
        if cls not in SYSTEM_CLASSES:
            raise ValueError(f"{where}:{number}: unknown class {cls!r}")
        if access not in _ACCESS:
            raise ValueError(f"{where}:{number}: access is any or read, not {access!r}")
        rules.append(FileRule(pattern, match, cls, access == "read", why))
    return tuple(rules)


@functools.cache
def system_rules() -> tuple[FileRule, ...]:
    """The rule table shipped with the package (data/system_files.tsv)."""
    table = resources.files("iotune") / "data" / "system_files.tsv"
    return parse_rules(table.read_text(encoding="utf-8"), str(table))


def script_of(argv: Any, rules: tuple[FileRule, ...] | None = None) -> tuple[str, FileRule] | None:
    """(the script, its rule) when the program (argv[0]) is an interpreter of a `script` rule:
    its first argument that is not an option; None without one (`python -m mod`, `-c code`)."""
    if not isinstance(argv, list) or not argv or not all(isinstance(w, str) for w in argv):
        return None
    table = system_rules() if rules is None else rules
    matching = (r for r in table if r.match == "script" and fnmatch.fnmatchcase(argv[0], r.pattern))
    rule = next(matching, None)
    if rule is None:
        return None
    for word in argv[1:]:
        if word in ("-m", "-c", "-e", "--"):  # a module or code follows: no script file
            return None
        if not word.startswith("-"):
            return word, rule
    return None


def classify(
    name: str,
    written: bool,
    rules: tuple[FileRule, ...] | None = None,
    script: tuple[str, FileRule] | None = None,
) -> FileRule | None:
    """The first rule that matches a file's name (and access), or None for a data file.
    script: script_of(the profile's argv): the script an interpreter runs is its file too."""
    if script is not None and name == script[0] and not (script[1].read_only and written):
        return script[1]
    chosen, could_match, matcher = _file_matcher(
        system_rules() if rules is None else rules, written
    )
    if not could_match(name):
        return None
    m = matcher.match(name)
    return chosen[int(m.lastgroup[1:])] if m else None


_MATCHERS: dict[tuple[int, bool], tuple[tuple[FileRule, ...], list[FileRule], Any, Any]] = {}


def _file_matcher(rules: tuple[FileRule, ...], written: bool) -> tuple[list[FileRule], Any, Any]:
    """The file rules that apply, a quick test that a name may match one of them (false: none
    matches), and one regular expression of their patterns: an alternation is tried in order,
    so the first rule that matches wins, as a loop over fnmatchcase would say, in one match per
    file instead of one per rule (10^6 files are classified on loading).
    Kept per table object (hashing the table for each file cost as much as the loop)."""
    known = _MATCHERS.get((id(rules), written))
    if known is not None and known[0] is rules:
        return known[1], known[2], known[3]
    chosen = [r for r in rules if r.match == "file" and not (r.read_only and written)]
    parts = [f"(?P<r{i}>{fnmatch.translate(r.pattern)})" for i, r in enumerate(chosen)]
    matcher = re.compile("|".join(parts) or "(?!)")
    could_match = _prefilter([r.pattern for r in chosen])
    if len(_MATCHERS) > 32:
        _MATCHERS.clear()
    _MATCHERS[(id(rules), written)] = (rules, chosen, could_match, matcher)
    return chosen, could_match, matcher


def _prefilter(patterns: list[str]) -> Any:
    """name -> False when no pattern (fnmatch, case-sensitive) can match it, from what each
    one needs: the text before its first wildcard (the name starts with it), else the text
    after its last (the name ends with it), else its longest text between (the name holds it).
    The alternation of patterns that begin with "*" tries each at every character of a name
    (5-15 us a name); a data file's name fails these tests in a few string searches."""
    prefixes, suffixes, middles = [], [], []
    for p in patterns:
        cut = min((i for i in map(p.find, "*?[") if i >= 0), default=len(p))
        head = p[: p.find("[")] if "[" in p else p  # the text of a bracket is not literal
        tail = re.split(r"[*?]", p)[-1] if "[" not in p else ""
        pieces = [x for x in re.split(r"[*?]", head) if x]
        if cut:
            prefixes.append(p[:cut])
        elif tail:
            suffixes.append(tail)
        elif pieces:
            middles.append(max(pieces, key=len))
        else:
            return lambda name: True  # a pattern any name may match
    starts, ends, holds = tuple(prefixes), tuple(suffixes), tuple(middles)

    def could_match(name: str) -> bool:
        return name.startswith(starts) or name.endswith(ends) or any(map(name.__contains__, holds))

    return could_match


def was_written(f: dict[str, Any]) -> bool:
    """Whether anything was created in or written to a file, at any layer."""
    for layer in LAYERS:
        c = f.get(layer)
        if isinstance(c, dict) and any(
            c.get(k) for k in ("bytes_written", "writes", "file_creates", "dataset_creates")
        ):
            return True
    return False


def _marker(script: tuple[str, FileRule] | None) -> Any:
    """A function marking a file's object of one profile with its class as "system" (a mark the
    runtime gave is kept), as classify() says: the rule table's expression looked up once, and
    whether a file was written computed only when the rule that matches its name asks (a rule
    that matches whatever was written is the first match of both tables; a name no rule matches
    is a data file either way). It runs once per file of a profile of 10^6 files."""
    chosen, could_match, matcher = _file_matcher(system_rules(), False)
    match = matcher.match

    def mark(f: Any) -> Any:
        if not isinstance(f, dict) or "system" in f or not isinstance(name := f.get("name"), str):
            return f
        if script is not None and name == script[0]:
            rule = classify(name, was_written(f), script=script)
        else:
            m = match(name) if could_match(name) else None
            if m is None:
                return f
            rule = chosen[int(m.lastgroup[1:])]
            if rule.read_only:
                rule = classify(name, was_written(f), script=script)
        return {**f, "system": rule.cls} if rule else f

    return mark


@dataclass(frozen=True)
class Profile:
    data: dict[str, Any]
    path: Path | None = None
    # made by parse(): its shape passed profile_schema (readers need not check it again)
    shape_checked: bool = False
    # made by parse(): every file classified on loading ("system" set on the system files)
    files_marked: bool = False

    @property
    def ranks(self) -> int:
        return int(self.data["ranks"])

    @property
    def nodes(self) -> int | None:
        """Distinct hosts the ranks ran on (None in profiles written before they were counted)."""
        hosts = self.data.get("hosts")
        return int(hosts["count"]) if hosts and hosts.get("count") else None

    @property
    def io_time(self) -> float:
        """Seconds the slowest rank spent in I/O calls (outermost layer): the tuning objective."""
        return float(self.data["io"]["time_s"])

    @property
    def wall_time(self) -> float:
        return float(self.data["wall_s"])

    @property
    def bytes_written(self) -> int:
        return int(self.data["io"]["bytes_written"])

    @property
    def bytes_read(self) -> int:
        return int(self.data["io"]["bytes_read"])

    @property
    def bandwidth(self) -> float | None:
        """MB/s of all bytes moved over the I/O time, or None without I/O."""
        moved = self.bytes_written + self.bytes_read
        return moved / 1e6 / self.io_time if self.io_time > 0 and moved else None

    @property
    def reduced(self) -> bool:
        """False when the counters are rank 0's alone (MPI_Finalize never came)."""
        return bool(self.data.get("reduced", True))

    @property
    def files(self) -> list[dict[str, Any]]:
        return list(self.data["files"])

    @property
    def data_files(self) -> list[dict[str, Any]]:
        """The application's own files: those no rule of system_files.tsv marks."""
        return [f for f in self.data["files"] if not f.get("system")]

    @property
    def system_files(self) -> list[dict[str, Any]]:
        """Files the application did not ask for (interpreter, libraries, /proc, MPI helpers)."""
        return [f for f in self.data["files"] if f.get("system")]

    @property
    def config(self) -> dict[str, Any]:
        return dict(self.data["config"])

    def layer(self, name: str) -> dict[str, Any]:
        return dict(self.data["layers"][name])


def parse(data: Any, path: Path | None = None) -> Profile:
    """A profile from its parsed JSON, its shape checked (profile_schema) before anything reads
    it; ProfileError naming the file and the key otherwise."""
    where = f"{path}: " if path else ""
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        raise ProfileError(f'{where}not an iotune profile (no "schema": "{SCHEMA}")')
    version = data.get("version")
    if not isinstance(version, int) or isinstance(version, bool) or version > VERSION:
        raise ProfileError(f"{where}profile version {version!r}: this iotune reads up to {VERSION}")
    for key in ("ranks", "wall_s", "io", "layers", "files", "config"):
        if key not in data:
            raise ProfileError(f'{where}profile without "{key}"')
    wrong = profile_schema.problem(data)
    if wrong:
        raise ProfileError(f"{where}not a usable profile: {wrong}")
    files = list(map(_marker(script_of(data.get("argv"))), data["files"]))
    return Profile({**data, "files": files}, path, shape_checked=True, files_marked=True)


def load(path: str | os.PathLike[str]) -> Profile:
    """A profile file, read as every file from outside is (iotune.inputs: never blocks, bounded,
    NaN, infinities and deep nesting refused) and checked by parse()."""
    path = Path(path)
    try:
        data = load_json(path, "profile")
    except InputError as e:
        raise ProfileError(str(e)) from None
    return parse(data, path)


# ----------------------------------------------------------------------------- summary


def _bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} B"


def _rate(nbytes: float, seconds: float) -> str:
    return f"{nbytes / 1e6 / seconds:.1f} MB/s" if seconds > 0 and nbytes else "-"


def _table(rows: list[list[str]], header: list[str]) -> list[str]:
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths)
    lines = [fmt.format(*header), fmt.format(*("-" * w for w in widths))]
    return [ln.rstrip() for ln in lines + [fmt.format(*r) for r in rows]]


class _Counters(dict):
    """A layer's counters where an absent one (an older or partial profile) reads as 0."""

    def __missing__(self, key: str) -> int:
        return 0


def _ops(layer: str, c: dict[str, Any]) -> str:
    if layer == "hdf5":
        return (f"{c['writes']} writes ({c['collective_writes']} coll), "
                f"{c['reads']} reads ({c['collective_reads']} coll)")  # fmt: skip
    if layer == "mpiio":
        return (f"{c['independent_writes'] + c['collective_writes']} writes "
                f"({c['collective_writes']} coll), "
                f"{c['independent_reads'] + c['collective_reads']} reads "
                f"({c['collective_reads']} coll)")  # fmt: skip
    if layer == "stdio":
        return f"{c['writes']} fwrite, {c['reads']} fread"
    return f"{c['writes']} writes, {c['reads']} reads, {c['seeks']} seeks, {c['fsyncs']} fsyncs"


def _layer_rows(counters: dict[str, dict[str, Any]], ranks: int) -> list[list[str]]:
    rows = []
    for layer in LAYERS:
        if not isinstance(counters.get(layer), dict):
            continue
        c = _Counters(counters[layer])
        if not (c["bytes_written"] or c["bytes_read"] or c["meta_time_s"]):
            continue
        busy = (c["write_time_s"] + c["read_time_s"] + c["meta_time_s"]) / max(ranks, 1)
        rows.append([
            layer,
            f"{busy:.4f}",
            _bytes(c["bytes_written"]),
            _bytes(c["bytes_read"]),
            _rate(c["bytes_written"], c["write_time_s"] / max(ranks, 1)),
            _rate(c["bytes_read"], c["read_time_s"] / max(ranks, 1)),
            _ops(layer, c),
        ])  # fmt: skip
    return rows


LAYER_HEADER = ["layer", "time/rank s", "written", "read", "write rate", "read rate", "operations"]


TOP_FILES = 10


def _hosts(p: Profile) -> str:
    """ "vm", or "3 hosts (a, b, c)", or "64 hosts (a, b, c, ...)"."""
    names = (p.data.get("hosts") or {}).get("names") or [p.data.get("hostname") or "?"]
    if (p.nodes or 1) <= 1:
        return str(names[0])
    more = ", ..." if len(names) > 3 or (p.nodes or 0) > len(names) else ""
    return f"{p.nodes} hosts ({', '.join(names[:3])}{more})"


def summary(p: Profile, *, files: bool = False, top: int = TOP_FILES) -> str:
    """The run in a few lines: program, totals, layers and the top data files by I/O time;
    with files=True every file's block follows (data files first, then the marked ones)."""
    d = p.data
    rate = f"{p.bandwidth:.1f} MB/s" if p.bandwidth else "no data moved"
    lines = [
        f"program   {printable(' '.join(d.get('argv') or [d.get('program') or '?']))}",
        f"ranks     {p.ranks} on {_hosts(p)}   wall {p.wall_time:.3f} s",
        f"I/O       {p.io_time:.4f} s (slowest rank)   written {_bytes(p.bytes_written)}   "
        f"read {_bytes(p.bytes_read)}   {rate}",
    ]
    if not p.reduced:
        lines.append("partial   rank 0's counters alone: MPI_Finalize was not called")
    cfg = p.config
    if cfg.get("path"):
        lines.append(f"config    {cfg['path']} ({cfg.get('digest')}, "
                     f"{len(cfg.get('settings') or [])} settings)")  # fmt: skip
    elif d.get("adaptive"):
        lines.append("config    none (adaptive mode: what it applied, per file below)")
    else:
        lines.append("config    none (library defaults)")
    data, others = _by_io_time(p.data_files), _by_io_time(p.system_files)
    lines.append(f"files     {_files_line(data, others, files)}")
    summarised = d.get("files_summarised")
    if isinstance(summarised, dict) and summarised.get("files"):
        # beyond the 4,096 records of one-rank files rank 0 takes (docs/profile.md)
        lines.append(f"          + {summarised['files']} more files of one rank each, summed "
                     "into the totals (not listed: files_summarised)")  # fmt: skip
    if others:  # the layers of the data files alone: the interpreter's reads are not the app's
        lines += ["", "per layer (data files)"]
        layers = _sum_layers(data)
    else:
        lines += ["", "per layer (all files)"]
        layers = d["layers"]
    rows = _layer_rows(layers, p.ranks)
    lines += ["  " + ln for ln in _table(rows, LAYER_HEADER)] if rows else ["  no I/O"]
    if data and not files:
        shown = data[: max(top, 0)]
        lines += ["", f"top data files by I/O time ({len(shown)} of {len(data)})"]
        lines += ["  " + ln for ln in _table([_file_row(f) for f in shown], FILE_HEADER)]
    if files:
        for f in data + others:
            lines += [""] + _file_lines(f)
    return "\n".join(lines)


def _files_line(data: list[dict[str, Any]], others: list[dict[str, Any]], listed: bool) -> str:
    text = f"{len(data)} data file{'' if len(data) == 1 else 's'}"
    if others:
        counts: dict[str, int] = {}
        for f in others:
            counts[f["system"]] = counts.get(f["system"], 0) + 1
        order = [*SYSTEM_CLASSES, *sorted(set(counts) - set(SYSTEM_CLASSES))]
        what = ", ".join(f"{counts[c]} {SYSTEM_CLASSES.get(c, c)}" for c in order if c in counts)
        text += f"; {len(others)} not asked for by the application ({what})"
        text += ", listed below" if listed else ", left out (--files lists them)"
    elif not listed and data:
        text += " (--files: every file's details)"
    return text


def _io_time(f: dict[str, Any]) -> float:
    t = f.get("time_s")
    return float(t.get("max", 0.0)) if isinstance(t, dict) else 0.0


def _outer(f: dict[str, Any]) -> _Counters:
    """The counters of the outermost layer a file was used through (HDF5, MPI-IO, POSIX...)."""
    return _Counters(next((f[name] for name in LAYERS if isinstance(f.get(name), dict)), {}))


def _by_io_time(files: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Slowest first; ties by bytes moved, then in order of first open."""

    def key(item: tuple[int, dict[str, Any]]) -> tuple[float, int, int]:
        i, f = item
        c = _outer(f)
        return (-_io_time(f), -(c["bytes_written"] + c["bytes_read"]), i)

    return [f for _, f in sorted(enumerate(files), key=key)]


def _sum_layers(files: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per-layer counters summed over some files (numbers only; histograms are left out)."""
    total: dict[str, dict[str, Any]] = {}
    for f in files:
        for layer in LAYERS:
            c = f.get(layer)
            if not isinstance(c, dict):
                continue
            into = total.setdefault(layer, {})
            for k, v in c.items():
                if isinstance(v, (int, float)) and not isinstance(v, bool):
                    into[k] = into.get(k, 0) + v
    return total


# a note of a dataset a setting did not reach: "FILE:DSET: name=value NOT applied: why [origin]"
# (fill_time=never left out) or "DSET: name=value NOT in effect: HDF5 uses V [origin]"
_LEFT_OUT = re.compile(r"(.*): ([a-z0-9_]+)=\S+ NOT (?:applied|in effect): (.*?)(?: \[[^\]]*\])?")


def partly_applied(f: Mapping[str, Any]) -> dict[str, str]:
    """{setting: text} of the dataset settings that reached some of file record f's datasets
    and not others (its dataset_settings, counted by the runtime at each creation, and open
    for access settings): "applied to N of M datasets; not to DSET (why), ...", the datasets
    its hdf5_notes name (they are bounded: the others are counted). A setting that reached
    every dataset, or none (not_in_effect's), is not listed."""
    counts = f.get("dataset_settings")
    if not isinstance(counts, Mapping):
        return {}
    prefix = printable(str(f.get("name", ""))) + ":"
    left = [m for n in f.get("hdf5_notes") or [] if (m := _LEFT_OUT.fullmatch(str(n)))]
    out = {}
    for name, c in counts.items():
        got, of = (c.get("reached"), c.get("of")) if isinstance(c, Mapping) else (None, None)
        if not (type(got) is int and type(of) is int and 0 < got < of):
            continue
        missed = list(dict.fromkeys(
            f"{printable(m[1].removeprefix(prefix))} ({printable(m[3])})"
            for m in left if m[2] == name))  # fmt: skip
        text = f"applied to {got} of {of} datasets"
        if missed:
            text += "; not to " + ", ".join(missed[: of - got])
            if len(missed) < of - got:
                text += f", and {of - got - len(missed)} more"
        out[printable(str(name))] = text
    return out


FILE_HEADER = ["file", "I/O s (slowest)", "written", "read", "rate", "layers", "applied"]


def _file_row(f: dict[str, Any]) -> list[str]:
    c = _outer(f)
    layers = [name for name in LAYERS if isinstance(f.get(name), dict)]
    applied = sum(len(v) for v in (f.get("applied") or {}).values() if isinstance(v, dict))
    return [
        printable(f.get("name", "?")),
        f"{_io_time(f):.4f}",
        _bytes(c["bytes_written"]),
        _bytes(c["bytes_read"]),
        _rate(c["bytes_written"] + c["bytes_read"], _io_time(f)),
        ",".join(layers) or "-",
        f"{applied} settings" if applied else "-",
    ]


def _file_lines(f: dict[str, Any]) -> list[str]:
    """A file's part of the summary; every key but the name is optional."""
    ranks = f.get("ranks") or 1
    where = [printable(f.get("fs") or "unknown"), f"{ranks} ranks"]
    phase = f.get("phase") or {}
    if "start_s" in phase and "end_s" in phase:
        where.append(f"open {phase['start_s']:.3f}-{phase['end_s']:.3f} s")
    mark = f"  [not asked for: {f['system']}]" if f.get("system") else ""
    lines = [f"file {printable(f.get('name', '?'))}  ({', '.join(where)}){mark}"]
    outer = _outer(f)
    moved = outer["bytes_written"] + outer["bytes_read"]
    t = f.get("time_s") or {}
    if "max" in t:
        lines.append(
            f"  I/O time {t['max']:.4f} s slowest (rank {t.get('slowest_rank', '?')}), "
            f"imbalance {t.get('imbalance', 1.0):.2f}, {_rate(moved, t['max'])}"
        )
    rows = _layer_rows({name: f[name] for name in LAYERS if name in f}, ranks)
    lines += ["  " + ln for ln in _table(rows, LAYER_HEADER)] if rows else []
    posix = _Counters(f.get("posix") or {})
    sizes = posix["sizes"] or {}
    if sum(sizes.values()):
        listed = ", ".join(f"{k}: {v}" for k, v in sizes.items() if v)
        lines.append(f"  POSIX access sizes  {listed}; sequential {posix['sequential']}, "
                     f"consecutive {posix['consecutive']}")  # fmt: skip
    hints = {k: v for k, v in (f.get("hints") or {}).items() if k in INTERESTING_HINTS}
    if hints:
        lines.append("  hints in effect     " + ", ".join(f"{k}={v}" for k, v in hints.items()))
    applied_by_layer = f.get("applied") or {}
    applied = {
        k: v for layer in ("hdf5", "mpiio") for k, v in (applied_by_layer.get(layer) or {}).items()
    }
    if applied:
        partly = partly_applied(f)
        said = [f"{k}={v}" + (f" ({partly[k]})" if k in partly else "") for k, v in applied.items()]
        lines.append("  applied by iotune   " + ", ".join(said))
    return lines
