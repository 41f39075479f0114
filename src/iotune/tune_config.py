"""What a study of `iotune tune` is asked to do: the application, the space, the search and
the measurement options (TuneConfig), and how each trial of it is run (trial_options)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from iotune import identity, trial
from iotune.search import get_strategy, local, sequential
from iotune.space import Space
from iotune.storage import HEARTBEAT_S

RACE_LEADERS = 2  # leaders raced (with the defaults and a simpler set) when --leaders is not given


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
    profile_runs: int = 0  # the application's runs for the signature not yet kept in the study
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
