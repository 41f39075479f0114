"""The end of a study on disk: trials.csv, the figures (PNG) and report.html."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from iotune.report.html import write_html
from iotune.report.table import trial_rows, write_csv
from iotune.space import Space

__all__ = ["trial_rows", "write_all", "write_csv", "write_html"]


def write_all(out: Path, study: Any, space: Space, summary: dict[str, Any]) -> Path:
    """Writes trials.csv, the PNGs and report.html into out; returns the report's path."""
    from iotune.report.plots import write_plots  # matplotlib: only when a report is written

    rows = trial_rows(study, space)
    write_csv(out / "trials.csv", rows, space)
    figures = write_plots(out, rows, space, summary)
    searched = [n for n in space.names() if n not in summary.get("not_searched", {})]
    importances = _importances(study, searched)
    return write_html(out / "report.html", rows, space, summary, figures, importances)


def _importances(study: Any, names: list[str]) -> dict[str, float]:
    """PED-ANOVA importances (Optuna) of the searched parameters, or {} when the study is too
    small for them. Optuna's warnings about thin data stay out of the user's terminal: the
    report says how to read the numbers."""
    import warnings

    try:
        import optuna

        evaluator = optuna.importance.PedAnovaImportanceEvaluator()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return dict(
                optuna.importance.get_param_importances(study, evaluator=evaluator, params=names)
            )
    except Exception:  # noqa: BLE001 - a figure of merit, never a reason to lose the report
        return {}
