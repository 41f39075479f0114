"""The application runs of a study's final phases: counted per phase, warm-ups apart."""

from __future__ import annotations

from iotune import trial
from iotune.search import loop


class RunCounter:
    """An evaluate that counts the application's runs of the final phases, per phase (the
    phase in force when it is called; warm-ups apart: measure_once says which runs are)."""

    def __init__(self, evaluate: loop.Evaluate):
        self.evaluate = evaluate
        self.phase = "re-measure"
        self.warming = False
        self.runs: dict[str, int] = {}
        self.failed: dict[str, int] = {}  # runs that failed (exit status, crash, time-out)

    def __call__(self, settings: dict[str, str], cap: float | None) -> trial.Outcome:
        phase = "warm-up" if self.warming else self.phase
        self.runs[phase] = self.runs.get(phase, 0) + 1
        o = self.evaluate(settings, cap)
        if not o.ok:
            self.failed[phase] = self.failed.get(phase, 0) + 1
        return o


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
