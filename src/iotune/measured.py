"""How a study's trials are measured: the options that decide what a measurement means,
recorded in the study when it is created (study attribute and summary.json key MEASURED_WITH),
compared when the study is continued, and listed in summary.json and the report
(docs/tune.md, "Resuming and sharing a study").

The search ranks every trial of a study against every other, so two trials are comparable only
when they measured the same quantity in the same way. Continuing a study with another value of
an option in COMPARED would mix two kinds of measurement: it is refused, naming each difference
(iotune.study.open_study), and `--restart` starts the study again with the new values. The
final phases (re-measured leaders, verification, reduction) are measured afresh every time a
study is finished, so their options (FINAL) take effect at once and are only reported.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

ATTR = "measured_with"  # the study's user attribute and summary.json's key
VERSION = 1

# What a search trial's value means. Each changes the number measured for the same settings.
COMPARED = {
    "objective": "what a trial's value is (the whole run's I/O time, one phase's, wall time, "
    "bandwidth)",
    "launch": "the launcher and its options (the number of ranks among them): how many "
    "processes do the I/O, and where",
    "runtime": "the runtime preloaded into each trial (built for one MPI), or none: another "
    "runtime intercepts other calls, at another cost",
    "sync": "files flushed to the device before close: the device's time, not only the page "
    "cache's",
    "drop_caches": "the page cache dropped before each trial: reads come from the device, not "
    "from memory",
    "file_system": "the file system the trials run in (its type and mount point): another "
    "device or file system, another measurement",
}
# Recorded and shown, never compared: they decide which runs are given up, or where the runtime
# comes from, never the value a finished run measured.
NOT_COMPARED = {
    "timeout": "a trial running longer is failed: it decides which runs are given up, not what "
    "a finished run measured",
    "cap": "a trial slower than this many times the incumbent is stopped early (capped): like "
    "the timeout, it decides which runs are given up (off: 0)",
    "runtime_lib": "the runtime's file: a rebuilt or moved runtime of the same MPI measures alike",
}
# The final phases' options: those phases are measured afresh at every finish (their runs are
# never kept), so a new value applies to all of their runs at once.
FINAL = {
    "warmup": "discarded runs before each measured run of the final phases",
    "leaders": "leading settings re-measured",
    "repeat": "re-measurements of each leader",
    "verify_pairs": "the verification's default/tuned pairs: at most this, or half as many "
    "again while tuned leads by --min-gain",
    "partial": "the winner reduced to the settings that carry its gain",
    "min_gain": "the smallest gain worth recommending: the search stops when the rest cannot "
    "beat the best found by it; a setting beside others must be shown to carry it",
}
WHY = {**COMPARED, **NOT_COMPARED, **FINAL}
LABELS = {
    "objective": "objective",
    "launch": "launcher",
    "runtime": "runtime",
    "sync": "sync before close (--sync)",
    "drop_caches": "page cache dropped (--drop-caches)",
    "file_system": "file system of the trials' directory (--workdir)",
    "timeout": "timeout per trial",
    "cap": "capping factor (--cap)",
    "runtime_lib": "runtime library",
    "warmup": "warm-up runs (--warmup)",
    "leaders": "leaders re-measured (--leaders)",
    "repeat": "re-measurements (--repeat)",
    "verify_pairs": "verification pairs, at most (--verify-pairs; x1.5 while tuned leads)",
    "partial": "reduction to what carries the gain",
    "min_gain": "smallest gain worth recommending (--min-gain)",
}
RUNTIME_NAMES = {"mpich": "MPICH's", "openmpi": "Open MPI's", "none": "none (not preloaded)"}


class Mismatch(ValueError):
    """A study measured with other options than this run's; str() names each difference."""


