"""Real h5py programs (tests/python/h5py_app.py), parallel (mpi4py, driver "mpio") and serial,
run with and without libiotune.so and a valid control file: the same exit status, output
(exception types and messages included), data (h5diff) and file structure (h5dump -p -H).
What MPI prints by itself on stderr is compared with the program given the control file's
hints without the runtime (ROMIO_HINTS): a hint may change it, the runtime must not.

Skipped only when h5py is not importable.
"""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO, VECTORS, run_mpi

h5py = pytest.importorskip(
    "h5py", reason="h5py is not installed: scripts/install.sh builds it (unless IOTUNE_NO_H5PY)"
)
pytest.importorskip("mpi4py", reason="mpi4py is not installed: scripts/install.sh builds it")

from iotune import profile as prof  # noqa: E402

APP = Path(__file__).with_name("h5py_app.py")
DATA = REPO / "tests" / "data"
# valid control files: every registry parameter; the documented example; one layer each
PROBE_ALL = DATA / "probe_all.xml"
CONFIGS = {
    "probe_all": PROBE_ALL,
    "full": VECTORS / "good_full.xml",
    "hdf5_all": VECTORS / "good_hdf5_all.xml",
    "mpiio_all": VECTORS / "good_mpiio_all.xml",
    # probe_all's HDF5 settings that have a meaning for serial files, with serial_files on
    "serial_opt_in": DATA / "serial_opt_in.xml",
}
PFR = "<romio_cb_pfr>enable</romio_cb_pfr>"


@pytest.fixture(scope="module", autouse=True)
def _h5py_is_built_against_the_runtimes_hdf5():
    """A binary wheel brings its own HDF5, which the preload never sees: every test would pass
    without testing anything."""
    defs = next(Path(h5py.__file__).parent.glob("defs*.so"))
    ldd = subprocess.run(["ldd", str(defs)], capture_output=True, text=True, timeout=60).stdout
    assert "libhdf5_mpich.so" in ldd, f"h5py is not linked to MPICH's HDF5:\n{ldd}"
    assert h5py.get_config().mpi


def run_app(tmp: Path, args, *, mpio: bool, lib=None, config=None, env=None):
    """Runs h5py_app.py in tmp (2 ranks with --mpio, else one process); lib preloads the
    runtime, config names the control file."""
    tmp.mkdir(parents=True, exist_ok=True)
    argv = [sys.executable, APP, *map(str, args)]
    if mpio:
        return run_mpi(2, [*argv, "--mpio"], cwd=tmp, preload=lib, config=config, env=env,
                       check=False)  # fmt: skip
    full = {k: v for k, v in os.environ.items() if not k.startswith("IOTUNE_")}
    full.pop("LD_PRELOAD", None)
    if lib:
        full["LD_PRELOAD"] = str(lib)
    if config:
        full["IOTUNE_CONFIG"] = str(config)
    full.update(env or {})
    return subprocess.run(list(map(str, argv)), cwd=tmp, env=full, capture_output=True,
                          text=True, timeout=120)  # fmt: skip


def layout(path: Path, storage: bool = True) -> list[str]:
    """h5dump -p -H of a file without what a control file may legitimately change: where
    objects sit and how much room they take (alignment, metadata block sizes), when space is
    allocated and filled (fill_time, alloc_time), and with storage=False whether and how
    datasets are chunked (chunk, chunk_size)."""
    dump = subprocess.run(["h5dump", "-p", "-H", str(path)], capture_output=True, text=True,
                          timeout=60)  # fmt: skip
    assert dump.returncode == 0, dump.stderr
    drop = r"^\s*(OFFSET|SIZE|FILL_TIME|ALLOCATION_TIME|HDF5 \")"
    if not storage:
        drop += r"|^\s*(CHUNKED|CONTIGUOUS|COMPACT)\b"
    return [ln for ln in dump.stdout.splitlines() if not re.match(drop, ln)]


