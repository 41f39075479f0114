"""The pure part of the agreement bench: matching, ratios, verdicts, the table.

No process is started here and no file is read: bench/agreement/agreement.py measures, these
functions decide (tests/python/test_agreement.py tests them). docs/agreement.md says what each
column means.
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

TIME_TOLERANCE = 0.10  # skeleton vs original I/O time: within 10 %
BYTES_TOLERANCE = 0.01  # per rank, layer and direction: within 1 %
ADAPT_SHARE = 0.70  # adapt's gain as a share of tune's
ADVISE_TARGET = 0.80  # share of recommending cases where advise names best.xml
SKEL_TIME_TARGET = 0.80  # share of cases whose skeleton time is within TIME_TOLERANCE


# ------------------------------------------------------------------------------------ tune


def tune_verdict(summary: Mapping[str, Any]) -> dict[str, Any]:
    """tune's verdict from its summary.json: what best.xml holds and its measured speedup.

    best.xml holds settings only when the study established a gain (docs/tune.md, "The
    verdict"); otherwise the verdict is "keep defaults" (the candidate is recorded apart)."""
    h = summary.get("headline") or {}
    settings = {str(k): str(v) for k, v in (h.get("settings") or {}).items()}
    recommends = bool(settings) and h.get("established", True) is not False
    return {
        "recommends": recommends,
        "settings": settings if recommends else {},
        "candidate": {str(k): str(v) for k, v in (h.get("candidate") or {}).items()},
        "speedup": h.get("speedup"),
        "low": h.get("low"),
        "high": h.get("high"),
        "pairs": h.get("pairs"),
        "text": h.get("text") or "",
    }


def verdict_words(v: Mapping[str, Any] | None) -> str:
    """The verdict in a table cell: settings and speedup with interval, or keep defaults."""
    if not v:
        return "not measured"
    if v.get("error"):
        return "error: " + str(v["error"])[-60:]
    if not v.get("recommends"):
        return "keep defaults"
    settings = ", ".join(f"{k}={val}" for k, val in sorted(v["settings"].items()))
    if v.get("speedup") is None:
        return settings
    interval = ""
    if v.get("low") is not None and v.get("high") is not None:
        interval = f" [{v['low']:.2f}-{v['high']:.2f}]"
    return f"{settings}: {v['speedup']:.2f}x{interval}"


# ---------------------------------------------------------------------------------- advise


def advice_side(advice: Mapping[str, Any]) -> dict[str, Any]:
    """What advise proposes: every finding's parameters (any severity) and its control file's."""
    findings = advice.get("findings") or []
    return {
        "findings": [
            {
                "code": f.get("code"),
                "severity": f.get("severity"),
                "group": f.get("group"),
                "settings": dict(f.get("settings") or {}),
                "in_control_file": f.get("in_control_file"),
            }
            for f in findings
        ],
        "proposed": sorted({str(k) for f in findings for k in (f.get("settings") or {})}),
        "control_file": sorted({str(s["name"]) for s in advice.get("control_file") or []}),
    }


def names_best(best: Mapping[str, str], side: Mapping[str, Any] | None) -> dict[str, Any]:
    """Does advise name the settings best.xml holds?

    names: some finding proposes a parameter best.xml holds; control: advise's control file
    sets one; all_named: every parameter of best.xml is proposed. None where it does not apply
    (tune recommends nothing, or advise did not run); quiet: for a "keep defaults" verdict,
    whether advise's control file is empty too."""
    if not side or "proposed" not in side:
        return {"names": None, "control": None, "all_named": None, "quiet": None}
    if not best:
        return {"names": None, "control": None, "all_named": None,
                "quiet": not side["control_file"]}  # fmt: skip
    want = set(best)
    return {
        "names": bool(want & set(side["proposed"])),
        "control": bool(want & set(side["control_file"])),
        "all_named": want <= set(side["proposed"]),
        "quiet": None,
    }


# ------------------------------------------------------------------------------------ skel

_FILE_LINE = re.compile(r'^HDF5 "[^"]*" \{')
_OFFSET = re.compile(r"^\s*OFFSET \d+\s*$")


def normalise_h5dump(text: str) -> list[str]:
    """`h5dump -H -p` of a file, without what is not the file's structure: the file's own path
    (first line) and a contiguous dataset's address in the file (OFFSET: where HDF5 put it,
    which depends on the order the metadata was written in, not on what the dataset is)."""
    out = []
    for line in text.splitlines():
        if _FILE_LINE.match(line):
            line = 'HDF5 "" {'
        if _OFFSET.match(line):
            continue
        out.append(line.rstrip())
    return out


def compare_structures(orig: Mapping[str, str], skel: Mapping[str, str]) -> dict[str, Any]:
    """h5dump -H -p of the original's HDF5 files against the skeleton's, by relative name.

    equal: same file names and, file by file, the same normalised dump (every group, dataset,
    type, filter, chunk, fill value, attribute name and type). The first difference is kept."""
    if not orig:
        return {"equal": None, "files": 0, "diff": "the original wrote no HDF5 file"}
    names_o, names_s = sorted(orig), sorted(skel)
    if names_o != names_s:
        return {"equal": False, "files": len(names_o),
                "diff": f"files differ: {names_o} vs {names_s}"}  # fmt: skip
    for name in names_o:
        a, b = normalise_h5dump(orig[name]), normalise_h5dump(skel[name])
        if a != b:
            for i, (x, y) in enumerate(zip(a, b, strict=False)):
                if x != y:
                    return {
                        "equal": False,
                        "files": len(names_o),
                        "diff": f"{name} line {i + 1}: {x.strip()!r} vs {y.strip()!r}",
                    }
            return {"equal": False, "files": len(names_o),
                    "diff": f"{name}: {len(a)} vs {len(b)} lines"}  # fmt: skip
    return {"equal": True, "files": len(names_o), "diff": ""}


def run_files(profile: Mapping[str, Any], run_dir: str, skip: Iterable[str] = ()) -> list[str]:
    """The files a run opened in its own folder (relative names, or paths under run_dir), from
    its profile: the data files even when the program removed them before it ended (h5perf
    does). The interpreter's, the libraries' and /proc's files are elsewhere; skip: names that
    are the bench's own (the profile, the skeleton's timing)."""
    base = run_dir.rstrip("/") + "/"
    out = []
    for f in profile.get("files") or []:
        name = str(f.get("name") or "")
        if not name or name.rsplit("/", 1)[-1] in skip:
            continue
        if not name.startswith("/") or name.startswith(base):
            out.append(name.rsplit("/", 1)[-1])
    return sorted(set(out))


def _direction(func: str) -> str | None:
    f = func.lower()
    if "write" in f:
        return "w"
    if "read" in f:
        return "r"
    return None


def trace_bytes(traces: Iterable[Mapping[str, Any]], data_files: Iterable[str]) -> dict:
    """Bytes moved per layer, rank and direction ("w", "r") on the data files, from the traces
    of a run (iotune.trace.load: one per rank). A call counts by its signature's size times its
    run's count; files are matched by their last path component."""
    wanted = {str(f).rsplit("/", 1)[-1] for f in data_files}
    out: dict[str, dict[str, dict[str, int]]] = {}
    for t in traces:
        rank = str(t.get("rank"))
        sigs = t.get("signatures") or []
        for run in t.get("runs") or []:
            sig = sigs[run[0]] if isinstance(run, (list, tuple)) else sigs[run.sig]
            count = run[1] if isinstance(run, (list, tuple)) else run.count
            name = str(sig.get("file") or "").rsplit("/", 1)[-1]
            d = _direction(str(sig.get("func") or ""))
            if d is None or name not in wanted or not sig.get("size"):
                continue
            layer = out.setdefault(str(sig.get("layer")), {}).setdefault(rank, {"w": 0, "r": 0})
            layer[d] += int(sig["size"]) * int(count)
    return out


def profile_bytes(profile: Mapping[str, Any], data_files: Iterable[str]) -> dict:
    """Bytes moved per layer and direction on the data files, summed over the ranks (the
    profile's counters), in trace_bytes' shape with the rank "all"."""
    wanted = {str(f).rsplit("/", 1)[-1] for f in data_files}
    out: dict[str, dict[str, dict[str, int]]] = {}
    for f in profile.get("files") or []:
        if str(f.get("name", "")).rsplit("/", 1)[-1] not in wanted:
            continue
        for layer in ("hdf5", "mpiio", "posix"):
            c = f.get(layer) or {}
            w, r = int(c.get("bytes_written") or 0), int(c.get("bytes_read") or 0)
            if w or r:
                cell = out.setdefault(layer, {}).setdefault("all", {"w": 0, "r": 0})
                cell["w"] += w
                cell["r"] += r
    return out


def merge_bytes(*parts: Mapping) -> dict:
    """Layer -> rank -> counts of several sources in one (later sources add ranks)."""
    out: dict = {}
    for part in parts:
        for layer, ranks in part.items():
            out.setdefault(layer, {}).update(ranks)
    return out


def compare_bytes(orig: Mapping, skel: Mapping, tol: float = BYTES_TOLERANCE) -> dict[str, Any]:
    """Per layer, rank and direction: the skeleton's bytes against the original's.

    worst: the largest relative difference |skel - orig| / orig (1.0 where the original moved
    bytes and the skeleton none, or the other way round); within: worst <= tol."""
    worst, where = 0.0, ""
    for layer in sorted(set(orig) | set(skel)):
        o_l, s_l = orig.get(layer, {}), skel.get(layer, {})
        for rank in sorted(set(o_l) | set(s_l)):
            for d in ("w", "r"):
                o = int(o_l.get(rank, {}).get(d, 0))
                s = int(s_l.get(rank, {}).get(d, 0))
                if o == s:
                    continue
                rel = abs(s - o) / o if o else 1.0
                if rel > worst:
                    worst, where = rel, f"{layer} rank {rank} {d}: {s} vs {o}"
    if not orig:
        return {"within": None, "worst": None, "where": "the original moved no data"}
    return {"within": worst <= tol, "worst": worst, "where": where}


def unstable_cells(first: Mapping, second: Mapping, tol: float = BYTES_TOLERANCE) -> set:
    """(layer, rank, direction) cells where two runs of the same original differ by more than
    tol: the program's own bytes there move from run to run (e.g. ROMIO's read-modify-write
    reads in a collective write), so no skeleton can be held to them."""
    out = set()
    for layer in set(first) | set(second):
        a_l, b_l = first.get(layer, {}), second.get(layer, {})
        for rank in set(a_l) | set(b_l):
            for d in ("w", "r"):
                a = int(a_l.get(rank, {}).get(d, 0))
                b = int(b_l.get(rank, {}).get(d, 0))
                if a != b and (not a or abs(b - a) / a > tol):
                    out.add((layer, rank, d))
    return out


def compare_runs(origs: list, skels: list, tol: float = BYTES_TOLERANCE) -> dict[str, Any]:
    """Per layer, rank and direction: do the skeleton's runs and the original's overlap?

    Where a program's bytes below HDF5 move from run to run (ROMIO's read-modify-write reads
    beyond a file's end that another rank has not yet written come back short), each side is
    a range of values, not one value. A cell agrees when the ranges, the original's widened by
    tol, overlap; with one run each this is compare_bytes' test. worst: the smallest relative
    gap between the ranges, over the cell where it is largest."""
    worst, where = 0.0, ""
    cells = {
        (layer, rank) for run in (*origs, *skels) for layer, ranks in run.items() for rank in ranks
    }
    for layer, rank in sorted(cells):
        for d in ("w", "r"):
            o = [int(r.get(layer, {}).get(rank, {}).get(d, 0)) for r in origs]
            s = [int(r.get(layer, {}).get(rank, {}).get(d, 0)) for r in skels]
            lo, hi = min(o) * (1 - tol), max(o) * (1 + tol)
            if max(s) < lo:
                rel = (min(o) - max(s)) / min(o)
            elif min(s) > hi:
                rel = (min(s) - max(o)) / max(o) if max(o) else 1.0
            else:
                continue
            if rel > worst:
                worst, where = rel, f"{layer} rank {rank} {d}: {sorted(set(s))} vs {sorted(set(o))}"
    if not any(origs):
        return {"within": None, "worst": None, "where": "the original moved no data"}
    return {"within": worst <= tol, "worst": worst, "where": where}


def drop_cells(counts: Mapping, cells: set) -> dict:
    """counts without the given (layer, rank, direction) cells (set to 0 in both runs)."""
    out: dict = {}
    for layer, ranks in counts.items():
        for rank, dirs in ranks.items():
            kept = {d: (0 if (layer, rank, d) in cells else int(v)) for d, v in dirs.items()}
            out.setdefault(layer, {})[rank] = kept
    return out


def skel_bytes(row: Mapping[str, Any], tol: float = BYTES_TOLERANCE) -> dict[str, Any]:
    """The skeleton's bytes against the original's, on the cells where the original itself is
    stable (every traced run of it within tol of the first: `orig_repeat`, its repeats or,
    in older outputs, its second run); the unstable cells are listed. Without a second run of
    the original, the plain comparison."""
    sk = row.get("skel") or {}
    if "bytes_orig" not in sk:
        return dict(sk.get("bytes") or {})
    rep = row.get("orig_repeat") or {}
    repeats = rep.get("bytes_repeats") or ([rep["bytes_second"]] if rep.get("bytes_second") else [])
    if not repeats:
        return dict(sk.get("bytes") or {}, unstable=[])
    cells = set().union(*(unstable_cells(sk["bytes_orig"], b, tol) for b in repeats))
    out = compare_bytes(
        drop_cells(sk["bytes_orig"], cells), drop_cells(sk["bytes_skel"], cells), tol
    )
    out["unstable"] = sorted(f"{layer} rank {rank} {d}" for layer, rank, d in cells)
    return out


# ----------------------------------------------------------------------------------- times


def paired_ratio(base: Sequence[float], other: Sequence[float]) -> dict[str, Any]:
    """other / base, round by round (the pairs of an interleaved run): median, min, max, n.
    Rounds where either time is missing or not positive are left out."""
    pairs = [o / b for b, o in zip(base, other, strict=False) if b and o and b > 0 and o > 0]
    if not pairs:
        return {"median": None, "min": None, "max": None, "n": 0}
    return {"median": statistics.median(pairs), "min": min(pairs), "max": max(pairs),
            "n": len(pairs)}  # fmt: skip


def within(ratio: float | None, tol: float = TIME_TOLERANCE) -> bool | None:
    """A time ratio within tol of 1 (both ways: 1/(1+tol) .. 1+tol)."""
    if ratio is None:
        return None
    return 1 / (1 + tol) <= ratio <= 1 + tol


# ------------------------------------------------------------------------------------ adapt


def applied_settings(phases: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, str]]:
    """What the adaptive mode applied, per file: {file: {name: value}} (the profile's
    adaptive.phases; rank 0's view)."""
    out: dict[str, dict[str, str]] = {}
    for p in phases:
        for s in p.get("applied") or []:
            out.setdefault(str(p.get("file")), {})[str(s["name"])] = str(s["value"])
    return out


