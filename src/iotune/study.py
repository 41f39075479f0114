"""`iotune tune`: baseline -> search -> re-measure the leaders -> default vs tuned (sequential)
-> the minimal set of settings that carries the gain -> report. `run` is the whole pipeline;
the CLI (tune_cli.py) only parses options, shows progress and prints.

A study lives in Optuna storage (SQLite in the output directory by default), so it survives
Ctrl-C and crashes: running `iotune tune` again with the same study and storage continues where
it stopped. Several workers (e.g. SLURM jobs) share one study through a journal file on a
shared file system (journal:PATH) or a PostgreSQL URL; all but one can skip the final phases
(--search-only).
"""

from __future__ import annotations

import dataclasses
import json
import math
import random
import shlex
import socket
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from iotune import (
    controlfile,
    hostnoise,
    identity,
    launchcheck,
    linkage,
    measured,
    objective,
    storage,
    trial,
    verdict,
)
from iotune.search import (
    get_strategy,
    local,
    loop,
    marginal,
    noise,
    sequential,
    switches,
    warmstart,
)
from iotune.search.capping import Capping
from iotune.space import Space, config_key
from iotune.storage import HEARTBEAT_S

SIGNIFICANCE = sequential.ALPHA
RACE_REUSE = False  # start the race from the contenders' search measurements (bench: no gain)
RACE_ROUNDS = 3  # fresh rounds of the race at most (with RACE_REUSE)
RACE_EARLY_KEEP = True  # end the race once its choice would be the defaults (from round 2)
FUTILITY_PAIRS = 5  # pairs before the verification may stop for a gain below --min-gain
FUTILITY_LEVEL = 0.1  # one-sided level of the interval that stop reads
ADDITIONS = True  # after the reduction, measure the settings the search's trials favour
SCREEN = True  # the reduction first tests together the settings the search's trials do not favour
SCREEN_SECOND = True  # ... and the next clearest of them alone, in the same rounds (_screen)
SHOWN_MIN_GAIN = True  # a setting stays in (or is added to) the recommendation beside others only
# when its contribution is shown to reach --min-gain, not merely shown to be above 1.0 (_bar)
REDUCED_EXTRA = 0.5  # the reduced set's check against the defaults: up to this share of
# --verify-pairs more pairs, by a group-sequential design over all its looks (_reduced_pairs)
MOST_VERIFY_PAIRS = 50  # --verify-pairs above is refused: its design is simulated for every
# look up to 1.5x it (75 looks: 23 s, 0.55 GB on the 2-core VM; 150: 136 s, 1 GB; growing)
SHOWN = 5  # the clearest marginal effects kept in summary.json (minimal.additions.effects)
RACE_LEADERS = 2  # leaders raced (with the defaults and a simpler set) when --leaders is not given
STDERR_LINES = 15  # of a failing application's stderr, shown when its baseline fails


class StudyError(RuntimeError):
    """A study that cannot be opened or continued; str() says why."""


@dataclass
class TuneConfig:
    app: list[str]  # the application command, without the launcher
    out: Path
    space: Space
    strategy: str = "tpe"
    trials: int | None = None  # None: the strategy's budget
    objective: str = "auto"
    launcher: str = "mpiexec"
    nprocs: int | None = 2
    timeout: float = 600.0
    cap: float | None = None  # capping factor; None: the strategy's default; 0: off
    confirm: int | None = None  # re-measure new leaders to this count; None: strategy default
    leaders: int | None = None  # leaders re-measured or raced; None: the strategy's (3; raced 2)
    repeat: int = 3  # re-measurements of each leader
    verify_pairs: int = sequential.MAX_PAIRS  # the most default/tuned pairs (sequential)
    verify_min: int = sequential.MIN_PAIRS  # the fewest pairs before a verdict
    warmup: int = 0  # discarded runs before each measured run of the final phases
    partial: bool = True  # find the minimal set of settings that carries the gain
    min_gain: float = local.MIN_GAIN  # the smallest gain worth recommending (--min-gain)
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
    cwd: Path = field(default_factory=Path.cwd)  # the user's directory: trials run here
    lib: Path | None = None  # the runtime to preload (None: paths.find_library())
    isolate: bool = False  # each trial in a scratch directory of its own (command resolved)
    allow_other_command: bool = False  # continue a study or directory of another command
    restart: bool = False  # discard an existing study's trials and start it again (--restart)
    search_only: bool = False
    finish_only: bool = False
    kb: str | None = None  # knowledge base (path or URL); None: iotune.kb.resolve_url's default
    remember: bool = True  # file the finished study in the knowledge base (docs/kb.md)
    warm_start_kb: bool = False  # try the nearest stored motifs' settings first
    signature: Any = None  # the application's motif signature, once known (kb.signature)
    heartbeat: int = HEARTBEAT_S  # seconds between a running trial's heartbeats (0: none)
    hold_freed_memory: bool = False  # keep freed memory in the VM (iotune.freedmem)
    host_noise: dict[str, Any] | None = None  # the noise sources found (iotune.hostnoise)
    launch_checked: bool = False  # check_launch done (before the noise is said)

    @property
    def command(self) -> list[str]:
        return trial.launch_command(self.launcher, self.nprocs, self.app)

    @property
    def name(self) -> str:
        return self.study_name or identity.default_name(self.command)

    @property
    def n_leaders(self) -> int:
        if self.leaders is not None:
            return self.leaders
        return RACE_LEADERS if get_strategy(self.strategy).race else 3

    @property
    def budget(self) -> int:
        return self.trials if self.trials is not None else get_strategy(self.strategy).budget


# ----------------------------------------------------------------------------- storage


def storage_url(cfg: TuneConfig) -> str:
    return cfg.storage or f"sqlite:///{(cfg.out / 'study.db').resolve()}"


def open_storage(url: str, heartbeat_s: int | None = HEARTBEAT_S) -> Any:
    """An Optuna storage for url (see iotune.storage); StudyError, password masked, if not."""
    try:
        return storage.open_storage(url, heartbeat_s or None)
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
        "command_text": identity.command_text(cfg.command) if cfg.app else None,
    }


STUDY_UID = "study_uid"  # the study's identity: its knowledge-base entry is keyed by it


def open_study(
    cfg: TuneConfig, adopt: bool = False, log: Callable[[str], None] | None = None
) -> tuple[Any, bool]:
    """(study, created). A new study gets its metadata, the options its trials are measured
    with (iotune.measured) and the warm-start trials; an existing one must have been made with
    the same space, strategy and measurement options (else one StudyError naming each
    difference), unless adopt is True: then cfg takes them (and the application command) from
    the study. cfg.restart discards an existing study first (its uid is kept: it is the same
    study, started again)."""
    import optuna

    say = log or (lambda message: None)
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    strategy = get_strategy(cfg.strategy)
    store = open_storage(storage_url(cfg), cfg.heartbeat)
    sampler = strategy.sampler(cfg.seed, len(cfg.space.guesses))
    direction = objective.direction(cfg.objective)
    uid = None
    if cfg.restart and not adopt:
        uid, discarded = _discard(cfg.name, store)
        if discarded is not None:
            say(f"study {cfg.name!r} started again (--restart): its {discarded} trial(s) "
                "discarded")  # fmt: skip
    try:
        if adopt:  # only an existing study is adopted: never leave an empty one behind
            raise optuna.exceptions.DuplicatedStudyError
        study = optuna.create_study(
            study_name=cfg.name, storage=store, sampler=sampler, direction=direction
        )
        created = True
    except optuna.exceptions.DuplicatedStudyError:
        try:
            study = optuna.load_study(study_name=cfg.name, storage=store, sampler=sampler)
        except KeyError:
            return None, True
        created = False
    if created:
        _set_up(study, cfg, strategy.warm_start, uid)
    else:
        if not adopt and not _wait_set_up(study):
            _set_up(study, cfg, strategy.warm_start)  # its creator died before it was set up
        old = study.user_attrs
        if adopt:
            cfg.strategy = old.get("strategy", cfg.strategy)
            cfg.objective = old.get("objective", cfg.objective)
            cfg.app = list(old.get("app", cfg.app))
            cfg.launcher = old.get("launcher", cfg.launcher)
            cfg.nprocs = old.get("nprocs", cfg.nprocs)
            measured.adopt(cfg, old.get(measured.ATTR))
            if old.get("space_params") != cfg.space.names() and old.get("space_source"):
                from iotune import space as space_mod

                cfg.space = space_mod.load(old["space_source"].removeprefix("preset "))
        try:
            identity.check_same(
                f"study {cfg.name!r}",
                old.get("command_text"),
                identity.command_text(cfg.command),
                cfg.allow_other_command or adopt,
            )
        except identity.OtherCommand as e:
            raise StudyError(str(e)) from None
        try:
            measured.check(study, cfg, _meta(cfg), say)
        except measured.Mismatch as e:
            raise StudyError(str(e)) from None
    return study, created


