#!/usr/bin/env python3
"""Does iotune read each program right? tune, advise, skel, kb and adapt side by side, per case.

    flock /tmp/iotune-bench.lock .venv/bin/python bench/agreement/agreement.py --hold-freed-memory

Cases: the project's (the five kernels, the programs of tests/data/real; kind "project") and
every built case of the corpus manifest (corpus/cases.toml through corpus/corpus.py, kind
"corpus"; build them first with `python corpus/corpus.py build`; IOTUNE_CORPUS_DIR is the
cache). A corpus case runs on its own MPI family's runtime, launcher and HDF5. Per case:

1. tune: `iotune tune` (few trials, --isolate, a bench-local KB): its verdict (headline
   speedup with interval) and the minimal best.xml's settings, or "keep defaults";
2. advise: `iotune advise --json -- LAUNCH PROGRAM` (a traced profile): whether a finding
   names a parameter of best.xml, and whether its control file sets one; with --darshan-lib,
   the same from a Darshan log of one run;
3. skel: from that profile, `iotune skel from-profile`, `generate`, `make`; the skeleton run
   once traced: `h5dump -H -p` of its HDF5 files against the original's, bytes per rank, layer
   and direction from both traces (within 1 %); I/O time (profile io.time_s) of skeleton and
   original in the interleaved rounds of step 5 (within 10 %);
4. kb: the motif key and words (of the study's KB entry, and of the advise run with its data);
5. adapt: the program run with IOTUNE_MODE=adaptive: what it applied per file (or why
   nothing) against best.xml, and its speedup over the defaults, as a share of tune's.

Timed runs (original, skeleton, adapt) run interleaved: each round visits every case in
shuffled order and, within a case, the three programs in shuffled order, each measured run
right after a discarded warm-up of the same program (bench/README.md on noise); with
--hold-freed-memory the VM keeps freed memory for the whole bench (iotune.freedmem).

Output: agreement.json (raw: every command, every time, every finding; written after each
step) and agreement.md (the table and the acceptance numbers of issue 22); docs/agreement.md
says what each column means.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import platform
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(REPO / "corpus"))

import agree_calc as calc  # noqa: E402

import corpus  # noqa: E402
from iotune import adapt as adaptmod  # noqa: E402
from iotune import controlfile, freedmem, launch, paths, trace  # noqa: E402
from iotune.kb import signature  # noqa: E402

REAL = REPO / "tests" / "data" / "real"
TIMEOUT = 900
HDF5_MAGIC = b"\x89HDF\r\n\x1a\n"
NOT_DATA = ("p.json", "profile.json", "t.json", "timing.json", ".iotune-skel-files")


@dataclass
class Case:
    name: str
    kind: str  # project | corpus
    family: str
    ranks: int
    argv: list[str]  # without the launcher; may hold {workdir}
    about: str = ""
    env: dict[str, str] = field(default_factory=dict)

    def command(self, workdir: Path) -> list[str]:
        return [a.replace("{workdir}", str(workdir)) for a in self.argv]


# the project's own programs: small sizes (a run's I/O 0.1-1 s here), steps where the program
# has them, so that adapt sees recurring phases
KERNELS = {
    "vpicio": ["--particles", "1M", "--steps", "2"],
    "vorpalio": ["--block", "64,64,32", "--steps", "3", "--file-per-step"],
    "gcrmio": ["--cells", "16384", "--levels", "8", "--chunk-cells", "1024", "--steps", "3",
               "--file-per-step"],
    "haccio": ["--particles", "1M"],
    "iorio": ["--api", "hdf5", "--block", "4M", "--transfer", "1M", "--segments", "2",
              "--steps", "3"],
}  # fmt: skip
REAL_ARGS = {
    "checkpoint": ["--rows", "1024", "--cols", "2048", "--steps", "3"],
    "h5py_steps": ["--chunks", "--rows", "1024", "--cols", "2048", "--steps", "3"],
    "python_writer": [],
}
SMOKE_KERNELS = {"gcrmio": ["--cells", "1024", "--levels", "2", "--chunk-cells", "256",
                            "--steps", "2", "--file-per-step"]}  # fmt: skip


def build_real_c(name: str, family: str, out: Path) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    exe = out / f"{name}-{family}"
    if not exe.exists():
        flags = subprocess.run(
            ["pkg-config", "--cflags", "--libs", f"hdf5-{family}"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.split()
        subprocess.run([f"mpicc.{family}", "-O2", "-o", str(exe), str(REAL / f"{name}.c"),
                        *flags], check=True)  # fmt: skip
    return exe


def project_cases(scratch: Path, smoke: bool) -> list[Case]:
    family = "mpich"
    cases = []
    for k, args in (SMOKE_KERNELS if smoke else KERNELS).items():
        cases.append(Case(k, "project", family, 2, [str(paths.find_kernel(k, family)), *args],
                          "the project's kernel"))  # fmt: skip
    if smoke:
        return cases
    for src in sorted(REAL.iterdir()):
        args = REAL_ARGS.get(src.stem, [])
        if src.suffix == ".c":
            exe = build_real_c(src.stem, family, scratch / "bin")
            cases.append(Case(src.stem, "project", family, 2, [str(exe), *args],
                              "tests/data/real"))  # fmt: skip
        elif src.suffix == ".py":
            text = src.read_text()
            ranks = 2 if "mpi4py" in text else 1
            cases.append(Case(src.stem, "project", family, ranks,
                              [sys.executable, str(src), *args], "tests/data/real"))  # fmt: skip
    return cases


def corpus_cases(manifest: Path) -> tuple[list[Case], list[dict]]:
    """Every case of the manifest: the built ones to run, the others listed as not built."""
    out, missing = [], []
    for c in corpus.load_cases(manifest):
        if not corpus.built(c):
            missing.append({"case": c.name, "kind": "corpus", "error": "not built"})
            continue
        argv = corpus.command(c, Path("/WORKDIR"))
        argv = [a.replace("/WORKDIR", "{workdir}") for a in argv]
        out.append(Case(c.name, "corpus", c.family, c.ranks, argv, c.about))
    return out, missing


# ------------------------------------------------------------------------------- running


def iotune(*argv: str, cwd: Path, timeout: float = TIMEOUT) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "iotune", *argv], cwd=cwd, capture_output=True,
                          text=True, timeout=timeout)  # fmt: skip


def launcher(case: Case) -> list[str]:
    return paths.find_build(case.family).launcher(case.ranks)


def run_app(case: Case, argv: list[str], cwd: Path, profile: Path, extra: dict | None = None,
            traced: bool = False) -> tuple[float, str]:  # fmt: skip
    """One run with the case's runtime preloaded and a profile: (io.time_s, stderr)."""
    for p in (profile, Path(str(profile) + ".trace")):
        shutil.rmtree(p, ignore_errors=True) if p.is_dir() else p.unlink(missing_ok=True)
    cmd = [*launcher(case), *argv]
    env = launch.runtime_env(None, lib=paths.find_library(case.family), command=cmd,
                             extra={"IOTUNE_PROFILE": str(profile),
                                    "IOTUNE_SESSION": f"agree-{time.time_ns():x}",
                                    **case.env, **(extra or {})})  # fmt: skip
    for k in ("IOTUNE_MODE", "IOTUNE_TRACE", "IOTUNE_SYNC"):
        if k not in (extra or {}):
            env.pop(k, None)
    if traced:
        env["IOTUNE_TRACE"] = "1"
    r = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=TIMEOUT)
    if r.returncode:
        raise RuntimeError(f"{' '.join(cmd)}: exit {r.returncode}: {r.stderr[-600:]}")
    return float(json.loads(profile.read_text())["io"]["time_s"]), r.stderr


