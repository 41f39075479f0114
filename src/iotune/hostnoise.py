"""The machine's own noise, said to the user before a study: what is known to make the same run
take different times here, what each costs, and the control that exists.

Detected from /sys and /proc without root (every path below `root`, so that tests can give a
fake tree; `IOTUNE_HOST_ROOT` sets it for a whole command):

- free page reporting: a virtio-balloon device bound to its driver with the REPORTING feature
  (bit 5 of the negotiated `features`): the VM hands memory freed for a moment back to its host,
  and a run that allocates it again pays a host page fault per page (iotune.freedmem holds it);
- CPU frequency scaling: a `cpufreq/scaling_governor` other than `performance`;
- other load: the 1-minute load average before the first trial, against the cores and the ranks
  the study will run;
- after the study, the spread of the defaults' own repeated runs (the verification's).

The costs quoted are this project's measurements on its development VM (bench/README.md), said
as "here: ...": they tell the size of the effect, not what it will be on another machine.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from iotune import freedmem, inputs

ROOT_ENV = "IOTUNE_HOST_ROOT"
BALLOON_DEVICE = 5  # virtio device id of the memory balloon
F_REPORTING = 5  # VIRTIO_BALLOON_F_REPORTING: free page reporting
CHECKED = ("free_page_reporting", "cpu_frequency", "load")
SPREAD_CV = 0.10  # differences under ~1.3x need a CV under ~10 % (shared/LAB-NOTES.md)

COST = {
    "free_page_reporting": (
        "here: VPIC-IO's 512 MiB write took 0.26-0.84 s when it ran at once after the previous "
        "run, 1.38-2.10 s after a 5 s pause, 0.24-0.33 s with freed memory held (bench/README.md, "
        '"The page cache\'s two modes")'
    ),
    "cpu_frequency": (
        "not measured here (the development VM has no frequency scaling): the clock follows "
        "the load, so the CPU part of each run varies"
    ),
    "load": (
        "here: at load 7-10 on 2 cores a run's time ranged 2-9x (CV 3-23 % at load 2-5), and "
        "GCRM-IO's default/tuned pairs had a noise (sd of ln A/A') of 0.56 at load 3-4, 0.35 "
        "with --warmup 1 --drop-caches (bench/README.md)"
    ),
}


@dataclass
class Source:
    """One noise source found: what was seen, what it costs, the control that exists."""

    key: str
    found: str
    control: str
    facts: dict[str, Any] = field(default_factory=dict)

    @property
    def cost(self) -> str:
        return COST[self.key]


def host_root() -> Path:
    return Path(os.environ.get(ROOT_ENV) or "/")


def _text(path: Path) -> str | None:
    try:
        return inputs.read_text(path, "system file", max_bytes=1 << 16).strip()
    except inputs.InputError:
        return None


def param_path(root: Path | None = None) -> Path:
    """The freed-memory hold's parameter under root."""
    root = root or host_root()
    return root / freedmem.PARAM.relative_to("/")


def state_dir(root: Path | None = None) -> Path:
    root = root or host_root()
    return freedmem.default_state_dir() if root == Path("/") else root / "run" / "iotune"


# ----------------------------------------------------------------------------- detection


def free_page_reporting(root: Path) -> dict[str, Any] | None:
    """The balloon device that reports free pages, with the reporting's parameters; None when
    no virtio balloon with the feature is bound to its driver."""
    devices = root / "sys" / "bus" / "virtio" / "devices"
    try:
        entries = sorted(devices.iterdir())
    except OSError:
        return None
    for d in entries:
        device = _text(d / "device")
        features = _text(d / "features") or ""
        try:
            if device is None or int(device, 16) != BALLOON_DEVICE:
                continue
            driver = os.path.basename(os.readlink(d / "driver"))
        except (ValueError, OSError):
            continue
        if driver != "virtio_balloon" or features[F_REPORTING : F_REPORTING + 1] != "1":
            continue
        facts: dict[str, Any] = {"device": d.name}
        params = root / "sys" / "module" / "page_reporting" / "parameters"
        for name in ("min_free_ms", "page_reporting_order", "reported_kib"):
            value = freedmem.number(_text(params / name))
            if value is not None:
                facts[name] = value
        return facts
    return None


def governors(root: Path) -> dict[str, int]:
    """How many CPUs run each cpufreq governor ({} where there is no cpufreq)."""
    out: dict[str, int] = {}
    cpus = root / "sys" / "devices" / "system" / "cpu"
    for f in sorted(cpus.glob("cpu*/cpufreq/scaling_governor")):
        words = (_text(f) or "").split()
        g = words[0][:32] if words else ""
        if g:
            out[g] = out.get(g, 0) + 1
    return out


