"""`iotune tune`: baseline -> search -> re-measure the leaders -> default vs tuned -> report.

A study lives in Optuna storage (SQLite in the output directory by default), so it survives
Ctrl-C and crashes: running `iotune tune` again with the same study and storage continues where
it stopped. Several workers (e.g. SLURM jobs) share one study through a journal file on a
shared file system (journal:PATH) or a PostgreSQL URL; all but one can skip the final phases
(--search-only).
"""

from __future__ import annotations

import json
import random
import shlex
import socket
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from iotune import controlfile, objective, storage, trial
from iotune.search import get_strategy, loop, noise, warmstart
from iotune.search.capping import Capping
from iotune.space import Space, config_key, layer_of

SIGNIFICANCE = 0.05


class StudyError(RuntimeError):
    """A study that cannot be opened or continued; str() says why."""


@dataclass
class TuneConfig:
    app: list[str]  # the application command, without the launcher
    out: Path
    space: Space
    strategy: str = "default"
    trials: int | None = None  # None: the strategy's budget
    objective: str = "auto"
    launcher: str = "mpiexec"
    nprocs: int | None = 2
    timeout: float = 600.0
    cap: float | None = None  # capping factor; None: the strategy's default; 0: off
    confirm: int | None = None  # re-measure new leaders to this count; None: strategy default
    leaders: int = 3
    repeat: int = 3  # re-measurements of each leader
    verify_pairs: int = 5
    warmup: int = 0  # discarded runs before each measured run of the final phases
    partial: bool = True
    study_name: str | None = None
    storage: str | None = None
    workdir: Path | None = None
    sync: bool = False
    drop_caches: bool = False
    seed: int | None = None
    search: bool = True
    finish: bool = True
    keep_scratch: bool = False
    preload: bool = True
    extra_env: dict[str, str] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.study_name or self.out.name

    @property
    def budget(self) -> int:
        return self.trials if self.trials is not None else get_strategy(self.strategy).budget


# ----------------------------------------------------------------------------- storage


def storage_url(cfg: TuneConfig) -> str:
    return cfg.storage or f"sqlite:///{(cfg.out / 'study.db').resolve()}"


def open_storage(url: str) -> Any:
    """An Optuna storage for url (see iotune.storage); StudyError, password masked, if not."""
    try:
        return storage.open_storage(url)
    except storage.StorageError as e:
        raise StudyError(str(e)) from None


def _meta(cfg: TuneConfig) -> dict[str, Any]:
    return {
        "app": cfg.app,
        "launcher": cfg.launcher,
        "nprocs": cfg.nprocs,
        "space": cfg.space.name,
        "space_source": cfg.space.source,
        "space_params": cfg.space.names(),
        "strategy": cfg.strategy,
        "objective": cfg.objective,
        "budget": cfg.budget,
        "sync": cfg.sync,
    }


def open_study(cfg: TuneConfig, adopt: bool = False) -> tuple[Any, bool]:
    """(study, created). A new study gets its metadata and the warm-start trials; an existing
    one must have been made with the same space, strategy and objective, unless adopt is True:
    then cfg takes them (and the application command) from the study."""
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    strategy = get_strategy(cfg.strategy)
    store = open_storage(storage_url(cfg))
    sampler = strategy.sampler(cfg.seed, len(cfg.space.guesses))
    direction = objective.direction(cfg.objective)
    try:
        study = optuna.create_study(
            study_name=cfg.name, storage=store, sampler=sampler, direction=direction
        )
        created = True
    except optuna.exceptions.DuplicatedStudyError:
        study = optuna.load_study(study_name=cfg.name, storage=store, sampler=sampler)
        created = False
    if created:
        for k, v in _meta(cfg).items():
            study.set_user_attr(k, v)
        warmstart.enqueue(study, cfg.space, strategy.warm_start)
    else:
        old = study.user_attrs
        if adopt:
            cfg.strategy = old.get("strategy", cfg.strategy)
            cfg.objective = old.get("objective", cfg.objective)
            cfg.app = list(old.get("app", cfg.app))
            cfg.launcher = old.get("launcher", cfg.launcher)
            cfg.nprocs = old.get("nprocs", cfg.nprocs)
            if old.get("space_params") != cfg.space.names() and old.get("space_source"):
                from iotune import space as space_mod

                cfg.space = space_mod.load(old["space_source"].removeprefix("preset "))
        for k in ("space", "space_params", "strategy", "objective"):
            if k in old and old[k] != _meta(cfg)[k]:
                raise StudyError(
                    f"study {cfg.name!r} was made with {k}={old[k]!r}, not {_meta(cfg)[k]!r}: "
                    "continue it with the same options or choose another --study name"
                )
    return study, created


SETUP_GRACE_S = 5.0  # a worker sets a new trial's "worker" attribute within milliseconds


