"""Building and running a generated skeleton, comparing methods, and the per-rank plot."""

from __future__ import annotations

import json
import os
import random
import shlex
import statistics
from typing import Any

import yaml

from iotune import launch as launching
from iotune.skel import descriptor as dmod
from iotune.skel import generate as gen

PARTS = ("open", "comm", "write", "close")


class RunError(RuntimeError):
    pass


def write_params(d: dmod.Descriptor) -> str:
    head = (
        f"# Parameters of skeleton {d.name}: edit, then `iotune skel generate DESC "
        "--params THIS`.\n# ranks: the job's size; steps: output steps; the rest are the "
        "descriptor's sizes.\n"
    )
    from iotune.skel import expr

    body = {
        "ranks": d.ranks,
        "steps": expr.evaluate(d.steps, d.env()),
        "parameters": dict(d.parameters),
    }
    return head + yaml.safe_dump(body, sort_keys=False)


def apply_params(d: dmod.Descriptor, path: str | None) -> dmod.Descriptor:
    if not path:
        return d
    try:
        with open(path, encoding="utf-8") as fh:
            data = yaml.safe_load(fh) or {}
    except (OSError, yaml.YAMLError) as e:
        raise dmod.DescriptorError(path, None, "", f"cannot read the parameters: {e}") from None
    if not isinstance(data, dict) or set(data) - {"ranks", "steps", "parameters"}:
        raise dmod.DescriptorError(path, None, "", "expected ranks, steps and parameters")
    values = dict(data.get("parameters") or {})
    if "steps" in data:
        values["steps"] = data["steps"]
    for k, v in values.items():
        if type(v) is not int:
            raise dmod.DescriptorError(path, None, k, "expected an integer")
    ranks = data.get("ranks")
    if ranks is not None and (type(ranks) is not int or ranks < 1):
        raise dmod.DescriptorError(path, None, "ranks", "expected a positive integer")
    out = dmod.with_parameters(d, {k: v for k, v in values.items() if k != "steps"}, ranks)
    if "steps" in values:
        from iotune.skel import expr

        out.steps = expr.parse(values["steps"])
    return out


def build(out_dir: str, make: str = "make", timeout: float = 300) -> str:
    proc = launching.run_captured([make, "-s", "-C", out_dir], timeout=timeout)
    if proc.returncode != 0:
        raise RunError(f"building the skeleton in {out_dir} failed:\n{proc.stderr.strip()}")
    return os.path.join(out_dir, "skeleton")


def launch(
    exe: str,
    ranks: int,
    args: list[str],
    mpiexec: str = "mpiexec",
    timeout: float = 600,
    env: dict[str, str] | None = None,
) -> str:
    cmd = [*shlex.split(mpiexec), "-n", str(ranks), exe, *args]
    full_env = dict(os.environ, **(env or {}))
    full_env.update(launching.root_permission(cmd, full_env))
    proc = launching.run_captured(cmd, timeout=timeout, env=full_env)
    if proc.returncode != 0:
        raise RunError(f"{' '.join(cmd)} failed ({proc.returncode}):\n{proc.stderr.strip()}")
    return proc.stdout


def load_timing(path: str) -> dict[str, Any]:
    with open(path, encoding="utf-8") as fh:
        t = json.load(fh)
    if t.get("schema") != "iotune-skel-timing":
        raise RunError(f"{path}: not a skeleton timing file")
    return t


def per_rank_totals(t: dict[str, Any]) -> list[dict[str, float]]:
    """Per rank: seconds of each part summed over steps, and their total."""
    out = []
    for r in t["per_rank"]:
        sums = {p: sum(step[i] for step in r["steps"]) for i, p in enumerate(PARTS)}
        sums["total"] = sum(sums[p] for p in PARTS)
        sums["rank"] = r["rank"]
        out.append(sums)
    return out


def slowest_total(t: dict[str, Any]) -> float:
    return max(r["total"] for r in per_rank_totals(t))


def plot(t: dict[str, Any], png: str) -> None:
    """Skel's Fig. 5: per-rank times, ranks sorted by total, stacked by part."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = sorted(per_rank_totals(t), key=lambda r: r["total"])
    fig, ax = plt.subplots(figsize=(7, 4))
    x = list(range(len(rows)))
    bottom = [0.0] * len(rows)
    for part in PARTS:
        vals = [r[part] for r in rows]
        ax.bar(x, vals, bottom=bottom, label=part, width=0.8)
        bottom = [b + v for b, v in zip(bottom, vals, strict=True)]
    ax.set_xlabel("ranks, sorted by total time")
    ax.set_ylabel("seconds")
    ax.set_xticks(x, [str(r["rank"]) for r in rows], fontsize=7)
    ax.set_title(f"skeleton {t['skeleton']}: method {t['method']}, {t['ranks']} ranks")
    ax.legend()
    fig.tight_layout()
    fig.savefig(png, dpi=100)
    plt.close(fig)


def compare(
    exe: str,
    ranks: int,
    methods: list[str],
    repeats: int,
    work_dir: str,
    extra: list[str],
    mpiexec: str = "mpiexec",
    seed: int = 1,
) -> dict[str, list[float]]:
    """Runs each method `repeats` times, in shuffled interleaved rounds, each measured run right
    after a discarded warm-up run of the same method; slowest rank's total time per run."""
    rng = random.Random(seed)
    results: dict[str, list[float]] = {m: [] for m in methods}
    timing = os.path.join(work_dir, "compare-timing.json")
    for _ in range(repeats):
        order = list(methods)
        rng.shuffle(order)
        for m in order:
            args = ["--method", m, "--timing", timing, "--dir", work_dir, "--cleanup", *extra]
            launch(exe, ranks, args, mpiexec)  # warm-up, discarded
            launch(exe, ranks, args, mpiexec)
            results[m].append(slowest_total(load_timing(timing)))
    return results


def summarise(results: dict[str, list[float]]) -> str:
    lines = [f"{'method':<10} {'median s':>10} {'min s':>10} {'max s':>10}  runs"]
    for m, vals in results.items():
        lines.append(
            f"{m:<10} {statistics.median(vals):>10.4f} {min(vals):>10.4f} "
            f"{max(vals):>10.4f}  {len(vals)}"
        )
    return "\n".join(lines)


__all__ = ["gen"]