def clean(d: Path, keep: tuple[str, ...] = ()) -> None:
    for p in d.iterdir():
        if p.name in keep or p.name.endswith(".trace"):
            continue
        shutil.rmtree(p) if p.is_dir() else p.unlink()


def data_files(d: Path) -> list[Path]:
    """The files a run left in its folder, but the profile's and the skeleton's own."""
    out = []
    for p in sorted(d.rglob("*")):
        if p.is_file() and p.name not in NOT_DATA and ".trace" not in str(p.relative_to(d)):
            out.append(p)
    return out


def load(path: Path) -> dict:
    return json.loads(path.read_text())


def h5dumps(d: Path) -> dict[str, str]:
    out = {}
    for p in data_files(d):
        with open(p, "rb") as fh:
            if fh.read(8) != HDF5_MAGIC:
                continue
        r = subprocess.run(["h5dump", "-H", "-p", str(p)], capture_output=True, text=True,
                           timeout=300)  # fmt: skip
        out[str(p.relative_to(d))] = r.stdout if r.returncode == 0 else "h5dump failed"
    return out


# --------------------------------------------------------------------------------- steps


def step_tune(case: Case, work: Path, a) -> dict:
    out = work / "study"
    r = iotune("tune", "--trials", str(a.trials), "--leaders", str(a.leaders),
               "--repeat", str(a.repeat),
               "--verify-pairs", str(a.verify_pairs), "--no-progress", "--isolate",
               "--kb", str(a.kb), "--out", str(out), "-n", str(case.ranks), "--mpi", case.family,
               "--", *case.command(work / "study-run"), cwd=work)  # fmt: skip
    summary = out / "summary.json"
    if not summary.exists():
        return {"error": f"no summary.json (exit {r.returncode}): {r.stderr[-600:]}"}
    verdict = calc.tune_verdict(json.loads(summary.read_text()))
    best = out / "best.xml"
    if best.exists():  # the file itself: what a user would apply
        parsed = {s.name: str(s.value) for s in controlfile.parse_file(best).settings}
        verdict["best_xml"] = parsed
    verdict["last_line"] = r.stdout.strip().splitlines()[-1:] if r.stdout else []
    return verdict