def recover_stale(study: Any) -> int:
    """Marks as failed the RUNNING trials of workers on this host that no longer exist (a
    killed or crashed `iotune tune`); returns how many. Other hosts' trials are left alone.
    A trial with no worker yet was either being set up just now (by any worker) or its worker
    was killed between creating it and claiming it: it is stale once older than the grace."""
    import datetime
    import time

    from optuna.trial import TrialState

    host = socket.gethostname()
    n = 0
    for t in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
        worker = t.user_attrs.get("worker")
        if worker is None and t.datetime_start is not None:
            now = datetime.datetime.now(t.datetime_start.tzinfo)  # naive local or aware
            age = (now - t.datetime_start).total_seconds()
            time.sleep(min(max(SETUP_GRACE_S - age, 0.0), SETUP_GRACE_S))
            t = study._storage.get_trial(t._trial_id)
            worker = t.user_attrs.get("worker")
            if worker is None and t.state == TrialState.RUNNING:
                _mark_interrupted(study, t)
                n += 1
            continue
        whost, _, pid = (worker or "").rpartition(":")
        if whost != host or not pid.isdigit() or trial._pid_alive(int(pid)):
            continue
        _mark_interrupted(study, t)
        n += 1
    return n


def _mark_interrupted(study: Any, t: Any) -> None:
    from optuna.trial import TrialState

    study._storage.set_trial_user_attr(t._trial_id, "status", "interrupted")
    study._storage.set_trial_state_values(t._trial_id, TrialState.FAIL)


# ----------------------------------------------------------------------------- running


def trial_options(cfg: TuneConfig) -> trial.TrialOptions:
    workdir = cfg.workdir or (cfg.out / "scratch")
    return trial.TrialOptions(
        command=trial.launch_command(cfg.launcher, cfg.nprocs, cfg.app),
        workdir=Path(workdir),
        objective=cfg.objective,
        timeout=cfg.timeout,
        sync=cfg.sync,
        drop_caches=cfg.drop_caches,
        extra_env=dict(cfg.extra_env),
        keep=cfg.keep_scratch,
        preload=cfg.preload,
    )


def capping_for(cfg: TuneConfig) -> Capping | None:
    factor = cfg.cap
    if factor is None:
        factor = 2.0 if get_strategy(cfg.strategy).capping else 0.0
    return Capping(factor) if factor > 0 else None


def search(
    cfg: TuneConfig,
    study: Any,
    evaluate: loop.Evaluate,
    on_trial: Callable[[loop.Progress], None] | None = None,
) -> None:
    s = get_strategy(cfg.strategy)
    loop.run(
        study,
        cfg.space,
        evaluate,
        cfg.budget,
        capping_for(cfg),
        on_trial,
        confirm=s.confirm if cfg.confirm is None else cfg.confirm,
        combine=s.warm_start,
        prune=s.prune,
    )


def _measure(evaluate: loop.Evaluate, settings: dict[str, str], warmup: int) -> trial.Outcome:
    for _ in range(warmup):
        evaluate(settings, None)
    return evaluate(settings, None)


def remeasure_leaders(
    cfg: TuneConfig, study: Any, evaluate: loop.Evaluate, rng: random.Random
) -> dict[str, Any]:
    """Runs the leading configurations again, interleaved; returns {key: [values]} of the
    re-measurements and the choice (the best median of the re-measurements)."""
    maximize = study.direction.name == "MAXIMIZE"
    stats = noise.group(loop.measured(study))
    if not stats:
        return {"leaders": [], "values": {}, "best": None}
    leaders = noise.ranked(stats, maximize)[: max(1, cfg.leaders)]
    by_key = {s.key: s.settings for s in leaders}
    values: dict[str, list[float]] = {k: [] for k in by_key}
    walls: dict[str, list[float]] = {k: [] for k in by_key}
    if cfg.repeat > 0 and len(leaders) > 1:
        for key in noise.interleaved(list(by_key), cfg.repeat, rng):
            o = _measure(evaluate, by_key[key], cfg.warmup)
            if o.ok:
                values[key].append(o.value)
                walls[key].append(o.wall_s)
    fresh = {k: noise.ConfigStats(k, by_key[k], v, walls[k]) for k, v in values.items() if v}
    best = noise.ranked(fresh, maximize)[0] if fresh else leaders[0]
    return {
        "leaders": list(by_key),
        "settings": by_key,
        "values": values,
        "best": best.key,
        "best_settings": best.settings,
    }


def variants_for(best: dict[str, str]) -> dict[str, dict[str, str]]:
    """default, tuned, and (partial tuning) each layer's tuned settings alone."""
    out = {"default": {}, "tuned": dict(best)}
    layers: dict[str, dict[str, str]] = {}
    for name, value in best.items():
        layers.setdefault(layer_of(name), {})[name] = value
    if len(layers) > 1:
        for layer, settings in layers.items():
            out[f"{layer} only"] = settings
    return out


