"""Is the demo's verdict the same run after run? `iotune tune --demo` (the GCRM-IO kernel on
built-in defaults, 2 ranks, 30 trials) run N times, each a study of its own, optionally with the
VM's freed memory held (`--hold-freed-memory`, iotune.freedmem) or alternating with and without
it; each run's verdict, recommended settings (best.xml), speedup and its interval, the noise
said before the first trial, the load average before and after, and min_free_ms before and
after are kept.

  .venv/bin/python bench/demo_verdicts/demo_verdicts.py --runs 5 --hold-freed-memory --tag held
  .venv/bin/python bench/demo_verdicts/demo_verdicts.py --runs 10 --alternate --tag alternate

With --append, the runs are added to those already in demo_verdicts-TAG.json (one run per
invocation, each under the measurement lock of its own, so that no locked stretch is long):

  for i in 1 2 3 4 5; do flock /work/wt/measure.lock .venv/bin/python \
      bench/demo_verdicts/demo_verdicts.py --runs 1 --append --hold-freed-memory --tag T; done

Output: bench/demo_verdicts/demo_verdicts-TAG.json (every run's summary.json and console output,
raw)
and a table on stdout. "The same verdict" is the same decision (settings recommended or keep the
defaults) with the same settings in best.xml; the speedups' intervals are said to agree when
one value lies in all of them. The interval is the one summary.json gives where it has one
(`final` keys naming an interval); otherwise this script computes a percentile bootstrap
interval (95 %, 4000 resamples, fixed seed) of the median of the verification's pair ratios,
and says so in the record (`interval_from`).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
PARAM = Path("/sys/module/page_reporting/parameters/min_free_ms")


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None


def _uptime() -> str:
    """What `uptime` says (the time, how long up, the load averages), read without a process."""
    up = (_read(Path("/proc/uptime")) or "0").split()[0]
    a, b, c = os.getloadavg()
    return (f"{time.strftime('%H:%M:%S', time.gmtime())} UTC up {float(up) / 3600:.2f} h, "
            f"load average: {a:.2f}, {b:.2f}, {c:.2f}")  # fmt: skip


def _git() -> str | None:
    """The commit of the checkout whose iotune ran (the one this script is in)."""
    try:
        out = subprocess.run(["git", "-C", str(HERE), "rev-parse", "HEAD"], capture_output=True,
                             text=True, timeout=10)  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None


def load_previous(path: Path) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
    """The meta and runs already in an output file (--append); (None, []) when there is none."""
    if not path.exists():
        return None, []
    data = json.loads(path.read_text())
    return data.get("meta"), list(data.get("runs") or [])


def bootstrap_interval(ratios: list[float], seed: int = 0, n: int = 4000) -> list[float] | None:
    """A 95 % percentile bootstrap interval of the median pair ratio."""
    if len(ratios) < 3:
        return None
    rng = random.Random(seed)
    meds = sorted(statistics.median(rng.choices(ratios, k=len(ratios))) for _ in range(n))
    return [meds[int(0.025 * n)], meds[int(0.975 * n) - 1]]


def summary_interval(summary: dict[str, Any]) -> list[float] | None:
    """The speedup's interval where summary.json has one (iotune's own headline)."""
    for where in (summary, summary.get("final") or {}, summary.get("headline") or {}):
        for key, value in where.items():
            if "interval" in key.lower() or key.lower() in ("ci", "ci95"):
                if isinstance(value, dict):
                    value = [value.get("low", value.get("lo")), value.get("high", value.get("hi"))]
                if (
                    isinstance(value, list | tuple)
                    and len(value) == 2
                    and all(isinstance(x, int | float) for x in value)
                ):
                    return [float(value[0]), float(value[1])]
    return None


def verdict_of(summary: dict[str, Any]) -> dict[str, Any]:
    """The run's verdict: summary.json's headline (iotune.verdict: measured on best.xml itself,
    with its interval) where it has one, else the full winner's verification ("final")."""
    final = summary.get("final") or {}
    head = summary.get("headline") if isinstance(summary.get("headline"), dict) else None
    if head is not None:
        ratios = [float(r) for r in head.get("pair_ratios") or []]
        have = head.get("low") is not None and head.get("high") is not None
        interval = [float(head["low"]), float(head["high"])] if have else None
        source = "summary.json headline (best.xml's own pairs)"
        improved, speedup, pairs = (
            bool(head.get("established")),
            head.get("speedup"),
            head.get("pairs"),
        )
    else:
        ratios = [float(r) for r in final.get("pair_ratios") or []]
        interval, source = summary_interval(summary), "summary.json"
        improved, speedup, pairs = (
            bool(final.get("improved")),
            final.get("speedup"),
            final.get("pairs"),
        )
    if interval is None:
        interval, source = bootstrap_interval(ratios), "bootstrap of the pair ratios (bench)"
    return {
        "recommended": dict(sorted((summary.get("recommended") or {}).items())),
        "improved": improved,
        "speedup": speedup,
        "pairs": pairs,
        "pair_ratios": ratios,
        "interval": interval,
        "interval_from": source,
        "verdict": summary.get("verdict"),
        "best_settings": summary.get("best_settings"),
        "runs": summary.get("runs"),  # every application run of the study, by phase
        "stopped": summary.get("stopped"),
    }


