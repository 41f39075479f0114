"""`iotune advise` on programs written the way outside users write them (not the project's
kernels): a C checkpoint writer with group and dataset attributes and a file per step
(tests/data/real/checkpoint.c), an h5py + mpi4py script with a group per step
(tests/data/real/h5py_steps.py), and Darshan logs of the kernels and of the checkpoint writer
taken with a Darshan 3.4.7 runtime (tests/data/darshan/README.md). Each test shows one
misreading issue 22 found, fixed."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from kernel_profiles import profile_kernel

from iotune import cli, controlfile, rules
from iotune.kb import signature

REAL = Path(__file__).resolve().parents[1] / "data" / "real"
LOGS = Path(__file__).resolve().parents[1] / "data" / "darshan"
SMALL = ["--rows", "256", "--cols", "512", "--steps", "2"]  # 1 MiB per dataset, 2 files


@pytest.fixture(scope="session")
def checkpoint(tmp_path_factory) -> Path:
    """tests/data/real/checkpoint.c built against MPICH's parallel HDF5."""
    if not shutil.which("mpicc.mpich") or not shutil.which("pkg-config"):
        pytest.skip("needs mpicc.mpich and pkg-config")
    flags = subprocess.run(["pkg-config", "--cflags", "--libs", "hdf5-mpich"],
                           capture_output=True, text=True)  # fmt: skip
    if flags.returncode != 0:
        pytest.skip("needs pkg-config hdf5-mpich")
    exe = tmp_path_factory.mktemp("real") / "checkpoint"
    subprocess.run(["mpicc.mpich", "-O2", "-o", str(exe), str(REAL / "checkpoint.c"),
                    *flags.stdout.split()], check=True, timeout=120)  # fmt: skip
    return exe


def _advice(capsys, tmp_path, source, *extra) -> dict:
    status = cli.main(["advise", str(source), "--json", "-o", str(tmp_path / "advice.xml"),
                       *map(str, extra)])  # fmt: skip
    out = capsys.readouterr()
    assert status == 0, out.err
    return json.loads(out.out)


def _group(advice, pattern):
    """The group of the files pattern matches: named by it, or by its one file's own name (a
    pattern names a group only when several files share it)."""
    from fnmatch import fnmatchcase

    (g,) = [
        g
        for g in advice["groups"]
        if g["pattern"] == pattern
        or (len(set(g["files"])) == 1 and fnmatchcase(g["files"][0].rsplit("/", 1)[-1], pattern))
    ]
    return g


def _codes(advice) -> set[str]:
    return {f["code"] for f in advice["findings"]}


def _settings(tmp_path) -> dict[str, str]:
    control = tmp_path / "advice.xml"
    if not control.exists():
        return {}
    return {s.name: s.value for s in controlfile.parse_file(control).settings}


# ----------------------------------------------------------------------------- from a run


def test_group_attributes_do_not_make_the_file_gone(tmp_path, capsys, checkpoint, libiotune):
    # before: h5dump's ATTRIBUTE block of /fields closed the group in the parser, the datasets
    # got wrong paths, none matched the trace: "the HDF5 file is gone", IOT-1 not decided
    profile = profile_kernel(tmp_path, checkpoint, SMALL, libiotune)
    advice = _advice(capsys, tmp_path, profile)
    g = _group(advice, "chk_*.h5")
    assert sorted(Path(f).name for f in g["files"]) == ["chk_0000.h5", "chk_0001.h5"]
    assert (g["insights"]["layout"], g["insights"]["fill_time"]) == ("chunked", "ifset")
    assert "gone" not in json.dumps(advice)
    assert g["notes"]["layout"] == "from the HDF5 file (h5dump)"
    # the fill doubles the bytes below HDF5; every element is written: fill time never
    assert g["insights"]["write_amplification"] == pytest.approx(2.0, abs=0.05)
    assert _settings(tmp_path) == {"fill_time": "never"}
    # the knowledge base's motif of the same run (it said layout=unknown)
    assert signature.from_profile(profile).motif["layout"] == "chunked"


def test_fill_time_never_is_not_advised_for_deflate(tmp_path, capsys, checkpoint, libiotune):
    # measured 0.65x when applied to compressed datasets: their chunks are written whole
    profile = profile_kernel(tmp_path, checkpoint, [*SMALL, "--deflate", "4"], libiotune)
    advice = _advice(capsys, tmp_path, profile)
    g = _group(advice, "chk_*.h5")
    assert (g["insights"]["layout"], g["insights"]["filters"]) == ("chunked", "yes")
    assert "IOT-1" not in _codes(advice)
    assert "fill_time" not in _settings(tmp_path)


