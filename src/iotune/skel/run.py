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

# the parts of a step's time, as the timing file lists them (version 2; version 1: the first 4)
PARTS = ("open", "comm", "write", "close", "read")


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
    from iotune import inputs

    try:
        text = inputs.read_text(path, "parameter file", 1 << 20)
    except inputs.InputError as e:
        err = dmod.DescriptorError(path, None, "", str(e))
        err.args = (str(e),)
        raise err from None
    dmod.check_nesting(text, dmod._Checker(path))
    try:
        data = yaml.safe_load(text) or {}
    except (yaml.YAMLError, RecursionError) as e:
        msg = " ".join(str(e).split())[:200]
        raise dmod.DescriptorError(path, None, "", f"cannot read the parameters: {msg}") from None
    if not isinstance(data, dict) or set(data) - {"ranks", "steps", "parameters"}:
        raise dmod.DescriptorError(path, None, "", "expected ranks, steps and parameters")
    values = dict(data.get("parameters") or {})
    if "steps" in data:
        values["steps"] = data["steps"]
    for k, v in values.items():
        if type(v) is not int or not -(2**63) <= v < 2**63:
            raise dmod.DescriptorError(path, None, str(k), "expected a 64-bit integer")
    ranks = data.get("ranks")
    if ranks is not None and (type(ranks) is not int or not 1 <= ranks <= dmod.MAX_RANKS):
        raise dmod.DescriptorError(
            path, None, "ranks", f"expected an integer from 1 to {dmod.MAX_RANKS}"
        )
    out = dmod.with_parameters(d, {k: v for k, v in values.items() if k != "steps"}, ranks)
    if "steps" in values:
        if not 1 <= values["steps"] <= dmod.MAX_STEPS:
            raise dmod.DescriptorError(path, None, "steps", f"expected 1 to {dmod.MAX_STEPS}")
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
    from iotune import inputs

    try:
        t = inputs.load_json(path, "skeleton timing file")
    except inputs.InputError as e:
        raise RunError(str(e)) from None
    ok = (
        isinstance(t, dict)
        and t.get("schema") == "iotune-skel-timing"
        and isinstance(t.get("per_rank"), list)
        and all(
            isinstance(r, dict)
            and isinstance(r.get("steps"), list)
            and all(
                isinstance(s, list)
                and len(s) in (len(PARTS) - 1, len(PARTS))
                and all(isinstance(x, int | float) for x in s)
                for s in r["steps"]
            )
            for r in t["per_rank"]
        )
    )
    if not ok:
        raise RunError(f"{path}: not a skeleton timing file")
    return t


def per_rank_totals(t: dict[str, Any]) -> list[dict[str, float]]:
    """Per rank: seconds of each part summed over steps, and their total."""
    out = []
    for r in t["per_rank"]:
        sums = {
            p: sum(step[i] for step in r["steps"] if i < len(step)) for i, p in enumerate(PARTS)
        }  # a version 1 file: no read part (its reads counted under write)
        sums["total"] = sum(sums[p] for p in PARTS)
        sums["rank"] = r["rank"]
        out.append(sums)
    return out


def slowest_total(t: dict[str, Any]) -> float:
    return max(r["total"] for r in per_rank_totals(t))


def plot(t: dict[str, Any], png: str) -> bool:
    """Skel's Fig. 5: per-rank times, ranks sorted by total, stacked by part, written to png
    through the one output writer (outputs.write_output: -, /dev/stdout, a FIFO); True when a
    regular file was written."""
    import io

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
    image = io.BytesIO()
    fig.savefig(image, format="png", dpi=100)
    plt.close(fig)
    from iotune.outputs import write_output

    return write_output(png, image.getvalue(), "plot")


def _io_seconds(cmd: list[str], cwd: str, lib: str | None, timeout: float = 3600) -> float:
    """One run of cmd in cwd: its I/O time (the profile's io.time_s, slowest rank's time in
    I/O calls) under the runtime lib when there is one, else its wall time."""
    import time

    env = dict(os.environ)
    prof = os.path.join(cwd, ".iotune-compare-profile.json")
    if lib:
        env.update(LD_PRELOAD=lib, IOTUNE_PROFILE=prof, IOTUNE_SESSION=f"skel-{time.time_ns():x}")
        env.pop("IOTUNE_CONFIG", None)
        env.pop("IOTUNE_TRACE", None)
    env.update(launching.root_permission(cmd, env))
    t0 = time.monotonic()
    proc = launching.run_captured(cmd, cwd=cwd, env=env, timeout=timeout)
    wall = time.monotonic() - t0
    if proc.returncode != 0:
        raise RunError(
            f"{' '.join(cmd)} failed ({proc.returncode}):\n{proc.stderr.strip()[-2000:]}"
        )
    if not lib:
        return wall
    with open(prof, encoding="utf-8") as fh:
        return float(json.load(fh)["io"]["time_s"])