def one_demo(
    hold: bool, workdir: Path, timeout: float, strategy: str | None = None
) -> dict[str, Any]:
    out = workdir / f"demo-{time.strftime('%H%M%S')}-{'held' if hold else 'plain'}"
    cmd = [sys.executable, "-m", "iotune", "tune", "--demo", "--no-progress", "--no-kb",
           "--out", str(out), *(["--hold-freed-memory"] if hold else []),
           *(["--strategy", strategy] if strategy else [])]  # fmt: skip
    rec: dict[str, Any] = {
        "hold": hold,
        "command": cmd,
        "start_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "load_before": os.getloadavg(),
        "uptime_before": _uptime(),
        "min_free_ms_before": _read(PARAM),
    }
    t0 = time.monotonic()
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=workdir)
    rec.update(
        seconds=round(time.monotonic() - t0, 1),
        load_after=os.getloadavg(),
        uptime_after=_uptime(),
        min_free_ms_after=_read(PARAM),
        returncode=proc.returncode,
        stdout=proc.stdout,
        stderr=proc.stderr[-4000:],
    )
    summary_path = out / "summary.json"
    if proc.returncode == 0 and summary_path.exists():
        rec["summary"] = json.loads(summary_path.read_text())
        rec["result"] = verdict_of(rec["summary"])
    return rec


def agree(records: list[dict[str, Any]]) -> dict[str, Any]:
    """How many runs share the commonest verdict, and whether the intervals share a value."""
    done = [r["result"] for r in records if "result" in r]
    if not done:
        return {"runs": len(records), "finished": 0}
    keys = [json.dumps([d["improved"], d["recommended"]]) for d in done]
    common = max(set(keys), key=keys.count)
    intervals = [d["interval"] for d in done if d["interval"]]
    overlap = None
    if intervals:
        overlap = max(i[0] for i in intervals) <= min(i[1] for i in intervals)
    return {
        "runs": len(records),
        "finished": len(done),
        "commonest_verdict": json.loads(common),
        "same_verdict": keys.count(common),
        "intervals_share_a_value": overlap,
        "speedups": [d["speedup"] for d in done],
    }


def table(records: list[dict[str, Any]]) -> list[str]:
    head = "| run | held | load before/after | min_free_ms | s | verdict | best.xml | speedup |"
    lines = [head + " interval | pairs |", "|---|---|---|---|---|---|---|---|---|---|"]
    for i, r in enumerate(records, 1):
        d = r.get("result") or {}
        iv = d.get("interval")
        lines.append(
            f"| {i} | {'yes' if r['hold'] else 'no'} | {r['load_before'][0]:.1f}/"
            f"{r['load_after'][0]:.1f} | {r['min_free_ms_before']}->{r['min_free_ms_after']} | "
            f"{r['seconds']:.0f} | "
            + (
                f"{'tuned' if d['improved'] else 'keep defaults'} | "
                f"{', '.join(f'{k}={v}' for k, v in d['recommended'].items()) or '-'} | "
                f"{d['speedup']:.2f}x | "
                + (f"{iv[0]:.2f}-{iv[1]:.2f}" if iv else "-")
                + f" | {d['pairs']} |"
                if d
                else f"failed (exit {r['returncode']}) | | | | |"
            )
        )
    return lines


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=5, help="demos to run (default 5)")
    ap.add_argument("--hold-freed-memory", action="store_true", help="every run with the hold")
    ap.add_argument("--alternate", action="store_true", help="with and without the hold in turn")
    ap.add_argument("--tag", default="held", help="output name: data/demo_verdicts-TAG.json")
    ap.add_argument("--timeout", type=float, default=1800.0, help="seconds per demo (1800)")
    ap.add_argument("--out", type=Path, default=HERE)
    ap.add_argument("--strategy", help="tune's --strategy (default: tune's own default)")
    ap.add_argument(
        "--append",
        action="store_true",
        help="add the runs to those already in the output file (one run per invocation)",
    )
    a = ap.parse_args()
    meta = {
        "machine": {
            "host": platform.node(),
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
            "python": sys.version.split()[0],
        },  # fmt: skip
        "page_reporting": {p.name: _read(p) for p in sorted(PARAM.parent.glob("*"))}
        if PARAM.parent.is_dir()
        else None,
        "start_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "git": _git(),
    }
    meta["invocations"] = [meta["start_utc"]]
    path = a.out / f"demo_verdicts-{a.tag}.json"
    a.out.mkdir(parents=True, exist_ok=True)
    earlier, records = load_previous(path) if a.append else (None, [])
    if earlier:
        before = earlier.get("invocations") or [earlier.get("start_utc")]
        meta = {**meta, "start_utc": earlier.get("start_utc", meta["start_utc"]),
                "invocations": [*before, meta["start_utc"]]}  # fmt: skip
    first = len(records)
    with tempfile.TemporaryDirectory(prefix="demo-verdicts-") as tmp:
        for i in range(a.runs):
            hold = ((first + i) % 2 == 0) if a.alternate else a.hold_freed_memory
            records.append(one_demo(hold, Path(tmp), a.timeout, a.strategy))
            r = records[-1]
            r["git"] = meta["git"]  # the code each run used (appended runs may differ)
            print(table([r])[-1].replace("| 1 |", f"| {first + i + 1} |", 1), flush=True)
            meta["end_utc"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
            result = {"meta": meta, "agreement": agree(records), "runs": records}
            path.write_text(json.dumps(result, indent=1) + "\n")  # after every run
    groups = {"all": records}
    if a.alternate:
        groups = {"held": [r for r in records if r["hold"]],
                  "not held": [r for r in records if not r["hold"]]}  # fmt: skip
    print("\n".join(table(records)))
    for name, rs in groups.items():
        print(f"{name}: {json.dumps(agree(rs))}")
    print(f"raw: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