def test_contiguous_datasets_with_8x_the_bytes_get_a_finding(
    tmp_path, capsys, checkpoint, libiotune
):
    # datasets created 8x taller than the rows written, with a fill value: parallel HDF5
    # allocates and fills them whole at creation
    args = ["--layout", "contiguous", "--fill", "0", "--oversize", "8", "--steps", "1"]
    profile = profile_kernel(tmp_path, checkpoint, args, libiotune)
    advice = _advice(capsys, tmp_path, profile)
    g = _group(advice, "chk_*.h5")
    assert g["insights"]["layout"] == "contiguous"
    assert g["insights"]["write_amplification"] >= 8
    (f,) = [f for f in advice["findings"] if f["code"] == "IOT-5c"]
    assert "beyond the data" in f["evidence"] and f["severity"] == "medium"


def test_an_own_fill_value_gets_no_fill_time_never_and_says_why(
    tmp_path, capsys, checkpoint, libiotune
):
    """Chunked datasets every element of which is written, with a fill value the application
    set (--fill 0): IOT-1 proposed fill_time=never, which the runtime withdraws there
    (apply/fill_guard.c). Now it is not made, and the advice says why."""
    profile = profile_kernel(tmp_path, checkpoint, [*SMALL, "--layout", "chunked", "--fill", "0"],
                             libiotune)  # fmt: skip
    advice = _advice(capsys, tmp_path, profile)
    v = _group(advice, "chk_*.h5")["insights"]
    assert (v["layout"], v["fully_written"], v["fill_value"]) == ("chunked", "yes", "own")
    assert "IOT-1" not in _codes(advice)
    (why,) = [x for x in advice["limits"] if x.startswith("IOT-1 ")]
    assert "fill value of its own" in why and "withdraws" in why
    assert "fill_time" not in _settings(tmp_path)


def test_chunked_datasets_written_in_part_get_the_fill_explained(
    tmp_path, capsys, checkpoint, libiotune
):
    """Chunked datasets twice as tall as what is written: HDF5 writes the fill value into the
    chunks never written, 3 bytes below HDF5 per data byte (8 MiB beyond it). IOT-1 needs every
    element written and rightly stays quiet, but nothing said why the bytes cost (IOT-5 needs
    16 MiB): IOT-5p explains the fill and what the application can change."""
    args = [*SMALL, "--layout", "chunked", "--oversize", "2"]
    profile = profile_kernel(tmp_path, checkpoint, args, libiotune)
    advice = _advice(capsys, tmp_path, profile)
    v = _group(advice, "chk_*.h5")["insights"]
    assert (v["layout"], v["fully_written"], v["fill_time"]) == ("chunked", "no", "ifset")
    assert v["write_amplification"] >= 1.5
    assert "IOT-1" not in _codes(advice)
    (f,) = [f for f in advice["findings"] if f["code"] == "IOT-5p"]
    assert "written in part" in f["evidence"] and "chunks" in f["explain"]
    assert _settings(tmp_path) == {}


def test_chunked_datasets_zero_decides_the_layout_without_the_file(
    tmp_path, capsys, checkpoint, libiotune
):
    # the files are gone (moved elsewhere), but the trace's datasets (and the profile's
    # counters: no chunked dataset) say contiguous
    profile = profile_kernel(tmp_path, checkpoint, ["--layout", "contiguous", *SMALL], libiotune)
    for f in tmp_path.glob("chk_*.h5"):
        f.unlink()
    advice = _advice(capsys, tmp_path, profile)
    g = _group(advice, "chk_*.h5")
    assert (g["insights"]["layout"], g["insights"]["filters"]) == ("contiguous", "no")
    assert "trace's datasets" in g["notes"]["layout"]
    # without the trace, the profile's counters decide it
    shutil.rmtree(tmp_path / "profile.json.trace")
    advice = _advice(capsys, tmp_path, profile)
    g = _group(advice, "chk_*.h5")
    assert (g["insights"]["layout"], g["insights"]["filters"]) == ("contiguous", "no")
    assert "0 of 8 dataset creates and opens chunked" in g["notes"]["layout"]
    assert "chk_0000.h5 is gone" in g["notes"]["layout"]
    undecided = {u["code"]: u["missing"] for u in advice["undecided"]}
    assert "layout" not in undecided.get("IOT-1", []) and "IOT-5" not in undecided


