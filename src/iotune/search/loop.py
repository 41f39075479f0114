"""The search loop: ask the sampler, evaluate, tell. Shared by `iotune tune` (real trials) and
bench/replay/replay.py (trials looked up in a measured landscape), so both run the same search.

Every trial records in its user attributes: settings, key, status, wall_s, source, worker and,
when it did not succeed, a message. Statuses (see iotune.trial): ok -> COMPLETE; capped,
forbidden -> PRUNED (Optuna's word for a trial stopped early; capped ones carry a lower-bound
estimate as intermediate value, so the sampler learns they are bad); failed, crashed, timeout,
interrupted -> FAIL (never counted as fast); lost -> FAIL with no status (its worker died
without a word and another worker failed it when its heartbeat stopped: iotune.storage). The
baseline failing stops the loop at once (BaselineFailed): every later comparison would be
against nothing.
"""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from iotune import storage
from iotune.search import inert, local, noise, switches, warmstart
from iotune.search.capping import Capping
from iotune.space import Space, config_key
from iotune.trial import Outcome

WORKER = f"{socket.gethostname()}:{os.getpid()}"

Evaluate = Callable[[dict[str, str], "float | None"], Outcome]


class WrongLaunch(RuntimeError):
    """The baseline ran, but not as the launch meant (check_baseline's message, e.g. fewer
    ranks than asked for): it is recorded as failed, so that a rerun runs it again."""


class BaselineFailed(RuntimeError):
    """The stack's defaults did not run: the application fails by itself (its message is in
    .outcome); no search can mean anything. where: the worker that ran it, when another one
    did (this worker waited for it)."""

    def __init__(self, outcome: Outcome, where: str | None = None):
        super().__init__(outcome.message)
        self.outcome = outcome
        self.where = where


class BaselineWait(RuntimeError):
    """Another worker's baseline ran longer than this worker waits for it; str() says so."""


@dataclass
class Progress:
    number: int
    status: str
    value: float | None
    best: float | None
    done: int
    budget: int


CONFIRM = 3  # measurements that make a configuration "confirmed"


def incumbent(study: Any, maximize: bool) -> noise.ConfigStats | None:
    """The configuration the tuner would recommend now (None before the first success): the
    best median among the confirmed configurations (measured CONFIRM times or more), or, while
    none is confirmed, among those measured most often. One lucky run does not make a winner:
    on this machine a slow setting can have a fast run (shared/LAB-NOTES.md, noise)."""
    stats = noise.group(noise.measured(study))
    if not stats:
        return None
    level = min(CONFIRM, max(len(s.values) for s in stats.values()))
    pool = {k: s for k, s in stats.items() if len(s.values) >= level}
    return noise.ranked(pool, maximize)[0]


def leaders(study: Any, n: int, maximize: bool) -> list[noise.ConfigStats]:
    """The configurations to re-measure at the end: the n best medians, and the best confirmed
    configuration (measured CONFIRM times or more) when it is not among them. A confirmed
    configuration is not pushed out by single lucky runs of others (on this machine a slow
    setting can have a fast run); it leaves only when fresh runs side by side beat it
    (race.remeasure_leaders)."""
    ranked = noise.ranked(noise.group(noise.measured(study)), maximize)
    out = ranked[:n]
    confirmed = [s for s in ranked if len(s.values) >= CONFIRM]
    if confirmed and confirmed[0] not in out:
        out.append(confirmed[0])
    return out


def challenger(study: Any, maximize: bool, confirm: int = CONFIRM) -> noise.ConfigStats | None:
    """A configuration measured fewer than `confirm` times whose median beats every confirmed
    one (the best such), or None. The loop measures it again until it is confirmed or falls."""
    stats = noise.group(noise.measured(study))
    for s in noise.ranked(stats, maximize):
        return s if len(s.values) < confirm else None
    return None


def _queued_keys(study: Any) -> set[str]:
    from optuna.trial import TrialState

    return {
        t.user_attrs.get("key", "")
        for t in study.get_trials(deepcopy=False, states=(TrialState.WAITING,))
    }