def recurring(phases: Sequence[Mapping[str, Any]]) -> bool:
    """Some class of file had more than one phase with data (the mode can apply to the later)."""
    seen: dict[str, int] = {}
    for p in phases:
        if p.get("role") != "no data":
            c = str(p.get("class"))
            seen[c] = seen.get(c, 0) + 1
    return any(n > 1 for n in seen.values())


def adapt_against_best(applied: Mapping[str, Mapping[str, str]], best: Mapping[str, str]) -> dict:
    """Adapt's settings against best.xml's: the names both hold with the same value (same),
    best.xml's never applied (missing), applied ones best.xml does not hold (extra)."""
    union: dict[str, set[str]] = {}
    for settings in applied.values():
        for k, v in settings.items():
            union.setdefault(k, set()).add(v)
    same = sorted(k for k, v in best.items() if v in union.get(k, set()))
    return {
        "same": same,
        "missing": sorted(k for k in best if k not in same),
        "extra": sorted(k for k in union if k not in best),
    }


def adapt_share(tune_speedup: float | None, adapt_speedup: float | None) -> float | None:
    """adapt's gain as a share of tune's: (adapt - 1) / (tune - 1); None when tune gained
    nothing to share (speedup <= 1) or a figure is missing."""
    if tune_speedup is None or adapt_speedup is None or tune_speedup <= 1.0:
        return None
    return (adapt_speedup - 1.0) / (tune_speedup - 1.0)