def _venv_h5py_mpi() -> bool:
    probe = "import h5py, mpi4py; assert h5py.get_config().mpi"
    return subprocess.run([sys.executable, "-c", probe], capture_output=True).returncode == 0


@pytest.mark.skipif(not _venv_h5py_mpi(), reason="needs h5py built with MPI and mpi4py")
def test_interpreter_files_get_no_finding(tmp_path, capsys, libiotune):
    # before: pyvenv.cfg, the script and the interpreter's modules were file groups, and the
    # script (read by the tokenizer, backwards) got IOT-10 "random access" at MEDIUM
    script = tmp_path / "h5py_steps.py"
    shutil.copy(REAL / "h5py_steps.py", script)
    profile = profile_kernel(tmp_path, Path(sys.executable), [script, "--chunks"], libiotune)
    advice = _advice(capsys, tmp_path, profile)
    patterns = {g["pattern"] for g in advice["groups"]}
    assert patterns == {"steps.h5"}, patterns
    assert {f["group"] for f in advice["findings"]} <= {"steps.h5"}
    g = _group(advice, "steps.h5")
    assert (g["insights"]["layout"], g["insights"]["transfer_mode"]) == ("chunked", "collective")
    assert "gone" not in json.dumps(advice)


def _corpus_program(name: str) -> Path:
    """A built program of the corpus (corpus/cases.toml), or skip."""
    sys.path.insert(0, str(REAL.parents[2] / "corpus"))
    import corpus

    (case,) = [c for c in corpus.load_cases() if c.name == name]
    if not corpus.built(case) or case.family != "mpich":
        pytest.skip(f"{name}: {corpus.why_not_built(case)}")
    return Path(corpus.command(case, Path("."))[0])


def test_sequential_rows_partly_collective_get_sio1(tmp_path, capsys, libiotune):
    # HDF5's ph5example (the corpus) writes 1 KiB rows of a shared file, some collective, some
    # independent: transfer_mode "mixed". tune's study found transfer_mode=independent (2x in
    # its search); SIO-1 asked for every transfer collective and said nothing
    profile = profile_kernel(tmp_path, _corpus_program("ph5example"), ["-c"], libiotune)
    advice = _advice(capsys, tmp_path, profile)
    g = _group(advice, "ParaEg*.h5")
    assert (g["insights"]["transfer_mode"], g["insights"]["access_pattern"]) == (
        "mixed",
        "sequential",
    )
    (sio1,) = [f for f in advice["findings"] if f["code"] == "SIO-1"]
    assert sio1["settings"] == {"transfer_mode": "independent"} and sio1["severity"] == "low"
    assert "mixed now" in sio1["evidence"]


def test_chunked_file_the_program_removed_still_gets_fill_time_never(tmp_path, capsys, libiotune):
    # h5perf (the corpus, chunked, 4 iterations) removes its file at the end, as it does unless
    # HDF5_NOCLEANUP is set: the fill time could not be read, so IOT-1 was "not decided" where
    # tune's study found fill_time=never 2.09x. The trace's datasets carry their chunks, extent
    # and element size, and the bytes beyond the data show the fill (as from a Darshan log)
    exe = _corpus_program("h5perf-phdf5-chunked")
    args = ["-A", "phdf5", "-C", "-c", "-e", "4M", "-x", "1M", "-X", "1M", "-B", "1M", "-d", "2",
            "-i", "2", "-p", "2", "-P", "2"]  # fmt: skip
    os.environ.pop("HDF5_NOCLEANUP", None)
    profile = profile_kernel(tmp_path, exe, args, libiotune)
    assert not list(tmp_path.glob("*.h5")), "h5perf kept its file: nothing to show here"
    advice = _advice(capsys, tmp_path, profile)
    g = _group(advice, "#pio_tmp_*.h5")
    assert (g["insights"]["layout"], g["insights"]["fill_time"]) == ("chunked", "filled"), g
    assert g["insights"]["chunk_bytes_max"] == 1 << 20
    assert _settings(tmp_path).get("fill_time") == "never"
    assert "IOT-1" in _codes(advice)


