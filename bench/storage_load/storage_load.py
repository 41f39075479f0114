"""Load test of the study storages: W concurrent workers running iotune's own search loop
(iotune.search.loop.run, the code `iotune tune --search-only` runs) on one study, with trials
that take TRIAL_S seconds, against a journal file and a throw-away PostgreSQL server (local,
loopback only, started and removed here). Measures what the storage costs each worker per
trial as the study grows, and whether every trial is counted once.

    .venv/bin/python bench/storage_load/storage_load.py --workers 100 --budget 1000 --trial-s 0.5
    .venv/bin/python bench/storage_load/storage_load.py --workers 100 --budget 1000 --kinds journal

Workers are processes forked after the imports (so 100 of them start in a second on 2 cores),
each with its own storage connection. Every run is bounded: --limit-s seconds, then the
workers are killed and the run is reported as cut short. Raw numbers: bench/storage_load/.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import platform
import signal
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1] / "tests" / "python"))  # local_servers

import optuna  # noqa: E402

from iotune import space as space_mod  # noqa: E402
from iotune import storage  # noqa: E402
from iotune.search import loop  # noqa: E402
from iotune.trial import Outcome  # noqa: E402


def worker(url: str, study_name: str, budget: int, trial_s: float, seed: int, q) -> None:
    """One worker: the search loop with a trial that sleeps trial_s, and a random sampler (so
    that what is measured is the storage and the loop's own reads, not TPE's arithmetic).
    Reports, per trial after the first, the time between trials (the storage's and the loop's
    share) and, in all, its CPU time and its start-up (connect, load the study, first ask)."""
    import random

    optuna.logging.set_verbosity(optuna.logging.ERROR)
    rng = random.Random(seed)
    sp = space_mod.load("local")
    times: list[tuple[float, float]] = []  # (seconds since start, seconds between trials)
    t0 = time.monotonic()
    cpu0 = time.process_time()
    last: list[float | None] = [None]
    startup = None
    try:
        store = storage.open_storage(url)
        sampler = optuna.samplers.RandomSampler(seed=seed)
        study = optuna.load_study(study_name=study_name, storage=store, sampler=sampler)

        def evaluate(settings, cap):
            nonlocal startup
            now = time.monotonic()
            if last[0] is None:
                startup = now - t0
                q.put({"pid": os.getpid(), "startup_s": startup})
            else:
                times.append((now - t0, now - last[0]))
                q.put({"pid": os.getpid(), "at": now - t0, "between": now - last[0]})
            time.sleep(trial_s)
            last[0] = time.monotonic()
            return Outcome("ok", trial_s + rng.random() * 0.01, "kernel", trial_s)

        loop.run(study, sp, evaluate, budget, worker=f"bench:{os.getpid()}")
    except Exception as e:  # noqa: BLE001 - counted and reported, the others go on
        q.put({"pid": os.getpid(), "error": f"{type(e).__name__}: {str(e)[:300]}"})
    q.put({"pid": os.getpid(), "done": True, "cpu_s": time.process_time() - cpu0})


def server_cpu_s(user: str = "postgres") -> float:
    """CPU seconds (user + system) of the processes of user (the throw-away PostgreSQL server
    runs as postgres; nothing else here does), read from /proc."""
    import pwd

    try:
        uid = pwd.getpwnam(user).pw_uid
    except KeyError:
        return float("nan")
    tick = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            if d.stat().st_uid != uid:
                continue
            fields = (d / "stat").read_text().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12]) + int(fields[13]) + int(fields[14])) / tick
        except (OSError, IndexError, ValueError):
            continue
    return total


def run_one(kind: str, url: str, workers: int, budget: int, trial_s: float, limit_s: float):
    name = f"load-{kind}-{int(time.time())}"
    store = storage.open_storage(url)
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(study_name=name, storage=store)
    study.enqueue_trial({}, user_attrs={"origin": "defaults"})
    ctx = mp.get_context("fork")
    q = ctx.Queue()
    procs = [
        ctx.Process(target=worker, args=(url, name, budget, trial_s, i, q)) for i in range(workers)
    ]
    cpu_server0 = server_cpu_s() if kind == "postgresql" else None
    start = time.monotonic()
    for p in procs:
        p.start()
    results, cut = [], False
    while len([r for r in results if "done" in r]) < workers:
        left = limit_s - (time.monotonic() - start)
        if left <= 0:
            cut = True
            break
        try:
            results.append(q.get(timeout=min(left, 5)))
        except Exception:  # noqa: BLE001 - queue.Empty: check the clock again
            pass
    wall = time.monotonic() - start
    cpu_server = server_cpu_s() - cpu_server0 if cpu_server0 is not None else None
    for p in procs:
        if p.is_alive():
            os.kill(p.pid, signal.SIGKILL)
        p.join(timeout=10)
    trials = optuna.load_study(study_name=name, storage=storage.open_storage(url)).trials
    states: dict[str, int] = {}
    for t in trials:
        states[t.state.name] = states.get(t.state.name, 0) + 1
    per_trial = [r["between"] for r in results if "between" in r]
    ran = len(per_trial) + sum(1 for r in results if "startup_s" in r)
    finished = [r for r in results if "cpu_s" in r]  # CPU time: of the workers that finished
    client_cpu = sum(r["cpu_s"] for r in finished)
    startups = [r["startup_s"] for r in results if r.get("startup_s") is not None]
    by_phase = {}
    done = sorted((r["at"], r["between"]) for r in results if "between" in r)
    for part, (lo, hi) in {"first 10%": (0, 0.1), "last 10%": (0.9, 1.0)}.items():
        chunk = [s for i, (_, s) in enumerate(done) if lo * len(done) <= i < hi * len(done)]
        if chunk:
            by_phase[part] = round(statistics.median(chunk), 4)
    counted = sum(n for st, n in states.items() if st != "WAITING")
    return {
        "kind": kind,
        "workers": workers,
        "budget": budget,
        "trial_s": trial_s,
        "wall_s": round(wall, 2),
        "cut_short": cut,
        "trials_run": ran,
        "states": states,
        "counted": counted,
        "over_budget": counted - budget,
        # trials in the study that no worker ran, or runs the study does not hold (the
        # forbidden configurations are PRUNED without running: capping is off here)
        "lost_or_twice": counted - ran - states.get("PRUNED", 0),
        "trials_per_s": round(ran / wall, 2),
        "client_cpu_ms_per_trial": round(1000 * client_cpu / max(ran, 1), 2)
        if len(finished) == workers
        else None,
        "server_cpu_ms_per_trial": round(1000 * cpu_server / max(ran, 1), 2)
        if cpu_server is not None
        else None,
        "startup_s": {
            "median": round(statistics.median(startups), 3) if startups else None,
            "max": round(max(startups), 3) if startups else None,
        },
        "between_trials_s": {
            "median": round(statistics.median(per_trial), 4) if per_trial else None,
            "p95": round(sorted(per_trial)[int(0.95 * (len(per_trial) - 1))], 4)
            if per_trial
            else None,
            "max": round(max(per_trial), 4) if per_trial else None,
            **{f"median, {k}": v for k, v in by_phase.items()},
        },
        "errors": [r["error"] for r in results if "error" in r],
        "raw_between_trials_s": [round(s, 5) for s in per_trial],
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--workers", type=int, default=100)
    ap.add_argument("--budget", type=int, default=1000)
    ap.add_argument("--trial-s", type=float, default=0.5)
    ap.add_argument("--limit-s", type=float, default=240.0, help="per storage")
    ap.add_argument("--kinds", default="journal,postgresql")
    ap.add_argument("--out", type=Path, default=HERE / "storage_load.json")
    a = ap.parse_args()
    import tempfile

    import local_servers

    runs = []
    for kind in a.kinds.split(","):
        if kind == "journal":
            with tempfile.TemporaryDirectory(prefix="iotune-load-") as d:
                url = f"journal:{d}/study.journal"
                runs.append(run_one(kind, url, a.workers, a.budget, a.trial_s, a.limit_s))
        elif kind == "postgresql":
            # each worker may hold 2 connections while it opens the storage
            with local_servers.postgres_server(max_connections=2 * a.workers + 20) as pg:
                os.environ[storage.PASSWORD_ENV] = pg.password
                url = pg.url(with_password=False)
                runs.append(run_one(kind, url, a.workers, a.budget, a.trial_s, a.limit_s))
        else:
            raise SystemExit(f"unknown storage kind {kind}")
        r = runs[-1]
        print(
            f"{kind}: {r['workers']} workers, {r['trials_run']} trials in {r['wall_s']} s "
            f"({r['trials_per_s']}/s), between trials {r['between_trials_s']}, start-up "
            f"{r['startup_s']}, CPU ms per trial: clients {r['client_cpu_ms_per_trial']}, "
            f"server {r['server_cpu_ms_per_trial']}; "
            f"counted {r['counted']} (budget {r['budget']}, lost or twice "
            f"{r['lost_or_twice']}), states {r['states']}, "
            f"errors {len(r['errors'])}{' CUT SHORT' if r['cut_short'] else ''}",
            flush=True,
        )
    record = {
        "command": " ".join(sys.argv),
        "machine": {
            "host": platform.node(),
            "cpus": os.cpu_count(),
            "platform": platform.platform(),
            "load_avg_at_end": os.getloadavg(),
        },
        "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        "optuna": optuna.__version__,
        "runs": runs,
    }
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps(record, indent=1) + "\n")
    print(f"raw numbers: {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