def assert_same_files(base: Path, tuned: Path, storage: bool = True) -> None:
    names = sorted(p.name for p in base.glob("*.h5"))
    assert names == sorted(p.name for p in tuned.glob("*.h5"))
    for name in names:
        diff = subprocess.run(["h5diff", base / name, tuned / name], capture_output=True,
                              text=True, timeout=60)  # fmt: skip
        assert diff.returncode == 0 and "not comparable" not in diff.stdout, (name, diff.stdout)
        assert layout(base / name, storage) == layout(tuned / name, storage), name


_baselines: dict = {}


def baseline(tmp_path_factory, scenario, mpio):
    """The program without the runtime, run once per scenario and mode."""
    key = (scenario, mpio)
    if key not in _baselines:
        where = tmp_path_factory.mktemp(f"base-{scenario}-{'mpio' if mpio else 'serial'}")
        _baselines[key] = (where, run_app(where, [scenario], mpio=mpio))
    return _baselines[key]


def control_file(name: str, tmp_path: Path, scenario: str = "") -> Path:
    """The control file of CONFIGS[name]. For the data scenario, without a forced collective
    transfer mode: its append step writes from rank 0 alone, and a collective H5Dwrite on one
    rank waits for the others for ever (a tuner forces collective only where every rank makes
    the same calls; docs/control-file.md)."""
    config = CONFIGS[name]
    text = config.read_text()
    forced = re.compile(r"^.*<transfer_mode>\s*collective\s*</transfer_mode>.*\n", re.M)
    if scenario != "data" or not forced.search(text):
        return config
    derived = tmp_path.parent / f"{name}-{tmp_path.name}-no-collective.xml"
    derived.write_text(forced.sub("", text))
    return derived


def sets_chunking(config: Path) -> bool:
    """Whether a control file chunks datasets: their storage layout then differs by design."""
    from iotune import controlfile

    return any(s.name in ("chunk", "chunk_size") for s in controlfile.parse_file(config).settings)


def compare(tmp_path, tmp_path_factory, libiotune, scenario, config, mpio):
    base_dir, base = baseline(tmp_path_factory, scenario, mpio)
    assert base.returncode == 0, base.stderr
    config = control_file(config, tmp_path, scenario)
    run = run_app(tmp_path, [scenario], mpio=mpio, lib=libiotune, config=config)
    assert (run.returncode, run.stdout) == (base.returncode, base.stdout)
    # what MPI prints itself is what it prints with the same hints and no runtime: hints may
    # change it (romio_no_indep_rw: test_a_deferred_open_of_a_missing_file_is_not_tried_again)
    own = hints_baseline(tmp_path_factory, scenario, config) if mpio else base
    # the one line per parameter the docs promise when the control file replaces a value the
    # application set itself (docs/control-file.md, "The control file wins"); nothing else
    said = [x for x in run.stderr.splitlines(True) if x.startswith("iotune: ")
            and x.rstrip().endswith("(the control file wins; docs/control-file.md)")]  # fmt: skip
    assert len({x.split("=")[0].split()[-1] for x in said}) == len(said), said
    assert "".join(x for x in run.stderr.splitlines(True) if x not in said) == own.stderr
    assert_same_files(base_dir, tmp_path, storage=not sets_chunking(config))


# ----------------------------------------------------------------------------- errors


@pytest.mark.parametrize("mpio", [True, False])
def test_the_errors_scenario_meets_the_exceptions_the_issue_lists(tmp_path_factory, mpio):
    """Without the runtime: the exception types h5py programs rely on (with the MPI-IO driver
    a missing or existing file is reported by MPI_File_open, without errno: OSError)."""
    _, base = baseline(tmp_path_factory, "errors", mpio)
    assert base.returncode == 0, base.stderr
    out = base.stdout
    assert "append on a missing file: ok [0, 1, 2, 3]" in out
    missing, exists = ("OSError", "OSError") if mpio else ("FileNotFoundError", "FileExistsError")
    assert f"open a missing file: {missing} " in out
    assert "dataset created twice: ValueError" in out
    assert "missing name: KeyError" in out
    assert f'mode "x" on an existing file: {exists} ' in out
    assert "write to a read-only file: OSError Can't write data" in out
    assert "read with an impossible conversion: OSError Can't read data" in out
    assert "RuntimeError" not in out and "errors: done" in out