def options(cfg: Any) -> dict[str, Any]:
    """The options each search trial of cfg (a tune_config.TuneConfig) is measured with."""
    import shlex

    from iotune import launch
    from iotune.search import get_strategy

    cap = cfg.cap if cfg.cap is not None else (2.0 if get_strategy(cfg.strategy).capping else 0.0)
    lib = _runtime_lib(cfg)
    return {
        "objective": cfg.objective,
        "launch": shlex.join(launch.split_launcher(cfg.command)[0]) if cfg.app else None,
        "runtime": "none" if not cfg.preload else (_family(lib) if lib else None),
        "sync": cfg.sync,
        "drop_caches": cfg.drop_caches,
        "file_system": file_system(_ran_in(cfg)),
        "timeout": cfg.timeout,
        "cap": max(float(cap), 0.0),
        "runtime_lib": str(lib) if cfg.preload and lib else None,
    }


def _ran_in(cfg: Any) -> Path:
    """The directory the trials' applications run in (and write their files to, unless they
    name other places): a scratch directory under the workdir when isolated, else the user's."""
    if getattr(cfg, "isolate", False):
        return Path(getattr(cfg, "workdir", None) or Path(cfg.out) / "scratch")
    return Path(getattr(cfg, "cwd", None) or Path.cwd())


def file_system(path: Path, mountinfo: str = "/proc/self/mountinfo") -> str | None:
    """'TYPE at MOUNT POINT' of the mount holding path (which may not exist yet), from the
    kernel's mount table; None where that table cannot be read."""
    try:
        with open(mountinfo, encoding="utf-8", errors="replace") as f:
            table = f.read(1 << 22)
    except OSError:
        return None
    target = os.path.realpath(path)  # a directory not made yet: its would-be place
    best: tuple[str, str] | None = None
    for line in table.splitlines():
        fields = line.split(" ")
        if " - " not in line or len(fields) < 5:
            continue
        point = _unescape(fields[4])
        fstype = line.split(" - ", 1)[1].split(" ")[0]
        inside = target == point or target.startswith(point.rstrip("/") + "/")
        if inside and (best is None or len(point) >= len(best[0])):
            best = (point, fstype)
    return f"{best[1]} at {best[0]}" if best else None


def _unescape(field: str) -> str:
    """A mount point as the kernel escapes it in mountinfo (space, tab, newline, backslash as
    octal)."""
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), field)


def final(cfg: Any) -> dict[str, Any]:
    """The options of cfg's final phases (measured afresh at every finish: never compared)."""
    out = {k: getattr(cfg, k, None) for k in FINAL}
    out["leaders"] = getattr(cfg, "n_leaders", out["leaders"])  # None: the strategy's
    return out


def _runtime_lib(cfg: Any) -> Path | None:
    from iotune import paths

    if not cfg.preload:
        return None
    try:
        return Path(cfg.lib or paths.find_library()).resolve()
    except (paths.NotFound, OSError):
        return None  # the study says so before the first trial


def _family(lib: Path) -> str | None:
    from iotune import paths

    return paths.library_family(lib)


def record(options: Mapping[str, Any]) -> dict[str, Any]:
    """A new study's record: the options its trials are measured with."""
    return {"version": VERSION, "options": dict(options), "unknown_before": {}, "changed": []}


def of_older_study(attrs: Mapping[str, Any]) -> dict[str, Any]:
    """What a study made before the record existed says of how it was measured: its objective,
    launcher (from its command) and --sync were kept with it; the rest is unknown (None)."""
    import shlex

    from iotune import launch

    launch_text = None
    if attrs.get("command_text"):
        try:
            launch_text = shlex.join(launch.split_launcher(shlex.split(attrs["command_text"]))[0])
        except ValueError:
            launch_text = None
    known = {"objective": attrs.get("objective"), "launch": launch_text, "sync": attrs.get("sync")}
    return {k: known.get(k) for k in (*COMPARED, *NOT_COMPARED)}