def cores(root: Path) -> int:
    """The CPUs online (sysfs `online`, e.g. 0-3,6), else os.cpu_count()."""
    text = _text(root / "sys" / "devices" / "system" / "cpu" / "online")
    n = 0
    for part in (text or "").split(","):
        m = re.fullmatch(r"([0-9]{1,7})(?:-([0-9]{1,7}))?", part.strip())
        if m is None or int(m[2] or m[1]) < int(m[1]):
            n = 0
            break
        n += int(m[2] or m[1]) - int(m[1]) + 1
    return n if 0 < n <= 1 << 20 else os.cpu_count() or 1


def load_average(root: Path) -> float | None:
    text = _text(root / "proc" / "loadavg")
    try:
        load = float(text.split()[0]) if text else None
    except (ValueError, IndexError):
        return None
    return load if load is not None and math.isfinite(load) and load >= 0 else None


def busy(load: float, ncores: int, nprocs: int) -> bool:
    """Other load worth saying: at least half a core's worth that the ranks must share the
    cores with, or half the cores busy whatever the ranks."""
    return load >= 0.5 and (load + nprocs > ncores or load >= ncores / 2)


def detect(root: Path | None = None, nprocs: int = 1, hold_asked: bool = False) -> list[Source]:
    """The known noise sources on this machine, before the study's first trial."""
    root = root or host_root()
    found: list[Source] = []
    fpr = free_page_reporting(root)
    if fpr is not None:
        if "min_free_ms" in fpr:
            control = "--hold-freed-memory (root: freed memory stays in the VM during the study)"
            if hold_asked:
                control = "--hold-freed-memory (asked)"
            since = f", min_free_ms {fpr['min_free_ms']}"
        else:
            control = (
                "this kernel has no min_free_ms to hold freed memory with; --warmup 1 makes "
                "each measured run reuse the memory its warm-up freed just before"
            )
            since = ""
        found.append(
            Source(
                "free_page_reporting",
                f"free page reporting is on (virtio-balloon {fpr['device']}{since}): this VM "
                "gives memory freed for a moment back to its host, and a run that allocates it "
                "again pays a host page fault per page",
                control,
                fpr,
            )
        )
    govs = governors(root)
    slow = {g: n for g, n in govs.items() if g != "performance"}
    if slow:
        said = ", ".join(f"{g} on {n} of {sum(govs.values())} CPUs" for g, n in slow.items())
        found.append(
            Source(
                "cpu_frequency",
                f"CPU frequency scaling: governor {said} (not performance)",
                "`cpupower frequency-set -g performance` (root; iotune does not change it)",
                {"governors": govs},
            )
        )
    load, ncores = load_average(root), cores(root)
    if load is not None and busy(load, ncores, nprocs):
        found.append(
            Source(
                "load",
                f"other load: load average {load:.2f} on {ncores} cores before the study's "
                f"{nprocs} rank(s) start",
                "run when the machine is quiet; --warmup 1 --drop-caches",
                {"load1": load, "cores": ncores, "nprocs": nprocs},
            )
        )
    return found


# ----------------------------------------------------------------------------- what is said


def message(
    sources: Sequence[Source], hold: Mapping[str, Any] | None, warmup: int, drop_caches: bool
) -> list[str]:
    """The lines said once before the first trial."""
    if not sources:
        lines = ["no known noise source on this machine (checked: free page reporting, CPU "
                 "frequency scaling, other load)"]  # fmt: skip
    else:
        lines = ["noise on this machine (the same run can take different times):"]
        for s in sources:
            lines += [f"  - {s.found}", f"    {s.cost}", f"    control: {s.control}"]
    if hold is not None and hold.get("asked"):
        if hold.get("held"):
            lines.append(
                f"freed memory held in the VM during the study ({hold['param']}: {hold['was']} "
                f"-> {hold['set']}, restored at the end)"
            )
        else:
            lines.append(f"--hold-freed-memory: nothing held ({hold.get('why')})")
    if sources:
        held = "on" if hold and hold.get("held") else "off"
        drop = "on" if drop_caches else "off"
        lines.append(
            f"controls in this run: --warmup {warmup}, --drop-caches {drop}, "
            f"--hold-freed-memory {held}"
        )
    return lines


def record(
    sources: Sequence[Source], hold: Mapping[str, Any] | None, warmup: int, drop_caches: bool
) -> dict[str, Any]:
    """What the study keeps (Optuna user attribute and summary.json key `host_noise`)."""
    return {
        "checked": list(CHECKED),
        "sources": {s.key: {"found": s.found, "control": s.control, **s.facts} for s in sources},
        "hold_freed_memory": dict(hold or {"asked": False, "held": False}),
        "warmup": warmup,
        "drop_caches": drop_caches,
    }