def test_fill_shows_only_a_whole_copy_of_the_chunked_datasets():
    from iotune import storage_layout

    assert storage_layout.fill_shows(16 << 20, 16 << 20)
    assert storage_layout.fill_shows(15 << 20, 16 << 20)
    assert not storage_layout.fill_shows(4 << 20, 16 << 20)  # metadata, or a compressed fill
    assert not storage_layout.fill_shows(1 << 19, 1 << 19)  # too small to tell from metadata
    assert not storage_layout.fill_shows(None, 16 << 20)


def test_serial_hdf5_file_gets_no_mpi_io_rule(tmp_path, capsys, libiotune):
    """A serial h5py program (HDF5's sec2 driver, no MPI-IO): SIO-8 and SIO-8r, rules about
    MPI-IO hints, were listed "not decided: needs hint_romio_ds_write" for its file."""
    probe = "import h5py, numpy"
    if subprocess.run([sys.executable, "-c", probe], capture_output=True).returncode != 0:
        pytest.skip("needs h5py")
    script = tmp_path / "serial.py"
    script.write_text(
        "import h5py, numpy\n"
        "with h5py.File('serial.h5', 'w') as f:\n"
        "    f.create_dataset('x', data=numpy.arange(4096.0))\n"
    )
    profile = tmp_path / "profile.json"
    env = {**os.environ, "LD_PRELOAD": str(libiotune), "IOTUNE_PROFILE": str(profile),
           "IOTUNE_TRACE": "1"}  # fmt: skip
    subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env, check=True, timeout=120)
    advice = _advice(capsys, tmp_path, profile)
    g = _group(advice, "serial.h5")
    assert g["insights"]["interface"] == "hdf5" and g["layers"] == ["hdf5", "posix"]
    assert g["insights"]["mpiio_component"] is None
    said = _codes(advice) | {u["code"] for u in advice["undecided"]}
    mpiio = {r.code for r in rules.all_rules() if r.layer == "mpiio"}
    assert not said & mpiio, said


# ----------------------------------------------------------------------------- Darshan logs


def _log(name: str) -> Path:
    pytest.importorskip("darshan")
    return LOGS / name


def test_darshan_collective_hdf5_is_collective(tmp_path, capsys):
    # before: "mixed", from HDF5's 15 independent metadata writes beside 8 collective ones
    advice = _advice(capsys, tmp_path, _log("checkpoint-chunked.darshan"))
    v = _group(advice, "chk_*.h5")["insights"]
    assert v["transfer_mode"] == "collective"
    assert (v["layout"], v["fill_time"], v["filters"]) == ("chunked", "filled", "no")
    assert _settings(tmp_path) == {"fill_time": "never"}


@pytest.mark.parametrize(("log", "settings", "pattern", "why"), [
    # 3-D blocks of a larger array: the selections do not pin the extent; ROMIO's choice does
    ("vorpalio-write.darshan", {"cb_buffer_size": "1048576"}, "strided", "ROMIO"),
    ("vorpalio-read.darshan", {"cb_buffer_size": "1048576", "romio_cb_read": "disable"},
     "strided", "ROMIO"),
    # 2 bytes below HDF5 per data byte: the fill, not ROMIO, decides the ranks' spread
    ("gcrmio-write.darshan", {"fill_time": "never"}, None, "fill values or metadata"),
    ("gcrmio-read-bigchunks.darshan", {"fill_time": "never", "chunk_cache_bytes": "4194304"},
     None, "fill values or metadata"),
    # 1-D runs of each particle array: contiguous selections
    ("vpicio-write.darshan", {}, "sequential", "H5D selection counters"),
])  # fmt: skip
def test_darshan_logs_of_the_kernels_name_what_tune_finds(tmp_path, capsys, log, settings, pattern,
                                                          why):  # fmt: skip
    # the lab notes' table: VORPAL-IO cb_buffer_size 1 MiB (reads: romio_cb_read disable),
    # GCRM-IO fill time never (reads with chunks above 1 MiB: the chunk cache), VPIC-IO nothing
    advice = _advice(capsys, tmp_path, _log(log))
    (g,) = [g for g in advice["groups"] if g["insights"]["interface"] == "hdf5"]
    assert g["insights"]["transfer_mode"] == "collective"
    assert g["insights"]["access_pattern"] == pattern
    assert why in g["notes"]["access_pattern"]
    assert _settings(tmp_path) == settings


