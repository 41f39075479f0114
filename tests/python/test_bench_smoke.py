"""Every bench of bench/ runs on a fresh set-up at a tiny size (issue 26 item 5).

Each bench folder's script runs under a timeout with the runtime's build (its MPI's own
mpiexec and mpicc: bench/common/mpitools.py), its output into tmp_path (never into the
repository); the test asserts exit 0 and that the output it names parses. A bench that cannot
run here at a tiny size is in SKIPPED with the reason; every folder is in one of the two.
"""

import csv
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import BENCH, BUILD, REPO, mpi_info

TIMEOUT = 90  # seconds per bench; each takes a few seconds to ~20 s on the 2-core VM
# benches that chain several commands even at their tiny size (agreement: a study, advise, a
# skeleton and adapt: ~50 s here, more on a loaded machine)
TIMEOUTS = {"agreement": 240, "hdf5_new_params": 240}

# folder: (arguments, output file to parse); {out} is the test's tmp_path
SMOKE = {
    "adapt_phases": (["--rounds", "1", "--cases", "vorpal", "--configs", "base", "--warmup", "0",
                      "--out", "{out}", "--name", "smoke"], "smoke.csv"),
    "advise_gain": (["--rounds", "1", "--cases", "gcrm-write", "--out", "{out}"],
                    "advise_gain.csv"),
    "advise_scale": (["--sizes", "100", "--namings", "per_process", "--out", "{out}/a.json"],
                     "a.json"),
    # each new HDF5 parameter once, tiny programs: pip's HDF5 2.0 (when its venv is there),
    # Debian's 1.10.8 serially and GCRM-IO on 2 ranks
    "hdf5_new_params": (["--smoke", "--out", "{out}/h.json"], "h.json"),
    "kb_each_setting": (["--rounds", "1", "--out", "{out}/k.json"], "k.json"),
    "kb_warmstart": (["--seeds", "1", "--kernels", "gcrmio", "--out", "{out}/k.json"], "k.json"),
    # two files of one landscape as one group of rounds (a round per file)
    "landscape_stats": (["landscape-ompio-vorpalio.csv,landscape-ompio-vorpalio-round1.csv",
                         "--out", "{out}/l.json"], "l.json"),
    "overhead": (["--rounds", "1", "--cases", "hdf5-small-writes", "--out", "{out}/o.json"],
                 "o.json"),
    "replay": (["--seeds", "1", "--strategies", "tpe", "--out", "{out}/r.json"], "r.json"),
    "second_gain": (["--rounds", "1", "--out", "{out}/s.json"], "s.json"),
    "scale_profile": (["--before", "{lib}", "--after", "{lib}", "--ranks", "2", "--hosts", "1",
                       "--out", "{out}/s.json"], "s.json"),
    "scale_trace": (["--lib", "{lib}", "--ranks", "2", "--hosts", "1", "--out", "{out}/s.json"],
                    "s.json"),
    "scale_runtime": (["--rounds", "1", "--files", "1", "--ranks", "1", "--out", "{out}/s.json"],
                      "s.json"),
    "storage_load": (["--workers", "1", "--budget", "2", "--trial-s", "0.01", "--kinds",
                      "journal", "--out", "{out}/s.json"], "s.json"),
    "tracevol": (["--baseline", "{lib}", "--no-cost", "--out", "{out}/t.json"], "t.json"),
    "advise_agreement": (["--cases", "vorpalio-write", "--out", "{out}/a.json"], "a.json"),
    "agreement": (["--smoke", "--out", "{out}/a.json"], "a.json"),
    "h5py_serial_read": (["--rows", "256", "--cols", "256", "--chunk", "64", "--rounds", "1",
                          "--config", "{empty}", "--dir", "{out}", "--out", "{out}/h.json"],
                         "h.json"),
    "kb_suggest": (["--trials", "2", "--rounds", "1", "--study-args", "--cells 2048",
                    "--new-args", "--cells 4096", "--out", "{out}/k.json"], "k.json"),
    "skel_fidelity": (["--smoke", "--out", "{out}/s.json"], "s.json"),
    "skel_prepare_ab": (["--smoke", "--out", "{out}/s.json"], "s.json"),
    # the corpus's smallest case (none when the corpus is not built: an empty record)
    "skel_corpus": (["--cases", "h5perf-posix", "--rounds", "1", "--sizes", "large", "--inner",
                     "2", "--inner-below", "1000", "--out", "{out}/s.json"], "s.json"),
    "skel_tune": (["--args", "--cells 2048 --levels 2 --chunk-cells 512", "--trials", "1",
                   "--repeats", "1", "--verify-pairs", "5", "--out", "{out}/s.json"], "s.json"),
    "verify_power": (["measure", "--kernel", "gcrmio", "--rounds", "1", "--out", "{out}"],
                     "verify-gcrmio.json"),
    # any program: a command template, a space of spaces/, a set-up run, a scratch dir per run
    "measure_landscape": (["--smoke", "--out", "{out}", "--label", "vorpalio-read", "--space",
                           "grid-vorpalio-read.toml", "--objective", "kernel", "--isolate",
                           "--setup", "{{mpiexec}} {{kernels}}/vorpalio --block 16,16,8 "
                           "--file {{work}}/v.h5",
                           "--command", "{{mpiexec}} {{kernels}}/vorpalio --block 16,16,8 "
                           "--file {{work}}/v.h5 --read-only"], "landscape.csv"),
    "callcost": (["--smoke", "--out", "{out}/c.json"], "c.json"),
    # both readers over a directory (here the test's own: no HDF5 file in it)
    "h5dump_reader": (["{out}", "--out", "{out}/h.json"], "h.json"),
    "minimal": (["--kernel", "gcrmio", "--trials", "2", "--rounds", "1", "--out", "{out}",
                 "--tune-args=--verify-pairs 5 --leaders 1 --repeat 1 --warmup 0"],
                "minimal-gcrmio.json"),
    "ompio_study": (["--trials", "2", "--verify-pairs", "5", "--rounds", "1", "--studies",
                     "mpich", "--out", "{out}"], "remeasure.json"),
    # root: drops the page cache, holds freed memory; two 5 s pauses
    "memory_modes": (["--rounds", "1", "--particles", "64K", "--out", "{out}/m.json"], "m.json"),
    # root: holds freed memory (a sysfs parameter) around a command that writes the output
    "freed_memory": (["--", sys.executable, "-c", "open('f.json', 'w').write('{{}}')"],
                     "f.json"),
}  # fmt: skip