def _discard(name: str, store: Any) -> tuple[str | None, int | None]:
    """Deletes the study `name` if it exists: (its uid, how many trials it had), else
    (None, None)."""
    import optuna

    try:
        old = optuna.load_study(study_name=name, storage=store)
    except KeyError:
        return None, None
    n = sum(t.state.name != "WAITING" for t in old.get_trials(deepcopy=False))
    uid = old.user_attrs.get(STUDY_UID)
    optuna.delete_study(study_name=name, storage=store)
    return uid, n


# A worker sets a new trial's "worker" attribute within milliseconds, or seconds on a loaded
# host (6 workers on 2 cores took more than 5 s): a worker-less trial younger than this is
# someone's being set up. Should it be failed all the same, its worker asks for another
# (search/loop.py): nothing is lost.
SETUP_GRACE_S = 30.0


def _set_up(study: Any, cfg: TuneConfig, guesses: bool, uid: str | None = None) -> None:
    """A new study's metadata (with the options its trials are measured with, and its uid) and
    its queued baseline (and guesses)."""
    import uuid

    attrs = {
        **_meta(cfg),
        measured.ATTR: measured.record(measured.options(cfg)),
        STUDY_UID: uid or uuid.uuid4().hex,
    }
    for k, v in attrs.items():
        if k not in study.user_attrs:
            study.set_user_attr(k, v)
    warmstart.enqueue(study, cfg.space, guesses)


def _wait_set_up(study: Any) -> bool:
    """Waits (up to SETUP_GRACE_S) until the worker that has just created the study has queued
    its baseline, so that no other worker starts searching a study without metadata and
    defaults. False when that never happens (its creator died in between)."""
    import time

    until = time.monotonic() + SETUP_GRACE_S
    while True:
        if any(t.user_attrs.get("origin") == warmstart.BASELINE for t in study.get_trials()):
            return True
        if time.monotonic() >= until:
            return False
        time.sleep(0.2)


def recover_stale(study: Any) -> int:
    """Marks as failed the RUNNING trials whose worker no longer exists; returns how many.
    On any host: those whose heartbeat stopped (iotune.storage). On this host, at once: those
    whose worker process is gone (a killed or crashed `iotune tune`). A trial with no worker
    yet was either being set up just now (by any worker) or its worker was killed between
    creating it and claiming it: it is stale once older than the grace."""
    import datetime
    import time

    from optuna.trial import TrialState

    host = socket.gethostname()
    n = storage.fail_lost(study)
    for t in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
        worker = t.user_attrs.get("worker")
        if worker is None and t.datetime_start is not None:
            now = datetime.datetime.now(t.datetime_start.tzinfo)  # naive local or aware
            age = (now - t.datetime_start).total_seconds()
            until = time.monotonic() + min(max(SETUP_GRACE_S - age, 0.0), SETUP_GRACE_S)
            while True:  # until it is claimed, finished, or the grace is over
                t = storage.fresh(study, t)
                worker = t.user_attrs.get("worker")
                if worker is not None or t.state != TrialState.RUNNING:
                    break
                if time.monotonic() >= until:
                    break
                time.sleep(min(0.5, max(until - time.monotonic(), 0.0)))
            if worker is None and t.state == TrialState.RUNNING:
                n += _mark_interrupted(study, t)
            continue
        whost, _, pid = (worker or "").rpartition(":")
        if whost != host or not pid.isdigit() or trial._pid_alive(int(pid)):
            continue
        n += _mark_interrupted(study, t)
    return n


def _mark_interrupted(study: Any, t: Any) -> bool:
    return storage.fail(study, t, "interrupted")


# ----------------------------------------------------------------------------- running


def trial_options(cfg: TuneConfig) -> trial.TrialOptions:
    workdir = cfg.workdir or (cfg.out / "scratch")
    command = cfg.command
    if cfg.isolate:
        command = trial.resolve_command(command, cfg.cwd)
    return trial.TrialOptions(
        command=command,
        workdir=Path(workdir).resolve(),
        cwd=cfg.cwd,
        isolate=cfg.isolate,
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
    facts: dict[str, Any] | None = None,
    check_baseline: Callable[[trial.Outcome], str | None] | None = None,
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
        leave_out_inert=s.leave_out_inert,
        facts=facts,
        check_baseline=check_baseline,
        neighbours=s.neighbours,
        min_gain=cfg.min_gain if s.stop_early and cfg.min_gain > 0 else None,
        patience=local.PATIENCE,
    )


class RunCounter:
    """An evaluate that counts the application's runs of the final phases, per phase (the
    phase in force when it is called; warm-ups apart: _measure says which runs are)."""

    def __init__(self, evaluate: loop.Evaluate):
        self.evaluate = evaluate
        self.phase = "re-measure"
        self.warming = False
        self.runs: dict[str, int] = {}

    def __call__(self, settings: dict[str, str], cap: float | None) -> trial.Outcome:
        phase = "warm-up" if self.warming else self.phase
        self.runs[phase] = self.runs.get(phase, 0) + 1
        return self.evaluate(settings, cap)


def search_runs(study: Any) -> int:
    """The application runs the search made: every trial that ran (succeeded, failed, capped
    or was lost), not the queued ones nor those refused before running (forbidden)."""
    from optuna.trial import TrialState

    return sum(
        1
        for t in study.get_trials(deepcopy=False)
        if t.state not in (TrialState.WAITING, TrialState.RUNNING)
        and t.user_attrs.get("status") != "forbidden"
    )


def _measure(evaluate: loop.Evaluate, settings: dict[str, str], warmup: int) -> trial.Outcome:
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


def _leaders(cfg: TuneConfig, study: Any) -> tuple[bool, dict[str, Any], list[Any]]:
    """What the final phases start from: the direction, the search's measurements grouped by
    configuration, and its cfg.n_leaders best medians (none when nothing was measured)."""
    maximize = study.direction.name == "MAXIMIZE"
    stats = noise.group(noise.measured(study))
    leaders = loop.leaders(study, max(1, cfg.n_leaders), maximize) if stats else []
    return maximize, stats, leaders


def race_leaders(
    cfg: TuneConfig, study: Any, evaluate: loop.Evaluate, rng: random.Random
) -> dict[str, Any]:
    """Races the leading configurations against each other and the defaults: interleaved
    rounds, each running every contender still in the race once; from the second round on, a
    contender leaves the race once it can no longer change rank with the race's leader (every
    run of it slower than every run of the leader by cfg.min_gain or more); at most
    max(cfg.repeat, 2) rounds. With RACE_REUSE (off: no gain in the replay) each contender
    starts with its search runs (the defaults' baseline, the leaders' trials), may leave after
    the first round, and the race runs at most RACE_ROUNDS rounds. The contenders: the
    cfg.n_leaders best medians of the search (loop.leaders), the best measured configuration
    made of some of the first leader's settings (fewer settings for the same gain), and the
    defaults. The choice: _race_choice, on the fresh runs only (the search's runs of the
    leaders were chosen for being fast). From the second round on, the race ends as soon as
    its choice would be the defaults (RACE_EARLY_KEEP: in the replay a third round changed
    that choice too rarely to show in the verdicts, and it cost a flat landscape 3 runs).
    Returns remeasure_leaders' fields and "rounds" run,
    "left" (who left the race, after which round), "reused" (search runs counted)."""
    maximize, stats, leaders = _leaders(cfg, study)
    if not stats:
        return {"leaders": [], "values": {}, "best": None}
    by_key = {s.key: s.settings for s in leaders}
    top = set(leaders[0].settings.items())
    fewer = [s for s in stats.values()
             if s.key not in by_key and s.settings and set(s.settings.items()) < top]  # fmt: skip
    if fewer:
        simplest = noise.ranked({s.key: s for s in fewer}, maximize)[0]
        by_key[simplest.key] = simplest.settings
    by_key.setdefault(config_key({}), {})
    values: dict[str, list[float]] = {k: [] for k in by_key}
    prior: dict[str, list[float]] = {
        k: list(stats[k].values) if RACE_REUSE and k in stats else [] for k in by_key
    }
    alive = list(by_key)
    left: dict[str, int] = {}
    rounds = 0
    most = RACE_ROUNDS if RACE_REUSE else max(cfg.repeat, 2)
    first_cut = 1 if RACE_REUSE else 2
    while len(alive) > 1 and rounds < most:
        rounds += 1
        for key in noise.interleaved(alive, 1, rng):
            o = _measure(evaluate, by_key[key], cfg.warmup)
            if o.ok:
                values[key].append(o.value)
        if rounds < first_cut:
            continue
        every = {k: prior[k] + values[k] for k in by_key}
        measured_ = {k: every[k] for k in alive if values[k]}
        if not measured_:
            continue
        lead = noise.ranked(
            {k: noise.ConfigStats(k, by_key[k], v) for k, v in measured_.items()}, maximize
        )[0].key
        worst_lead = min(every[lead]) if maximize else max(every[lead])
        for k in list(alive):
            if k == lead:
                continue
            best_k = (max(every[k]) if maximize else min(every[k])) if every[k] else None
            if best_k is None or local.gain(worst_lead, best_k, maximize) >= cfg.min_gain:
                alive.remove(k)
                left[k] = rounds
        none = config_key({})
        if RACE_EARLY_KEEP and none in alive and values[none]:
            now = {k: noise.ConfigStats(k, by_key[k], values[k]) for k in alive if values[k]}
            if _race_choice(now, alive, cfg.min_gain, maximize) == none:
                break  # the defaults would be kept: a third round rarely changes that
    fresh = {k: noise.ConfigStats(k, by_key[k], v) for k, v in values.items() if v}
    best_key = leaders[0].key if not fresh else _race_choice(fresh, alive, cfg.min_gain, maximize)
    return {
        "leaders": [k for k in by_key if k != config_key({})],
        "settings": by_key,
        "values": values,
        "best": best_key,
        "best_settings": dict(by_key[best_key]),
        "rounds": rounds,
        "left": left,
        "reused": {k: len(v) for k, v in prior.items() if v},
        "raced": True,
    }


