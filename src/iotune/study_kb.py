"""A study's ties to the knowledge base: the application's motif signature, the finished
study filed under it, and the nearest stored motifs' settings tried first (--warm-start kb)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from iotune.search import get_strategy
from iotune.tune_config import TuneConfig, trial_options


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
        lib = cfg.lib or paths.find_library()
        cfg.profile_runs += 1  # a run of the application, whatever comes of it (keep_runs)
        cfg.signature = capture.profile_signature(
            opts.command,
            lib=lib,
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


PROFILE = "kb profile"  # summary.json's runs: the runs for the motif signature (the phase)
PROFILE_RUNS = "kb profile runs: "  # study attribute prefix: one process's such runs


def keep_runs(study: Any, cfg: TuneConfig) -> None:
    """Keeps in the study the application's runs this process made for the motif signature
    (--warm-start kb before the study was opened, the knowledge base's entry at its finish),
    so that every finish counts them (profile_runs), whichever worker made them."""
    import datetime
    import uuid

    from iotune.search import loop

    if cfg.profile_runs <= 0:
        return
    when = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
    study.set_user_attr(f"{PROFILE_RUNS}{when} {loop.WORKER} {uuid.uuid4().hex[:8]}",
                        cfg.profile_runs)  # fmt: skip
    cfg.profile_runs = 0


def profile_runs(study: Any) -> int:
    """The study's runs for the motif signature, all processes together (keep_runs); what is
    not a count (a study damaged or written by hand) counts nothing."""
    return sum(
        v
        for k, v in study.user_attrs.items()
        if k.startswith(PROFILE_RUNS) and isinstance(v, int) and not isinstance(v, bool) and v > 0
    )


def remember(cfg: TuneConfig, summary: dict[str, Any], log: Callable[[str], None]) -> None:
    """Files the finished study under the application's motif signature: the one this process
    has (study.finish has it sought before its runs are counted), else none is filed."""
    from iotune.kb import seeds

    sig = cfg.signature
    if sig is None:
        log("not stored in the knowledge base: no motif signature")
        return
    seeds.remember(kb_url(cfg), summary, sig, str(cfg.out.resolve()), log)


def warm_start(cfg: TuneConfig, log: Callable[[str], None]) -> None:
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