def verify(
    cfg: TuneConfig,
    best: dict[str, str],
    evaluate: loop.Evaluate,
    maximize: bool,
    rng: random.Random,
) -> dict[str, Any]:
    """Default vs tuned (and each layer's part) measured interleaved in cfg.verify_pairs rounds;
    the speedup with its spread and an exact paired test."""
    variants = variants_for(best) if cfg.partial else {"default": {}, "tuned": dict(best)}
    if not best:
        variants = {"default": {}}
    rounds: list[dict[str, float | None]] = []
    for _ in range(cfg.verify_pairs):
        row: dict[str, float | None] = {}
        for name in noise.interleaved(list(variants), 1, rng):
            o = _measure(evaluate, variants[name], cfg.warmup)
            row[name] = o.value if o.ok else None
        rounds.append(row)
    result: dict[str, Any] = {
        "variants": variants,
        "rounds": rounds,
        "summary": {
            n: noise.summary([r[n] for r in rounds if r.get(n) is not None]) for n in variants
        },
    }
    pairs = [
        (r["default"], r.get("tuned"))
        for r in rounds
        if r.get("default") is not None and r.get("tuned") is not None
    ]
    result.update(_verdict(best, pairs, maximize, cfg.verify_pairs))
    return result


def _verdict(
    best: dict[str, str], pairs: list[tuple[float, float]], maximize: bool, wanted: int
) -> dict[str, Any]:
    if not best:
        return {
            "improved": False,
            "speedup": 1.0,
            "p_value": None,
            "pairs": 0,
            "verdict": "no better setting found: the stack's defaults were the best measured",
        }
    if len(pairs) < max(2, wanted // 2 + 1):
        return {
            "improved": False,
            "speedup": None,
            "p_value": None,
            "pairs": len(pairs),
            "verdict": "no better setting found: too few successful verification runs",
        }
    ratios = [(t / d) if maximize else (d / t) for d, t in pairs]
    base = noise.summary([d for d, _ in pairs])["median"]
    tuned = noise.summary([t for _, t in pairs])["median"]
    speedup = (tuned / base) if maximize else (base / tuned)
    p = noise.paired_test([d for d, _ in pairs], [t for _, t in pairs], maximize)
    improved = speedup > 1.0 and p < SIGNIFICANCE
    if improved:
        text = (
            f"tuned settings are {speedup:.2f}x faster than the defaults "
            f"(pairs {min(ratios):.2f}x..{max(ratios):.2f}x, p = {p:.3f}, {len(pairs)} pairs)"
        )
    else:
        text = (
            f"no better setting found: tuned vs default {speedup:.2f}x is not significant "
            f"(p = {p:.3f}, {len(pairs)} pairs); keep the defaults"
        )
        if 0.5 ** len(pairs) >= SIGNIFICANCE:
            text += f" ({len(pairs)} pairs can never give p < {SIGNIFICANCE}: use 5 or more)"
    return {
        "improved": improved,
        "speedup": speedup,
        "p_value": p,
        "pairs": len(pairs),
        "pair_ratios": ratios,
        "verdict": text,
    }


def finish(
    cfg: TuneConfig, study: Any, evaluate: loop.Evaluate, log: Callable[[str], None] = print
) -> dict[str, Any]:
    """Re-measures the leaders, verifies against the defaults, writes best.xml, trials.csv,
    summary.json and the report. Returns the summary."""
    from iotune import report

    maximize = study.direction.name == "MAXIMIZE"
    rng = random.Random(cfg.seed)
    log(f"re-measuring the {cfg.leaders} leading configurations {cfg.repeat} times, interleaved")
    leaders = remeasure_leaders(cfg, study, evaluate, rng)
    best = dict(leaders.get("best_settings") or {})
    log(f"default vs tuned ({config_key(best)}): {cfg.verify_pairs} interleaved rounds")
    final = verify(cfg, best, evaluate, maximize, rng)
    recommended = best if final["improved"] else {}
    cfg.out.mkdir(parents=True, exist_ok=True)
    controlfile.write(cfg.out / "best.xml", recommended)
    summary = {
        "study": cfg.name,
        "storage": storage.redact(storage_url(cfg)),
        "command": shlex.join(trial.launch_command(cfg.launcher, cfg.nprocs, cfg.app)),
        **_meta(cfg),
        "objective_unit": objective.unit(cfg.objective),
        "direction": study.direction.name.lower(),
        "trials": len(study.trials),
        "not_searched": dict(study.user_attrs.get(loop.INERT, {})),
        "leaders": leaders,
        "final": final,
        "best_settings": best,
        "recommended": recommended,
        "verdict": final["verdict"],
    }
    study.set_user_attr("final", json.loads(json.dumps(summary)))
    (cfg.out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    report.write_all(cfg.out, study, cfg.space, summary)
    return summary