@pytest.mark.parametrize(
    "config, mpio",
    [
        ("probe_all", True),
        ("full", True),
        ("hdf5_all", True),
        ("mpiio_all", True),
        ("probe_all", False),
        ("full", False),
        ("serial_opt_in", False),
    ],
)
def test_errors_are_the_applications(tmp_path, tmp_path_factory, libiotune, config, mpio):
    compare(tmp_path, tmp_path_factory, libiotune, "errors", config, mpio)


def romio_hints(config: Path, where: Path) -> Path:
    """The control file's MPI-IO hints as a ROMIO_HINTS file: the same hints given to MPI
    without the runtime."""
    from iotune import controlfile, params

    lines = []
    for s in controlfile.parse_file(config).settings:
        p = params.find(s.name)
        if s.layer in ("mpiio", "fs") and (p is None or p.is_hint):
            lines.append(f"{s.name} {s.value}\n")
    path = where / "romio-hints"
    path.write_text("".join(lines))
    return path


def hints_baseline(tmp_path_factory, scenario, config: Path):
    """The program without the runtime, its MPI given the control file's hints itself (once
    per scenario and control file)."""
    key = (scenario, "hints", str(config))
    if key not in _baselines:
        where = tmp_path_factory.mktemp(f"hints-{scenario}-{config.stem}")
        env = {"ROMIO_HINTS": str(romio_hints(config, where))}
        _baselines[key] = run_app(where, [scenario], mpio=True, env=env)
    return _baselines[key]


def test_a_deferred_open_of_a_missing_file_is_not_tried_again(tmp_path, tmp_path_factory,
                                                              libiotune):  # fmt: skip
    """romio_no_indep_rw=true (a deferred open: only aggregators open the file) changes what
    MPICH prints for h5py's failed opens, by itself: the other ranks get rank 0's error code and
    MPICH calls it invalid. The runtime must add nothing to that: a missing file is reported to
    the aggregator as such and to the others as a generic I/O error, and the open must not be
    tried again without the hints (each try leaves MPI error entries that shift the codes)."""
    config = tmp_path / "no_indep_rw.xml"
    config.write_text("<?xml version='1.0'?>\n<Parameters><Middleware_Layer><romio_no_indep_rw>"
                      "true</romio_no_indep_rw></Middleware_Layer></Parameters>\n")  # fmt: skip
    _, base = baseline(tmp_path_factory, "errors", True)
    own = hints_baseline(tmp_path_factory, "errors", config)
    run = run_app(tmp_path / "run", ["errors"], mpio=True, lib=libiotune, config=config)
    assert (run.returncode, run.stdout) == (base.returncode, base.stdout)
    assert "Invalid error code" in own.stderr and own.stderr != base.stderr  # MPICH's own doing
    assert run.stderr == own.stderr


# ----------------------------------------------------------------------------- data


@pytest.mark.parametrize(
    "config, mpio",
    [
        ("probe_all", True),
        ("full", True),
        ("hdf5_all", True),
        ("mpiio_all", True),
        ("probe_all", False),
        ("full", False),
        ("serial_opt_in", False),
    ],
)
def test_data_output_and_layout_are_unchanged(tmp_path, tmp_path_factory, libiotune, config,
                                              mpio):  # fmt: skip
    compare(tmp_path, tmp_path_factory, libiotune, "data", config, mpio)