def _race_choice(
    fresh: dict[str, noise.ConfigStats], alive: list[str], min_gain: float, maximize: bool
) -> str:
    """The race's choice, from its fresh runs: the defaults when every other contender left
    the race behind them or none beats their median by min_gain; else, among the others still
    in the race, the fewest settings within min_gain of the best median. That candidate goes
    to the verification, which alone decides against the defaults: a few noisy rounds that
    leave the defaults in the race do not (the demo kept its defaults against a 1.6x gain,
    at a CV of 36 %, when they did)."""
    none = config_key({})
    tried = {k: s for k, s in fresh.items() if k != none}
    if not tried or alive == [none]:
        return none
    pool = {k: s for k, s in tried.items() if k in alive} or tried
    first = noise.ranked(pool, maximize)[0]
    if none in alive and none in fresh:
        if local.gain(first.median, fresh[none].median, maximize) < min_gain:
            return none
    near = [s for s in pool.values()
            if s is first or local.gain(first.median, s.median, maximize) < min_gain]  # fmt: skip
    return min(near, key=lambda s: (len(s.settings), s.median * (-1 if maximize else 1))).key


def remeasure_leaders(
    cfg: TuneConfig, study: Any, evaluate: loop.Evaluate, rng: random.Random
) -> dict[str, Any]:
    """Runs the leading configurations again, interleaved; returns {key: [values]} of the
    re-measurements and the choice (the best median of the re-measurements)."""
    maximize, stats, leaders = _leaders(cfg, study)
    if not stats:
        return {"leaders": [], "values": {}, "best": None}
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


class Pairs:
    """Interleaved rounds of several variants against one reference, each tested sequentially
    (search/sequential.py): a variant stops being measured once its test is decided."""

    def __init__(
        self,
        cfg: TuneConfig,
        evaluate: loop.Evaluate,
        rng: random.Random,
        too_small: float | None = None,
        max_pairs: int | None = None,
        margin: float = 0.0,
        extend_from: int | None = None,
    ):
        """too_small: also stop a variant's test, as "no gain worth recommending", once the
        upper end of its Hodges-Lehmann interval at the one-sided FUTILITY_LEVEL is below a
        gain of too_small (0.05: 5 %), from FUTILITY_PAIRS pairs on. A stop for futility never
        adds a false win (it ends only tests that did not reject), so its level is free.
        max_pairs: the most pairs (default --verify-pairs); the design's per-look level is
        computed for every look up to it, so more looks keep the false-win bound.
        margin (e.g. --min-gain, 0.05): the test asks whether the better side is better by
        more than that share, not merely better: the same signed-rank test on the pairs with
        the side to be shown better handicapped by 1 + margin (equivalently: the lower end of
        the Hodges-Lehmann interval at the design's level is above 1 + margin). A difference
        of exactly 1 + margin is then called significant at most at the design's level. The
        verdict's speedup and wins stay those of the pairs as measured.
        extend_from (e.g. --verify-pairs, with a larger max_pairs): a test goes past this many
        pairs only while its pairs' speedup is at least 1 + --min-gain (a gain the noise has
        not yet let it show); one that does not lead stops as the test up to extend_from
        would have (_may_go_on). It rejects at the level of the design up to max_pairs, and
        stopping some paths early only shrinks that design's rejection region: its
        false-win bound still holds."""
        self.cfg, self.evaluate, self.rng = cfg, evaluate, rng
        top = cfg.verify_pairs if max_pairs is None else max(max_pairs, cfg.verify_pairs)
        self.design = sequential.design(min(cfg.verify_min, cfg.verify_pairs), top)
        self.too_small = too_small
        self.margin = margin
        self.extend_from = extend_from
        self.not_in_effect: dict[str, str] = {}
        self.runs = 0

    def run(
        self,
        reference: dict[str, str],
        variants: dict[str, dict[str, str]],
        maximize: bool,
        variants_better: bool = False,
    ) -> dict[str, dict[str, Any]]:
        """Is `reference` better than each variant (with variants_better: is each variant
        better than `reference`)? {variant: {"a", "b", "verdict"}}: a = the variant's values,
        b = the reference's, verdict = sequential.Verdict of the question asked."""
        res: dict[str, dict[str, Any]] = {n: {"a": [], "b": [], "verdict": None} for n in variants}
        open_ = set(variants)
        attempts = 0
        while open_ and attempts < 2 * self.design.max_pairs:
            attempts += 1
            names = ["(reference)", *sorted(open_)]
            got: dict[str, float | None] = {}
            for name in noise.interleaved(names, 1, self.rng):
                settings = reference if name == "(reference)" else variants[name]
                o = _measure(self.evaluate, settings, self.cfg.warmup)
                self.runs += 1 + self.cfg.warmup
                got[name] = o.value if o.ok else None
                if o.ok and name == "(reference)":
                    self.not_in_effect.update(o.traits.get("not_in_effect", {}))
            if got["(reference)"] is None:
                continue
            for name in list(open_):
                if got.get(name) is None:
                    continue
                r = res[name]
                r["a"].append(got[name])
                r["b"].append(got["(reference)"])
                a, b = (r["b"], r["a"]) if variants_better else (r["a"], r["b"])
                v, r["plain_significant"] = self._verdict(a, b, maximize)
                if not v.decided and self._below(a, b, maximize):
                    v = dataclasses.replace(v, decided=True, futile=True)
                    r["below_min_gain"] = True
                elif not v.decided and not self._may_go_on(v, a, b, maximize):
                    v = dataclasses.replace(v, decided=True, futile=v.pairs < self.extend_from)
                    r["not_leading"] = True
                r["verdict"] = v
                if v.decided:
                    open_.discard(name)
        return res

    def _verdict(
        self, a: list[float], b: list[float], maximize: bool
    ) -> tuple[sequential.Verdict, bool]:
        """sequential.verdict of "b is better than a", by more than self.margin if one is set;
        and whether b is significantly better at all (without the margin)."""
        v = sequential.verdict(a, b, self.design, maximize)
        if self.margin <= 0:
            return v, v.significant
        k = 1.0 + self.margin  # b handicapped: slower (times) or lower (rates) by k
        shown = sequential.verdict(a, [y / k if maximize else y * k for y in b], self.design,
                                   maximize)  # fmt: skip
        shown = dataclasses.replace(
            shown, improved=shown.significant and v.speedup > 1.0, speedup=v.speedup, wins=v.wins
        )
        return shown, v.significant

    def _may_go_on(
        self, v: sequential.Verdict, a: list[float], b: list[float], maximize: bool
    ) -> bool:
        """Whether an undecided test takes another pair (extend_from): always while its pairs
        show --min-gain (the ratio of the medians); otherwise as the test up to extend_from
        pairs would: not from extend_from on, nor once that test could no longer become
        significant (its futility). So no test ends sooner than it did without the extension."""
        if self.extend_from is None or v.speedup >= 1.0 + max(self.cfg.min_gain, 0.0):
            return True
        if v.pairs >= self.extend_from:
            return False
        short = sequential.design(self.design.min_pairs, self.extend_from)
        return not sequential.verdict(a, b, short, maximize).futile

    def _below(self, a: list[float], b: list[float], maximize: bool) -> bool:
        """The interval of b's gain over a lies below too_small (from FUTILITY_PAIRS on)."""
        if self.too_small is None or len(a) < FUTILITY_PAIRS:
            return False
        d = verdict.log_ratios(a, b, maximize)
        high = verdict.hodges_lehmann(d, FUTILITY_LEVEL)[2]
        return high is not None and high < math.log1p(self.too_small)