def step_kb(work: Path, advise_dir: Path) -> dict:
    out = {}
    study_profile = work / "study" / "kb-profile.json"
    if study_profile.exists():
        sig = signature.from_profile(study_profile)
        out = {"key": sig.key, "motif": sig.motif, "words": sig.words()}
    run_profile = advise_dir / "p.json"
    if run_profile.exists():
        sig = signature.from_profile(run_profile, data_dirs=[advise_dir])
        out["with_data"] = {"key": sig.key, "motif": sig.motif}
        if "key" not in out:
            out.update({"key": sig.key, "motif": sig.motif, "words": sig.words()})
    return out


def parse_advice(stdout: str) -> dict:
    start = stdout.rindex("{", 0, stdout.index('"schema": "iotune-advice"'))
    return json.loads(stdout[start:])


def step_advise(case: Case, advise_dir: Path) -> dict:
    advise_dir.mkdir(parents=True, exist_ok=True)
    r = iotune("advise", "--json", "-o", "-", "--profile-out", str(advise_dir / "p.json"), "--",
               *launcher(case), *case.command(advise_dir), cwd=advise_dir)  # fmt: skip
    if r.returncode or '"schema": "iotune-advice"' not in r.stdout:
        return {"error": f"exit {r.returncode}: {r.stderr[-600:]}"}
    return calc.advice_side(parse_advice(r.stdout))


def env_flags(family: str, name: str, value: str) -> list[str]:
    """The launcher's flags that set a variable in every rank (not in the launcher itself)."""
    return ["-x", f"{name}={value}"] if family == "openmpi" else ["-genv", name, value]