def used(study: Any) -> int:
    """Trials that count against the budget: all but the queued (WAITING) ones and those a
    signal stopped (requeue_interrupted runs their settings again)."""
    from optuna.trial import TrialState

    return sum(
        1
        for t in study.get_trials(deepcopy=False)
        if t.state != TrialState.WAITING and not _interrupted(t)
    )


def _interrupted(t: Any) -> bool:
    """A trial this worker's signal stopped (not one failed as lost by another worker)."""
    from optuna.trial import TrialState

    return t.state == TrialState.FAIL and bool(t.user_attrs.get(SIGNALLED))


SIGNALLED = "stopped_by_signal"  # trial attribute: Ctrl-C or SIGTERM stopped its run
REQUEUED = "requeued"  # study attribute: the numbers of interrupted trials queued again


def requeue_interrupted(study: Any) -> int:
    """Queues again the settings of the trials a signal stopped (Ctrl-C, a job's end) when a
    study is continued: they never ran to the end, and a rule's guess among them would be
    lost for good. Each once; the baseline has its own retry. Returns how many."""
    done = set(study.user_attrs.get(REQUEUED) or [])
    again = [
        t
        for t in study.get_trials(deepcopy=False)
        if _interrupted(t) and t.number not in done and t.user_attrs.get("origin") != "defaults"
    ]
    for t in again:
        attrs = {k: t.user_attrs[k] for k in ("origin", "key") if k in t.user_attrs}
        study.enqueue_trial(dict(t.params), user_attrs={**attrs, "requeued_from": t.number})
    if again:
        study.set_user_attr(REQUEUED, sorted(done | {t.number for t in again}))
    return len(again)