def pair_ratio(default: float, tuned: float, maximize: bool) -> float | None:
    """How many times better tuned was than default in one pair; None when a side measured 0
    (a run that did no I/O in the measured phase: once a ZeroDivisionError at the end of tune)."""
    num, den = (tuned, default) if maximize else (default, tuned)
    return num / den if den > 0 and num > 0 else None


def _verdict_text(
    v: sequential.Verdict | None,
    ratios: list[float],
    design: Any,
    what: str = "tuned settings",
    below: float | None = None,
    not_leading: float | None = None,
) -> str:
    """The sequential test's outcome for one verification (summary.json's final.verdict and the
    console's log); the study's headline is verdict.headline's, measured on best.xml."""
    if v is None or v.pairs == 0:
        return "no better setting found: too few successful verification runs"
    if v.improved:
        spread = f"pairs {min(ratios):.2f}x..{max(ratios):.2f}x; " if ratios else ""
        return (
            f"{what}: {v.speedup:.2f}x faster than the defaults by the ratio of medians "
            f"({spread}faster in {v.wins} of "
            f"{v.pairs} pairs, significant by a sequential signed-rank test at {design.alpha:g})"
        )
    why = "stopped: it cannot become significant" if v.futile else "not significant"
    if below is not None:
        why = f"stopped: its interval lies below a gain of {below:.0%} (--min-gain)"
    if not_leading is not None:
        why = ("stopped: it cannot become significant within --verify-pairs" if v.futile
               else "not significant at --verify-pairs")  # fmt: skip
        why += f"; more pairs only while tuned leads by {not_leading:.0%} (--min-gain)"
    return (
        f"no better setting found: {what} vs default {v.speedup:.2f}x, faster in {v.wins} "
        f"of {v.pairs} pairs ({why}); keep the defaults"
    )


def verify(
    cfg: TuneConfig,
    best: dict[str, str],
    evaluate: loop.Evaluate,
    maximize: bool,
    rng: random.Random,
    what: str = "tuned settings",
    too_small: float | None = None,
    max_pairs: int | None = None,
    extend_from: int | None = None,
) -> dict[str, Any]:
    """Default vs tuned measured in interleaved pairs until a sequential signed-rank test decides
    (at least cfg.verify_min pairs, at most cfg.verify_pairs or max_pairs); `what` names them in
    its text. too_small (e.g. --min-gain): it also stops once the gain's interval lies below it;
    extend_from: past that many pairs it goes on only while the gain measures --min-gain (Pairs)."""
    pairs = Pairs(cfg, evaluate, rng, too_small, max_pairs, extend_from=extend_from)
    design = pairs.design
    if not best:
        return {
            "improved": False,
            "speedup": 1.0,
            "pairs": 0,
            "verdict": "no better setting found: the stack's defaults were the best measured",
            "rounds": [],
            "variants": {"default": {}},
            "summary": {},
            "not_in_effect": {},
        }
    res = pairs.run(best, {"default": {}}, maximize)["default"]
    v = res["verdict"]
    below = bool(res.get("below_min_gain"))
    not_leading = max(cfg.min_gain, 0.0) if res.get("not_leading") else None
    base, tuned = res["a"], res["b"]
    # the pairs' ratios (a pair with a side that measured 0 has none)
    ratios = [r for d, t in zip(base, tuned, strict=True) if (r := pair_ratio(d, t, maximize))]
    return {
        "improved": bool(v and v.improved),
        "speedup": v.speedup if v else None,
        "p_nominal": v.p_nominal if v else None,
        "pairs": len(base),
        "wins": v.wins if v else 0,
        "futile": bool(v and v.futile),
        "pair_ratios": ratios,
        "design": {
            "min": design.min_pairs,
            "max": design.max_pairs,
            "level": design.level,
            **({"extend_from": extend_from} if extend_from else {}),
        },  # fmt: skip
        "below_min_gain": below,
        "verdict": _verdict_text(
            v, ratios, design, f"{what} ({len(best)})", too_small if below else None, not_leading
        ),
        "variants": {"default": {}, "tuned": dict(best)},
        "rounds": [{"default": d, "tuned": t} for d, t in zip(base, tuned, strict=True)],
        "summary": {"default": noise.summary(base), "tuned": noise.summary(tuned)},
        "not_in_effect": dict(pairs.not_in_effect),
        "runs": pairs.runs,
    }