def step_advise_log(case: Case, work: Path, lib: str) -> dict:
    """One run under Darshan (its runtime and HDF5 preloaded in the ranks), advise on the log."""
    run = work / "darshan"
    shutil.rmtree(run, ignore_errors=True)
    run.mkdir(parents=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("IOTUNE_")}
    env.pop("LD_PRELOAD", None)
    hdf5 = Path(f"/usr/lib/x86_64-linux-gnu/hdf5/{case.family}/libhdf5.so")
    preload = f"{lib}:{hdf5}" if hdf5.exists() else lib
    cmd = [*launcher(case), *env_flags(case.family, "LD_PRELOAD", preload),
           *env_flags(case.family, "DARSHAN_LOGDIR", str(run)), *case.command(run)]  # fmt: skip
    env.update(launch.root_permission(cmd, env))
    r = subprocess.run(cmd, cwd=run, env=env, capture_output=True, text=True, timeout=TIMEOUT)
    logs = list(run.rglob("*.darshan"))
    if not r.returncode and not logs:  # the program never initialised MPI (an h5py script
        # without mpi4py): Darshan writes a log of such a program in its non-MPI mode only
        head = len(launcher(case))
        cmd = [*cmd[:head], *env_flags(case.family, "DARSHAN_ENABLE_NONMPI", "1"), *cmd[head:]]
        r = subprocess.run(cmd, cwd=run, env=env, capture_output=True, text=True, timeout=TIMEOUT)
        # there every process writes one, the commands the program starts too (Python's
        # platform module runs uname): the program's own is named after its executable
        exe = Path(case.command(run)[0]).name
        logs = [p for p in run.rglob("*.darshan") if f"_{exe}_id" in p.name]
    if r.returncode or len(logs) != 1:
        return {"error": f"exit {r.returncode}, {len(logs)} logs: {r.stderr[-400:]}"}
    r = iotune("advise", "--json", "-o", "-", str(logs[0]), cwd=run)
    if r.returncode:
        return {"error": r.stderr[-600:]}
    return calc.advice_side(json.loads(r.stdout))


def step_skel_prepare(case: Case, work: Path, advise_dir: Path) -> dict:
    """Descriptor, source and build of the skeleton; one traced run of it; structure and
    bytes against the original's (the advise run's files and trace)."""
    fam = case.family
    r = iotune("skel", "from-profile", str(advise_dir / "p.json"), "-o", str(work / "skel.yaml"),
               "--data-dir", str(advise_dir), cwd=work)  # fmt: skip
    if r.returncode:
        return {"error": f"from-profile: {r.stderr[-600:]}"}
    build = paths.find_build(fam)
    r = iotune("skel", "generate", str(work / "skel.yaml"), "-o", str(work / "skelsrc"),
               "--cc", f"mpicc.{fam}", "--pkg", f"hdf5-{fam}", "--mpiexec",
               " ".join(build.launcher(None)), cwd=work)  # fmt: skip
    if r.returncode:
        return {"error": f"generate: {r.stderr[-600:]}"}
    m = subprocess.run(["make", "-s", "-C", str(work / "skelsrc")], capture_output=True,
                       text=True, timeout=300)  # fmt: skip
    if m.returncode:
        return {"error": f"make: {m.stderr[-600:]}"}
    exe = work / "skelsrc" / "skeleton"
    traced = work / "skel-traced"
    shutil.rmtree(traced, ignore_errors=True)
    (traced / "data").mkdir(parents=True)
    skel_argv = [str(exe), "--dir", str(traced / "data"), "--timing", str(traced / "t.json")]
    run_app(case, skel_argv, traced, traced / "p.json", traced=True)
    orig_files = [p for p in data_files(advise_dir)]
    skel_files = data_files(traced / "data")
    out: dict = {
        "descriptor": str(work / "skel.yaml"),
        "orig_files": [str(p.relative_to(advise_dir)) for p in orig_files],
        "skel_files": [str(p.relative_to(traced / "data")) for p in skel_files],
    }
    out["h5dump"] = calc.compare_structures(h5dumps(advise_dir), h5dumps(traced / "data"))
    names = sorted(
        {p.name for p in orig_files}
        | set(calc.run_files(load(advise_dir / "p.json"), str(advise_dir), NOT_DATA))
    )
    snames = sorted(
        {p.name for p in skel_files}
        | set(calc.run_files(load(traced / "p.json"), str(traced / "data"), NOT_DATA))
    )
    b_orig = calc.merge_bytes(
        calc.trace_bytes(trace.load(advise_dir / "p.json"), names),
        calc.profile_bytes(load(advise_dir / "p.json"), names),
    )
    b_skel = calc.merge_bytes(calc.trace_bytes(trace.load(traced / "p.json"), snames),
                              calc.profile_bytes(load(traced / "p.json"), snames))  # fmt: skip
    out["bytes"] = calc.compare_bytes(b_orig, b_skel)
    out["bytes_orig"], out["bytes_skel"] = b_orig, b_skel
    out["argv"] = [str(exe)]
    return out