SKIPPED = {
    "common": "shared helpers (mpitools.py), no bench of its own",
    "kb_defaults": "raw runs of `iotune defaults` (the CLI, tested in test_defaults*), no script",
    "dxt_size": "needs a Darshan build (libdarshan.so with DXT, darshan-dxt-parser)",
    "real_apps": "clones and builds IOR and h5bench from the network: minutes, not a smoke run",
    "demo_verdicts": "each run is a whole `iotune tune --demo` (6.5 min here, docs/tune.md)",
    "screen_real": "whole `iotune tune` studies of kernels and corpus programs, two versions of "
    "the tuner each (minutes a study)",
    "cephfs_striping": "a recorded `iotune tune` study on the CephFS of scripts/cephfs.sh (the "
    "command in its README); striping on CephFS is tested in test_striping.py",
}

OMPI_ROOT = ("OMPI_ALLOW_RUN_AS_ROOT", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM")
PLAIN_MPI_TOOL = re.compile(r"""["'](mpiexec|mpirun|mpicc)["']""")
NEED_ROOT = {"freed_memory", "memory_modes"}  # skipped, with the reason, when not root
NEED_TOOL = {"callcost": "valgrind"}  # skipped, with the reason, without the tool


def bench_folders() -> list[str]:
    return sorted(p.name for p in BENCH.iterdir() if p.is_dir())


def test_every_bench_folder_is_smoked_or_skipped_with_a_reason():
    folders = set(bench_folders())
    assert folders == set(SMOKE) | set(SKIPPED), "a bench folder with no smoke run nor reason"
    assert not set(SMOKE) & set(SKIPPED)
    for name in SMOKE:
        assert (BENCH / name / f"{name}.py").is_file(), f"bench/{name}/ has no {name}.py"


def test_no_bench_calls_a_plain_mpi_tool():
    """Plain mpiexec/mpicc are whichever MPI the system chose (Open MPI's on Debian with both):
    a bench takes its runtime's MPI's own (bench/common/mpitools.py)."""
    for script in sorted(BENCH.glob("*/*.py")):
        if script.parent.name == "common":
            continue
        found = PLAIN_MPI_TOOL.findall(script.read_text())
        assert not found, f"{script.relative_to(REPO)} calls plain {found}: use mpitools"


def parses(path: Path) -> None:
    """The output is complete: JSON loads, a CSV has its header and at least one row."""
    text = path.read_text()
    if path.suffix == ".json":
        json.loads(text)
    elif path.suffix == ".csv":
        rows = list(csv.DictReader(text.splitlines()))
        assert rows, f"{path.name}: no rows"
    else:
        assert text.strip(), f"{path.name} is empty"


@pytest.mark.parametrize("name", sorted(SMOKE))
def test_bench_runs_at_a_tiny_size(name, tmp_path, libiotune):
    if name in NEED_ROOT and os.geteuid() != 0:
        pytest.skip(f"bench/{name} needs root")
    if name in NEED_TOOL and not shutil.which(NEED_TOOL[name]):
        pytest.skip(f"bench/{name} needs {NEED_TOOL[name]}")
    # As on a fresh machine: Open MPI's permission to run as root (conftest sets it for the
    # tests) hid an MPICH-built runtime's bench run under Open MPI's plain mpiexec
    mpich = mpi_info(BUILD).get("family") == "mpich"
    args, output = SMOKE[name]
    empty = tmp_path / "empty.xml"
    empty.write_text("<Parameters></Parameters>\n")
    args = [a.format(out=tmp_path, lib=libiotune, empty=empty) for a in args]
    env = {
        **{k: v for k, v in os.environ.items() if k not in OMPI_ROOT or not mpich},
        "PYTHONPATH": str(REPO / "src"),
        "IOTUNE_BUILD_DIR": str(BUILD),
        "IOTUNE_LIB": str(libiotune),
        "IOTUNE_KERNELS_DIR": str(BUILD / "kernels"),
    }
    before = subprocess.run(["git", "-C", str(REPO), "status", "--porcelain", "bench"],
                            capture_output=True, text=True).stdout  # fmt: skip
    r = subprocess.run([sys.executable, str(BENCH / name / f"{name}.py"), *args], cwd=tmp_path,
                       env=env, capture_output=True, text=True,
                       timeout=TIMEOUTS.get(name, TIMEOUT))  # fmt: skip
    assert r.returncode == 0, f"bench/{name} failed:\n{r.stdout[-1500:]}\n{r.stderr[-3000:]}"
    parses(tmp_path / output)
    after = subprocess.run(["git", "-C", str(REPO), "status", "--porcelain", "bench"],
                           capture_output=True, text=True).stdout  # fmt: skip
    assert after == before, f"bench/{name} wrote into the repository:\n{after}"


def _mpitools():
    import importlib.util

    spec = importlib.util.spec_from_file_location("mpitools", BENCH / "common" / "mpitools.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize(
    ("family", "info", "launch", "env", "cc"),
    [
        ("mpich", {"mpiexec": "/usr/bin/mpiexec.mpich", "mpicc": "/usr/bin/mpicc.mpich"},
         ["/usr/bin/mpiexec.mpich", "-n", "2"], ["-genv", "A", "b c"], "/usr/bin/mpicc.mpich"),
        ("openmpi", {"mpiexec": "/usr/bin/mpiexec.openmpi", "preflags": ["--oversubscribe"],
                     "mpicc": "/usr/bin/mpicc.openmpi"},
         ["/usr/bin/mpiexec.openmpi", "--oversubscribe", "-n", "2"], ["-x", "A=b c"],
         "/usr/bin/mpicc.openmpi"),
    ],
)  # fmt: skip
def test_mpitools_gives_the_runtime_mpis_own_tools(monkeypatch, family, info, launch, env, cc):
    from iotune import paths

    mt = _mpitools()
    build = paths.Build(family, Path("/x/libiotune.so"), None, "test", info)
    monkeypatch.setattr(mt, "runtime_build", lambda: build)
    assert mt.mpiexec(2) == launch
    assert mt.env_flags("A", "b c") == env
    assert mt.mpicc() == cc
    assert mt.hdf5_pkg() == f"hdf5-{family}"


def _measure_landscape():
    import importlib.util

    path = BENCH / "measure_landscape" / "measure_landscape.py"
    spec = importlib.util.spec_from_file_location("measure_landscape", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_measure_landscape_expands_a_command_template(tmp_path):
    """{mpiexec} becomes the build's launcher words, {work} the measurement's directory; the
    rest of the template is split like a shell line."""
    from iotune import paths

    ml = _measure_landscape()
    info = {"mpiexec": "/usr/bin/mpiexec.openmpi", "preflags": ["--oversubscribe"]}
    build = paths.Build("openmpi", Path("/x/libiotune.so"), None, "test", info)
    got = ml.expand("{mpiexec} /opt/ior -o '{work}/a b.h5' -w", build, 2, tmp_path)
    assert got == ["/usr/bin/mpiexec.openmpi", "--oversubscribe", "-n", "2", "/opt/ior", "-o",
                   f"{tmp_path}/a b.h5", "-w"]  # fmt: skip


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--command", "true"], "--command needs --space and --label"),
        (["--space", "grid-gcrmio.toml"], "go with --command"),
        (["--command", "true", "--label", "x", "--space", "no-such.toml"], "no-such.toml"),
    ],
)
def test_measure_landscape_refuses_incomplete_arguments_in_one_line(args, message, tmp_path):
    script = BENCH / "measure_landscape" / "measure_landscape.py"
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    r = subprocess.run([sys.executable, str(script), "--out", str(tmp_path), *args],
                       capture_output=True, text=True, env=env, timeout=60)  # fmt: skip
    assert r.returncode == 2, r.stderr
    assert message in r.stderr and "Traceback" not in r.stderr
    assert not list(tmp_path.iterdir()), "nothing is written before the arguments are checked"
