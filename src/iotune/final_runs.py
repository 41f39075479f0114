"""The application runs of a study's final phases: counted per phase, warm-ups apart, and kept
in the study as they are made, so that a finish stopped half-way (Ctrl-C, a job's time limit)
is counted by the next one."""

from __future__ import annotations

import datetime
import uuid
from collections.abc import Callable
from typing import Any

from iotune import trial
from iotune.search import loop

FINISH = "final runs: "  # study attribute prefix: one finish's runs ({"runs", "failed", "ended"})


class RunCounter:
    """An evaluate that counts the application's runs of the final phases, per phase (the
    phase in force when it is called; warm-ups apart: measure_once says which runs are)."""

    def __init__(
        self,
        evaluate: loop.Evaluate,
        record: Callable[[dict[str, int], dict[str, int]], None] | None = None,
    ):
        """record(runs, failed): called before each run (a run stopped by a signal was paid
        for all the same) and after each failed one, e.g. to keep the counts in the study."""
        self.evaluate = evaluate
        self.record = record or (lambda runs, failed: None)
        self.phase = "re-measure"
        self.warming = False
        self.runs: dict[str, int] = {}
        self.failed: dict[str, int] = {}  # runs that failed (exit status, crash, time-out)

    def __call__(self, settings: dict[str, str], cap: float | None) -> trial.Outcome:
        phase = "warm-up" if self.warming else self.phase
        self.runs[phase] = self.runs.get(phase, 0) + 1
        self.record(dict(self.runs), dict(self.failed))
        o = self.evaluate(settings, cap)
        if not o.ok:
            self.failed[phase] = self.failed.get(phase, 0) + 1
            self.record(dict(self.runs), dict(self.failed))
        return o


def kept_in(study: Any, evaluate: loop.Evaluate) -> tuple[RunCounter, str]:
    """A RunCounter whose counts are kept in the study's attribute (FINISH + when and which
    process), written as the runs are made; (it, the attribute's name)."""
    when = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
    name = f"{FINISH}{when} {loop.WORKER} {uuid.uuid4().hex[:8]}"

    def record(runs: dict[str, int], failed: dict[str, int]) -> None:
        study.set_user_attr(name, {"runs": runs, "failed": failed, "ended": False})

    return RunCounter(evaluate, record), name


def ended(study: Any, name: str, counter: RunCounter) -> None:
    """Marks the finish kept under name as having ended (its report written)."""
    study.set_user_attr(name, {"runs": counter.runs, "failed": counter.failed, "ended": True})


def earlier(study: Any, but: str | None = None) -> dict[str, Any]:
    """The runs of the study's earlier finishes (all but `but`), ended or stopped half-way:
    {"finishes", "stopped" (how many did not end), "runs", "failed"} (totals)."""
    found = [
        v
        for k, v in study.user_attrs.items()
        if k.startswith(FINISH) and k != but and isinstance(v, dict)
    ]
    return {
        "finishes": len(found),
        "stopped": sum(1 for v in found if not v.get("ended")),
        "runs": sum(_total(v.get("runs")) for v in found),
        "failed": sum(_total(v.get("failed")) for v in found),
    }


def _total(by_phase: Any) -> int:
    """The runs of a {phase: count} record (what is not a count, in a study written by hand
    or damaged, counts nothing)."""
    if not isinstance(by_phase, dict):
        return 0
    return sum(
        n for n in by_phase.values() if isinstance(n, int) and not isinstance(n, bool) and n > 0
    )


def measure_once(evaluate: loop.Evaluate, settings: dict[str, str], warmup: int) -> trial.Outcome:
    """One measured run of settings, after `warmup` discarded runs (counted as warm-ups when
    evaluate is a RunCounter)."""
    counter = evaluate if isinstance(evaluate, RunCounter) else None
    for _ in range(warmup):
        if counter is not None:
            counter.warming = True
        try:
            evaluate(settings, None)
        finally:
            if counter is not None:
                counter.warming = False
    return evaluate(settings, None)