ORIG_REPEATS = 3  # the original's own traced runs beside the first: its bytes' spread


def step_orig_repeat(case: Case, work: Path, advise_dir: Path) -> dict:
    """The original traced ORIG_REPEATS times more: how far its own bytes per rank and layer
    move from run to run (the floor under the skeleton's comparison). POSIX reads under
    ROMIO's collective writes (read-modify-write past the end the other aggregator has not yet
    written) moved 44.6-47.2 MB over 6 runs of the checkpoint program: two runs that agree
    by chance do not make a cell stable."""
    names_a = sorted(
        {p.name for p in data_files(advise_dir)}
        | set(calc.run_files(load(advise_dir / "p.json"), str(advise_dir), NOT_DATA))
    )
    a = calc.merge_bytes(
        calc.trace_bytes(trace.load(advise_dir / "p.json"), names_a),
        calc.profile_bytes(load(advise_dir / "p.json"), names_a),
    )
    repeats = []
    for i in range(ORIG_REPEATS):
        d = work / ("orig-repeat" if i == 0 else f"orig-repeat{i + 1}")
        shutil.rmtree(d, ignore_errors=True)
        d.mkdir()
        run_app(case, case.command(d), d, d / "p.json", traced=True)
        names_b = sorted(
            {p.name for p in data_files(d)}
            | set(calc.run_files(load(d / "p.json"), str(d), NOT_DATA))
        )
        traced, counted = trace.load(d / "p.json"), load(d / "p.json")
        repeats.append(calc.merge_bytes(calc.trace_bytes(traced, names_b),
                                        calc.profile_bytes(counted, names_b)))  # fmt: skip
    return {"bytes": calc.compare_bytes(a, repeats[0]), "bytes_second": repeats[0],
            "bytes_repeats": repeats}  # fmt: skip


def timed_variants(case: Case, work: Path, skel: dict, tuned: dict | None = None) -> dict:
    """The programs of the interleaved rounds: original (defaults), skeleton, adapt; with
    tuned (best.xml's settings, --time-tuned) the original under them as well."""
    v = {}
    runs = [("orig", {}), ("adapt", {"IOTUNE_MODE": "adaptive"})]
    if tuned:
        control = controlfile.write(work / "tuned.xml", tuned)
        runs.append(("tuned", {"IOTUNE_CONFIG": str(control)}))
    for name, extra in runs:
        d = work / f"t-{name}"
        d.mkdir(exist_ok=True)
        v[name] = (case.command(d), d, extra)
    if skel.get("argv"):
        d = work / "t-skel"
        d.mkdir(exist_ok=True)
        v["skel"] = ([*skel["argv"], "--dir", str(d / "data"), "--timing", str(d / "t.json")],
                     d, {})  # fmt: skip
    return v


def fresh(d: Path, argv: list[str]) -> None:
    """Empties a run's folder; makes the skeleton's --dir (it must exist)."""
    clean(d)
    if "--dir" in argv:
        Path(argv[argv.index("--dir") + 1]).mkdir(parents=True, exist_ok=True)


def one_timed(case: Case, argv: list[str], d: Path, extra: dict) -> tuple[float, str]:
    fresh(d, argv)
    run_app(case, argv, d, d / "p.json", extra)  # warm-up, discarded
    fresh(d, argv)
    os.sync()
    t, err = run_app(case, argv, d, d / "p.json", extra)
    return t, err


def adapt_record(case: Case, d: Path, stderr: str, row: dict) -> dict:
    prof = json.loads((d / "p.json").read_text())
    phases = (prof.get("adaptive") or {}).get("phases") or []
    applied = calc.applied_settings(phases)
    best = (row.get("tune") or {}).get("settings") or {}
    return {"applied": applied, "said": adaptmod.applied_per_file(phases),
            "recurring": calc.recurring(phases), "phases": len(phases),
            "against_best": calc.adapt_against_best(applied, best),
            "warnings": sorted({ln.strip() for ln in stderr.splitlines()
                                if "WARNING" in ln or "leaked" in ln})[:5]}  # fmt: skip