def differences(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[tuple[str, Any, Any]]:
    """(option, old, new) for each compared option whose values differ (an unknown value, None,
    cannot be compared and is left out)."""
    return [
        (k, old.get(k), new.get(k))
        for k in COMPARED
        if old.get(k) is not None and new.get(k) is not None and old.get(k) != new.get(k)
    ]


def show(key: str, value: Any) -> str:
    """A value as the console and the report show it."""
    if value is None:
        return "unknown"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if key == "runtime":
        return RUNTIME_NAMES.get(str(value), str(value))
    if key == "launch":
        return value or "none (the command is run as it is)"
    if key == "timeout":
        return f"{value:g} s" if isinstance(value, (int, float)) else str(value)
    if key == "cap" and isinstance(value, (int, float)):
        return f"{value:g}x" if value > 0 else "off"
    if key == "min_gain" and isinstance(value, (int, float)):
        return f"{100 * value:g} %"  # as --min-gain takes it (a percentage)
    return str(value)


def refusal(
    study: str, diffs: list[tuple[str, Any, Any]], trials: int, finishing: bool = False
) -> str:
    """The one message that refuses to continue (or, finishing, to verify) a study measured
    otherwise."""
    lines = [f"study {study!r} was measured with other options than this run's:"]
    lines += [f"  {LABELS.get(k, k)}: {show(k, a)} -> {show(k, b)}" for k, a, b in diffs]
    if finishing:
        lines.append(
            f"its {trials} trial(s) would be verified with measurements made another way: "
            "finish it with the study's options (--mpi for another MPI's runtime)"
        )
    else:
        lines.append(
            f"its {trials} trial(s) would be ranked with measurements made another way. To "
            "continue it, run with the study's options; for a new study give another --study "
            "name (or --out); to discard its trials and start it again with these options, add "
            "--restart"
        )
    return "\n".join(lines)


def one_line(options: Mapping[str, Any], final: Mapping[str, Any] | None = None) -> str:
    """The console's line: the compared options, then the final phases'."""
    parts = [f"{LABELS[k].split(' (')[0]} {show(k, options.get(k))}" for k in COMPARED]
    if final:
        parts += [f"{LABELS[k].split(' (')[0]} {show(k, final.get(k))}" for k in ("warmup",)]
    return ", ".join(parts)


def summary(rec: Mapping[str, Any] | None, final: Mapping[str, Any]) -> dict[str, Any]:
    """summary.json's MEASURED_WITH: the study's record (how its trials were measured) and the
    final phases' options of this finish; `recorded` False for a study without a record."""
    if not isinstance(rec, Mapping) or not isinstance(rec.get("options"), Mapping):
        return {"recorded": False, "options": {}, "unknown_before": {}, "changed": [],
                "final": dict(final)}  # fmt: skip
    return {
        "recorded": True,
        "options": dict(rec["options"]),
        "unknown_before": dict(rec.get("unknown_before") or {}),
        "changed": list(rec.get("changed") or []),
        "final": dict(final),
    }


def rows(block: Mapping[str, Any] | None) -> list[list[str]]:
    """The report's table: [option, value, what it changes] for summary.json's MEASURED_WITH
    (an older summary without it: one row saying so)."""
    if not isinstance(block, Mapping):
        return [["(all)", "unknown", "this summary was written before iotune recorded them"]]

    def mapping(x: Any) -> Mapping[str, Any]:  # a summary.json from elsewhere may hold anything
        return x if isinstance(x, Mapping) else {}

    out = []
    opts = mapping(block.get("options"))
    if not block.get("recorded"):
        out.append(["search trials", "unknown", "the study was made by an older iotune that did "
                    "not record how its trials were measured"])  # fmt: skip
    unknown = mapping(block.get("unknown_before"))
    changed: dict[str, list[str]] = {}
    for c in block.get("changed") if isinstance(block.get("changed"), list) else []:
        if isinstance(c, Mapping) and c.get("option") in WHY:
            k = c["option"]
            changed.setdefault(k, []).append(
                f"{show(k, c.get('new'))} from trial {c.get('from_trial')}"
            )
    for k in (*COMPARED, *NOT_COMPARED):
        if k not in opts or (k == "runtime_lib" and opts.get("runtime") == "none"):
            continue
        value = show(k, opts[k])
        if k in unknown:
            value += f" (not recorded for the first {unknown[k]} trials)"
        if k in changed:
            value += "; " + "; ".join(changed[k])
        out.append([LABELS[k], value, WHY[k] + ("" if k in COMPARED else " (not compared)")])
    final = mapping(block.get("final"))
    for k in FINAL:
        if k in final:
            out.append([LABELS[k], show(k, final[k]), WHY[k] + " (this finish)"])
    return out


def adopt(cfg: Any, rec: Any) -> None:
    """--finish-only measures the final phases as the study's trials were measured: cfg takes
    the study's --sync, --drop-caches, timeout and preloading (the study's objective, launcher
    and ranks are adopted with its command)."""
    opts = rec.get("options") if isinstance(rec, Mapping) else None
    if not isinstance(opts, Mapping):
        return
    for k in ("sync", "drop_caches", "timeout"):
        if opts.get(k) is not None:
            setattr(cfg, k, opts[k])
    if opts.get("runtime") == "none":
        cfg.preload = False


def check(study: Any, cfg: Any, meta: Mapping[str, Any], say: Callable[[str], None]) -> None:
    """Mismatch (one message naming each difference) when the study was made with another
    space or strategy (meta: study._meta(cfg)) or measured with other COMPARED options; records
    how a study is measured when an older iotune did not, and notes the NOT_COMPARED changes."""
    old = study.user_attrs
    diffs: list[tuple[str, Any, Any]] = []
    for k in ("space", "strategy"):
        if k in old and old[k] != meta[k]:
            diffs.append((k, old[k], meta[k]))
    if old.get("space") == meta["space"] and "space_params" in old:
        if old["space_params"] != meta["space_params"]:
            diffs.append(("space parameters", ", ".join(old["space_params"]),
                          ", ".join(meta["space_params"])))  # fmt: skip
    rec = old.get(ATTR)
    recorded = isinstance(rec, Mapping) and isinstance(rec.get("options"), Mapping)
    before = dict(rec["options"]) if recorded else of_older_study(old)
    now = options(cfg)
    diffs += differences(before, now)
    trials = sum(t.state.name != "WAITING" for t in study.get_trials(deepcopy=False))
    if diffs:
        raise Mismatch(refusal(cfg.name, diffs, trials, cfg.finish_only))
    last_final: Any = old.get("final")  # the last finish's summary
    for key in (ATTR, "final"):
        last_final = last_final.get(key) if isinstance(last_final, Mapping) else None
    last_final = last_final if isinstance(last_final, Mapping) else {}
    now_final = final(cfg)  # as the last finish recorded them (the strategy's leaders)
    for k in FINAL:  # said, never refused: the final phases never reuse a run
        if k in last_final and last_final[k] != now_final[k]:
            say(f"{LABELS[k]}: {show(k, last_final[k])} at the last finish -> "
                f"{show(k, now_final[k])}: the final phases are measured again with it (their "
                "runs are never reused); the search trials are kept")  # fmt: skip
    if not recorded:
        unknown = [k for k in COMPARED if before.get(k) is None]
        names = ", ".join(LABELS[k] for k in unknown) or "nothing"
        say(
            f"study {cfg.name!r} was made by an older iotune that did not record how its trials "
            f"were measured ({names} unknown for its {trials} trial(s)); this run's options "
            "are recorded from now on"
        )
        new = record(now)
        new["unknown_before"] = {k: trials for k in (*COMPARED, *NOT_COMPARED)
                                 if before.get(k) is None}  # fmt: skip
        study.set_user_attr(ATTR, new)
        return
    changed = list(rec.get("changed") or [])
    for k in NOT_COMPARED:  # the latest value recorded against this run's
        last = next(
            (c.get("new") for c in reversed(changed) if c.get("option") == k), before.get(k)
        )
        b = now.get(k)
        if last is None or b is None or last == b:
            continue
        say(f"{LABELS[k]}: {show(k, last)} -> {show(k, b)} from trial {trials} on "
            f"({NOT_COMPARED[k]})")  # fmt: skip
        changed.append({"option": k, "old": last, "new": b, "from_trial": trials})
    if changed != list(rec.get("changed") or []):
        study.set_user_attr(ATTR, {**rec, "changed": changed})