_BOUND = re.compile(r"\(1 of \d+ phases, (\d+) writing\), so a write setting could reach at most "
                    r"(\d+) of its \1 writes")  # fmt: skip


def learning_bound(writes: int, reached: int, gain: float) -> float | None:
    """The share of a search's gain g that a mode applying the same setting perfectly to
    `reached` of a class's `writes` alike writes (the others at the defaults) reaches:
    b = 1 / ((writes - reached)/writes + reached/(writes g)), share (b - 1)/(g - 1)."""
    if gain <= 1.0 or writes < 1:
        return None
    b = 1.0 / ((writes - reached) / writes + reached / (writes * gain))
    return (b - 1.0) / (gain - 1.0)


def adapt_verdict(row: Mapping[str, Any]) -> tuple[bool | None, str]:
    """Issue 22's adapt criterion on a row, and how it was met: it applies where tune
    recommends and phases recur; met when adapt reaches ADAPT_SHARE of tune's gain ("share"),
    when it applied something (a gain without a setting applied is noise), or when its line
    says why it cannot, from the mode's own reasons and never from its
    timing: every setting of best.xml is named in a clause that says why it was not applied
    (a rule undecided or a condition false on the learning phase, fired but reached no later
    phase: "not applied: ..."; held as offline advice only; a write setting that reached no
    phase that wrote: iotune.adapt.applied_per_file) ("says why"); or adapt applied every
    setting of best.xml to every phase but the class's learning one, no guard reverted it, and
    the bound of learning from that phase (its line: "could reach at most K of its N writes")
    stays below ADAPT_SHARE even at the low end of tune's interval ("learning bound NN %").
    A line that says only "nothing applied: no rule fired" or a guard's revert (a timing,
    maybe noise) does not count."""
    verdict = row.get("tune") or {}
    a = row.get("adapt") or {}
    if not verdict.get("recommends") or not a.get("recurring"):
        return None, ""
    share = a.get("share")
    if share is not None and share >= ADAPT_SHARE and a.get("applied"):
        return True, "share"  # a gain where the mode applied nothing is the timing's noise
    said = str(a.get("said") or "")
    clauses = said.split("; ")
    reasons = " ".join(c for c in clauses if c.startswith(("held, not applied", "not applied:"))
                       or "reached no phase" in c)  # fmt: skip
    best = verdict.get("settings") or {}
    if best and all(re.search(rf"\b{re.escape(k)}\b", reasons) for k in best):
        return True, "says why"
    m = _BOUND.search(said)
    missing = (a.get("against_best") or {}).get("missing")
    if best and m and missing == [] and "the guard reverted" not in said:
        bound = learning_bound(int(m.group(1)), int(m.group(2)), float(verdict.get("low") or 0))
        if bound is not None and bound < ADAPT_SHARE:
            return True, f"learning bound {bound:.0%}"
    return False, ""