def test_romio_pfr(tmp_path, tmp_path_factory, libiotune):
    """romio_cb_pfr=enable makes ROMIO of MPICH 4.0.2 abort collective I/O (ADIOI_Build_client_reqs
    assertion; the C kernels too): the registry refuses it, so the application runs on."""
    config = tmp_path.parent / "pfr.xml"
    config.write_text(f"<Parameters><Middleware_Layer>{PFR}</Middleware_Layer></Parameters>")
    base_dir, base = baseline(tmp_path_factory, "data", True)
    run = run_app(tmp_path, ["data"], mpio=True, lib=libiotune, config=config)
    assert (run.returncode, run.stdout) == (base.returncode, base.stdout)


# ----------------------------------------------------------------------------- chunk cache


def _cache_lines(run) -> dict[str, str]:
    assert run.returncode == 0, run.stderr
    return dict(ln.split(": ", 1) for ln in run.stdout.splitlines() if ": " in ln)


def test_chunk_cache_defaults_without_the_runtime(tmp_path):
    lines = _cache_lines(run_app(tmp_path, ["cache"], mpio=True))
    assert lines["created"] == lines["opened"] == "(521, 1048576, 0.75)"


def test_a_created_dataset_has_the_control_files_chunk_cache(tmp_path, libiotune):
    # probe_all.xml: chunk_cache_bytes 4MiB, chunk_cache_slots 1009, chunk_cache_w0 0.5
    run = run_app(tmp_path, ["cache"], mpio=True, lib=libiotune, config=PROBE_ALL)
    assert _cache_lines(run)["created"] == "(1009, 4194304, 0.5)"


def test_a_dataset_opened_as_f_name_has_the_control_files_chunk_cache(tmp_path, libiotune):
    run = run_app(tmp_path, ["cache"], mpio=True, lib=libiotune, config=PROBE_ALL)
    assert _cache_lines(run)["opened"] == "(1009, 4194304, 0.5)"


def test_a_group_opened_as_f_name_is_not_reported_as_a_dataset(tmp_path, libiotune):
    """h5py opens groups and datasets alike (H5Oopen): the runtime gives the open its dataset
    access settings before it knows which it is, and the verbose report listed the groups as
    datasets with a chunk cache (an outside tester). It now reports datasets only."""
    run = run_app(tmp_path, ["cache"], mpio=True, lib=libiotune, config=PROBE_ALL,
                  env={"IOTUNE_VERBOSE": "1"})  # fmt: skip
    assert _cache_lines(run)["group"] == "Group"
    reported = [ln for ln in run.stderr.splitlines() if ": hdf5 dataset access:" in ln]
    assert reported and all("cache.h5:/grid2:" in ln for ln in reported), run.stderr


# ----------------------------------------------------------------------------- counting


MANY = 5000


@pytest.fixture(scope="module")
def many_run(tmp_path_factory, libiotune):
    """5,000 datasets written one after another, each released by reference count."""
    where = tmp_path_factory.mktemp("many")
    run = run_app(where, ["many", MANY], mpio=False, lib=libiotune,
                  env={"IOTUNE_PROFILE": str(where / "p.json")})  # fmt: skip
    return where, run


def test_many_datasets_released_by_reference_count_run_as_without_the_runtime(many_run):
    where, run = many_run
    assert run.returncode == 0, run.stderr
    assert run.stdout == f"many: {MANY} datasets of 128 bytes\nfiles: ['many.h5']\n"
    assert prof.load(where / "p.json").data_files[0]["name"] == "many.h5"


def test_many_datasets_released_by_reference_count_leave_stderr_alone(many_run):
    _, run = many_run
    assert run.stderr == ""  # today: "iotune: more than 4096 datasets open: ..."


def test_many_datasets_released_by_reference_count_are_counted_exactly(many_run):
    where, _ = many_run
    (f,) = prof.load(where / "p.json").data_files
    h = f["hdf5"]
    assert (h["dataset_creates"], h["writes"], h["bytes_written"]) == (MANY, MANY, MANY * 128)
    assert (h["file_creates"], h["file_closes"]) == (1, 1)


# ----------------------------------------------------------------------------- profile


