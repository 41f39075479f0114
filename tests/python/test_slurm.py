"""Studies on a real one-node SLURM cluster (munged + slurmctld + slurmd started for these tests
in a temporary directory, 2 CPUs): trials launched with srun (MPICH through PMI2), and
`iotune tune --search-only` workers submitted as a job array with docs/examples'
tune-workers.sbatch, sharing a journal file or PostgreSQL, one of them cancelled (scancel) in
the middle of a trial."""

import json
import subprocess
import sys
import time
from pathlib import Path

import optuna
import pytest

from iotune import storage as storage_mod

REPO = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
JOB_SCRIPT = REPO / "docs" / "examples" / "tune-workers.sbatch"
TIMEOUT = 90  # any one wait on the cluster

# An application for the workers: takes a global launch number (atomically, by creating
# run.N), logs it with its SLURM job and step, hangs on launch HANG_AT (to be cancelled
# there) and otherwise reports a time that depends a little on its settings.
APP = r"""
import json, os, re, sys, time
d = os.environ["APP_DIR"]
n = 0
while True:
    try:
        os.close(os.open(os.path.join(d, f"run.{n}"), os.O_CREAT | os.O_EXCL)); break
    except FileExistsError:
        n += 1
text = open(os.environ["IOTUNE_CONFIG"]).read()
settings = dict(re.findall(r"<(\w+)>([^<]*)</\1>", text))
with open(os.path.join(d, "log"), "a") as f:
    e = os.environ
    task = e.get("SLURM_ARRAY_JOB_ID", "") + "_" + e.get("SLURM_ARRAY_TASK_ID", "")
    f.write(json.dumps({"n": n, "job": os.environ.get("SLURM_JOB_ID"), "task": task,
                        "step": os.environ.get("SLURM_STEP_ID"), "settings": settings}) + "\n")
if n == int(os.environ.get("HANG_AT", "-1")):
    time.sleep(120)
t = 0.05 + 0.01 * (len(text) % 7)
time.sleep(t)
print("IOTUNE_RESULT " + json.dumps({"kernel": "app", "phase": "write", "ranks": 1,
                                      "bytes": 10**6, "total_s": t}))
"""


def env_for(slurm, **extra) -> dict[str, str]:
    env = {k: v for k, v in slurm.env.items() if not k.startswith("SLURM_") or k == "SLURM_CONF"}
    env.pop(storage_mod.PASSWORD_ENV, None)
    return {**env, "PATH": f"{Path(sys.executable).parent}:{env.get('PATH', '')}", **extra}


def wait_for(what, check, timeout=TIMEOUT, slurm=None):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.3)
    state = f"queue {slurm.queue()}\n{slurm.logs()}" if slurm else ""
    raise AssertionError(f"{what}: not within {timeout} s\n{state}")


def test_srun_trials_of_a_real_kernel_run_two_mpich_ranks(slurm, kernel, libiotune, tmp_path):
    """A whole study inside one 2-CPU job whose trials are `srun -n 2` steps: MPICH's ranks
    find each other through PMI2 (SLURM_MPI_TYPE=pmi2) and the runtime's profiles say 2."""
    out = tmp_path / "out"
    app = [str(kernel("gcrmio")), "--cells", "2048", "--levels", "8", "--chunk-cells", "1024"]
    cmd = [sys.executable, "-m", "iotune.tune_cli", "--launcher", "srun", "-n", "2",
           "--trials", "3", "--cap", "0", "--leaders", "1", "--verify-pairs", "5",
           "--no-progress", "--keep-scratch", "--study", "srun", "--out", str(out),
           "--", *app]  # fmt: skip
    env = env_for(slurm, IOTUNE_LIB=str(libiotune), SLURM_MPI_TYPE="pmi2")
    job = slurm.run("sbatch", "--parsable", "-n", "2", "-o", str(tmp_path / "job.out"),
                    "--wrap", " ".join(cmd), env=env).strip()  # fmt: skip
    wait_for("the study's job to end", lambda: not slurm.queue(), slurm=slurm)
    text = (tmp_path / "job.out").read_text()
    summary = json.loads((out / "summary.json").read_text())
    assert summary["command"].startswith("srun -n 2 --export=ALL"), summary["command"]
    profiles = list((out / "scratch").glob("trial-*/iotune-profile.json"))
    assert len(profiles) >= 3, text
    for p in profiles:
        prof = json.loads(p.read_text())
        assert prof["ranks"] == 2, (p, prof.get("ranks"))
    assert job.isdigit() and ("faster" in summary["verdict"] or "no better" in summary["verdict"])