# ---------------------------------------------------------------------------------- main


def provenance(a, held: dict | None = None) -> dict:
    return {
        "command": " ".join(["python", *sys.argv]).replace(str(REPO) + "/", ""),
        "machine": {"node": platform.node(), "platform": platform.platform(),
                    "cpus": os.cpu_count(), "shared": a.shared},  # fmt: skip
        "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        "load_start": os.getloadavg(),
        "freed_memory": held,
        "corpus_dir": str(corpus.cache_dir()),
        "manifest": a.manifest,
        "trials": a.trials, "verify_pairs": a.verify_pairs, "rounds": a.rounds,
        "leaders": a.leaders, "repeat": a.repeat,
    }  # fmt: skip


def save(a, meta: dict, rows: list[dict]) -> None:
    meta = dict(meta, load_now=os.getloadavg(), saved=time.strftime("%Y-%m-%d %H:%M:%S %Z"))
    for r in rows:
        r["adapt_ok"], r["adapt_ok_by"] = calc.adapt_verdict(r)
    out = Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"meta": meta, "cases": rows}, indent=1, default=str) + "\n")
    out.with_suffix(".md").write_text(render(meta, rows))


def merge(outputs: list[dict]) -> tuple[dict, list[dict]]:
    """Several runs' outputs as one: per case, each step from the first run where it did not
    fail; meta: the first run's, with every run's meta under "runs"."""
    rows: dict[str, dict] = {}
    for out in outputs:
        for r in out["cases"]:
            base = rows.setdefault(r["case"], {})
            for k, v in r.items():
                if k not in base or (isinstance(base[k], dict) and "error" in base[k]):
                    base[k] = v
    for row in rows.values():  # the matches follow the steps kept
        best = (row.get("tune") or {}).get("settings") or {}
        for side in ("run", "log"):
            if f"advise_{side}" in row:
                row[f"advise_{side}_match"] = calc.names_best(best, row[f"advise_{side}"])
    first = outputs[0]["meta"]
    meta = dict(first, runs=[o["meta"] for o in outputs])
    meta["date"] = " / ".join(o["meta"]["date"] for o in outputs)
    meta["command"] = " ; ".join(o["meta"]["command"] for o in outputs)
    meta["load_start"] = [o["meta"]["load_start"] for o in outputs]
    meta["load_now"] = [o["meta"].get("load_now") for o in outputs]
    return meta, list(rows.values())