def test_the_profile_of_a_python_program_shows_its_data_files_and_no_interpreter_files(
    tmp_path, libiotune
):
    env = {k: v for k, v in os.environ.items() if not k.startswith("IOTUNE_")}
    env.update(IOTUNE_LIB=str(libiotune), PYTHONPATH=str(REPO / "src"))
    out = tmp_path / "p.json"
    cmd = [sys.executable, "-m", "iotune", "profile", "--out", str(out), "--", sys.executable,
           str(APP), "data"]  # fmt: skip
    run = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    summary = run.stdout.split("profile saved to")[0]
    assert re.search(r"^  data\.h5 ", summary, re.M), summary
    body = "\n".join(ln for ln in summary.splitlines() if not ln.startswith("program"))
    for noise in (".py", "pyvenv.cfg", "site-packages", "/lib/python", ".so"):
        assert noise not in body, noise
    assert "(2 interpreter files), left out" in summary  # pyvenv.cfg and the script
    p = prof.load(out)
    assert [f["name"] for f in p.data_files] == ["data.h5"]
    assert any(f["name"].endswith("h5py_app.py") for f in p.system_files)  # kept, marked
    listed = subprocess.run([sys.executable, "-m", "iotune", "show", "--files", str(out)],
                            env=env, capture_output=True, text=True, timeout=60).stdout  # fmt: skip
    blocks = [ln for ln in listed.splitlines() if ln.startswith("file ")]
    assert blocks[0].startswith("file data.h5 ") and "[not asked for:" not in blocks[0]
    assert all("[not asked for: " in b for b in blocks[1:])


def test_run_without_a_control_file_preloads_the_runtime_alone(tmp_path, libiotune):
    env = {k: v for k, v in os.environ.items() if not k.startswith("IOTUNE_")}
    env.update(IOTUNE_LIB=str(libiotune), PYTHONPATH=str(REPO / "src"),
               IOTUNE_PROFILE=str(tmp_path / "p.json"))  # fmt: skip
    cmd = [sys.executable, "-m", "iotune", "run", "--", sys.executable, str(APP), "cache"]
    run = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert "created: (521, 1048576, 0.75)" in run.stdout  # no settings
    p = prof.load(tmp_path / "p.json")
    assert p.config.get("path") is None and p.data_files[0]["name"] == "cache.h5"


def test_a_serial_file_lists_no_hdf5_setting_as_applied_and_says_why(tmp_path, libiotune):
    run = run_app(tmp_path, ["data"], mpio=False, lib=libiotune, config=PROBE_ALL,
                  env={"IOTUNE_PROFILE": str(tmp_path / "p.json")})  # fmt: skip
    assert run.returncode == 0, run.stderr
    (f,) = prof.load(tmp_path / "p.json").data_files
    assert f["applied"]["hdf5"] == {}
    assert any("opened with the sec2 driver" in n for n in f["hdf5_notes"]), f.get("hdf5_notes")


def test_serial_files_keep_their_own_settings_without_the_opt_in(tmp_path, libiotune):
    lines = _cache_lines(run_app(tmp_path, ["cache"], mpio=False, lib=libiotune, config=PROBE_ALL))
    assert lines["created"] == lines["opened"] == "(521, 1048576, 0.75)"


def test_the_serial_opt_in_gives_serial_files_the_hdf5_settings(tmp_path, libiotune):
    config = tmp_path.parent / f"{tmp_path.name}-serial.xml"
    parallel = (
        "<transfer_mode>collective</transfer_mode><coll_metadata_read>true</coll_metadata_read>"
    )
    config.write_text(
        CONFIGS["serial_opt_in"].read_text().replace("<serial_files>", parallel + "<serial_files>")
    )
    run = run_app(tmp_path, ["cache"], mpio=False, lib=libiotune, config=config,
                  env={"IOTUNE_PROFILE": str(tmp_path / "p.json")})  # fmt: skip
    lines = _cache_lines(run)
    assert lines["created"] == lines["opened"] == "(1009, 4194304, 0.5)"
    # parallel HDF5's settings have no meaning for a sec2 file: said once, left out
    said = [ln for ln in run.stderr.splitlines() if ln.startswith("iotune: ")]
    assert said == [
        "iotune: cache.h5: serial file (sec2 driver): coll_metadata_read, "
        "transfer_mode have no meaning here and are left out"
    ]
    (f,) = prof.load(tmp_path / "p.json").data_files
    assert f["applied"]["hdf5"]["alignment"] == "0,65536"
    assert "coll_metadata_read" not in f["applied"]["hdf5"]