def minimal(
    cfg: TuneConfig,
    best: dict[str, str],
    evaluate: loop.Evaluate,
    maximize: bool,
    rng: random.Random,
    log: Callable[[str], None] = print,
    rows: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """The fewest of best's settings that keep its gain: each setting is removed in turn
    (interleaved pairs, the same sequential test); those whose removal is shown to cost at
    least --min-gain stay (_bar; --min-gain 0: any measurable cost). Settings that only help
    together with one another (two ways to the same gain) are not all dropped at once: the
    reduced set is tested against the full one first (by the same bar). While one setting is
    left it is never tested: the reduced set's own check against the defaults follows.

    rows (the search's trials, noise.measured): first the screen (_screen): the settings the
    trials do not favour are removed together when the winner is not shown better than the
    rest by the same bar, one test instead of one per setting."""
    bar = _bar(cfg)
    pairs = Pairs(cfg, evaluate, rng, margin=bar)
    current = dict(best)
    removed: dict[str, str] = {}
    contributions: dict[str, dict[str, Any]] = {}
    screened = _screen(pairs, current, rows, maximize, cfg.min_gain, bar, log)
    if screened is not None:
        current, removed = screened["settings"], screened["removed"]
    while len(units := _units(current, cfg.space)) > 1:
        without = {n: {k: v for k, v in current.items() if k not in units[n]} for n in units}
        res = pairs.run(current, without, maximize)
        contributions = {n: _contribution(r, maximize, bar) for n, r in res.items()}
        useless = [n for n, c in contributions.items() if not c["needed"]]
        log(
            "settings' contributions: "
            + ", ".join(f"{n} {c['cost']:.2f}x" for n, c in contributions.items())
        )
        if not useless:
            break
        keep = max(useless, key=lambda n: contributions[n]["cost"])
        drop = [n for n in useless if n != keep or len(useless) < len(units)]
        gone = {k for n in drop for k in units[n]}
        reduced = {k: v for k, v in current.items() if k not in gone}
        check = pairs.run(current, {"reduced": reduced}, maximize)["reduced"]["verdict"]
        if check is not None and check.significant:
            drop = [min(useless, key=lambda n: contributions[n]["cost"])]
            gone = set(units[drop[0]])
            reduced = {k: v for k, v in current.items() if k not in gone}
        for n in drop:
            removed.update({k: _removal_note(contributions[n], bar) for k in units[n]})
        current = reduced
    lead = {k: n for n, ks in _units(current, cfg.space).items() for k in ks}
    out = {
        "settings": current,
        "contributions": {k: contributions[lead[k]] for k in current if lead[k] in contributions},
        "removed": removed,
        "runs": pairs.runs,
    }
    if screened is not None:
        out["screen"] = screened["record"]
    return out


def _units(settings: dict[str, str], space: Space) -> dict[str, list[str]]:
    """The settings the reduction removes one at a time, each with those tied to it (a
    parameter the space ties to another takes its value: sc13-lustre's cb_buffer_size follows
    striping_unit, so removing one alone makes a configuration the space cannot hold)."""
    to = {t.name: t.to for t in space.ties}
    units: dict[str, list[str]] = {}
    for k in settings:
        lead = to[k] if k in to and to[k] in settings else k
        units.setdefault(lead, []).append(k)
    return units


def _screen(
    pairs: Pairs,
    winner: dict[str, str],
    rows: list[dict[str, Any]] | None,
    maximize: bool,
    min_gain: float,
    bar: float,
    log: Callable[[str], None],
) -> dict[str, Any] | None:
    """The reduction's first step when the search's trials single out the setting that carries
    the gain (marginal.carrying: the clearest marginal effect over every trial): the winner
    against that setting alone, in interleaved pairs with the reduction's test. Unless the
    winner is shown better by the bar, the others are removed together: one test instead of
    one per setting (a winner of 8 settings: 2 or 3 runs a pair instead of 9). If it is, the
    winner is returned unchanged and the reduction tests each setting alone as before.

    A test of the others together can miss a second gain that a setting costing time among
    them cancels (1.12x beside a 6 % loss), and it gives each of them one chance where the
    one-at-a-time rounds gave two (a setting's own test, then the reduced set's against the
    current one): so the other setting the trials favour most (marginal.runner_up) is also
    tested alone in the same rounds (the winner without it), and stays when its removal is
    shown to cost the bar. When the winner is shown better than the kept setting but that
    second one was shown to gain, the two together are tested against the winner once more
    (two gains, found in two tests) before the one-at-a-time rounds. None when no setting
    stands out, or all do, or when the setting kept is not measured at all (it failed every
    run, or the space forbids it alone)."""
    if not SCREEN or not rows or len(winner) < 2:
        return None
    space = pairs.cfg.space
    core = marginal.carrying(rows, winner, maximize, min_gain)
    core = _with_ties(core, winner, space)
    if not core or len(core) == len(winner):
        return None
    if space.forbidden({**space.default_config(), **core}):
        return None
    rest = sorted(set(winner) - set(core))
    second = marginal.runner_up(rows, winner, core, maximize, min_gain) if SCREEN_SECOND else None
    variants = {"core": core}
    if second is not None and len(rest) > 1:
        alone = _with_ties({second[0]: second[1]}, winner, space)
        variants["second"] = {k: v for k, v in winner.items() if k not in alone}
    log(f"the search's trials favour {config_key(core)}; the other {len(rest)} settings "
        "tested together: the winner vs those alone, interleaved pairs"
        + (f" (and {second[0]}={second[1]} alone)" if "second" in variants else ""))  # fmt: skip
    res = pairs.run(winner, variants, maximize)
    c = _contribution(res["core"], maximize, bar)
    if c["pairs"] == 0:  # the kept setting never ran: nothing measured, nothing removed
        return None
    record = {"kept": sorted(core), "tested": rest, "cost": c["cost"], "pairs": c["pairs"],
              "removed": not c["needed"]}  # fmt: skip
    keep = dict(core)
    if "second" in variants:
        s2 = _contribution(res["second"], maximize, bar)
        record["second"] = {"setting": f"{second[0]}={second[1]}", "cost": s2["cost"],
                            "pairs": s2["pairs"], "kept": s2["needed"]}  # fmt: skip
        if s2["needed"]:
            keep.update({k: v for k, v in winner.items() if k not in variants["second"]})
    log(f"the winner vs {config_key(core)}: {c['cost']:.2f}x in {c['pairs']} pairs ("
        + ("the others removed" if record["removed"] else "shown")
        + (f"; {record['second']['setting']} needed, its removal {record['second']['cost']:.2f}x"
           if record.get("second", {}).get("kept") else "")
        + ")")  # fmt: skip
    if c["needed"] and len(keep) > len(core) and len(keep) < len(winner):
        # the winner gains over the kept setting, and the second one was shown to gain: are
        # the two all it needs? (one more test of two sets before the one-at-a-time rounds)
        c = _contribution(pairs.run(winner, {"core": keep}, maximize)["core"], maximize, bar)
        if c["pairs"] == 0:  # the two never ran together: nothing measured, nothing removed
            c = {**c, "needed": True}
        record["then"] = {"kept": sorted(keep), "cost": c["cost"], "pairs": c["pairs"],
                          "removed": not c["needed"]}  # fmt: skip
        record["removed"] = not c["needed"]
        log(f"the winner vs {config_key(keep)}: {c['cost']:.2f}x in {c['pairs']} pairs ("
            + ("the others removed" if record["removed"] else "shown")
            + ")")  # fmt: skip
    if c["needed"]:
        log("each setting tested alone")
        return {"settings": dict(winner), "removed": {}, "record": record}
    note = _removal_note(c, bar).replace("removing it", "removing it with the others")
    gone = [n for n in rest if n not in keep]
    return {"settings": keep, "removed": {n: note for n in gone}, "record": record}


def _with_ties(settings: dict[str, str], winner: dict[str, str], space: Space) -> dict[str, str]:
    """settings with the winner's settings tied to them, or to which they are tied (a tied
    pair is one setting: sc13-lustre's cb_buffer_size follows striping_unit)."""
    out = dict(settings)
    for t in space.ties:
        if (t.name in out or t.to in out) and t.name in winner and t.to in winner:
            out.update({t.name: winner[t.name], t.to: winner[t.to]})
    return out


def _checked_reduction(
    cfg: TuneConfig,
    effective: dict[str, str],
    reduced: dict[str, Any],
    evaluate: loop.Evaluate,
    maximize: bool,
    rng: random.Random,
    log: Callable[[str], None] = print,
) -> dict[str, Any]:
    """The reduced settings when they beat the defaults on their own, else the whole verified
    winner. Each removal was judged by a test that cannot tell "costs nothing" from "costs too
    little to show in a few noisy pairs", so several dropped settings can together carry the
    gain, and what is left may be slower than the defaults (seen with VORPAL-IO under MPICH:
    bench/README.md, Open MPI and MPICH).

    The check may take more pairs than the winner's verification (_reduced_pairs): its failure
    does not keep the defaults but recommends settings whose removal measured nothing, so an
    undecided check (one noisy pair among wins: 8 of 9 pairs faster, p 0.064 at 10 pairs at
    most, in a demo) is given more pairs rather than decided for the larger set. Its design's
    level covers every look up to that cap: the false-win bound stays 0.05."""
    if reduced["settings"] == effective:
        return reduced
    log(f"the reduced settings ({config_key(reduced['settings'])}) vs the defaults: interleaved "
        f"pairs until the test decides ({min(cfg.verify_min, cfg.verify_pairs)} to "
        f"{_reduced_pairs(cfg)})")  # fmt: skip
    check = verify(cfg, reduced["settings"], evaluate, maximize, rng, "the reduced settings",
                   max_pairs=_reduced_pairs(cfg))  # fmt: skip
    summary = {k: check.get(k) for k in ("improved", "speedup", "pairs", "wins", "verdict",
                                         "p_nominal", "pair_ratios")}  # fmt: skip
    runs = reduced.get("runs", 0) + check.get("runs", 0)
    if check["improved"]:  # the whole verification: the headline is measured on it (verdict.py)
        return {**reduced, "runs": runs, "verified": check}
    log(
        f"the reduced settings ({config_key(reduced['settings'])}) did not beat the defaults on "
        f"their own ({check['verdict']}): the whole verified winner is kept"
    )
    return {
        "settings": dict(effective),
        "contributions": {},
        "removed": {},
        "runs": runs,
        "rejected": {"settings": reduced["settings"], "removed": reduced["removed"], **summary},
        **({"screen": reduced["screen"]} if reduced.get("screen") else {}),
    }


def _deciding_test(cfg: TuneConfig) -> str:
    """How a test whose failure keeps the defaults runs (the console's line)."""
    return (f"interleaved pairs until a sequential test decides "
            f"({min(cfg.verify_min, cfg.verify_pairs)} to {cfg.verify_pairs}, up to "
            f"{_reduced_pairs(cfg)} while tuned leads by --min-gain)")  # fmt: skip


def _reduced_pairs_of(verify_pairs: int) -> int:
    return verify_pairs + int(verify_pairs * REDUCED_EXTRA)


def _reduced_pairs(cfg: TuneConfig) -> int:
    """The most pairs of the reduced set's check: --verify-pairs and REDUCED_EXTRA of it more
    (15 at the demo's 10, 30 at the default 20). The fewest pairs that can show a gain stay
    the winner's (6 and 7: at Pocock's level for 5..15 and 5..30 six and seven pairs all won
    still reject), so a clear gain costs no pair more."""
    return _reduced_pairs_of(cfg.verify_pairs)


def additions(
    cfg: TuneConfig,
    study: Any,
    settings: dict[str, str],
    tried: set[tuple[str, str]],
    evaluate: loop.Evaluate,
    maximize: bool,
    rng: random.Random,
    log: Callable[[str], None] = print,
    leave_out: set[str] | frozenset[str] = frozenset(),
) -> dict[str, Any]:
    """Settings the recommendation lacks that the search's own trials favour (search/marginal.py:
    a clear favourable marginal effect among the trials holding every recommended setting; at
    most marginal.MAX_ADD, one per parameter, clearest first), measured side by side in
    interleaved pairs against the recommendation (each candidate: the recommendation with it
    vs without it, the same sequential test as the reduction's, also stopped once its gain's
    interval lies below --min-gain) and kept only when that shows a gain. The winner a search
    finds depends on what it sampled; this makes a setting with a gain of its own reach
    best.xml whether or not that search's winner held it. tried: (name, value) pairs already
    measured (the reduction's removals: measured once, not twice); leave_out: parameters not
    to add (not in effect). Returns {"settings", "added" {name: contribution}, "tested"
    [candidates with their search effect and measured contribution], "runs"}."""
    space = cfg.space
    names = set(space.names()) - set(leave_out)
    rows = noise.measured(study)
    within = marginal.stratum_for(rows, settings)
    found = marginal.favourable(rows, settings, maximize, cfg.min_gain, names, tried, within)
    seen = [e.as_dict() for e in marginal.effects(rows, settings, maximize, names, within)]
    base = {**space.default_config(), **settings}
    chosen: dict[str, tuple[marginal.Effect, dict[str, str]]] = {}
    for e in found:
        if any(c.name == e.name for c, _ in chosen.values()):
            continue  # one value per parameter: the clearest
        more = {**settings, e.name: e.value}
        more.update({t.name: e.value for t in space.ties if t.to == e.name})
        if space.forbidden({**base, **more}):
            continue
        chosen[f"{e.name}={e.value}"] = (e, more)
        if len(chosen) >= marginal.MAX_ADD:
            break
    out: dict[str, Any] = {"settings": dict(settings), "added": {}, "tested": [], "runs": 0,
                           "effects": seen[:SHOWN], "within": within}  # fmt: skip
    if not chosen:
        return out
    log(
        "settings the search's trials favour, measured against the recommendation: "
        + ", ".join(
            f"{k} ({e.ratio:.2f}x in {e.n_with} vs {e.n_without} trials, p={e.p:.3f})"
            for k, (e, _) in chosen.items()
        )  # fmt: skip
    )
    bar = _bar(cfg)
    pairs = Pairs(cfg, evaluate, rng, cfg.min_gain if cfg.min_gain > 0 else None, margin=bar)
    res = pairs.run(settings, {k: m for k, (_, m) in chosen.items()}, maximize, True)
    for k, (e, more) in chosen.items():
        c = _contribution(res[k], maximize, bar)
        if c["needed"] and c["cost"] < 1.0 + cfg.min_gain:
            # significant but smaller than --min-gain: not worth a setting more in best.xml
            # (the bar the candidate passed in the search, whose effect selection inflates)
            c = {**c, "needed": False, "below_min_gain": True}
        out["tested"].append({**e.as_dict(), "measured": c})
        if c["needed"]:
            out["settings"].update({n: v for n, v in more.items() if n not in settings})
            out["added"][e.name] = c
    log(
        "with vs without each: "
        + ", ".join(
            f"{t['setting']} {t['measured']['cost']:.2f}x ("
            + (
                "kept"
                if t["measured"]["needed"]
                else f"below --min-gain {cfg.min_gain:.0%}: left out"
                if t["measured"].get("below_min_gain")
                else "no gain shown: left out"
            )
            + ")"
            for t in out["tested"]
        )
    )
    out["runs"] = pairs.runs
    return out


def _with_additions(
    cfg: TuneConfig,
    study: Any,
    effective: dict[str, str],
    reduced: dict[str, Any],
    off: set[str],
    evaluate: loop.Evaluate,
    maximize: bool,
    rng: random.Random,
    log: Callable[[str], None] = print,
) -> dict[str, Any]:
    """The reduced recommendation with the settings `additions` measured as gaining, when the
    set so made beats the defaults on its own (its own verification, for the headline); else
    the reduced recommendation as it was. Records what was tried under "additions"."""
    kept = reduced["settings"]
    tried = {(k, v) for k, v in effective.items() if k not in kept}
    more = additions(cfg, study, kept, tried, evaluate, maximize, rng, log, off)
    record = {k: more[k] for k in ("tested", "runs", "effects", "within")}
    record["added"] = sorted(more["added"])
    if not more["added"]:
        return {**reduced, "additions": record}
    if reduced.get("rejected") and len(more["settings"]) > 1:
        # the reduction kept the whole winner (what it left did not beat the defaults), e.g. a
        # winner without the setting that carries the gain: with it added, reduce again
        log(f"reducing the winner with the additions ({len(more['settings'])} settings) again")
        again = minimal(cfg, more["settings"], evaluate, maximize, rng, log,
                        noise.measured(study))  # fmt: skip
        again = _checked_reduction(cfg, more["settings"], again, evaluate, maximize, rng, log)
        record["runs"] += again.get("runs", 0)
        if again.get("verified"):  # the reduced set beat the defaults on its own
            return {**again, "additions": record}
    check = verify(cfg, more["settings"], evaluate, maximize, rng, "best.xml's settings")
    record["runs"] += check.get("runs", 0)
    if not check["improved"]:
        log(f"the settings with the additions ({config_key(more['settings'])}) did not beat the "
            f"defaults on their own ({check['verdict']}): the additions are left out")  # fmt: skip
        record["rejected"] = {"settings": more["settings"], "verdict": check["verdict"]}
        record["added"] = []
        return {**reduced, "additions": record}
    return {
        **reduced,
        "settings": dict(more["settings"]),
        "contributions": {**reduced.get("contributions", {}), **more["added"]},
        "verified": check,
        "additions": record,
    }


def _verification_of(
    settings: dict[str, str], final: dict[str, Any], reduced: dict[str, Any]
) -> dict[str, Any] | None:
    """The verification already made of exactly these settings against the defaults (the
    winner's, or the reduced set's own), or None."""
    for v in (final, reduced.get("verified")):
        if v and settings and dict((v.get("variants") or {}).get("tuned") or {}) == settings:
            return v
    return None


def _bar(cfg: TuneConfig) -> float:
    """The share by which a setting's contribution must be shown to exceed 1.0 for it to stay
    in the recommendation beside others (the reduction) or to join it (the additions): the
    smallest gain worth recommending, --min-gain. Tested, not estimated: the same sequential
    signed-rank test with the full set handicapped by 1 + --min-gain (Pairs' margin), so that a
    setting whose true contribution is at or below --min-gain is kept at about the test's level
    at most (5 %; 6 % simulated on the demos' recorded pair noise) in every study alike, instead
    of in the share of studies whose few noisy pairs happened to show it above 1.0 (a real
    1.11x: 38 % of them at 10 pairs, 59 % at 20; bench/README.md, "A second setting")."""
    return cfg.min_gain if SHOWN_MIN_GAIN and cfg.min_gain > 0 else 0.0


def _contribution(r: dict[str, Any], maximize: bool, bar: float = 0.0) -> dict[str, Any]:
    v = r["verdict"]
    needed = bool(v and v.significant and v.speedup > 1.0)
    out = {
        "cost": v.speedup if v else 1.0,  # the setting's set vs the set without it
        "needed": needed,
        "pairs": len(r["a"]),
        "wins": v.wins if v else 0,
    }
    if bar > 0:
        out["shown_above"] = 1.0 + bar  # what "needed" was tested against
        if not needed and r.get("plain_significant") and out["cost"] > 1.0:
            out["below_min_gain"] = True  # shown above 1.0, not above 1 + --min-gain
    return out


def _removal_note(c: dict[str, Any], bar: float) -> str:
    """Why a setting was removed. With a bar its test may end (unable to reach 1 + bar) before
    the pairs could have shown any cost: "not shown to reach", not "not measurable"."""
    if c.get("below_min_gain"):
        return (f"removing it cost {c['cost']:.2f}x (measurable, but not shown to reach "
                f"--min-gain {bar:.0%})")  # fmt: skip
    if bar > 0:
        return f"removing it cost {c['cost']:.2f}x (not shown to reach --min-gain {bar:.0%})"
    return f"removing it cost {c['cost']:.2f}x (not measurable)"


def finish(
    cfg: TuneConfig, study: Any, evaluate: loop.Evaluate, log: Callable[[str], None] = print
) -> dict[str, Any]:
    """Re-measures the leaders, verifies against the defaults, reduces the winner to the
    settings that carry its gain, writes best.xml (or candidate.xml when nothing was better),
    trials.csv, summary.json and the report. Returns the summary."""
    from optuna.trial import TrialState

    from iotune import report

    if not study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,)):
        failed = [t for t in study.get_trials(deepcopy=False) if t.state == TrialState.FAIL]
        last = failed[-1].user_attrs.get("message", "") if failed else ""
        raise StudyError(
            f"every trial failed ({len(failed)}): there is nothing to compare; the last "
            f"failure said:\n{_tail_lines(last)}"
        )
    maximize = study.direction.name == "MAXIMIZE"
    rng = random.Random(cfg.seed)
    evaluate = counter = RunCounter(evaluate)
    raced = get_strategy(cfg.strategy).race
    if raced:
        log(f"racing the {cfg.n_leaders} leading configurations and the defaults, interleaved "
            f"(at most {max(cfg.repeat, 2)} rounds; a contender leaves once it cannot change "
            "rank)")  # fmt: skip
        leaders = race_leaders(cfg, study, evaluate, rng)
        if leaders.get("left"):
            log("left the race: " + ", ".join(f"{k} (round {r})"
                                               for k, r in leaders["left"].items()))  # fmt: skip
    else:
        log(f"re-measuring the {cfg.n_leaders} leading configurations {cfg.repeat} times, "
            "interleaved")  # fmt: skip
        leaders = remeasure_leaders(cfg, study, evaluate, rng)
    best = dict(leaders.get("best_settings") or {})
    counter.phase = "verification"
    log(f"default vs tuned ({config_key(best)}): {_deciding_test(cfg)}")
    too_small = cfg.min_gain if raced and cfg.min_gain > 0 else None
    # its failure keeps the defaults: a gain the noise hid at --verify-pairs gets more pairs
    final = verify(cfg, best, evaluate, maximize, rng, "the full winner", too_small,
                   max_pairs=_reduced_pairs(cfg), extend_from=cfg.verify_pairs)  # fmt: skip
    off = {k: why for k, why in final.get("not_in_effect", {}).items() if k in best}
    effective = {k: v for k, v in best.items() if k not in off}
    reduced: dict[str, Any] = {"settings": effective, "contributions": {}, "removed": {}}
    if final["improved"] and cfg.partial and not raced and len(effective) > 1:
        log(f"finding which of the {len(effective)} settings carry the gain")
        counter.phase = "reduction"
        reduced = minimal(cfg, effective, evaluate, maximize, rng, log, noise.measured(study))
        reduced = _checked_reduction(cfg, effective, reduced, evaluate, maximize, rng, log)
    if final["improved"] and cfg.partial and not raced and ADDITIONS:
        counter.phase = "addition"
        reduced = _with_additions(cfg, study, effective, reduced, set(off), evaluate, maximize,
                                  rng, log)  # fmt: skip
    proposed = reduced["settings"] if final["improved"] else {}
    best_check = _verification_of(proposed, final, reduced)
    if proposed and best_check is None:  # e.g. settings not in effect left out: best.xml differs
        log(f"default vs best.xml ({config_key(proposed)}): {_deciding_test(cfg)}")
        counter.phase = "verification"
        best_check = verify(
            cfg, proposed, evaluate, maximize, rng, "best.xml's settings",
            max_pairs=_reduced_pairs(cfg), extend_from=cfg.verify_pairs,
        )  # fmt: skip
    head = verdict.headline(proposed, best_check or final, maximize, best, final)
    runs = {"search": search_runs(study), **counter.runs}
    runs["total"] = sum(runs.values())
    stopped = study.user_attrs.get(local.STOPPED) or f"its budget of {cfg.budget} trials"
    log(
        f"application runs: {runs['total']} ("
        + ", ".join(f"{k} {v}" for k, v in runs.items() if k != "total")
        + f"); the search ended: {stopped}"
    )
    recommended = head["settings"]
    if recommended and len(recommended) == 1 and not reduced["contributions"]:
        (name,) = recommended  # removing the only setting leaves the defaults
        reduced["contributions"] = {
            name: {"cost": head["speedup"], "needed": True, "pairs": head["pairs"]}
        }
    on = loop.switched(study)
    cfg.out.mkdir(parents=True, exist_ok=True)
    # the switches the settings need to reach the application go with them
    controlfile.write(cfg.out / "best.xml", switches.apply(recommended, on))
    candidate = {k: v for k, v in head["candidate"].items() if k not in off}
    if not recommended and candidate:
        controlfile.write(cfg.out / "candidate.xml", switches.apply(candidate, on))
    elif (cfg.out / "candidate.xml").exists():
        (cfg.out / "candidate.xml").unlink()
    summary = {
        "study": cfg.name,
        "storage": storage.redact(storage_url(cfg)),
        "command": shlex.join(trial_options(cfg).command),
        "ran_in": str(trial_options(cfg).workdir if cfg.isolate else cfg.cwd),
        "isolated": cfg.isolate,
        **_meta(cfg),
        "objective_unit": objective.unit(cfg.objective),
        "direction": study.direction.name.lower(),
        "trials": len(study.trials),
        "runs": runs,  # every application run of the study, by phase (issue 25)
        "stopped": stopped,
        "min_gain": cfg.min_gain,
        "not_searched": dict(study.user_attrs.get(loop.INERT, {})),
        "switched_on": on,
        "hdf5_library": hdf5_library(study),  # the release the study ran on, or None
        "values_not_searched": dict(study.user_attrs.get(loop.VALUES_OUT, {})),
        "not_in_effect": off,
        "leaders": leaders,
        "final": final,
        "best_settings": best,
        "minimal": reduced,
        "recommended": recommended,
        "headline": head,  # THE verdict, measured on best.xml itself (iotune.verdict)
        "verdict": head["text"],
        STUDY_UID: _uid(study),
        measured.ATTR: measured.summary(study.user_attrs.get(measured.ATTR), measured.final(cfg)),
        "host_noise": hostnoise.for_summary(
            study,
            objective.unit(cfg.objective),
            [r["default"] for r in (head.get("rounds") or final.get("rounds", []))],
        ),
    }
    study.set_user_attr("final", json.loads(json.dumps(summary)))
    (cfg.out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    report.write_all(cfg.out, study, cfg.space, summary)
    if cfg.remember:
        _remember(cfg, summary, log)
    return summary


# ----------------------------------------------------------------------------- knowledge base


def hdf5_library(study: Any) -> dict[str, Any] | None:
    """The HDF5 library the study's application ran with ({"version", "parallel"}, from the
    first trial whose profile says it: the baseline's), or None."""
    for t in study.get_trials(deepcopy=False):
        lib = (t.user_attrs.get("traits") or {}).get("hdf5_library")
        if isinstance(lib, dict):
            return dict(lib)
    return None


def _uid(study: Any) -> str:
    """The study's uid (a study made before uids were kept gets one now): its knowledge-base
    entry is keyed by it, so finishing the study again updates that entry."""
    import uuid

    uid = study.user_attrs.get(STUDY_UID)
    if not isinstance(uid, str) or not uid:
        uid = uuid.uuid4().hex
        study.set_user_attr(STUDY_UID, uid)
    return uid


def kb_url(cfg: TuneConfig) -> str:
    from iotune import kb

    return kb.resolve_url(cfg.kb, cfg.storage)


def motif_signature(cfg: TuneConfig, log: Callable[[str], None]) -> Any:
    """The application's motif signature: one run with capture and trace on (no settings),
    its profile kept as OUT/kb-profile.json; None (said) when it cannot be had."""
    import shutil
    import tempfile

    from iotune import paths
    from iotune.kb import capture

    if cfg.signature is not None or not cfg.preload or not cfg.app:
        return cfg.signature
    opts = trial_options(cfg)
    opts.workdir.mkdir(parents=True, exist_ok=True)
    cfg.out.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix="kb-", dir=opts.workdir)) if cfg.isolate else None
    try:
        cfg.signature = capture.profile_signature(
            opts.command,
            lib=cfg.lib or paths.find_library(),
            cwd=scratch or cfg.cwd,
            timeout=cfg.timeout,
            keep=cfg.out / "kb-profile.json",
            extra_env=dict(cfg.extra_env),
        )
    except (capture.CaptureFailed, paths.NotFound) as e:
        log(f"no motif signature: {e}")
    finally:
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)
    return cfg.signature