def render(meta: dict, rows: list[dict]) -> str:
    lines = [
        f"# Agreement table ({meta['date']}, {meta['machine']['node']})",
        "",
        f"Command: `{meta['command']}`; load average at start {meta['load_start']}, "
        f"at the last save {meta.get('load_now')}; {meta['machine']['shared']}",
        "",
    ]
    lines += calc.table_rows(rows)
    lines.append("")
    for kind in ("project", "corpus"):
        lines += ["- " + s for s in calc.summary_lines(calc.acceptance(rows, kind), kind)]
    clashes = calc.motif_clashes(rows)
    lines.append("- KB: distinct layouts/element types sharing a motif key: "
                 + ("; ".join(clashes) if clashes else "none"))  # fmt: skip
    return "\n".join(lines) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cases", help="comma-separated names (default: every case)")
    ap.add_argument("--kinds", default="project,corpus")
    ap.add_argument("--manifest", default=str(corpus.MANIFEST),
                    help="the corpus manifest (default corpus/cases.toml)")  # fmt: skip
    ap.add_argument("--trials", type=int, default=6)
    ap.add_argument("--verify-pairs", type=int, default=6)
    ap.add_argument("--leaders", type=int, default=1, help="tune's --leaders (default 1)")
    ap.add_argument("--repeat", type=int, default=1, help="tune's --repeat (default 1)")
    ap.add_argument("--rounds", type=int, default=5, help="interleaved timing rounds")
    ap.add_argument("--time-tuned", action="store_true",
                    help="also time the original under tune's best.xml in the rounds: adapt's "
                    "share is then taken against that speedup, measured in the same rounds "
                    "(default: against the study's headline)")  # fmt: skip
    ap.add_argument("--darshan-lib", help="libdarshan.so of a Darshan runtime (default: none)")
    ap.add_argument("--hold-freed-memory", action="store_true")
    ap.add_argument(
        "--shared",
        default="machine shared with other engineers' work",
        help="what else ran on the machine (recorded)",
    )
    ap.add_argument("--smoke", action="store_true", help="one tiny kernel, 2 trials, 1 round")
    ap.add_argument("--seed", type=int, default=22)
    ap.add_argument("--workdir", help="scratch (default: a new temporary folder, removed)")
    ap.add_argument("--out", default=str(HERE / "agreement.json"))
    ap.add_argument("--table", metavar="JSON", help="only render the table of a previous run")
    ap.add_argument("--merge", metavar="JSON", nargs="+",
                    help="combine outputs of several runs (e.g. one per kind, one adding Darshan) "
                    "into --out: a case's steps are the first run's that did not fail; the runs' "
                    "meta are kept (default: none)")  # fmt: skip
    ap.add_argument("--reuse", metavar="JSON", help="a previous output: keep its rows' steps that "
                    "did not fail and run only the others (e.g. --darshan-lib LIB --rounds 0 "
                    "adds advise on a Darshan log); default: none")  # fmt: skip
    a = ap.parse_args()
    if a.table:
        data = json.loads(Path(a.table).read_text())
        print(render(data["meta"], data["cases"]), end="")
        return 0
    if a.merge:
        meta, rows = merge([json.loads(Path(p).read_text()) for p in a.merge])
        meta["merged_from"] = a.merge
        save(a, meta, rows)
        print(Path(a.out).with_suffix(".md").read_text(), end="")
        return 0
    if a.smoke:
        a.trials, a.verify_pairs, a.kinds = 2, 5, "project"
        a.rounds = min(a.rounds, 1)
    # absolute: the steps run in subfolders of it
    scratch = Path(a.workdir or tempfile.mkdtemp(prefix="agreement-")).resolve()
    scratch.mkdir(parents=True, exist_ok=True)
    a.kb = scratch / "kb.sqlite"
    kinds = a.kinds.split(",")
    cases: list[Case] = []
    rows: list[dict] = []
    if "project" in kinds:
        cases += project_cases(scratch, a.smoke)
    if "corpus" in kinds:
        built, missing = corpus_cases(Path(a.manifest))
        cases += built
        rows += missing
    if a.cases:
        wanted = a.cases.split(",")
        cases = sorted((c for c in cases if c.name in wanted), key=lambda c: wanted.index(c.name))
        rows = [r for r in rows if r["case"] in wanted]
    # SIGTERM (a timeout, a kill) ends like Ctrl-C: what was measured is saved, the hold released
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    with freedmem.maybe_hold(a.hold_freed_memory) as held:
        meta = provenance(a, held)
        try:
            old = {}
            if a.reuse:
                old = {r["case"]: r for r in json.loads(Path(a.reuse).read_text())["cases"]}
                meta["reused"] = {
                    "from": a.reuse,
                    "meta": json.loads(Path(a.reuse).read_text())["meta"],
                }
            measure(a, cases, rows, scratch, meta, old)
        finally:
            save(a, meta, rows)
            if not a.workdir:
                shutil.rmtree(scratch, ignore_errors=True)
    print(Path(a.out).with_suffix(".md").read_text())
    return 0


def update_ratios(setups: dict, times: dict) -> None:
    """Skeleton/original time and adapt's speedup from the pairs measured so far."""
    for n, (_case, _v, row) in setups.items():
        tm = times[n]
        row["times"] = tm
        sk = row.get("skel")
        if isinstance(sk, dict) and "error" not in sk:
            sk["time"] = calc.paired_ratio(tm["orig"], tm["skel"])
            sk["time_within"] = calc.within(sk["time"]["median"])
        ad = row.get("adapt")
        if isinstance(ad, dict) and "error" not in ad:
            ad["speedup_ratio"] = calc.paired_ratio(tm["adapt"], tm["orig"])
            tune_s = (row.get("tune") or {}).get("speedup")
            rec = (row.get("tune") or {}).get("recommends")
            if tm.get("tuned"):  # best.xml timed in the same rounds: the share against it
                row["tuned_timed"] = calc.paired_ratio(tm["tuned"], tm["orig"])
                tune_s = row["tuned_timed"]["median"]
                ad["share_basis"] = "best.xml timed in the same rounds"
            ad["share"] = (calc.adapt_share(tune_s, ad["speedup_ratio"]["median"])
                           if rec else None)  # fmt: skip