def run(
    study: Any,
    space: Space,
    evaluate: Evaluate,
    budget: int,
    capping: Capping | None = None,
    on_trial: Callable[[Progress], None] | None = None,
    worker: str = WORKER,
    confirm: int = 0,
    combine: bool = False,
    leave_out_inert: bool = False,
    facts: dict[str, Any] | None = None,
    check_baseline: Callable[[Outcome], str | None] | None = None,
    neighbours: bool = False,
    min_gain: float | None = None,
    patience: int = local.PATIENCE,
    log: Callable[[str], None] | None = None,
    baseline_wait_s: float | None = None,
) -> None:
    """Runs trials until the study holds `budget` of them (all workers together), or until
    the search can stop early (min_gain: search/local.py; the reason is kept in the study's
    user attribute local.STOPPED).

    confirm > 0: a configuration that leads after fewer than `confirm` measurements is queued
    to be measured again (intensification), so that noise cannot crown a slow setting.
    combine: once the rule-based guesses have run, try the guesses that helped, together.
    leave_out_inert: once the baseline has run, leave out the parameters it shows cannot
    matter (search/inert.py); facts: what is known of the application before it runs
    (e.g. {"static_hdf5": True}); check_baseline: why the baseline's successful run was not
    the launch meant (iotune.launchcheck), or None: WrongLaunch is raised with that message.
    neighbours: once the warm start has run, measure the one-parameter neighbours of the
    incumbent before asking the sampler (search/local.py).
    While another worker runs the baseline, this one waits for it (wait_for_baseline: every
    trial is compared with it, it decides what is searched and queues the guesses, and it
    caps the slow trials), saying so through log, at most baseline_wait_s seconds (None:
    until it ends).
    """
    from optuna.exceptions import UpdateFinishedTrialError
    from optuna.trial import TrialState

    maximize = study.direction.name == "MAXIMIZE"
    facts = dict(facts or {})
    _resume_warm_start(study, space, leave_out_inert, facts)
    distributions = searched(study, space)
    if min_gain is not None and used(study) < budget:  # a continued study that had stopped
        inc = incumbent(study, maximize)
        around = inc.settings if neighbours and inc is not None else None
        why = local.why_stop(study, space, around, list(distributions), min_gain, maximize,
                             patience)  # fmt: skip
        if why:
            study.set_user_attr(local.STOPPED, why)
            return
    while True:
        storage.fail_lost(study)  # a dead worker's trial counts as failed, on any host
        fail_gone(study)  # at once for a worker of this host (e.g. SIGKILLed after KillWait)
        if used(study) >= budget:
            break
        if _baseline(study)[0] == "running":  # in another worker: its insights come first
            wait_for_baseline(study, space, leave_out_inert, facts, log, baseline_wait_s)
            continue  # a baseline queued again (its worker stopped) is this worker's to run
        distributions = searched(study, space)  # what another worker's baseline left out too
        inc = incumbent(study, maximize)
        trial = None
        try:
            trial = study.ask(fixed_distributions=distributions)
            config = space.config_from_trial_params(trial.params)
            settings = space.settings_of(config)
            trial.set_user_attr("settings", settings)
            trial.set_user_attr("key", config_key(settings))
            trial.set_user_attr("worker", worker)
        except UpdateFinishedTrialError:
            # Another worker took this trial, still being set up here, for one a killed worker
            # left unclaimed (study.recover_stale: the set-up was slow, e.g. on a loaded host)
            # and failed it. It never ran: nothing is lost; ask for another.
            continue
        except KeyboardInterrupt:
            _stopped(study, trial)
            raise
        try:
            with storage.heartbeat(study, trial):
                if trial.user_attrs.get("origin") != warmstart.BASELINE:
                    state = _baseline(study)[0]
                    if state == "running":  # another worker had just taken it (started together)
                        try:
                            wait_for_baseline(study, space, leave_out_inert, facts, log,
                                              baseline_wait_s)  # fmt: skip
                        except (BaselineFailed, BaselineWait):
                            _not_run(study, trial, "the baseline did not run")
                            raise
                        state = _baseline(study)[0]
                        inc = incumbent(study, maximize)  # the cap, from the baseline on
                    if state == "queued":  # its worker stopped before it ended: this one runs it
                        _not_run(study, trial, "asked before the baseline had run")
                        continue
                    why_not = _inert_set(study, settings)
                    if why_not:  # sampled before the baseline showed that it cannot matter
                        _not_run(study, trial, why_not)
                        continue
                forbid, left_out = space.forbidden(config), _value_left_out(study, config)
                if forbid is not None or left_out:
                    # why, in trials.csv and the report (it was empty: an outside tester)
                    why = left_out or "the space forbids " + " and ".join(
                        f"{k} in {{{', '.join(v)}}}" for k, v in forbid.when.items()
                    )
                    trial.set_user_attr("status", "forbidden")
                    trial.set_user_attr("wall_s", 0.0)
                    trial.set_user_attr("message", f"not run: {why}")
                    study.tell(trial, state=TrialState.PRUNED)
                    outcome = Outcome("forbidden", message=f"not run: {why}")
                else:
                    is_baseline = trial.user_attrs.get("origin") == "defaults"
                    cap = capping.cap(inc.wall) if capping and inc and not is_baseline else None
                    outcome = evaluate(settings, cap)
                    wrong = (
                        check_baseline(outcome)
                        if is_baseline and outcome.ok and check_baseline is not None
                        else None
                    )
                    if wrong:  # failed: a rerun (with the launch put right) runs it again
                        outcome = Outcome("failed", wall_s=outcome.wall_s, message=wrong)
                    record(study, trial, outcome, inc, maximize)
                    if wrong:
                        raise WrongLaunch(wrong)
                    if trial.user_attrs.get("origin") == warmstart.BASELINE:
                        if not outcome.ok:
                            raise BaselineFailed(outcome)
                        if leave_out_inert:
                            _after_baseline(
                                study, space, outcome.metrics, {**outcome.traits, **facts}
                            )
                        else:  # what the application's HDF5 refuses is left out all the same
                            lib = inert.library_facts(outcome.traits)
                            _after_baseline(study, space, {}, lib)
                        distributions = searched(study, space)
        except KeyboardInterrupt:
            # a signal anywhere between the ask and the tell (in the run, or while its result
            # is recorded): the trial ends as interrupted here, not left RUNNING for others
            _stopped(study, trial)
            raise
        if combine:
            warmstart.combine(study, space, maximize)
        if confirm > 0 and outcome.ok:
            _confirm_leader(study, space, maximize, confirm)
        if outcome.ok:
            _confirm_seeds(study, space, maximize)
        best = incumbent(study, maximize)
        around = None
        if neighbours and best is not None and not study.user_attrs.get(warmstart.PENDING):
            around = best.settings
        why = None
        if min_gain is not None and used(study) < budget:
            why = local.why_stop(study, space, around, list(distributions), min_gain, maximize,
                                 patience)  # fmt: skip
        if around is not None and not why and used(study) < budget:  # none left queued
            local.propose(study, space, around, list(distributions))
        if on_trial is not None:
            on_trial(
                Progress(
                    trial.number,
                    outcome.status,
                    outcome.value,
                    best.median if best else None,
                    used(study),
                    budget,
                )
            )
        if why:
            study.set_user_attr(local.STOPPED, why)
            return