def test_the_runtime_marks_the_files_the_application_did_not_ask_for(tmp_path, libiotune):
    """The runtime reads the same rule table (system_files.tsv, generated into a C header) as
    iotune.profile: its marks in the raw JSON are the ones the Python reader would give."""
    import json

    run = run_app(tmp_path, ["cache"], mpio=False, lib=libiotune,
                  env={"IOTUNE_PROFILE": str(tmp_path / "p.json")})  # fmt: skip
    assert run.returncode == 0, run.stderr
    raw = json.loads((tmp_path / "p.json").read_text())
    marks = {f["name"]: f.get("system") for f in raw["files"]}
    assert marks["cache.h5"] is None
    assert marks[str(APP)] == "interpreter"
    assert any(n.endswith("pyvenv.cfg") and c == "interpreter" for n, c in marks.items())
    script = prof.script_of(raw["argv"])
    for f in raw["files"]:
        rule = prof.classify(f["name"], prof.was_written(f), script=script)
        assert f.get("system") == (rule.cls if rule else None), f["name"]


# ----------------------------------------------------------------------------- h5py idioms

IDIOMS = (REPO / "tests" / "data" / "h5py_idioms.xml").read_text()  # as test_h5_idioms.py


def _dataset_dump(path: Path, name: str) -> str:
    dump = subprocess.run(["h5dump", "-p", "-H", "-d", name, str(path)], capture_output=True,
                          text=True, timeout=60)  # fmt: skip
    assert dump.returncode == 0, dump.stderr
    return dump.stdout


@pytest.fixture(scope="module")
def idioms_run(tmp_path_factory, libiotune):
    where = tmp_path_factory.mktemp("idioms")
    config = where / "idioms.xml"
    config.write_text(IDIOMS)
    run = run_app(where / "run", ["idioms"], mpio=True, lib=libiotune, config=config,
                  env={"IOTUNE_PROFILE": str(where / "p.json")})  # fmt: skip
    assert run.returncode == 0, run.stderr
    base = run_app(where / "base", ["idioms"], mpio=True)
    assert base.returncode == 0, base.stderr
    return where, run, base