def measure(a, cases: list[Case], rows: list[dict], scratch: Path, meta: dict,
            old: dict) -> None:  # fmt: skip
    setups = {}
    for case in cases:
        work = scratch / case.name
        if case.name not in old:  # a reused row's scratch is kept (its skeleton)
            shutil.rmtree(work, ignore_errors=True)
        work.mkdir(parents=True, exist_ok=True)
        row: dict = {"case": case.name, "kind": case.kind, "family": case.family,
                     "ranks": case.ranks, "about": case.about,
                     "command": [*launcher(case), *case.command(Path("WORKDIR"))]}  # fmt: skip
        if case.name in old:
            row = json.loads(json.dumps(old[case.name]))
        rows.append(row)
        print(f"agreement: {case.name}: tune", flush=True)
        steps = [
            ("tune", functools.partial(step_tune, case, work, a)),
            ("advise_run", functools.partial(step_advise, case, work / "advise")),
            ("kb", functools.partial(step_kb, work, work / "advise")),
            ("skel", functools.partial(step_skel_prepare, case, work, work / "advise")),
            ("orig_repeat", functools.partial(step_orig_repeat, case, work, work / "advise")),
        ]
        if a.darshan_lib:
            steps.insert(2, ("advise_log", functools.partial(step_advise_log, case, work,
                                                             a.darshan_lib)))  # fmt: skip
        for name, fn in steps:
            if isinstance(row.get(name), dict) and "error" not in row[name]:
                continue  # reused
            t0 = time.time()
            try:
                row[name] = fn()
            except (OSError, ValueError, RuntimeError, subprocess.SubprocessError) as e:
                row[name] = {"error": str(e)[-600:]}
            row.setdefault("seconds", {})[name] = round(time.time() - t0, 1)
            save(a, meta, rows)
        best = (row.get("tune") or {}).get("settings") or {}
        for side in ("run", "log"):
            if f"advise_{side}" in row:
                row[f"advise_{side}_match"] = calc.names_best(best, row[f"advise_{side}"])
        if a.rounds:
            tuned = (row.get("tune") or {}).get("settings") if a.time_tuned else None
            setups[case.name] = (case, timed_variants(case, work, row.get("skel") or {}, tuned),
                                 row)  # fmt: skip
    # the interleaved rounds
    rng = random.Random(a.seed)
    times: dict[str, dict[str, list]] = {n: {"orig": [], "skel": [], "adapt": [], "tuned": []}
                                         for n in setups}  # fmt: skip
    for rnd in range(a.rounds):
        names = list(setups)
        rng.shuffle(names)
        for n in names:
            case, variants, row = setups[n]
            order = list(variants)
            rng.shuffle(order)
            for which in order:
                argv, d, extra = variants[which]
                try:
                    t, err = one_timed(case, argv, d, extra)
                except (OSError, ValueError, RuntimeError, subprocess.SubprocessError) as e:
                    t, err = None, ""
                    row.setdefault("timing_errors", []).append(f"{which}: {str(e)[-300:]}")
                times[n][which].append(t)
                if which == "adapt" and t is not None:
                    try:
                        row["adapt"] = adapt_record(case, d, err, row)
                    except (OSError, ValueError, KeyError) as e:
                        row["adapt"] = {"error": str(e)}
                update_ratios(setups, times)
                save(a, meta, rows)  # after each run: a stopped bench keeps its pairs
        print(f"agreement: round {rnd + 1}/{a.rounds} done", flush=True)


if __name__ == "__main__":
    sys.exit(main())