def _remember(cfg: TuneConfig, summary: dict[str, Any], log: Callable[[str], None]) -> None:
    from iotune.kb import seeds

    sig = motif_signature(cfg, log)
    if sig is None:
        log("not stored in the knowledge base: no motif signature")
        return
    seeds.remember(kb_url(cfg), summary, sig, str(cfg.out.resolve()), log)


def _warm_start_from_kb(cfg: TuneConfig, log: Callable[[str], None]) -> None:
    """Puts the nearest stored motifs' settings first among the space's guesses."""
    from iotune import kb
    from iotune.kb import seeds

    if not get_strategy(cfg.strategy).warm_start:
        log(f"--warm-start kb: strategy {cfg.strategy} starts cold (no guesses); not used")
        return
    sig = motif_signature(cfg, log)
    if sig is None:
        return
    try:
        base = kb.KnowledgeBase(kb_url(cfg))
        entries = base.entries()
        base.close()
    except kb.KBError as e:
        log(f"--warm-start kb: {e}; starting without it")
        return
    cfg.space, chosen = seeds.seeded_space(cfg.space, entries, sig)
    log(f"motif {sig.key} ({sig.words()}); from the knowledge base: "
        + ("; ".join(f"{g.name}: {g.settings}" for g in chosen) or "nothing near"))  # fmt: skip