def test_f_name_equals_data_gets_the_creation_settings(idioms_run):
    # h5py's f["a"] = data is H5Dcreate_anon, H5Dwrite, then H5Olink: the file-wide creation
    # settings reach the dataset, read back from the file by h5dump
    where, run, base = idioms_run
    for name in ("/a", "/step_000/b"):
        tuned = _dataset_dump(where / "run" / "idioms.h5", name)
        assert "H5D_FILL_TIME_NEVER" in tuned and "CHUNKED ( 16, 64 )" in tuned, tuned
        plain = _dataset_dump(where / "base" / "idioms.h5", name)
        assert "H5D_FILL_TIME_NEVER" not in plain and "CONTIGUOUS" in plain, plain
    diff = subprocess.run(["h5diff", where / "base" / "idioms.h5", where / "run" / "idioms.h5"],
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    assert diff.returncode == 0, diff.stdout


def test_f_name_equals_data_writes_are_counted_and_a_late_name_rule_is_said(idioms_run):
    where, run, base = idioms_run
    f = next(x for x in prof.load(where / "p.json").data_files if x["name"] == "idioms.h5")
    h = f["hdf5"]
    # two datasets of 64 x 64 float64, each written whole by each of the 2 ranks
    assert h["bytes_written"] == 2 * 2 * 64 * 64 * 8, h
    assert h["dataset_creates"] == 2 * 2 and h["chunked_datasets"] >= 2 * 2, h
    # the rule naming /step_000/b cannot reach a creation list fixed before the name: said
    notes = " ".join(f.get("hdf5_notes") or [])
    assert "/step_000/b: created without a name" in notes and "chunk=8,8" in notes, notes
    assert "/step_000/b: created without a name" in run.stderr


def test_an_open_with_a_link_access_list_gets_the_chunk_cache(idioms_run):
    # h5py 3.7 (Debian 12) opens f["name"] with H5Oopen and a link access list: the settings
    # are merged into a dataset access list that keeps the application's properties
    where, run, base = idioms_run
    lines = _cache_lines(run)
    assert lines["a"].startswith("cache (1009, 4194304, 0.5) sum "), lines
    assert lines["step_000/b"].startswith("cache (1009, 4194304, 0.5) sum "), lines
    plain = _cache_lines(base)
    assert plain["a"].startswith("cache (521, 1048576, 0.75) sum "), plain
    assert [ln.split(" sum ")[1] for ln in run.stdout.splitlines() if " sum " in ln] == [
        ln.split(" sum ")[1] for ln in base.stdout.splitlines() if " sum " in ln
    ]


@pytest.mark.parametrize("mpio", [True, False], ids=["mpio", "serial"])
def test_a_refused_exclusive_create_leaves_no_file_and_the_retry_succeeds(tmp_path, libiotune,
                                                                         mpio):  # fmt: skip
    # IOTUNE_TEST_REFUSE=H5Fcreate (tests only): the create with the control file's settings
    # fails after the driver made the file, as a refusal by HDF5 does; the fail-safe removes
    # that file (it did not exist before the call) so that the application's own exclusive
    # create ("w-", "x") succeeds
    config = DATA / "serial_opt_in.xml" if not mpio else PROBE_ALL
    base = run_app(tmp_path / "base", ["exclusive"], mpio=mpio)
    assert base.returncode == 0, base.stderr
    run = run_app(tmp_path / "run", ["exclusive"], mpio=mpio, lib=libiotune, config=config,
                  env={"IOTUNE_TEST_REFUSE": "H5Fcreate"})  # fmt: skip
    assert (run.returncode, run.stdout) == (0, base.stdout), run.stderr
    assert "mode w-: [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]" in run.stdout
    assert "File exists" not in run.stderr and "FileExistsError" not in run.stdout


def test_chunks_the_application_set_itself_are_said_to_be_overridden(tmp_path, libiotune):
    """The control file's chunks replace the application's own: one line says so (it said
    nothing: an outside tester's h5py chunks=(16,) became 8192 silently)."""
    script = tmp_path / "chunked.py"
    script.write_text(
        "import sys, h5py, numpy\n"
        "with h5py.File(sys.argv[1], 'w') as f:\n"
        "    f.create_dataset('v', data=numpy.arange(65536.0), chunks=(16,))\n"
        "with h5py.File(sys.argv[1], 'r') as f:\n"
        "    print('chunks', f['v'].chunks)\n"
    )
    config = tmp_path / "c.xml"
    config.write_text(
        "<Parameters><High_Level_IO_Library><serial_files>true</serial_files>"
        "<chunk_size>64KiB</chunk_size></High_Level_IO_Library></Parameters>"
    )
    cmd = [sys.executable, "-m", "iotune", "run", "--config", config, "--", sys.executable,
           script, tmp_path / "c.h5"]  # fmt: skip
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=120, cwd=tmp_path,
                       env={**os.environ, "IOTUNE_LIB": str(libiotune)})  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert "chunks (8192,)" in r.stdout, r.stdout
    said = [x for x in r.stderr.splitlines() if "overrides the application's own chunk=16" in x]
    assert len(said) == 1 and "chunk=8192" in said[0] and "c.xml:1" in said[0], r.stderr