def test_darshan_log_of_ph5example_gets_its_pattern_and_sio1(tmp_path, capsys):
    # HDF5's ph5example (the corpus) under Darshan: 1 KiB rows and columns of 24 x 24 datasets,
    # partly collective. Darshan gives no offsets for HDF5 transfers, and below HDF5 its
    # metadata outnumbers the data, so the pattern was "not decided" and SIO-1
    # (transfer_mode=independent, what tune found) was named from the run only. The H5D
    # module's selection shapes give it: 4 of 16 selections are columns (noncontiguous), as
    # the run's trace says
    advice = _advice(capsys, tmp_path, _log("ph5example.darshan"))
    g = _group(advice, "ParaEg*.h5")
    v = g["insights"]
    assert (v["transfer_mode"], v["access_pattern"]) == ("mixed", "sequential")
    assert v["noncontiguous_fraction"] == 0.25
    assert "0.25 of 16 selections" in g["notes"]["access_pattern"]
    (sio1,) = [f for f in advice["findings"] if f["code"] == "SIO-1"]
    assert sio1["settings"] == {"transfer_mode": "independent"}


def _h5d(name, npoints, *shapes, writes=None, points=0, irregular=0, ndims=2):
    """An H5D record as darshan-parser prints it (H5D_ACCESS<k>_LENGTH_D<d>, the slowest
    dimension in D5), shapes: (lengths slowest first, strides, count)."""
    r = {"name": f"/x/f0.h5:/{name}", "rank": -1, "H5D_DATASPACE_NDIMS": ndims,
         "H5D_DATASPACE_NPOINTS": npoints, "H5D_DATATYPE_SIZE": 8, "H5D_POINT_SELECTS": points,
         "H5D_IRREGULAR_HYPERSLAB_SELECTS": irregular,
         "H5D_REGULAR_HYPERSLAB_SELECTS": sum(n for *_, n in shapes)}  # fmt: skip
    r["H5D_WRITES"] = writes if writes is not None else r["H5D_REGULAR_HYPERSLAB_SELECTS"]
    r["H5D_WRITES"] += 0 if writes is not None else points + irregular
    for k, (lengths, strides, n) in enumerate(shapes, 1):
        for i, (x, st) in enumerate(zip(lengths, strides, strict=True)):
            r[f"H5D_ACCESS{k}_LENGTH_D{5 - i}"] = x
            r[f"H5D_ACCESS{k}_STRIDE_D{5 - i}"] = st
        r[f"H5D_ACCESS{k}_COUNT"] = n
    return r


def test_darshan_selection_shapes_decide_the_hdf5_pattern():
    from iotune.advise import darshan  # noqa: PLC0415

    rows, cols = ((100, 400), (1, 1), 6), ((400, 100), (1, 1), 2)
    # rows and columns of one 400 x 400 dataset: the longest selections pin its extent
    assert darshan.selection_shares([_h5d("a", 160000, rows, cols)]) == (0.25, 0.25, 8)
    # columns only: 400 x 100 is a column block of 400 x 400, or a contiguous piece of
    # 1600 x 100: not decided, unless a dataset of the same name in the group's other file
    # pins the extent
    assert darshan.selection_shares([_h5d("a", 160000, cols)]) == (0.0, 1.0, 2)
    pooled = [_h5d("a", 160000, cols), {**_h5d("a", 160000, rows, cols), "name": "/x/f1.h5:/a"}]
    assert darshan.selection_shares(pooled) == (0.4, 0.4, 10)
    # single rows are contiguous whatever the extent; a stride leaves the shape unknown
    assert darshan.selection_shares([_h5d("a", 160000, ((1, 400), (1, 1), 4))]) == (0, 0, 4)
    assert darshan.selection_shares([_h5d("a", 160000, ((1, 400), (1, 2), 4))]) == (0, 1, 4)
    # points and irregular hyperslabs are not described; selections beyond the four kept
    # common ones neither; transfers of the whole dataset (no selection counted) are
    # contiguous
    assert darshan.selection_shares([_h5d("a", 160000, rows, cols, points=2)]) == (0.2, 0.4, 10)
    more = _h5d("a", 160000, rows, cols)
    more["H5D_REGULAR_HYPERSLAB_SELECTS"] += 2
    more["H5D_WRITES"] += 2
    assert darshan.selection_shares([more]) == (0.2, 0.4, 10)
    assert darshan.selection_shares([_h5d("a", 160000, rows, cols, writes=16)]) == (
        0.125, 0.125, 16)  # fmt: skip
    # a runtime built without the selection counters (-1) tells nothing
    assert darshan.selection_shares([_h5d("a", 160000, rows, points=-1)]) is None

    def pattern(recs):
        v, notes = {}, {}
        darshan._pattern_from_selections(v, notes, recs)
        return v.get("access_pattern")

    assert pattern([_h5d("a", 160000, rows, cols)]) == "sequential"
    assert pattern([_h5d("a", 160000, ((400, 100), (1, 1), 6), ((100, 400), (1, 1), 2))]) == (
        "strided"
    )
    assert pattern([_h5d("a", 160000, cols)]) is None