def _tail_lines(text: str, n: int = STDERR_LINES) -> str:
    lines = [line for line in (text or "").splitlines() if line.strip()]
    return "\n".join("  " + line for line in lines[-n:]) or "  (nothing on stderr)"


def check_verify_pairs(max_pairs: int, min_pairs: int = sequential.MIN_PAIRS) -> str | None:
    """Why a --verify-pairs value can never give a verdict, or None when it can."""
    if max_pairs < 1:  # no pair at all: there is no test to run (design() needs one)
        return (
            f"--verify-pairs {max_pairs}: the final verification needs at least one pair and "
            f"can show a gain only from {_fewest_pairs()} pairs: use {sequential.MIN_PAIRS} or "
            f"more (default {sequential.MAX_PAIRS})"
        )
    if max_pairs > MOST_VERIFY_PAIRS:  # the design is simulated for every look up to 1.5x it
        return (
            f"--verify-pairs {max_pairs}: at most {MOST_VERIFY_PAIRS} (the sequential test's "
            f"bound is simulated for every look up to {_reduced_pairs_of(MOST_VERIFY_PAIRS)} "
            "pairs: beyond, minutes and gigabytes before the first trial; the default is "
            f"{sequential.MAX_PAIRS})"
        )
    d = sequential.design(min(min_pairs, max_pairs), max_pairs)
    if d.first_possible() is None:
        return (
            f"--verify-pairs {max_pairs} can never show a gain (the p of n pairs is at least "
            f"2^-n: it needs at least "
            f"{_fewest_pairs()} pairs at {sequential.ALPHA:g}): use {sequential.MIN_PAIRS} or "
            f"more (default {sequential.MAX_PAIRS})"
        )
    return None