@pytest.mark.parametrize("kind", ["journal", "postgresql"])
def test_job_array_workers_share_a_study_and_survive_scancel(kind, slurm, request, tmp_path):
    """Two workers (sbatch --array=1-2 of the documented job script), trials under srun; the
    worker in the middle of launch #3 is cancelled with scancel: its trial ends FAIL
    (interrupted), the other worker fills the budget, nothing is lost or run twice, and a
    finisher verifies and reports."""
    budget = 8
    study = f"array-{kind}"
    if kind == "journal":
        url, secret_env = f"journal:{tmp_path / 'shared' / 'study.journal'}", {}
    else:
        pg = request.getfixturevalue("pg_server")
        url = pg.url(with_password=False)
        secret_env = {storage_mod.PASSWORD_ENV: pg.password}
    appdir = tmp_path / "app"
    appdir.mkdir()
    (appdir / "app.py").write_text(APP)
    env = env_for(slurm, APP_DIR=str(appdir), HANG_AT="3", IOTUNE_WORKER_OUT=str(tmp_path / "w"),
                  **secret_env)  # fmt: skip
    args = ["--storage", url, "--study", study, "--space", str(HERE / "fake_space.toml"),
            "--launcher", "srun", "-n", "1", "--no-preload", "--objective", "kernel",
            "--cap", "0", "--trials", str(budget), "--timeout", "100",
            "--", sys.executable, str(appdir / "app.py")]  # fmt: skip
    array = slurm.run("sbatch", "--parsable", "--array=1-2", "-n", "1",
                      "-o", str(tmp_path / "worker-%a.out"), str(JOB_SCRIPT), *args,
                      env=env).strip()  # fmt: skip

    def hanging_job():
        for line in (appdir / "log").read_text().splitlines() if (appdir / "log").exists() else []:
            row = json.loads(line)
            if row["n"] == 3:
                return row["task"]  # ARRAYJOB_TASK: one task (the array's job id is all)
        return None

    victim = wait_for("launch #3", hanging_job, slurm=slurm)
    time.sleep(0.5)  # well inside the trial
    slurm.run("scancel", victim)
    wait_for("the workers to end", lambda: not slurm.queue(), slurm=slurm)

    store = storage_mod.open_storage(url if kind == "journal" else pg.url())
    s = optuna.load_study(study_name=study, storage=store)
    counted = [t for t in s.trials if t.state.name != "WAITING"]
    outputs = {p.name: p.read_text() for p in tmp_path.glob("worker-*.out")}
    assert not [t for t in counted if t.state.name == "RUNNING"], outputs
    assert budget <= len(counted) <= budget + 1, [(t.number, t.state.name) for t in counted]
    interrupted = [t for t in counted if t.user_attrs.get("status") == "interrupted"]
    assert len(interrupted) == 1 and interrupted[0].state.name == "FAIL", outputs
    # every launch of the application belongs to exactly one trial: none lost, none twice
    launches = [json.loads(line) for line in (appdir / "log").read_text().splitlines()]
    ran = [t for t in counted if t.user_attrs.get("status") != "forbidden"]
    assert len(launches) == len(ran), (launches, [t.user_attrs for t in counted])
    assert all(row["step"] not in (None, "batch") for row in launches)  # an srun step each
    assert {row["task"] for row in launches} == {f"{array}_1", f"{array}_2"}
    assert len({t.user_attrs["worker"] for t in counted}) == 2
    assert array.isdigit()

    # the finisher, outside any job (its srun steps get allocations of their own)
    fin = subprocess.run(
        [sys.executable, "-m", "iotune.tune_cli", "--storage", url, "--study", study,
         "--space", str(HERE / "fake_space.toml"), "--finish-only", "--leaders", "2",
         "--repeat", "1", "--verify-pairs", "5", "--no-progress", "--out",
         str(tmp_path / "final")],
        env=env, capture_output=True, text=True, timeout=TIMEOUT, cwd=tmp_path,
    )  # fmt: skip
    assert fin.returncode == 0, fin.stdout + fin.stderr
    assert (tmp_path / "final" / "report.html").is_file()
    if kind == "postgresql":
        for p in [*tmp_path.rglob("*")]:
            if p.is_file():
                assert pg.password.encode() not in p.read_bytes(), p