def _fresh(directory: str) -> None:
    """Empties a directory the comparison made (it holds only what its runs wrote)."""
    import shutil

    for name in os.listdir(directory):
        path = os.path.join(directory, name)
        shutil.rmtree(path) if os.path.isdir(path) and not os.path.islink(path) else os.unlink(path)


def _runtime_lib() -> str | None:
    from iotune import paths

    try:
        return str(paths.find_build().lib)
    except paths.NotFound:
        return None


def compare(
    exe: str,
    ranks: int,
    methods: list[str],
    repeats: int,
    work_dir: str,
    extra: list[str],
    mpiexec: str = "mpiexec",
    seed: int = 1,
    original: list[str] | None = None,
    progress: Any = None,
) -> dict[str, list[float]]:
    """Runs each method `repeats` times, in shuffled interleaved rounds, each measured run right
    after a discarded warm-up run of the same method; slowest rank's total time per run. With
    `original` (the application's command), the application and the skeleton's native method
    are measured the same way too (entries "original" and "skeleton": the I/O time of the
    runtime's profile, or wall time without a runtime), each in a directory of its own under
    work_dir that is emptied before each run. `progress(line)` hears of every measured run."""
    rng = random.Random(seed)
    results: dict[str, list[float]] = {m: [] for m in methods}
    timing = os.path.join(work_dir, "compare-timing.json")
    lib = _runtime_lib() if original else None
    if original:
        results["original"], results["skeleton"] = [], []
        results["_metric"] = ["io.time_s of the profile" if lib else "wall time"]  # type: ignore[list-item]
    launcher = shlex.split(mpiexec)
    dirs = {}
    for who in ("original", "skeleton") if original else ():
        dirs[who] = os.path.join(work_dir, who)
        os.makedirs(dirs[who], exist_ok=True)
    entries = [m for m in results if not m.startswith("_")]
    done, total = 0, repeats * len(entries)
    for _ in range(repeats):
        order = list(entries)
        rng.shuffle(order)
        for m in order:
            if m in dirs:
                cmd = [*launcher, "-n", str(ranks)]
                cmd += original if m == "original" else [exe, "--method", "native", *extra]
                for _warm in range(2):  # a discarded warm-up, then the measured run
                    _fresh(dirs[m])
                    value = _io_seconds(cmd, dirs[m], lib)
                _fresh(dirs[m])
            else:
                args = ["--method", m, "--timing", timing, "--dir", work_dir, "--cleanup", *extra]
                launch(exe, ranks, args, mpiexec)  # warm-up, discarded
                launch(exe, ranks, args, mpiexec)
                value = slowest_total(load_timing(timing))
            results[m].append(value)
            done += 1
            if progress:
                progress(f"skel compare: run {done}/{total}: {m} {value:.4f} s")
    return results


def summarise(results: dict[str, list[float]]) -> str:
    lines = [f"{'method':<10} {'median s':>10} {'min s':>10} {'max s':>10}  runs"]
    for m, vals in results.items():
        if m.startswith("_") or not vals:
            continue
        lines.append(
            f"{m:<10} {statistics.median(vals):>10.4f} {min(vals):>10.4f} "
            f"{max(vals):>10.4f}  {len(vals)}"
        )
    return "\n".join(lines)


AGREE = 0.10  # medians within 10 %: the skeleton reproduces the original's I/O time


def verdict(results: dict[str, list[float]]) -> str:
    """Skeleton vs original: medians, their ratio, and what can be concluded."""
    skel, orig = results.get("skeleton") or [], results.get("original") or []
    if not skel or not orig:
        return "skeleton vs original: not measured"
    ms, mo = statistics.median(skel), statistics.median(orig)
    metric = (results.get("_metric") or ["time"])[0]
    if mo <= 0:
        return f"skeleton vs original ({metric}): the original's time is 0: no ratio"
    ratio = ms / mo
    spread = max(max(v) / min(v) if min(v) > 0 else float("inf") for v in (skel, orig))
    if abs(ratio - 1) <= AGREE:
        word = f"agree (within {AGREE:.0%})"
    elif ratio < 1:
        word = f"skeleton faster by {1 / ratio:.2f}x"
    else:
        word = f"skeleton slower by {ratio:.2f}x"
    if spread > 1.3 and len(skel) < 10:
        word += f"; runs vary up to {spread:.2f}x: repeat more (--repeats 10) before trusting it"
    return (
        f"skeleton vs original ({metric}, median of {len(skel)}): {ms:.4f} s vs {mo:.4f} s, "
        f"ratio {ratio:.2f}: {word}"
    )


__all__ = ["gen"]
