"""What running a skeleton here costs, judged before it runs: processes per core, memory per
rank, bytes on the file system, calls per rank, and the time it spends between calls and steps
(the application's computation: `compute_s`, `gap_s`). `skel run` and `skel compare` refuse,
with one message, a run that would exceed this machine (a descriptor with `ranks: 10^9` once
ran silently for 70 minutes); the estimate is printed before a run that fits."""

from __future__ import annotations

import ast
import dataclasses
import os
import shutil
from dataclasses import dataclass

from iotune.skel import descriptor as dmod
from iotune.skel import expr

RANKS_PER_CORE = 4  # more processes than this per core: busy-polling MPI, not I/O, is measured
MAX_CALLS_PER_RANK = 100_000_000  # at >= 1 us a call, over a minute and a half of calls alone
DATA_CAP = 1 << 30  # the runtime's write memory wraps at 1 GiB per rank (skel_buffer.c)
SCRUB = 64 << 20  # and it keeps a 64 MiB area to push data out of the CPU caches
SAMPLE = 64  # ranks evaluated; the rest are extrapolated
STEP_SAMPLE = 16  # steps evaluated when an entry depends on the step (its `when`, `repeat`, ...)
MAX_WAIT_S = 24 * 3600  # time between calls and steps: a skeleton is a benchmark, not a day's job


class CostError(ValueError):
    """A run that would exceed what the machine has; str() is the one message."""


@dataclass
class Cost:
    ranks: int
    steps: int
    bytes_per_step: int  # all ranks
    max_rank_bytes_per_step: int
    calls_per_rank_step: int
    # seconds spent between calls (gap_s) in one step by the rank that spends most, and
    # between two steps (compute_s); what --gaps off leaves out is not counted
    gap_s_per_rank_step: float = 0.0
    compute_s: float = 0.0

    @property
    def wait_s(self) -> float:
        """Seconds the run spends on the application's computation, not on I/O."""
        return self.gap_s_per_rank_step * self.steps + self.compute_s * max(self.steps - 1, 0)

    @property
    def total_bytes(self) -> int:
        return self.bytes_per_step * self.steps

    @property
    def memory_per_rank(self) -> int:
        return min(self.max_rank_bytes_per_step, DATA_CAP) + SCRUB + 32 * self.steps

    def line(self) -> str:
        wait = f", {_duration(self.wait_s)} of computation between calls" if self.wait_s else ""
        return (
            f"{self.ranks} ranks x {self.steps} steps: about {_size(self.total_bytes)} to write, "
            f"{_size(self.memory_per_rank)} of memory per rank, "
            f"{self.calls_per_rank_step * self.steps} write calls per rank{wait}"
        )


def _duration(s: float) -> str:
    if s < 120:
        return f"{s:.3g} s"
    if s < 7200:
        return f"{s / 60:.0f} min"
    return f"{s / 3600:.1f} h"


