"""Adaptive capping: a trial that has already run much longer than the incumbent (the best
configuration so far) cannot win; it is stopped and recorded as capped, with a lower-bound
estimate of its objective, so the search spends its time on promising settings."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Capping:
    factor: float = 2.0  # stop at factor x the incumbent's wall time ...
    grace_s: float = 1.0  # ... but never before the incumbent's time + grace

    def cap(self, incumbent_wall_s: float | None) -> float | None:
        """The wall-time limit of the next trial, or None (no incumbent yet, or capping off)."""
        if incumbent_wall_s is None or self.factor <= 0:
            return None
        return max(self.factor * incumbent_wall_s, incumbent_wall_s + self.grace_s)

    @staticmethod
    def bound(
        incumbent_value: float, incumbent_wall_s: float, stopped_at_s: float, maximize: bool
    ) -> float:
        """A lower bound (in quality) of a capped trial's objective: its I/O took at least the
        fraction stopped_at / incumbent_wall longer than the incumbent's."""
        ratio = max(stopped_at_s / max(incumbent_wall_s, 1e-9), 1.0)
        return incumbent_value / ratio if maximize else incumbent_value * ratio