def _stopped(study: Any, trial: Any) -> None:
    """Ends this worker's trial that a signal stopped (Ctrl-C, SIGTERM from a batch system):
    FAIL, status interrupted, run again when the study is continued (requeue_interrupted).
    Nothing when there is no trial yet, or it has ended meanwhile (told, or failed as lost)."""
    from optuna.trial import TrialState

    if trial is None or not storage.still_running(study, trial):
        return
    trial.set_user_attr("status", "interrupted")
    trial.set_user_attr(SIGNALLED, True)
    study.tell(trial, state=TrialState.FAIL)


def fail_gone(study: Any) -> int:
    """Fails, as interrupted, the running trials whose worker was a process of this host that
    has ended (one killed before it could record its trial: SIGKILL after a batch system's
    KillWait, the OOM killer); returns how many. Those of other hosts wait for their heartbeat
    to stop (storage.fail_lost)."""
    from optuna.trial import TrialState

    gone = [t for t in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,))
            if _worker_gone(t)]  # fmt: skip
    return sum(storage.fail(study, t, "interrupted") for t in gone)


BASELINE_POLL_S = 0.5  # how often a worker waiting for another's baseline looks at it
BASELINE_SAY_S = 30.0  # and says that it is still waiting
AFTER_BASELINE_S = 30.0  # for its worker to queue the guesses once it has run


def _baseline(study: Any) -> tuple[str, Any]:
    """The study's baseline (the defaults' first run): ("done", its trial) once one has run,
    else ("running", t) while a worker runs it, ("queued", t), ("failed", the last one), or
    ("none", None) in a study that has none (a bench's)."""
    from optuna.trial import TrialState

    base = [
        t
        for t in study.get_trials(deepcopy=False)
        if t.user_attrs.get("origin") == warmstart.BASELINE
    ]
    for state, name in ((TrialState.COMPLETE, "done"), (TrialState.RUNNING, "running"),
                        (TrialState.WAITING, "queued")):  # fmt: skip
        found = [t for t in base if t.state == state]
        if found:
            return name, found[0]
    return ("failed", base[-1]) if base else ("none", None)


def _worker_gone(t: Any) -> bool:
    """Whether the worker of a running trial was a process of this host that has ended."""
    from iotune import trial as trial_mod

    host, _, pid = (t.user_attrs.get("worker") or "").rpartition(":")
    return host == socket.gethostname() and pid.isdigit() and not trial_mod._pid_alive(int(pid))