def adapt_accepted(row: Mapping[str, Any]) -> bool | None:
    """adapt_verdict's first half: met, not met, or None where the criterion does not apply."""
    return adapt_verdict(row)[0]


# --------------------------------------------------------------------------------- summary


def _share_text(row: Mapping[str, Any]) -> str:
    a = row.get("adapt") or {}
    share, tuned = a.get("share"), (row.get("tuned_timed") or {}).get("median")
    if share is None:
        return "-"
    return f"{share:.0%}" + (f" (of best.xml's {tuned:.2f}x in the same rounds)"
                             if a.get("share_basis") and tuned else "")  # fmt: skip


def _adapt_ok(row: Mapping[str, Any]) -> str:
    ok, how = adapt_verdict(row)
    return _yes(ok) + (f" ({how})" if ok and how != "share" else "")


def _share(values: Iterable[bool | None]) -> tuple[int, int]:
    vals = [v for v in values if v is not None]
    return sum(1 for v in vals if v), len(vals)


def acceptance(rows: Sequence[Mapping[str, Any]], kind: str | None = None) -> dict[str, Any]:
    """Issue 22's acceptance numbers over the rows (of one kind: project or corpus, or all).
    Each is (met, of) over the rows where it applies."""
    rows = [r for r in rows if kind is None or r.get("kind") == kind]
    rec = [r for r in rows if (r.get("tune") or {}).get("recommends")]
    out = {
        "rows": len(rows),
        "tune_recommends": len(rec),
        "advise_names_run": _share((r.get("advise_run_match") or {}).get("names") for r in rec),
        "advise_control_run": _share((r.get("advise_run_match") or {}).get("control") for r in rec),
        "advise_names_log": _share((r.get("advise_log_match") or {}).get("names") for r in rec),
        "skel_h5dump_equal": _share(
            (r.get("skel") or {}).get("h5dump", {}).get("equal") for r in rows
        ),  # fmt: skip
        # judged as the table shows it: on the cells where the original itself is stable
        "skel_bytes_within": _share(skel_bytes(r).get("within") for r in rows),
        "skel_time_within": _share((r.get("skel") or {}).get("time_within") for r in rows),
        "adapt_accepted": _share(adapt_accepted(r) for r in rows),
    }
    return out