def _size(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if abs(n) < 1024 or unit == "PiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} B"


def _sample(ranks: int) -> list[int]:
    if ranks <= SAMPLE:
        return list(range(ranks))
    step = max(ranks // SAMPLE, 1)
    return sorted({0, ranks - 1, *range(0, ranks, step)})


def _rank_step(d: dmod.Descriptor, env: dict[str, int]) -> tuple[int, int, float]:
    """(bytes, calls, seconds between calls) of one rank in one step."""
    total = calls = 0
    gaps = 0.0
    for f in d.files:
        if f.when is not None and not expr.evaluate(f.when, env):
            continue  # a file the rank does not open
        if f.once and env.get("step", 0) > 0:
            continue  # opened at the first step only
        dsets = {ds.name: ds for ds in f.datasets}
        for w in f.writes:
            if w.when is not None and not expr.evaluate(w.when, env):
                continue
            if w.once and env.get("step", 0) > 0:
                continue  # made at the first step only
            repeat = max(expr.evaluate(w.repeat, env), 0)
            if (
                w.extent is not None
                or w.scale_call is not None
                or w.set_size is not None
                or w.seek_shared is not None
                or w.attr is not None
                or w.create
                or w.open
                or w.flush
                or w.delete is not None
            ):
                # extent, scales, file size, attribute calls, creations: no bytes
                calls += 1
                continue
            if w.direct and w.size is not None:  # a chunk as stored: its stored bytes
                total += max(expr.evaluate(w.size, env), 0) * repeat
                calls += repeat
                gaps += w.gap_s * repeat  # the skeleton spends it after chunk calls too
                continue
            if w.by_rank is not None:
                if env["rank"] not in w.by_rank:
                    continue
                second = w.by_rank[env["rank"]][1]
            else:
                second = w.count if w.dataset else w.size
            if w.dataset:
                n = 1
                for x in second:
                    n *= max(expr.evaluate(x, env), 0)
                size = n * dsets[w.dataset].element_size
            else:
                size = max(expr.evaluate(second, env), 0)
            total += size * repeat
            calls += repeat
            gaps += w.gap_s * repeat
    return total, calls, gaps


def _uses_step(d: dmod.Descriptor) -> bool:
    """Whether any entry's expressions name `step` (e.g. `when: step > 0`, `repeat: step`)."""

    def walk(x: object) -> bool:
        if isinstance(x, ast.AST):
            return any(isinstance(n, ast.Name) and n.id == "step" for n in ast.walk(x))
        if isinstance(x, list | tuple):
            return any(walk(y) for y in x)
        if isinstance(x, dict):
            return any(walk(y) for y in x.values())
        if dataclasses.is_dataclass(x) and not isinstance(x, type):
            return any(walk(getattr(x, f.name)) for f in dataclasses.fields(x))
        return False

    return any(f.once for f in d.files) or any(w.once or walk(w) for f in d.files for w in f.writes)


def _steps_sample(steps: int) -> list[int]:
    if steps <= STEP_SAMPLE:
        return list(range(max(steps, 1)))
    return sorted({0, 1, steps - 1, *(i * (steps - 1) // (STEP_SAMPLE - 1)
                                       for i in range(STEP_SAMPLE))})  # fmt: skip


def _step_mean(values: list[float], steps: int) -> float:
    """The mean a step of values measured at _steps_sample(steps): every step when they are
    all there; else step 0 counts once and the other sampled steps stand for the other
    steps - 1 (a first step that differs, e.g. one that creates the datasets, is not
    weighed like 1/16 of the run)."""
    if len(values) == max(steps, 1) or len(values) < 2:
        return sum(values) / len(values)
    rest = values[1:]
    return (values[0] + (steps - 1) * sum(rest) / len(rest)) / steps


def estimate(d: dmod.Descriptor, ranks: int, steps: int | None = None, gaps: bool = True) -> Cost:
    """The run's cost at this many ranks (steps: the descriptor's unless given), from the
    writes of a sample of ranks, extrapolated to all: in step 0, or, when an entry depends on
    the step, averaged over a sample of steps (calls: the most of any); gaps: the gaps
    between calls are spent (the skeleton's --gaps busy or sleep; off: not)."""
    try:
        if steps is None:
            steps = expr.evaluate(d.steps, d.env(size=ranks))
        at = _steps_sample(steps) if _uses_step(d) else [0]
        per = []  # per rank: mean bytes a step, most bytes a step, most calls, mean gaps
        for r in _sample(ranks):
            each = [_rank_step(d, d.env(rank=r, size=ranks, step=st)) for st in at]
            per.append(
                (
                    _step_mean([b for b, _, _ in each], steps),
                    max(b for b, _, _ in each),
                    max(c for _, c, _ in each),
                    _step_mean([g for _, _, g in each], steps),
                )
            )
    except expr.ExprError as e:
        raise CostError(f"at {ranks} ranks: {e}") from None
    return Cost(
        ranks,
        steps,
        int(sum(p[0] for p in per) / len(per) * ranks),
        max(p[1] for p in per),
        max(p[2] for p in per),
        max(p[3] for p in per) if gaps else 0.0,
        d.compute_s,
    )


def _available_memory() -> int | None:
    try:
        with open("/proc/meminfo", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def check_local(cost: Cost, work_dir: str, cores: int | None = None, launches: int = 1) -> None:
    """Raises CostError when a run of this cost on this machine, writing into work_dir, would
    oversubscribe its cores, exhaust its memory or its file system, make absurdly many calls,
    or spend days between them (over all `launches` of it: `skel compare` runs it methods x
    repeats times)."""
    cores = cores or os.cpu_count() or 1
    if cost.ranks > RANKS_PER_CORE * cores:
        raise CostError(
            f"{cost.ranks} ranks on {cores} cores (at most {RANKS_PER_CORE} per core here): "
            "run fewer (--ranks N) or submit the job script (run-slurm.sbatch)"
        )
    mem = _available_memory()
    need = cost.memory_per_rank * cost.ranks
    if mem is not None and need > mem:
        raise CostError(
            f"{cost.line()}: {_size(need)} of memory needed, {_size(mem)} available: "
            "fewer ranks or smaller parameters (iotune skel params)"
        )
    probe = work_dir
    while probe and not os.path.exists(probe):
        probe = os.path.dirname(probe)
    free = shutil.disk_usage(probe or ".").free
    if cost.total_bytes > free:
        raise CostError(
            f"{cost.line()}: {_size(free)} free in {probe or '.'}: fewer steps (--args "
            "'--steps N') or smaller parameters"
        )
    if cost.calls_per_rank_step * cost.steps > MAX_CALLS_PER_RANK:
        raise CostError(
            f"{cost.line()}: more than {MAX_CALLS_PER_RANK} calls per rank: fewer steps or repeats"
        )
    if cost.wait_s * launches > MAX_WAIT_S:
        runs = f" in each of {launches} runs" if launches > 1 else ""
        raise CostError(
            f"{cost.line()}{runs}: more than {_duration(MAX_WAIT_S)} of computation (compute_s "
            "between steps, gap_s between calls): fewer steps (--args '--steps N')"
            + (", fewer repeats or methods" if launches > 1 else "")
            + ", or --gaps off"
        )