def wait_for_baseline(
    study: Any,
    space: Space,
    leave_out_inert: bool,
    facts: dict[str, Any],
    log: Callable[[str], None] | None = None,
    most_s: float | None = None,
) -> None:
    """Waits while another worker runs the baseline: every trial is compared with it, what it
    shows leaves parameters and values out and queues the guesses, and the incumbent it makes
    caps slow trials (a worker that did not wait ran its first trials without any of that).
    Says so at once and every BASELINE_SAY_S. Returns once it has run (and its worker queued
    the guesses: else, after AFTER_BASELINE_S, or at once when that worker of this host has
    ended, this one does), or once it was queued again because its worker stopped (a signal,
    a lost heartbeat, a process gone from this host: this worker runs it next). Raises
    BaselineFailed when the application failed in it, and BaselineWait when it has run for
    more than most_s seconds."""
    say = log or (lambda message: None)
    start = time.monotonic()
    said = start - BASELINE_SAY_S
    ran_at = None
    while True:
        storage.fail_lost(study)  # its worker lost on another host: heartbeat stopped
        state, t = _baseline(study)
        now = time.monotonic()
        if state == "running":
            if _worker_gone(t):
                storage.fail(study, t, "interrupted")
                continue
            if most_s is not None and now - start > most_s:
                raise BaselineWait(
                    f"the baseline (trial {t.number}, worker {t.user_attrs.get('worker', '?')}) "
                    f"is still running after this worker waited {now - start:.0f} s for it, "
                    "longer than a trial may run (--timeout): nothing was run here; start this "
                    "worker again once the baseline has ended (or give it the baseline's worker's "
                    "--timeout)"
                )
            if now - said >= BASELINE_SAY_S:
                said = now
                waited = f"{now - start:.0f} s so far" if now > start + 1 else "started"
                bound = f", at most {most_s:.0f} s" if most_s is not None else ""
                say(f"waiting for the baseline, run by worker {t.user_attrs.get('worker', '?')} "
                    f"(trial {t.number}; {waited}{bound}): every trial is compared with it, and "
                    "what it shows decides what is searched")  # fmt: skip
        elif state == "done":
            ran_at = now if ran_at is None else ran_at
            queueing = study.user_attrs.get(warmstart.PENDING) and not _worker_gone(t)
            if queueing and now - ran_at < AFTER_BASELINE_S:
                time.sleep(BASELINE_POLL_S)  # its worker is queueing the guesses
                continue
            _resume_warm_start(study, space, leave_out_inert, facts)  # if that worker died
            if now - start > BASELINE_POLL_S:
                say(f"the baseline has run (trial {t.number}): searching")
            return
        elif state == "failed":
            status = t.user_attrs.get("status")
            if status in (None, "interrupted"):  # lost, or stopped by a signal: not the app's
                study.enqueue_trial(space.trial_params_for({}),
                                    user_attrs={"origin": warmstart.BASELINE})  # fmt: skip
                say(f"the baseline's worker stopped before it ended (trial {t.number}): "
                    "this worker runs it")  # fmt: skip
                return
            where = t.user_attrs.get("worker")
            raise BaselineFailed(
                Outcome(
                    status, wall_s=float(t.user_attrs.get("wall_s") or 0.0),
                    message=t.user_attrs.get("message", ""),
                ),
                where=f"trial {t.number}, worker {where}" if where else f"trial {t.number}",
            )  # fmt: skip
        else:  # queued again (by another waiting worker), or none at all
            return
        time.sleep(BASELINE_POLL_S)


def _not_run(study: Any, trial: Any, why: str) -> None:
    """Ends a trial that is not run: like a forbidden one (PRUNED, no run counted)."""
    from optuna.trial import TrialState

    if not storage.still_running(study, trial):
        return
    trial.set_user_attr("status", "forbidden")
    trial.set_user_attr("wall_s", 0.0)
    trial.set_user_attr("message", f"not run: {why}")
    study.tell(trial, state=TrialState.PRUNED)


def _inert_set(study: Any, settings: dict[str, str]) -> str | None:
    """Why a trial's settings set a parameter the baseline showed cannot matter (one asked
    before the baseline had run), or None."""
    left_out = study.user_attrs.get(INERT, {})
    names = sorted(k for k in settings if k in left_out)
    if not names:
        return None
    return f"{names[0]} is not searched ({left_out[names[0]]})"


def searched(study: Any, space: Space) -> dict[str, Any]:
    """The Optuna distributions of the parameters searched: the space's, minus the inert."""
    left_out = study.user_attrs.get(INERT, {})
    return {k: v for k, v in space.distributions().items() if k not in left_out}


def _value_left_out(study: Any, config: dict[str, str]) -> str | None:
    """Why a configuration holds a value that must not be tried (None: it holds none). Such
    a configuration is never run, like a forbidden one (Optuna cannot narrow a categorical
    distribution in the middle of a study)."""
    for name, values in study.user_attrs.get(VALUES_OUT, {}).items():
        if config.get(name) in values:
            return f"{name}={config[name]}: {values[config[name]]}"
    return None


INERT = "inert"  # study user attribute: {parameter: why it is not searched}
VALUES_OUT = "values left out"  # study user attribute: {parameter: {value: why}}
SWITCHED = "switched on"  # study user attribute: {switch: {"value", "why"}} (search/switches)