def _pct(met_of: tuple[int, int]) -> str:
    met, of = met_of
    return f"{met}/{of} ({met / of:.0%})" if of else "n/a (0 cases)"


def _pass(met_of: tuple[int, int], target: float | None) -> str:
    met, of = met_of
    if not of:
        return "no case"
    if target is None:
        return "MET" if met == of else "NOT MET"
    return "MET" if met / of >= target else "NOT MET"


def summary_lines(acc: Mapping[str, Any], label: str) -> list[str]:
    """The acceptance numbers of issue 22 in words, one line each."""
    return [
        f"{label}: {acc['rows']} cases, tune recommends in {acc['tune_recommends']}",
        f"{label}: advise (run) names a best.xml setting in {_pct(acc['advise_names_run'])} "
        f"of the recommending cases (target 80 %: {_pass(acc['advise_names_run'], ADVISE_TARGET)});"
        f" puts it in its control file in {_pct(acc['advise_control_run'])}",
        f"{label}: advise (Darshan log) names it in {_pct(acc['advise_names_log'])}"
        f" (target 80 %: {_pass(acc['advise_names_log'], ADVISE_TARGET)})",
        f"{label}: skeleton h5dump -H -p equal in {_pct(acc['skel_h5dump_equal'])} "
        f"(target every case: {_pass(acc['skel_h5dump_equal'], None)})",
        f"{label}: skeleton bytes per rank and layer within 1 % in "
        f"{_pct(acc['skel_bytes_within'])} (target every case: "
        f"{_pass(acc['skel_bytes_within'], None)})",
        f"{label}: skeleton I/O time within 10 % in {_pct(acc['skel_time_within'])} "
        f"(target 80 %: {_pass(acc['skel_time_within'], SKEL_TIME_TARGET)})",
        f"{label}: adapt reaches 70 % of tune's gain or says why not in "
        f"{_pct(acc['adapt_accepted'])} of the cases with recurring phases where tune "
        f"recommends (target every case: {_pass(acc['adapt_accepted'], None)})",
    ]