def defaults_spread(values: Sequence[float]) -> dict[str, Any] | None:
    """The spread of the defaults' repeated measurements (None with fewer than 3)."""
    v = sorted(float(x) for x in values if isinstance(x, int | float) and x > 0)
    if len(v) < 3:
        return None
    mean = sum(v) / len(v)
    cv = (sum((x - mean) ** 2 for x in v) / len(v)) ** 0.5 / mean
    return {"n": len(v), "min": v[0], "max": v[-1], "cv": cv, "noisy": cv > SPREAD_CV}


def spread_line(spread: Mapping[str, Any] | None, unit: str) -> str | None:
    if not spread:
        return None
    line = (
        f"the defaults' {spread['n']} measured runs ranged {spread['min']:.4g}-"
        f"{spread['max']:.4g} {unit} (CV {100 * spread['cv']:.0f} %)"
    )
    if spread["noisy"]:
        line += (
            ": noisy; differences under ~1.3x need a CV under ~10 % to be believed "
            '(docs/tune.md, "Noise on this machine")'
        )
    return line


def report_line(rec: Mapping[str, Any] | None) -> str | None:
    """One short line for the report: the sources found and whether freed memory was held."""
    if not rec:
        return None
    keys = list(rec.get("sources") or {})
    names = {"free_page_reporting": "free page reporting", "cpu_frequency": "CPU frequency "
             "scaling", "load": "other load"}  # fmt: skip
    parts = [", ".join(names.get(k, k) for k in keys) if keys else "no known source"]
    hold = rec.get("hold_freed_memory") or {}
    parts.append("freed memory held" if hold.get("held") else "freed memory not held")
    drops = "on" if rec.get("drop_caches") else "off"
    parts.append(f"warm-up {rec.get('warmup', 0)}, cache drops {drops}")
    runs = rec.get("runs") or []
    held_runs = sum(1 for r in runs if r.get("held"))
    if len(runs) > 1:
        parts.append(f"freed memory held in {held_runs} of the study's {len(runs)} runs")
    line = spread_line(rec.get("defaults_spread"), rec.get("unit", "s"))
    if line:
        parts.append(line)
    return "; ".join(parts)


# ----------------------------------------------------------------------------- in a study

MAX_RUNS = 50  # the runs of one study kept in its record


def remember_run(study: Any, rec: Mapping[str, Any] | None) -> None:
    """Adds this run of `iotune tune` to the study's `host_noise` attribute: the latest
    detection and the list of runs (each: the sources found, whether freed memory was held)."""
    if rec is None:
        return
    old = study.user_attrs.get("host_noise") or {}
    runs = list(old.get("runs") or [])[-(MAX_RUNS - 1) :]
    held = bool(rec["hold_freed_memory"].get("held"))
    runs.append({"sources": sorted(rec["sources"]), "held": held})
    study.set_user_attr("host_noise", {**rec, "runs": runs})


def for_summary(study: Any, unit: str, default_values: Sequence[float]) -> dict[str, Any] | None:
    """The study's `host_noise` with the defaults' spread in the final phase; None when this
    study was never run by `iotune tune` (e.g. the Python API)."""
    rec = study.user_attrs.get("host_noise")
    if rec is None:
        return None
    return {**rec, "unit": unit, "defaults_spread": defaults_spread(default_values)}


def _cannot_hold(sources: Sequence[Source]) -> str | None:
    """Why freed memory cannot be held here, before trying (None: try)."""
    fpr = next((s for s in sources if s.key == "free_page_reporting"), None)
    if fpr is None:
        return "this machine does not report freed memory to a host: nothing to hold"
    if "min_free_ms" not in fpr.facts:
        return "this kernel has no page_reporting min_free_ms parameter to hold it with"
    return None


@contextmanager
def _hold(asked: bool, sources: Sequence[Source], root: Path) -> Iterator[dict[str, Any] | None]:
    if not asked:
        yield None
        return
    why = _cannot_hold(sources)
    if why is not None:
        yield {"asked": True, "held": False, "why": why}
        return
    with freedmem.hold(param_path(root), state_dir=state_dir(root)) as h:
        h = {"asked": True, **h}
        if not h["held"] and os.geteuid() != 0:
            h["why"] = f"needs root ({h['why']})"
        yield h


@contextmanager
def controlled(
    nprocs: int,
    hold_asked: bool,
    warmup: int,
    drop_caches: bool,
    say: Callable[[str], None],
    root: Path | None = None,
) -> Iterator[dict[str, Any]]:
    """Detects, says it once, holds freed memory for the block if asked (restored at its end,
    also on an exception or an interruption); yields the record for the study."""
    root = root or host_root()
    repaired = freedmem.repair(param_path(root), state_dir(root))
    if repaired is not None:
        say(f"{param_path(root)} restored to {repaired}: an earlier hold's process was killed "
            "before it could restore it")  # fmt: skip
    sources = detect(root, nprocs, hold_asked)
    with _hold(hold_asked, sources, root) as hold:
        for line in message(sources, hold, warmup, drop_caches):
            say(line)
        yield record(sources, hold, warmup, drop_caches)