def switched(study: Any) -> dict[str, dict[str, str]]:
    """The runtime switches the study turned on after its baseline (search/switches.py)."""
    return dict(study.user_attrs.get(SWITCHED, {}))


def _after_baseline(
    study: Any, space: Space, metrics: dict[str, Any], facts: dict[str, Any]
) -> None:
    left_out = inert.inert(space, metrics, facts)
    if left_out:
        study.set_user_attr(INERT, left_out)
    on = switches.decide(space, facts, left_out)
    if on:
        study.set_user_attr(SWITCHED, on)
    values_out = inert.excluded_values(space, facts) if facts else {}
    values_out = {k: v for k, v in values_out.items() if k not in left_out}
    if values_out:
        study.set_user_attr(VALUES_OUT, values_out)
    warmstart.after_baseline(study, space, left_out, values_out)


def _resume_warm_start(
    study: Any, space: Space, leave_out_inert: bool, facts: dict[str, Any]
) -> None:
    """A worker that died between its baseline and queueing the guesses left them pending."""
    from optuna.trial import TrialState

    if not study.user_attrs.get(warmstart.PENDING):
        return
    for t in study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,)):
        if t.user_attrs.get("origin") == warmstart.BASELINE:  # a failed one is run again
            metrics = t.user_attrs.get("metrics", {}) if leave_out_inert else {}
            traits = t.user_attrs.get("traits", {})
            traits = {**traits, **facts} if leave_out_inert else inert.library_facts(traits)
            _after_baseline(study, space, metrics, traits)
            return


def record(
    study: Any, trial: Any, outcome: Outcome, inc: noise.ConfigStats | None, maximize: bool
) -> None:
    from optuna.trial import TrialState

    if not storage.still_running(study, trial):
        return  # failed as lost meanwhile (its heartbeat was late): counted once, as failed
    trial.set_user_attr("status", outcome.status)
    trial.set_user_attr("wall_s", round(outcome.wall_s, 6))
    if outcome.source:
        trial.set_user_attr("source", outcome.source)
    if outcome.metrics:
        trial.set_user_attr("metrics", {k: round(v, 6) for k, v in outcome.metrics.items()})
    if outcome.traits:
        trial.set_user_attr("traits", outcome.traits)
    if outcome.message:
        trial.set_user_attr("message", outcome.message[-1000:])
    if outcome.ok:
        study.tell(trial, outcome.value)
    elif outcome.status == "capped" and inc is not None:
        trial.report(Capping.bound(inc.median, inc.wall, outcome.wall_s, maximize), 0)
        study.tell(trial, state=TrialState.PRUNED)
    else:
        study.tell(trial, state=TrialState.FAIL)


def _confirm_seeds(study: Any, space: Space, maximize: bool) -> None:
    """A knowledge-base seed whose median beats the defaults is measured again until it has
    CONFIRM measurements (one re-measurement queued at a time, none once it falls behind the
    defaults): it comes with an earlier study's evidence, so one unlucky or lucky run should
    not decide it, and once confirmed it stays among the leaders (leaders())."""
    from optuna.trial import TrialState

    done = study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
    seeds = {
        t.user_attrs.get("key") for t in done if warmstart.from_kb(t.user_attrs.get("origin", ""))
    }
    base = [t.value for t in done if t.user_attrs.get("origin") == warmstart.BASELINE]
    if not seeds or not base:
        return
    stats = noise.group(noise.measured(study))
    queued = _queued_keys(study)
    wins = noise.better(maximize)
    for key in sorted(k for k in seeds if k in stats):
        s = stats[key]
        if len(s.values) < CONFIRM and key not in queued and wins(s.median, base[0]):
            study.enqueue_trial(
                space.trial_params_for(s.settings),
                user_attrs={"origin": "re-measure: kb seed", "key": key},
                skip_if_exists=False,
            )


def _confirm_leader(study: Any, space: Space, maximize: bool, confirm: int) -> None:
    c = challenger(study, maximize, confirm)
    if c is None or c.key in _queued_keys(study):
        return
    study.enqueue_trial(
        space.trial_params_for(c.settings),
        user_attrs={"origin": "re-measure", "key": c.key},
        skip_if_exists=False,
    )