def _fewest_pairs() -> int:
    return next(n for n in range(1, 64) if 0.5**n <= sequential.ALPHA)


# ----------------------------------------------------------------------------- the pipeline


@dataclass
class Run:
    """What a call of run() did (for the CLI to print)."""

    summary: dict[str, Any] | None
    created: bool
    stale: int


def check_launch(cfg: TuneConfig, log: Callable[[str], None] = print) -> None:
    """A launcher of the other MPI than the program's: StudyError before anything else is said
    or run (iotune.launchcheck). Once per run of tune."""
    if cfg.launch_checked or not cfg.app or cfg.finish_only:
        return
    checked = launchcheck.check(cfg.command, cfg.cwd)
    if checked.problem:
        raise StudyError(checked.problem)
    if checked.note:
        log(checked.note)
    cfg.launch_checked = True


def run(
    cfg: TuneConfig,
    log: Callable[[str], None] = print,
    on_trial: Callable[[loop.Progress], None] | None = None,
) -> Run:
    """The whole of `iotune tune`: open (or continue) the study, search, verify, report.
    Raises StudyError with a message for the user when it cannot go on."""
    from iotune import paths

    command = identity.command_text(cfg.command) if cfg.app else None
    check_launch(cfg, log)
    if command and not cfg.finish_only:
        try:
            identity.claim_directory(cfg.out, cfg.name, command, cfg.allow_other_command)
        except identity.OtherCommand as e:
            raise StudyError(str(e)) from None
    if cfg.warm_start_kb and not cfg.finish_only:
        _warm_start_from_kb(cfg, log)
    s, created = open_study(cfg, adopt=cfg.finish_only, log=log)
    if cfg.finish_only and created:
        raise StudyError(f"no study {cfg.name!r} in {storage.redact(storage_url(cfg))}")
    stale = recover_stale(s)
    hostnoise.remember_run(s, cfg.host_noise)
    opts = trial_options(cfg)
    trial.clean_stale(opts.workdir)
    log(
        f"study {cfg.name!r} ({'new' if created else 'continued'}), space {cfg.space.name} "
        f"({len(cfg.space.dims)} parameters), strategy {cfg.strategy}, {cfg.budget} trials, "
        f"objective {cfg.objective}"
    )
    if stale:
        log(f"{stale} trial(s) of a stopped or lost worker marked as failed")
    log(f"measured with: {measured.one_line(measured.options(cfg), measured.final(cfg))}")
    where = f"in scratch directories under {opts.workdir}" if cfg.isolate else f"in {cfg.cwd}"
    log(f"each trial runs {where}: {shlex.join(opts.command)}")
    if opts.preload:
        try:
            opts.lib = cfg.lib or paths.find_library()
        except paths.NotFound as e:
            raise StudyError(str(e)) from None
    facts: dict[str, Any] = {}
    program = identity.application(opts.command)[0]
    if linkage.static_hdf5(program):
        facts["static_hdf5"] = True
        log(
            f"{program} has HDF5 linked in statically: HDF5 settings cannot be injected (MPI-IO "
            "settings still can); build it against a shared libhdf5 to tune HDF5"
        )

    def evaluate(settings: dict[str, str], cap: float | None) -> trial.Outcome:
        # with the switches the study turned on after its baseline (search/switches.py)
        return trial.run_trial(switches.apply(settings, loop.switched(s)), opts, cap)

    if not cfg.finish_only:
        _retry_failed_baseline(s, cfg.space)
        asked = launchcheck.ranks_asked(opts.command)

        def check_baseline(o: trial.Outcome) -> str | None:  # the runtime's MPI, the ranks
            return launchcheck.baseline_problem(opts.command, o.traits, asked)

        try:
            search(cfg, s, evaluate, on_trial, facts, check_baseline)
        except loop.WrongLaunch as e:
            raise StudyError(f"{e}; nothing was searched") from None
        except loop.BaselineFailed as e:
            o = e.outcome
            status = f"exit status {o.returncode}" if o.returncode is not None else o.status
            said = f"its stderr ends with:\n{_tail_lines(o.message)}"
            if o.stdout.strip():
                said = f"its stdout ends with:\n{_tail_lines(o.stdout)}\n{said}"
            raise StudyError(
                f"the application failed with the stack's defaults ({status}), so there is "
                f"nothing to tune; {said}"
            ) from None
        for why in sorted(set(s.user_attrs.get(loop.INERT, {}).values())):
            names = ", ".join(sorted(k for k, v in s.user_attrs[loop.INERT].items() if v == why))
            log(f"not searched ({why}): {names}")
        for name, values in s.user_attrs.get(loop.VALUES_OUT, {}).items():
            for value, why in values.items():
                log(f"not tried: {name}={value} ({why})")
        for name, on in loop.switched(s).items():
            log(f"switched on: {name}={on['value']} in every trial with HDF5 settings and in "
                f"best.xml ({on['why']})")  # fmt: skip
    if cfg.search_only:
        log("search done (--search-only: no verification or report)")
        return Run(None, created, stale)
    return Run(finish(cfg, s, evaluate, log), created, stale)


def _retry_failed_baseline(study: Any, space: Space) -> None:
    """A study whose baseline failed (the run stopped there) runs it again when continued."""
    from optuna.trial import TrialState

    base = [
        t
        for t in study.get_trials(deepcopy=False)
        if t.user_attrs.get("origin") == warmstart.BASELINE
    ]
    if base and all(t.state == TrialState.FAIL for t in base):
        study.enqueue_trial(space.trial_params_for({}), user_attrs={"origin": warmstart.BASELINE})