def motif_clashes(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """Rows whose motif keys are equal although their layout or element type differ (issue 22:
    distinct layouts and element types must give distinct motifs)."""
    by_key: dict[str, list[Mapping[str, Any]]] = {}
    for r in rows:
        kb = r.get("kb") or {}
        if kb.get("key"):
            by_key.setdefault(kb["key"], []).append(r)
    out = []
    for key, same in sorted(by_key.items()):
        kinds = {(r["kb"]["motif"].get("layout"), r["kb"]["motif"].get("element_type"))
                 for r in same}  # fmt: skip
        if len(kinds) > 1:
            out.append(f"{key}: " + ", ".join(r["case"] for r in same))
    return out


def _yes(v: bool | None) -> str:
    return {True: "yes", False: "**no**", None: "-"}[v]


def _ratio(r: Mapping[str, Any] | None) -> str:
    if not r or r.get("median") is None:
        return "-"
    return f"{r['median']:.2f} ({r['min']:.2f}-{r['max']:.2f}, n={r['n']})"


def _side(m: Mapping[str, Any]) -> str:
    """A match's cell: named (where tune recommends) or quiet (where it keeps the defaults)."""
    if m.get("quiet") is not None:
        return f"quiet: {_yes(m['quiet'])}"
    return _yes(m.get("names"))


def table_rows(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """The agreement table in markdown, one row per case (docs/agreement.md: the columns)."""
    head = [
        "| kind | case | tune: best.xml | advise run: names / control | advise log: names "
        "| skel h5dump | skel bytes (worst) | skel/orig time | KB motif | adapt applied "
        "| adapt speedup | share of tune's | adapt ok |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    out = list(head)
    for r in rows:
        if r.get("error") and not r.get("tune"):
            out.append(f"| {r.get('kind')} | {r['case']} | error: {r['error'][:80]} "
                       "| | | | | | | | | | |")  # fmt: skip
            continue
        run = r.get("advise_run_match") or {}
        log = r.get("advise_log_match") or {}
        sk = r.get("skel") or {}
        h5 = sk.get("h5dump") or {}
        by = skel_bytes(r)
        kb = r.get("kb") or {}
        a = r.get("adapt") or {}
        h5s = _yes(h5.get("equal")) if h5 else ("error" if sk.get("error") else "-")
        if h5.get("equal") is False:
            h5s += f" ({h5.get('diff', '')[:60]})"
        bys = "-" if by.get("worst") is None else f"{_yes(by.get('within'))} ({by['worst']:.2%})"
        if by.get("unstable"):
            bys += f"; original unstable: {', '.join(by['unstable'])}"
        if by.get("worst") and by.get("where"):
            bys += f"; {by['where']}"
        applied = a.get("applied") or {}
        app = "; ".join(
            f"{f}: " + ",".join(f"{k}={v}" for k, v in s.items())
            for f, s in list(applied.items())[:2]
        )
        app = app or a.get("said") or "-"
        if len(applied) > 2:
            app += f"; +{len(applied) - 2} files"
        quiet = run.get("quiet")
        names = (f"{_yes(run.get('names'))} / {_yes(run.get('control'))}" if quiet is None
                 else f"quiet: {_yes(quiet)}")  # fmt: skip
        motif = (f"`{kb['key']}` {kb['motif'].get('layout')}/{kb['motif'].get('element_type')}"
                 if kb.get("key") else "-")  # fmt: skip
        out.append(
            f"| {r.get('kind')} | {r['case']} | {verdict_words(r.get('tune'))} | {names} "
            f"| {_side(log)} | {h5s} | {bys} | {_ratio(sk.get('time'))} "
            f"| {motif} | {app[:120]} | {_ratio(a.get('speedup_ratio'))} "
            f"| {_share_text(r)} | {_adapt_ok(r)} |"
        )
    return out
