"""`iotune tune`: baseline -> search -> re-measure the leaders (race.py) -> default vs tuned
(sequential: pairs.py) -> the minimal set of settings that carries the gain (reduction.py) ->
report. `run` is the whole pipeline, `finish` its final phases; the CLI (tune_cli.py) only
parses options, shows progress and prints. What a study is asked to do: tune_config.py.

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
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from iotune import (
    controlfile,
    final_runs,
    hostnoise,
    identity,
    launchcheck,
    linkage,
    measured,
    mpifamily,
    objective,
    pairs,
    race,
    reduction,
    storage,
    study_kb,
    trial,
    verdict,
)
from iotune.search import get_strategy, local, loop, noise, switches, warmstart
from iotune.search.capping import Capping
from iotune.space import Space, config_key
from iotune.storage import HEARTBEAT_S
from iotune.tune_config import TuneConfig, trial_options

STDERR_LINES = 15  # of a failing application's stderr, shown when its baseline fails


class StudyError(RuntimeError):
    """A study that cannot be opened or continued; str() says why."""


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
    url = storage_url(cfg)
    if adopt and url.startswith("sqlite:///") and not Path(url.removeprefix("sqlite:///")).exists():
        return None, True  # nothing to adopt: no storage is made (connecting would make one)
    store = open_storage(url, cfg.heartbeat)
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
            was = old.get("objective", cfg.objective)
            if cfg.objective not in ("auto", was) and log is not None:  # asked for, not taken
                log(f"--objective {cfg.objective} ignored: --finish-only measures as the study's "
                    f"trials were measured (objective {was})")  # fmt: skip
            cfg.objective = was
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
STOP_BELOW_MIN_GAIN = True  # every strategy's verification stops once the gain's interval
# lies below --min-gain (only `local`'s before 2026-11-28: bench/README.md, "Fewer runs")


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
    log: Callable[[str], None] | None = None,
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
        log=log,
        baseline_wait_s=baseline_wait_s(cfg),
    )


def baseline_wait_s(cfg: TuneConfig) -> float:
    """How long a worker waits for the baseline another worker runs: a trial's --timeout,
    plus the heartbeats that tell a lost worker (its trial is then failed and run here), plus
    a minute for the worker to record it."""
    return cfg.timeout + storage.GRACE_BEATS * (cfg.heartbeat or HEARTBEAT_S) + 60.0


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


def _verification_of(
    settings: dict[str, str], final: dict[str, Any], reduced: dict[str, Any]
) -> dict[str, Any] | None:
    """The verification already made of exactly these settings against the defaults (the
    winner's, or the reduced set's own), or None."""
    for v in (final, reduced.get("verified")):
        if v and settings and dict((v.get("variants") or {}).get("tuned") or {}) == settings:
            return v
    return None


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
    before = final_runs.earlier(study)  # finishes stopped half-way (or ended) before this one
    counter, kept = final_runs.kept_in(study, evaluate)  # counted as the runs are made
    evaluate = counter
    raced = get_strategy(cfg.strategy).race
    if raced:
        log(f"racing the {cfg.n_leaders} leading configurations and the defaults, interleaved "
            f"(at most {max(cfg.repeat, 2)} rounds; a contender leaves once it cannot change "
            "rank)")  # fmt: skip
        leaders = race.race_leaders(cfg, study, evaluate, rng)
        if leaders.get("left"):
            log("left the race: " + ", ".join(f"{k} (round {r})"
                                               for k, r in leaders["left"].items()))  # fmt: skip
    else:
        log(f"re-measuring the {cfg.n_leaders} leading configurations {cfg.repeat} times, "
            "interleaved")  # fmt: skip
        leaders = race.remeasure_leaders(cfg, study, evaluate, rng)
    best = dict(leaders.get("best_settings") or {})
    failing = leaders.get("not_recommended") or {}
    for why in failing.values():  # left out of the choice: said, so that they cannot go unseen
        log(why)
    none_better = None
    led = leaders.get("failed_leaders", list(failing))  # those that would have led
    if led and not best:
        n = len(led)
        none_better = (f"the defaults were the best measured of the leading settings the "
                       f"application did not fail with (it failed with {n} of them: not "
                       f"recommended)")  # fmt: skip
    counter.phase = "verification"
    log(f"default vs tuned ({config_key(best)}): {pairs.deciding_test(cfg)}")
    too_small = cfg.min_gain if (raced or STOP_BELOW_MIN_GAIN) and cfg.min_gain > 0 else None
    # its failure keeps the defaults: a gain the noise hid at --verify-pairs gets more pairs
    final = pairs.verify(cfg, best, evaluate, maximize, rng, "the full winner", too_small,
                         max_pairs=pairs.extended_pairs(cfg),
                         extend_from=cfg.verify_pairs)  # fmt: skip
    if none_better:
        final["verdict"] = f"no better setting found: {none_better}"
    off = {k: why for k, why in final.get("not_in_effect", {}).items() if k in best}
    # beside the winner's own io=romio321 Open MPI's OMPIO parameters are never read: the
    # reduction need not measure their removal one by one (PnetCDF: 2-3 such in every winner)
    unread = mpifamily.unread_in(best)
    off.update({k: why for k, why in unread.items() if k not in off})
    effective = {k: v for k, v in best.items() if k not in off}
    reduced: dict[str, Any] = {"settings": effective, "contributions": {}, "removed": {}}
    if final["improved"] and cfg.partial and not raced and len(effective) > 1:
        log(f"finding which of the {len(effective)} settings carry the gain")
        counter.phase = "reduction"
        rows = noise.measured(study)
        reduced = reduction.minimal(cfg, effective, evaluate, maximize, rng, log, rows)
        reduced = reduction.checked_reduction(cfg, effective, reduced, evaluate, maximize, rng,
                                              log, failing)  # fmt: skip
    if final["improved"] and cfg.partial and not raced and reduction.ADDITIONS:
        counter.phase = "addition"
        reduced = reduction.with_additions(cfg, study, effective, reduced, set(off), evaluate,
                                           maximize, rng, log, failing)  # fmt: skip
    proposed = reduced["settings"] if final["improved"] else {}
    best_check = _verification_of(proposed, final, reduced)
    held = {k: v for k, v in best.items() if k not in unread}  # what the winner's runs read
    if best_check is None and proposed and proposed == held:
        # what best.xml leaves out was never read where the winner ran: its pairs are best.xml's
        best_check = {**final, "variants": {"default": {}, "tuned": dict(proposed)},
                      "runs_held": dict(best)}  # fmt: skip
    if proposed and best_check is None:  # e.g. settings not in effect left out: best.xml differs
        log(f"default vs best.xml ({config_key(proposed)}): {pairs.deciding_test(cfg)}")
        counter.phase = "verification"
        best_check = pairs.verify(
            cfg, proposed, evaluate, maximize, rng, "best.xml's settings",
            max_pairs=pairs.extended_pairs(cfg), extend_from=cfg.verify_pairs,
        )  # fmt: skip
    head = verdict.headline(proposed, best_check or final, maximize, best, final, none_better)
    if (best_check or {}).get("runs_held"):  # and what they held beside best.xml was unread
        head["runs_held"] = best_check["runs_held"]
    if cfg.remember:  # its entry in the knowledge base: the run for its signature, counted
        study_kb.motif_signature(cfg, log)
    study_kb.keep_runs(study, cfg)
    runs = {"search": search_runs(study)}
    if profiled := study_kb.profile_runs(study):  # --warm-start kb's, the entry's
        runs[study_kb.PROFILE] = profiled
    runs.update(counter.runs)
    failed = dict(counter.failed)
    if before["runs"]:  # paid for too: a finish stopped half-way, or one this one redoes
        runs[EARLIER] = before["runs"]
    if before["failed"]:
        failed[EARLIER] = before["failed"]
    runs["total"] = sum(runs.values())
    stopped = study.user_attrs.get(local.STOPPED) or f"its budget of {cfg.budget} trials"
    log(
        f"application runs: {runs['total']} ("
        + ", ".join(f"{k} {v}" for k, v in runs.items() if k != "total")
        + f"); the search ended: {stopped}"
    )
    if before["runs"]:
        log(f"{EARLIER}: {_earlier_text(before)}")
    if failed:  # left out of every comparison: said, so that they cannot go unseen
        log("runs of the final phases that failed (the application's exit status, a crash or "
            "a time-out): " + ", ".join(f"{k} {v}" for k, v in failed.items()))  # fmt: skip
    recommended = head["settings"]
    if recommended and len(recommended) == 1 and not reduced["contributions"]:
        (name,) = recommended  # removing the only setting leaves the defaults
        reduced["contributions"] = {
            name: {"cost": head["speedup"], "needed": True, "pairs": head["pairs"]}
        }
    on = loop.switched(study)
    cfg.out.mkdir(parents=True, exist_ok=True)
    summary = {
        "study": cfg.name,
        "storage": storage.redact(storage_url(cfg)),
        "command": shlex.join(trial_options(cfg).command),
        "ran_in": str(trial_options(cfg).workdir if cfg.isolate else cfg.cwd),
        "isolated": cfg.isolate,
        **_meta(cfg),
        "objective_unit": objective.unit(cfg.objective),
        "direction": study.direction.name.lower(),
        "trials": loop.used(study),  # run: not those queued, nor those a signal stopped
        "runs": runs,  # every application run of the study, by phase (issue 25)
        "runs_failed": failed,  # of the final phases' runs, by phase
        "earlier_finishes": before,  # their runs are in runs (EARLIER)
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
    # the control files last: a finish stopped before here leaves no best.xml beside an older
    # summary and report (the switches the settings need to reach the application go with them)
    controlfile.write(cfg.out / "best.xml", switches.apply(recommended, on))
    candidate = {k: v for k, v in head["candidate"].items() if k not in off}
    if not recommended and candidate:
        controlfile.write(cfg.out / "candidate.xml", switches.apply(candidate, on))
    elif (cfg.out / "candidate.xml").exists():
        (cfg.out / "candidate.xml").unlink()
    final_runs.ended(study, kept, counter)
    if cfg.remember:
        study_kb.remember(cfg, summary, log)
    return summary


EARLIER = "earlier finishes"  # summary.json's runs: the final phases' runs of earlier finishes


def _earlier_text(before: dict[str, Any]) -> str:
    """ "12 runs of the final phases of 1 earlier finish (1 stopped before its report)"."""
    n = before["finishes"]
    text = f"{before['runs']} runs of the final phases of {n} earlier finish{'es' if n > 1 else ''}"
    if before["stopped"]:
        text += f" ({before['stopped']} stopped before its report)"
    return text + ", counted in the total"


# ----------------------------------------------------------------------------- the study's record


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


def _tail_lines(text: str, n: int = STDERR_LINES) -> str:
    lines = [line for line in (text or "").splitlines() if line.strip()]
    return "\n".join("  " + line for line in lines[-n:]) or "  (nothing on stderr)"


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
        study_kb.warm_start(cfg, log)
    s, created = open_study(cfg, adopt=cfg.finish_only, log=log)
    if cfg.finish_only and created:
        raise StudyError(f"no study {cfg.name!r} in {storage.redact(storage_url(cfg))}")
    study_kb.keep_runs(s, cfg)  # --warm-start kb's run, made before the study was opened
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
        if loop.requeue_interrupted(s):
            log("the trials a signal stopped are run again (they did not count against the budget)")
        asked = launchcheck.ranks_asked(opts.command)

        def check_baseline(o: trial.Outcome) -> str | None:  # the runtime's MPI, the ranks
            return launchcheck.baseline_problem(opts.command, o.traits, asked)

        try:
            search(cfg, s, evaluate, on_trial, facts, check_baseline, log)
        except loop.WrongLaunch as e:
            raise StudyError(f"{e}; nothing was searched") from None
        except loop.BaselineWait as e:
            raise StudyError(str(e)) from None
        except loop.BaselineFailed as e:
            o = e.outcome
            status = f"exit status {o.returncode}" if o.returncode is not None else o.status
            if e.where:  # another worker ran it; this one waited for it
                status = f"{status} in {e.where}"
            said = f"its stderr ends with:\n{_tail_lines(o.message)}"
            if o.stdout.strip():
                said = f"its stdout ends with:\n{_tail_lines(o.stdout)}\n{said}"
            serial = launchcheck.serial_problem(opts.command, o.traits, asked)
            cause = f"; probably because {serial}" if serial else ""
            raise StudyError(
                f"the application failed with the stack's defaults ({status}){cause}, so there "
                f"is nothing to tune; {said}"
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