def test_darshan_fill_of_oversized_contiguous_datasets_is_no_pattern(tmp_path, capsys):
    # checkpoint.c --layout contiguous --fill 0 --oversize 8: one rank writes most of the fill,
    # which looked like ROMIO's aggregation (strided: IOT-3 cb_buffer_size) before
    advice = _advice(capsys, tmp_path, _log("checkpoint-oversize.darshan"))
    v = _group(advice, "chk_*.h5")["insights"]
    assert v["access_pattern"] is None and v["layout"] == "contiguous"
    assert _codes(advice) == {"IOT-5c"} and _settings(tmp_path) == {}


def test_darshan_hints_set_leave_the_pattern_unknown(tmp_path, capsys):
    # IOR on Lustre with hints set (MPIIO_HINTS > 0): ROMIO's choice cannot be read back
    darshan = pytest.importorskip("darshan")
    log = Path(darshan.__file__).parent / "examples" / "example_logs" / "ior_hdf5_example.darshan"
    if not log.exists():
        pytest.skip("the darshan package does not ship ior_hdf5_example.darshan")
    advice = _advice(capsys, tmp_path, log)
    for g in advice["groups"]:
        assert g["insights"]["access_pattern"] is None
        assert g["insights"]["hint_cb_buffer_size"] is None


def test_findings_cost_what_they_claim_on_a_real_profile(tmp_path, capsys):
    # a profile as the runtime wrote it for `python script.py`: the script was read backwards
    # (random), in microseconds; the data file is the application's
    profile = tmp_path / "p.json"
    script = str(tmp_path / "steps.py")
    files = [
        {"name": script, "ranks": 2, "time_s": {"max": 1e-4, "mean": 1e-4, "imbalance": 1.0},
         "posix": {"reads": 40, "bytes_read": 9000, "opens": 2}},
        {"name": "/opt/venv/pyvenv.cfg", "ranks": 2, "posix": {"reads": 4, "bytes_read": 800}},
        {"name": "steps.h5", "ranks": 2, "time_s": {"max": 0.2, "mean": 0.2, "imbalance": 1.0},
         "posix": {"writes": 8, "bytes_written": 8 << 20}},
    ]  # fmt: skip
    data = {"schema": "iotune-profile", "version": 1, "ranks": 2, "wall_s": 1.0,
            "io": {"time_s": 0.2, "bytes_written": 8 << 20, "bytes_read": 9000},
            "layers": {}, "files": files, "config": {},
            "argv": ["/opt/venv/bin/python", script]}  # fmt: skip
    profile.write_text(json.dumps(data))
    advice = _advice(capsys, tmp_path, profile)
    assert [g["pattern"] for g in advice["groups"]] == ["steps.h5"]
    assert advice["findings"] == []


def test_advise_cli_from_a_subprocess_prints_no_traceback(tmp_path):
    # the CLI as users call it, on a log of a real program
    pytest.importorskip("darshan")
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[2] / "src"))
    r = subprocess.run([sys.executable, "-m", "iotune", "advise", "-o", "-",
                        str(LOGS / "vorpalio-write.darshan")], capture_output=True, text=True,
                       env=env, timeout=120)  # fmt: skip
    assert r.returncode == 0 and "Traceback" not in r.stderr
    assert "IOT-3" in r.stdout and "cb_buffer_size=1048576" in r.stdout


def test_darshan_log_of_a_python_program_analyses_its_data_files_only(tmp_path, capsys):
    # tests/data/real/python_writer.py under Darshan (non-MPI mode): before, pyvenv.cfg, 19
    # .pyc modules, .pth files and the script were file groups, and two .pth files got IOT-10
    # "random access" at MEDIUM
    advice = _advice(capsys, tmp_path, _log("python-writer.darshan"))
    assert sorted(g["pattern"] for g in advice["groups"]) == ["results.bin", "results.json"]
    assert advice["findings"] == []
