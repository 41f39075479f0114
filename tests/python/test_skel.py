"""Skeletons: descriptor checks, profile -> descriptor -> generated C, compiled and run with 2
ranks at tiny sizes; the skeleton's files must have the original's structure (h5dump -H:
groups, datasets, types, extents, chunking) or, for raw files, the same names and sizes; and
every method writes the layout it promises."""

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from conftest import BUILD, REPO, launcher, mpi_info, run_mpi

from iotune import trace as iotrace
from iotune.skel import descriptor as dmod
from iotune.skel import expr, h5layout
from iotune.skel import from_profile as fp
from iotune.skel import generate as gen
from iotune.skel import run as runmod

HDF5_PC = "hdf5-mpich"
# the build's own compiler: where the mpicc alternative points must not matter
MPICC = mpi_info(BUILD).get("mpicc") or "mpicc"


def _have_toolchain() -> bool:
    if not all(shutil.which(x) for x in (MPICC, "make", "pkg-config", "h5dump")):
        return False
    return subprocess.run(["pkg-config", "--exists", HDF5_PC]).returncode == 0


needs_cc = pytest.mark.skipif(not _have_toolchain(), reason="mpicc, make, h5dump, hdf5-mpich")


# ----------------------------------------------------------------------------- descriptor

GOOD = """\
skel: 1
name: t
ranks: 2
parameters: {n: 8}
files:
  - name: t.h5
    datasets:
      - name: /g/d
        type: float64
        dims: [n * size, 3]
    writes:
      - dataset: /g/d
        start: [rank * n, 0]
        count: [n, 3]
"""


def test_a_good_descriptor_reads():
    d = dmod.parse_text(GOOD, "t.yaml")
    assert d.parameters == {"n": 8}
    assert d.files[0].writes[0].collective


@pytest.mark.parametrize(
    "old,new,where",
    [
        ("type: float64", "type: float65", "t.yaml:9: files[0].datasets[0].type"),
        ("dims: [n * size, 3]", "dims: [m * size, 3]", "t.yaml:10: files[0].datasets[0].dims[0]"),
        (
            "count: [n, 3]",
            "count: [n, 3]\n        colour: red",
            "t.yaml:15: files[0].writes[0].colour",
        ),
        ("count: [n, 3]", "count: [n]", "t.yaml:14: files[0].writes[0].count"),
        ("start: [rank * n, 0]", "start: [rank * n + 1, 0]", "t.yaml:12: files[0].writes[0]"),
        ("dataset: /g/d", "dataset: /g/e", "t.yaml:12: files[0].writes[0].dataset"),
        ("skel: 1", "skel: 2", "t.yaml:1: skel"),
        ("ranks: 2", "ranks: 2\nsteps: n - 9", "t.yaml:4: steps: is -1"),
        ("name: t.h5", "name: t{proc}.h5", "t.yaml:6: files[0].name"),
        ("dims: [n * size, 3]", "dims: [n * size, 3", "t.yaml:11:"),
        (
            "dims: [n * size, 3]",
            "dims: [__import__('os'), 3]",
            "t.yaml:10: files[0].datasets[0].dims[0]",
        ),
    ],
)
def test_a_bad_descriptor_gives_one_message_with_line_and_field(old, new, where):
    assert old in GOOD
    with pytest.raises(dmod.DescriptorError) as e:
        dmod.parse_text(GOOD.replace(old, new, 1), "t.yaml")
    assert str(e.value).startswith(where), str(e.value)
    assert "\n" not in str(e.value)


RAW = """\
skel: 1
name: r
ranks: 2
files:
  - name: r.dat
    api: mpiio
    writes:
      - offset: 0
        size: 8
        view: {lb: 0, extent: 16, blocks: [[rank * 4, 4], [8 + rank * 4, 4]]}
"""


@pytest.mark.parametrize(
    "old,new,where",
    [
        ("api: mpiio", "api: posix", "r.yaml:10: files[0].writes[0].view: view is an mpiio file's"),
        ("[[rank * 4, 4], [8", "[[rank * 4], [8", "r.yaml:10: files[0].writes[0].view.blocks[0]"),
        ("extent: 16", "extent: 16 - 32", "r.yaml:8: files[0].writes[0]: at rank 0 of 2: view"),
        ("lb: 0,", "lb: 0, colour: 1,", "r.yaml:10: files[0].writes[0].view.colour"),
    ],
)
def test_a_bad_view_gives_one_message_with_line_and_field(old, new, where):
    assert dmod.parse_text(RAW, "r.yaml").files[0].writes[0].view is not None
    assert old in RAW
    with pytest.raises(dmod.DescriptorError) as e:
        dmod.parse_text(RAW.replace(old, new, 1), "r.yaml")
    assert str(e.value).startswith(where), str(e.value)


@needs_cc
def test_views_by_rank_are_set_and_written_through(libiotune, tmp_path):
    text = RAW.replace(
        """      - offset: 0
        size: 8
        view: {lb: 0, extent: 16, blocks: [[rank * 4, 4], [8 + rank * 4, 4]]}""",
        """      - by_rank:
          0: {offset: 0, size: 8, view: {extent: 12, blocks: [[0, 4], [8, 4]]}}
          1: {offset: 4, size: 12, view: {extent: 4, blocks: [[0, 4]]}}""",
    )
    d = dmod.parse_text(text, "r.yaml")
    gen.generate(d, str(tmp_path / "src"), "r.yaml", pkg=HDF5_PC, cc=MPICC)
    skeleton = Path(runmod.build(str(tmp_path / "src")))
    _profile(tmp_path, [skeleton, "--dir", tmp_path], libiotune)
    # rank 1's 4-byte filetype tiles: 12 bytes from 4 on; rank 0's two blocks at 0 and 8
    assert (tmp_path / "r.dat").stat().st_size == 16
    views = [[(v["disp"], v["blocks"]) for v in t["views"]]
             for t in iotrace.load(tmp_path / "profile.json")]  # fmt: skip
    assert views == [[(0, [[0, 4], [8, 4]])], [(4, [[0, 4]])]]


def test_expressions_follow_c():
    t = expr.parse("(0 - 7) / 2 + max(rank, 3) % 2")
    assert expr.evaluate(t, {"rank": 0}) == -3 + 1
    assert expr.to_c(expr.parse("rank == 0")) == "(rank == 0LL)"
    assert expr.to_c(expr.parse("n * size")) == "skel_imul(P_n, size)"


# ----------------------------------------------------------------------------- profile -> skeleton


def _profile(tmp: Path, argv: list[str], libiotune: Path) -> Path:
    out = tmp / "profile.json"
    env = {
        "IOTUNE_PROFILE": str(out),
        "IOTUNE_TRACE": "1",
        "IOTUNE_SESSION": f"test-skel-{os.getpid()}-{tmp.name}",
    }
    run_mpi(2, argv, env=env, cwd=tmp, preload=libiotune, timeout=120)
    return out


def _skeleton(desc: dict, tmp: Path) -> Path:
    text = fp.to_yaml(desc, "profile.json")
    d = dmod.parse_text(text, "skel.yaml")
    gen.generate(d, str(tmp / "src"), "skel.yaml", pkg=HDF5_PC, cc=MPICC)
    return Path(runmod.build(str(tmp / "src")))


def _run_skeleton(desc: dict, tmp: Path) -> tuple[Path, Path]:
    """Builds the descriptor's skeleton and runs it at 2 ranks into tmp/out: (out, timing)."""
    skeleton = _skeleton(desc, tmp)
    out, timing = tmp / "out", tmp / "timing.json"
    out.mkdir()
    run_mpi(2, [skeleton, "--dir", out, "--timing", timing], timeout=120)
    return out, timing


def _files(directory: Path) -> dict[str, int]:
    return {
        str(p.relative_to(directory)): p.stat().st_size
        for p in directory.rglob("*")
        if p.is_file()
        and not p.name.startswith("profile")
        and ".trace" not in str(p)
        and p.name != ".iotune-skel-files"  # the skeleton's list of the files it wrote
    }


CASES = {
    "vpicio": ("vpicio", ["--particles", "256", "--steps", "2"]),
    "vorpalio-uneven": (
        "vorpalio",
        ["--block", "4,6,6", "--procs", "2,1,1", "--uneven", "--components", "2"],
    ),
    "gcrmio": ("gcrmio", ["--cells", "64", "--levels", "5", "--chunk-cells", "32"]),
    "haccio-one-call": ("haccio", ["--particles", "100"]),
    "haccio-per-var": ("haccio", ["--particles", "100", "--mode", "mpiio-per-var"]),
    "iorio-hdf5": (
        "iorio",
        ["--api", "hdf5", "--block", "16K", "--transfer", "4K", "--segments", "2", "--steps", "2"],
    ),
    # H5Fflush: HDF5 writes its metadata through MPI-IO inside a call the runtime does not wrap
    "iorio-hdf5-flush": (
        "iorio",
        ["--api", "hdf5", "--block", "16K", "--transfer", "4K", "--segments", "2", "--fsync"],
    ),
    "iorio-posix-fpp": (
        "iorio",
        ["--api", "posix", "--layout", "fpp", "--block", "16K", "--transfer", "8K"],
    ),
    "external": (None, ["20", "8", "100", "2"]),
}


def build_hdf5_program(tmp_path_factory, name: str, libs: tuple[str, ...] = ()) -> Path:
    """tests/data/<name>.c compiled with the MPI compiler against parallel HDF5 (and libs,
    e.g. -lhdf5_hl, after HDF5's own flags)."""
    out = tmp_path_factory.mktemp(name) / name
    flags = subprocess.run(
        ["pkg-config", "--cflags", "--libs", HDF5_PC], capture_output=True, text=True, check=True
    ).stdout.split()
    subprocess.run(
        [MPICC, "-O1", "-o", str(out), str(REPO / f"tests/data/{name}.c"), *flags, *libs],
        check=True,
        timeout=120,
    )
    return out


def h5dump_structure(path: Path) -> list[str]:
    """`h5dump -H -p` of a file, without its first line (which names the file)."""
    got = subprocess.run(["h5dump", "-H", "-p", str(path)], capture_output=True, text=True,
                         timeout=60, check=True)  # fmt: skip
    return got.stdout.splitlines()[1:]


def file_bytes(profile: Path, suffix: str) -> dict[str, tuple[int, int]]:
    """layer -> (bytes written, bytes read) on the profile's file ending in suffix."""
    out = {}
    for f in json.loads(profile.read_text())["files"]:
        if f["name"].endswith(suffix):
            for layer in ("hdf5", "mpiio", "posix"):
                c = f.get(layer) or {}
                out[layer] = (c.get("bytes_written", 0), c.get("bytes_read", 0))
    return out


def run_skeleton_traced(skeleton: Path, tmp_path: Path, libiotune: Path) -> Path:
    """Runs a skeleton on 2 ranks in tmp_path/out, profiled and traced (out/p.json)."""
    out = tmp_path / "out"
    out.mkdir()
    env = {"IOTUNE_PROFILE": str(out / "p.json"), "IOTUNE_TRACE": "1"}
    run_mpi(2, [skeleton, "--timing", tmp_path / "t.json"], env=env, cwd=out,
            preload=libiotune, timeout=120)  # fmt: skip
    return out


def assert_same_bytes(want_profile: Path, got_profile: Path, suffix: str, *context) -> None:
    """The file ending in suffix moved the same bytes (within 1 %) at every layer in both
    profiles: written and read, HDF5, MPI-IO and POSIX (issue 22's per-layer agreement)."""
    want, got = file_bytes(want_profile, suffix), file_bytes(got_profile, suffix)
    assert set(want) == set(got) == {"hdf5", "mpiio", "posix"}, (*context, got, want)
    for layer, (w, r) in want.items():
        gw, gr = got[layer]
        assert abs(gw - w) <= 0.01 * w and abs(gr - r) <= 0.01 * r, (*context, layer, got, want)


@pytest.fixture(scope="module")
def external_program(tmp_path_factory) -> Path:
    return build_hdf5_program(tmp_path_factory, "skel_ext")


def _profiled_case(case, kernel, libiotune, external_program, tmp_path) -> tuple[Path, Path]:
    """(directory of the application's files, its trace-mode profile) for a CASES entry."""
    name, args = CASES[case]
    exe = external_program if name is None else kernel(name)
    return _profiled(tmp_path, [exe, *args], libiotune)


def _profiled(tmp: Path, argv: list, libiotune: Path) -> tuple[Path, Path]:
    """(directory of the application's files, its trace-mode profile): argv run in tmp/orig."""
    orig = tmp / "orig"
    orig.mkdir()
    return orig, _profile(orig, argv, libiotune)


@needs_cc
@pytest.mark.parametrize("case", list(CASES))
def test_profile_to_skeleton_keeps_the_files_structure(
    case, kernel, libiotune, external_program, tmp_path
):
    orig, prof = _profiled_case(case, kernel, libiotune, external_program, tmp_path)
    desc = fp.from_profile(str(prof), str(orig))
    out, timing = _run_skeleton(desc, tmp_path)
    want, got = _files(orig), _files(out)
    assert sorted(got) == sorted(want)
    for f in want:
        if f.endswith(".h5"):
            assert h5layout.read(str(out / f)) == h5layout.read(str(orig / f)), f
        else:
            assert got[f] == want[f], f
    t = runmod.load_timing(str(timing))
    assert t["ranks"] == 2 and len(t["per_rank"]) == 2
    assert all(len(r["steps"]) == t["steps"] for r in t["per_rank"])


@needs_cc
@pytest.mark.parametrize("case", ["gcrmio", "vorpalio-uneven", "external"])
def test_types_and_chunks_come_from_the_trace_alone(
    case, kernel, libiotune, external_program, tmp_path
):
    # the application's files are gone: types (int64, uint16, float64) and chunking must come
    # from the trace (schema 4), not from h5dump of the output
    orig, prof = _profiled_case(case, kernel, libiotune, external_program, tmp_path)
    want = {f: h5layout.read(str(orig / f)) for f in _files(orig) if f.endswith(".h5")}
    for f in want:
        (orig / f).unlink()
    desc = fp.from_profile(str(prof), str(orig))
    # only filters, which no trace records, are said to be unknown
    unknown = [n for n in desc["notes"] if "assumed" in n or "not found" in n]
    assert all("filters" in n and "not reproduced" in n for n in unknown), desc["notes"]
    out, _ = _run_skeleton(desc, tmp_path)
    assert want and {f: h5layout.read(str(out / f)) for f in want} == want


@needs_cc
def test_opens_without_data_on_some_ranks_are_left_out(test_prog, libiotune, tmp_path):
    # every rank creates each file empty, then writes its block; rank 0 alone opens the file
    # twice more to ask its size (IOR's pattern): the skeleton writes the same files
    orig, prof = _profiled(tmp_path, [test_prog("nodata_probe"), "2", "1024"], libiotune)
    desc = fp.from_profile(str(prof), str(orig))
    assert any("wrote nothing" in n for n in desc["notes"]), desc["notes"]
    out, _ = _run_skeleton(desc, tmp_path)
    assert _files(out) == _files(orig) == {"chk.0.dat": 16384, "chk.1.dat": 16384}


def _mpiio_calls(profile: Path) -> list[list[tuple]]:
    """Per rank: the MPI-IO calls (function, bytes, collective, calls in a row, memory layout),
    and the views."""
    out = []
    for t in iotrace.load(profile):
        sigs = t["signatures"]
        mpiio = [(sigs[e[0]], e[1]) for e in t["events"] if sigs[e[0]]["layer"] == "mpiio"]
        calls = [(s["func"], s["size"], s["mode"], n, s["memory"]) for s, n in mpiio]
        out.append([calls, t["views"]])
    return out


@needs_cc
def test_haccio_one_call_skeleton_makes_the_kernels_calls(kernel, libiotune, tmp_path):
    # one MPI_File_write_all per rank through an hindexed file view (header + 9 variables) from
    # an hindexed memory datatype: the skeleton sets the same view and makes the same call with
    # the same bytes in as many pieces, per rank
    orig, prof = _profiled(tmp_path, [kernel("haccio"), "--particles", "100"], libiotune)
    desc = fp.from_profile(str(prof), str(orig))
    assert not [n for n in desc["notes"] if "view" in n], desc["notes"]
    skeleton = _skeleton(desc, tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    _profile(out, [skeleton, "--dir", out], libiotune)
    want, got = _mpiio_calls(prof), _mpiio_calls(out / "profile.json")
    # rank 1: its 9 variables from 9 buffers of its own (an hindexed memory datatype)
    pieces = [400] * 7 + [800, 200]
    assert [c for c, _ in want][1][1:3] == [
        ("MPI_File_set_view", 3800, 0, 1, None),
        ("MPI_File_write_all", 3800, 1, 1, {"size": 3800, "pieces": pieces}),
    ]
    assert got == want
    assert _files(out)["haccio.dat"] == _files(orig)["haccio.dat"]


def test_from_profile_without_traces_says_how_to_get_them(tmp_path):
    prof = tmp_path / "p.json"
    prof.write_text(json.dumps({"schema": "iotune-profile", "version": 1, "ranks": 1}))
    with pytest.raises(fp.FromProfileError, match="iotune profile --trace") as e:
        fp.from_profile(str(prof))
    # named by the trace directory, not an old file name (rank-0.json.gz: the runtime writes
    # one file per host, host-I.json.gz)
    assert str(e.value).startswith(f"{prof}.trace: missing: the profile has no trace of rank 0")
    assert "host-*.json.gz" in str(e.value) and f"{prof}.trace/rank-0" not in str(e.value)


# ----------------------------------------------------------------------------- methods

METHOD_DESC = """\
skel: 1
name: m
ranks: 2
parameters: {n: 100, rows: 6}
steps: 2
files:
  - name: m.h5
    datasets:
      - {name: '/s{step}/field', type: float64, dims: [rows, n * size], chunks: [3, n]}
      - {name: '/s{step}/ids', type: int32, dims: [n * size]}
    writes:
      - {dataset: '/s{step}/field', start: [0, rank * n], count: [rows, n]}
      - {dataset: '/s{step}/ids', start: [rank * n], count: [n], transfer: independent}
"""
PER_RANK_STEP = 6 * 100 * 8 + 100 * 4  # bytes of one rank in one step


@pytest.fixture(scope="module")
def method_skeleton(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("methods")
    d = dmod.parse_text(METHOD_DESC, "m.yaml")
    gen.generate(d, str(tmp / "src"), "m.yaml", pkg=HDF5_PC, cc=MPICC)
    return Path(runmod.build(str(tmp / "src")))


def _run_method(skeleton: Path, tmp: Path, *opts: str) -> dict:
    out = tmp / "out"
    out.mkdir(exist_ok=True)
    run_mpi(2, [skeleton, "--dir", out, "--timing", tmp / "t.json", *opts], timeout=120)
    return runmod.load_timing(str(tmp / "t.json"))


@needs_cc
@pytest.mark.parametrize("transfer", ["collective", "independent"])
def test_method_hdf5(method_skeleton, tmp_path, transfer):
    t = _run_method(method_skeleton, tmp_path, "--method", "hdf5", "--transfer", transfer)
    layout = h5layout.read(str(tmp_path / "out" / "m.h5"))
    assert layout["datasets"]["/s1/field"] == {
        "type": "H5T_IEEE_F64LE",
        "dims": [6, 200],
        "maxdims": [6, 200],
        "chunks": [3, 100],
        "members": None,
        "filters": [],
        "fill_time": "ifset",
        "alloc_time": "early",  # MPI-IO allocates early
        "fill_value": "default",
        "layout": "chunked",
        "complete": True,
    }
    assert layout["datasets"]["/s0/ids"]["type"] == "H5T_STD_I32LE"
    assert t["method"] == "hdf5" and t["bytes"] == 2 * 2 * PER_RANK_STEP


@needs_cc
def test_method_mpiio_aligns_each_ranks_block_to_the_stripe(method_skeleton, tmp_path):
    t = _run_method(method_skeleton, tmp_path, "--method", "mpiio", "--stripe", "8192")
    # one shared raw file (opened once for both steps): rank 0's 2 x 5200 bytes padded to
    # 2 stripes of 8192, then rank 1's block
    assert (tmp_path / "out" / "m.h5").stat().st_size == 2 * 8192 + 2 * PER_RANK_STEP
    assert t["bytes"] == 2 * 2 * PER_RANK_STEP
    assert all(sum(s[1] for s in r["steps"]) > 0 for r in t["per_rank"])  # the Allgather


@needs_cc
def test_method_posix_writes_one_file_per_rank(method_skeleton, tmp_path):
    _run_method(method_skeleton, tmp_path, "--method", "posix")
    d = tmp_path / "out" / "m.h5.dir"
    assert {p.name: p.stat().st_size for p in d.iterdir()} == {
        "rank-0": 2 * PER_RANK_STEP,
        "rank-1": 2 * PER_RANK_STEP,
    }


@needs_cc
@pytest.mark.parametrize("aggregators", [1, 2])
def test_method_aggregate_writes_one_subfile_per_aggregator(method_skeleton, tmp_path, aggregators):
    t = _run_method(
        method_skeleton, tmp_path, "--method", "aggregate", "--aggregators", str(aggregators)
    )
    d = tmp_path / "out" / "m.h5.dir"
    sizes = {p.name: p.stat().st_size for p in d.iterdir()}
    per_agg = 2 * 2 * PER_RANK_STEP // aggregators  # 2 steps, 2 ranks
    assert sizes == {f"agg-{g}": per_agg for g in range(aggregators)}
    assert t["bytes"] == 2 * 2 * PER_RANK_STEP


@needs_cc
@pytest.mark.parametrize("method", ["native", "hdf5", "mpiio", "posix", "aggregate"])
def test_write_memory_is_made_before_the_first_step(method_skeleton, tmp_path, method):
    # an application's arrays exist before its I/O: no write may wait for its memory to be
    # made (a skeleton that did so spent a third of its I/O window between writes)
    t = _run_method(method_skeleton, tmp_path, "--method", method)
    for r in t["per_rank"]:
        assert r["late_growths"] == 0, r
        assert r["memory"] >= PER_RANK_STEP, r


@needs_cc
def test_parameters_change_the_sizes(method_skeleton, tmp_path):
    _run_method(method_skeleton, tmp_path, "--set", "n=10", "--steps", "1", "--cleanup")
    assert not (tmp_path / "out" / "m.h5").exists()  # --cleanup
    _run_method(method_skeleton, tmp_path, "--set", "n=10", "--steps", "1")
    layout = h5layout.read(str(tmp_path / "out" / "m.h5"))
    assert set(layout["datasets"]) == {"/s0/field", "/s0/ids"}
    assert layout["datasets"]["/s0/ids"]["dims"] == [20]


def test_params_file_round_trip(tmp_path):
    d = dmod.parse_text(METHOD_DESC, "m.yaml")
    p = tmp_path / "params.yaml"
    p.write_text(runmod.write_params(d).replace("n: 100", "n: 7"))
    d2 = runmod.apply_params(d, str(p))
    assert d2.parameters["n"] == 7
    p.write_text("ranks: 2\nparameters: {nn: 3}\n")
    with pytest.raises(dmod.DescriptorError, match="unknown parameter 'nn'"):
        runmod.apply_params(d, str(p))


def test_plot_writes_a_png(tmp_path):
    t = {
        "schema": "iotune-skel-timing",
        "skeleton": "x",
        "method": "posix",
        "ranks": 2,
        "per_rank": [
            {"rank": 0, "steps": [[0.1, 0.0, 0.2, 0.01]]},
            {"rank": 1, "steps": [[0.1, 0.3, 0.2, 0.01]]},
        ],
    }
    runmod.plot(t, str(tmp_path / "f.png"))
    assert (tmp_path / "f.png").read_bytes()[:4] == b"\x89PNG"


# ----------------------------------------------------------------------------- command line


def test_cli_bad_descriptor_is_one_message_and_exit_2(tmp_path, capsys):
    from iotune import cli

    bad = tmp_path / "bad.yaml"
    bad.write_text(GOOD.replace("type: float64", "type: double"))
    assert cli.main(["skel", "generate", str(bad), "-o", str(tmp_path / "g")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"{bad}:9: files[0].datasets[0].type:") and "\n" not in err
    assert not (tmp_path / "g").exists()


@needs_cc
def test_cli_run_plot_and_job_script(tmp_path, capsys):
    from iotune import cli

    desc = tmp_path / "m.yaml"
    desc.write_text(METHOD_DESC)
    params = tmp_path / "p.yaml"
    assert cli.main(["skel", "params", str(desc), "-o", str(params)]) == 0
    params.write_text(params.read_text().replace("n: 100", "n: 50").replace("steps: 2", "steps: 1"))
    out, data = tmp_path / "gen", tmp_path / "data"
    data.mkdir()
    argv = ["skel", "run", str(desc), "--params", str(params), "-o", str(out), "--dir",
            str(data), "--method", "posix", "--plot", str(tmp_path / "r.png")]  # fmt: skip
    assert cli.main(argv) == 0
    assert "method posix, 2 ranks, 1 steps" in capsys.readouterr().out
    assert (data / "m.h5.dir" / "rank-1").stat().st_size == 6 * 50 * 8 + 50 * 4
    assert (tmp_path / "r.png").exists()
    assert "pkg-config --libs $(HDF5_PC)" in (out / "Makefile").read_text()
    assert f"CC = {MPICC}\n" in (out / "Makefile").read_text()  # dynamic HDF5, not h5pcc
    proc = subprocess.run(["sh", str(out / "run-local.sh"), "--dir", str(data)],
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert h5layout.read(str(data / "m.h5"))["datasets"]["/s0/ids"]["dims"] == [100]
    assert "srun ./skeleton" in (out / "run-slurm.sbatch").read_text()


# ----------------------------------------------------------------------------- issue 22


@pytest.fixture(scope="module")
def structure_program(tmp_path_factory) -> Path:
    """tests/data/skel_structure.c: compound type, unwritten dataset, padded names, deflate."""
    out = tmp_path_factory.mktemp("structure") / "skel_structure"
    flags = subprocess.run(
        ["pkg-config", "--cflags", "--libs", HDF5_PC], capture_output=True, text=True, check=True
    ).stdout.split()
    subprocess.run(
        [MPICC, "-O1", "-o", str(out), str(REPO / "tests/data/skel_structure.c"), *flags],
        check=True,
        timeout=120,
    )
    return out


def _h5dump_h(path: Path) -> list[str]:
    """h5dump -H without its first line (the file's name)."""
    proc = subprocess.run(["h5dump", "-H", str(path)], capture_output=True, text=True, check=True)
    return proc.stdout.splitlines()[1:]


def _structure_argv(program: str, structure_program: Path) -> list:
    if program == "c":
        return [structure_program]
    pytest.importorskip("h5py", reason="h5py is not installed (scripts/install.sh builds it)")
    pytest.importorskip("mpi4py", reason="mpi4py is not installed")
    return [sys.executable, REPO / "tests/data/skel_h5py_structure.py"]


@needs_cc
@pytest.mark.parametrize("program", ["c", "h5py"])
def test_skeleton_keeps_compound_types_unwritten_datasets_padding_and_filters(
    program, structure_program, libiotune, tmp_path
):
    n = 16
    argv = [*_structure_argv(program, structure_program), str(n), "2"]
    orig, prof = _profiled(tmp_path, argv, libiotune)
    desc = fp.from_profile(str(prof), str(orig))
    f = desc["files"][0]
    assert f["name"] == "chk_{step:04}.h5" and desc["steps"] == 2
    assert {"flush": True} in f["writes"]  # H5Fflush where the program flushed
    out, timing = _run_skeleton(desc, tmp_path)
    assert sorted(_files(out)) == sorted(_files(orig)) == ["chk_0000.h5", "chk_0001.h5"]
    for name in ("chk_0000.h5", "chk_0001.h5"):
        assert _h5dump_h(out / name) == _h5dump_h(orig / name), name  # types, groups, datasets
        want, got = h5layout.read(str(orig / name)), h5layout.read(str(out / name))
        assert got == want, name  # chunks and filters too (h5dump -p)
        step = name[4:8].lstrip("0") or "0"
        ds = want["datasets"]
        assert f"/step_{int(step):03d}/unwritten" in ds
        assert ds[f"/step_{int(step):03d}/particles"]["members"] == [
            ["H5T_STD_I32LE", "id"], ["H5T_IEEE_F64LE", "x"], ["H5T_IEEE_F64LE", "y"],
            ["H5T_STD_I64LE", "flag"]]  # fmt: skip
        assert ds[f"/step_{int(step):03d}/rho"]["filters"] == ["shuffle", "deflate=6"]
    t = runmod.load_timing(str(timing))
    per_rank = 2 * n * (32 + 8)  # 2 steps of n 32-byte particles and n doubles
    assert [r["bytes"] for r in t["per_rank"]] == [per_rank, per_rank]


@needs_cc
def test_an_interpreters_own_files_with_digits_in_their_path_are_no_steps(tmp_path, libiotune):
    """h5py's script (and pyvenv.cfg) are opened by the interpreter: with a digit in their path
    (a checkout in /work/ci1) their ops were numbered as step 1, the steps no longer repeated,
    and the skeleton was unrolled into chk_0000.h5 and chk_0001.h5 instead of chk_{step:04}.h5
    (seen in a fresh clone's CI run)."""
    pytest.importorskip("h5py", reason="h5py is not installed (scripts/install.sh builds it)")
    pytest.importorskip("mpi4py", reason="mpi4py is not installed")
    # the path's first number must be a step's (1), so not under tmp_path (pytest-NNN)
    where = Path(tempfile.mkdtemp(prefix="skelci1-"))
    try:
        script = where / "skel_h5py_structure.py"
        shutil.copy(REPO / "tests/data/skel_h5py_structure.py", script)
        orig, prof = _profiled(tmp_path, [sys.executable, script, "16", "2"], libiotune)
    finally:
        shutil.rmtree(where)
    desc = fp.from_profile(str(prof), str(orig))
    assert [f["name"] for f in desc["files"]] == ["chk_{step:04}.h5"] and desc["steps"] == 2


@needs_cc
def test_a_compound_type_without_the_applications_file_is_opaque_of_its_size(
    structure_program, libiotune, tmp_path, monkeypatch
):
    orig, prof = _profiled(tmp_path, [structure_program, "8", "1"], libiotune)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    desc = fp.from_profile(str(prof), str(elsewhere))
    types = {d["name"]: d["type"] for d in desc["files"][0]["datasets"]}
    assert types["/step_000/particles"] == {"opaque": 32}
    assert any("compound" in n and "opaque" in n for n in desc["notes"])
    assert any("filters" in n and "not reproduced" in n for n in desc["notes"])


@needs_cc
def test_skel_run_never_replaces_a_file_it_did_not_create(
    structure_program, libiotune, tmp_path, monkeypatch
):
    from iotune import cli

    orig, prof = _profiled(tmp_path, [structure_program, "8", "1"], libiotune)
    desc = tmp_path / "s.yaml"
    desc.write_text(fp.to_yaml(fp.from_profile(str(prof), str(orig)), "profile.json"))
    before = (orig / "chk_0000.h5").read_bytes()
    gen_dir = tmp_path / "gen"
    common = ["-o", str(gen_dir), "--cc", MPICC, "--mpiexec", " ".join(launcher()[:-1])]
    # into the application's directory: refused, the application's file untouched
    rc = cli.main(["skel", "run", str(desc), *common, "--dir", str(orig)])
    assert rc == 1 and (orig / "chk_0000.h5").read_bytes() == before
    # by default: a new directory of its own, every time
    monkeypatch.chdir(orig)
    assert cli.main(["skel", "run", str(desc), *common]) == 0
    assert cli.main(["skel", "run", str(desc), *common]) == 0
    runs = sorted(gen_dir.glob("run-data-*"))
    assert len(runs) == 2 and all((r / "chk_0000.h5").exists() for r in runs)
    assert (orig / "chk_0000.h5").read_bytes() == before
    # a second run in the same directory replaces only what the first one wrote
    assert cli.main(["skel", "run", str(desc), *common, "--dir", str(runs[0])]) == 0


@needs_cc
def test_skel_compare_reports_skeleton_vs_original(structure_program, libiotune, tmp_path, capsys):
    from iotune import cli

    orig, prof = _profiled(tmp_path, [structure_program, "8", "1"], libiotune)
    desc = tmp_path / "s.yaml"
    desc.write_text(fp.to_yaml(fp.from_profile(str(prof), str(orig)), "profile.json"))
    argv = ["skel", "compare", str(desc), "-o", str(tmp_path / "gen"), "--cc", MPICC,
            "--mpiexec", " ".join(launcher()[:-1]), "--methods", "native", "--repeats", "1",
            "--original", f"{structure_program} 8 1"]  # fmt: skip
    assert cli.main(argv) == 0
    out = capsys.readouterr().out
    assert out.count("skel compare: run ") == 3  # progress: native, original, skeleton
    line = next(ln for ln in out.splitlines() if ln.startswith("skeleton vs original"))
    assert "ratio" in line and any(w in line for w in ("agree", "faster", "slower"))
    assert (orig / "chk_0000.h5").exists()


def _bytes_per_layer(profile: Path) -> dict[str, int]:
    """Bytes written per layer over the run's data files (not the skeleton's own files)."""
    out = {"hdf5": 0, "mpiio": 0, "posix": 0}
    for f in json.loads(profile.read_text())["files"]:
        if f["name"].endswith((".json", ".iotune-skel-files")):
            continue
        for layer in out:
            out[layer] += int(f.get(layer, {}).get("bytes_written", 0))
    return out


@needs_cc
def test_compound_skeleton_writes_the_originals_bytes_at_every_layer(
    structure_program, libiotune, tmp_path
):
    orig, prof = _profiled(tmp_path, [structure_program, "4096", "2"], libiotune)
    want = _bytes_per_layer(prof)
    skeleton = _skeleton(fp.from_profile(str(prof), str(orig)), tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    got_prof = _profile(out, [skeleton, "--timing", tmp_path / "t.json"], libiotune)
    got = _bytes_per_layer(got_prof)
    assert got["hdf5"] == want["hdf5"] == 2 * 2 * 4096 * (32 + 8)
    for layer in ("mpiio", "posix"):  # HDF5's metadata and the compressed chunks: within 1 %
        assert abs(got[layer] - want[layer]) <= 0.01 * want[layer], (layer, got, want)


def test_a_write_without_a_selection_has_the_datasets_rank():
    """netCDF-4 (netcdf-c's tst_parallel3, in the corpus) writes nothing to a 2-D dataset whose
    unlimited dimension is still 0: the trace has no selection box. The skeleton's empty write
    has one entry per dimension, so its own descriptor check accepts it (it said "expected 2
    entries"); a note is made only when such a write moved bytes."""
    from iotune.skel import decomposition as dec
    from iotune.skel.ops import Op

    def op(size):
        return Op("write", "H5Dwrite", "test.nc", "hdf5", "/vertex", None, None, None, None,
                  size, True, 0.0, 0.0)  # fmt: skip

    entry = {"name": "/vertex", "dims": [2, 0]}
    notes = []
    w = dec.selection([0, 1], [op(0), op(0)], (entry, [2, 0]), 2, dec.Blocks(), notes.append)
    assert w == {"start": [0, 0], "count": [0, 0]} and notes == []
    w = dec.selection([0, 1], [op(8), op(0)], (entry, [2, 0]), 2, dec.Blocks(), notes.append)
    assert w == {"start": [0, 0], "count": [0, 0]} and len(notes) == 1


# ----------------------------------------------------------------------------- attributes

H5DUMP_ATTRS = """\
HDF5 "a.h5" {
GROUP "/" {
   ATTRIBUTE "code" {
      DATATYPE  H5T_STRING {
         STRSIZE H5T_VARIABLE;
         STRPAD H5T_STR_NULLTERM;
         CSET H5T_CSET_UTF8;
         CTYPE H5T_C_S1;
      }
      DATASPACE  SCALAR
   }
   GROUP "step_000" {
      ATTRIBUTE "arr" {
         DATATYPE  H5T_STD_I32LE
         DATASPACE  SIMPLE { ( 3 ) / ( 3 ) }
      }
      ATTRIBUTE "ref" {
         DATATYPE  H5T_REFERENCE { H5T_STD_REF_OBJECT }
         DATASPACE  SCALAR
      }
      DATASET "x" {
         DATATYPE  H5T_IEEE_F64LE
         DATASPACE  SIMPLE { ( 4 ) / ( 4 ) }
         ATTRIBUTE "b" {
            DATATYPE  H5T_STRING {
               STRSIZE 3;
               STRPAD H5T_STR_NULLPAD;
               CSET H5T_CSET_ASCII;
               CTYPE H5T_C_S1;
            }
            DATASPACE  SCALAR
         }
      }
   }
}
}
"""


def test_h5dump_attributes_become_descriptor_entries():
    from iotune.skel import attrs

    got = h5layout.parse(H5DUMP_ATTRS)
    assert got["datasets"]["/step_000/x"]["dims"] == [4]  # attributes do not disturb datasets
    entries = [attrs.from_layout(a, dmod.TYPES) for a in got["attributes"]]
    assert entries == [
        {"object": "/", "name": "code", "type": {"string": "variable", "pad": "nullterm",
                                             "cset": "utf8"}},
        {"object": "/step_000", "name": "arr", "type": "int32", "dims": [3]},
        None,  # a reference: not written by skeletons (a note says so)
        {"object": "/step_000/x", "name": "b", "type": {"string": 3, "pad": "nullpad",
                                                    "cset": "ascii"}},
    ]  # fmt: skip
    text = GOOD.replace("    writes:", "    attributes:\n" + "".join(
        f"      - {json.dumps(e)}\n" for e in entries if e) + "    writes:")  # fmt: skip
    d = dmod.parse_text(text, "a.yaml")
    assert [(a.on, a.name, a.type, a.size) for a in d.files[0].attributes] == [
        ("/", "code", "string", 0), ("/step_000", "arr", "int32", 0),
        ("/step_000/x", "b", "string", 3)]  # fmt: skip
    src = gen.skeleton_c(d, "a.yaml")
    assert "skel_type_string(3, H5T_STR_NULLPAD, H5T_CSET_ASCII)" in src


@pytest.mark.parametrize(
    "attr, where",
    [
        ("{object: g, name: a, type: int8}", "attributes[0].object"),
        ("{object: /, name: a, type: int7}", "attributes[0].type"),
        ("{object: /, name: a, type: {string: 0}}", "attributes[0].type.string"),
        ("{object: /, name: a, type: int8, dims: [-1]}", "attributes[0].dims"),
        ("{object: '/{steps}', name: a, type: int8}", "attributes[0].object"),
    ],
)
def test_a_bad_attribute_gives_one_message_with_line_and_field(attr, where):
    text = GOOD.replace("    writes:", f"    attributes:\n      - {attr}\n    writes:")
    with pytest.raises(dmod.DescriptorError) as e:
        dmod.parse_text(text, "a.yaml")
    assert f"a.yaml:12: files[0].{where}" in str(e.value)


def _header(path: Path) -> list[str]:
    """h5dump -H -p without the file's name, a compressed dataset's stored size and a
    contiguous dataset's offset (where HDF5 placed it)."""
    import re

    out = subprocess.run(["h5dump", "-H", "-p", str(path)], capture_output=True, text=True,
                         check=True).stdout.splitlines()[1:]  # fmt: skip
    out = [re.sub(r"SIZE \d+ \([\d.]+:1 COMPRESSION\)", "SIZE (compressed)", ln) for ln in out]
    return [re.sub(r"OFFSET \d+", "OFFSET", ln) for ln in out]


@needs_cc
@pytest.mark.parametrize("program", ["checkpoint.c", "h5py_steps.py"])
def test_skeleton_recreates_the_attributes_of_groups_datasets_and_root(
    program, libiotune, tmp_path
):
    """tests/data/real: attributes on the file's root (h5py), on groups and on datasets, of
    numbers and of fixed and variable-length strings: h5dump -H -p of the skeleton's files is
    the original's (it lacked every attribute)."""
    if program.endswith(".c"):
        exe = tmp_path / "checkpoint"
        pc = ["pkg-config", "--cflags", "--libs", HDF5_PC]
        flags = subprocess.run(pc, capture_output=True, text=True, check=True).stdout.split()
        subprocess.run([MPICC, "-O1", "-o", str(exe), str(REPO / "tests/data/real" / program),
                        *flags], check=True, timeout=120)  # fmt: skip
        argv = [exe, "--rows", "32", "--cols", "16", "--steps", "2", "--fields", "2"]
    else:
        pytest.importorskip("h5py", reason="h5py is not installed (scripts/install.sh builds it)")
        pytest.importorskip("mpi4py", reason="mpi4py is not installed")
        argv = [sys.executable, REPO / "tests/data/real" / program]
    orig, prof = _profiled(tmp_path, argv, libiotune)
    desc = fp.from_profile(str(prof), str(orig))
    # made by the traced attribute calls (test_skel_attrs.py), else from the file (h5dump)
    assert any(f.get("attributes") or any("attribute" in w for w in f["writes"])
               for f in desc["files"])  # fmt: skip
    out, _ = _run_skeleton(desc, tmp_path)
    names = sorted(p.name for p in orig.glob("*.h5"))
    assert names and names == sorted(p.name for p in out.glob("*.h5"))
    for name in names:
        assert "ATTRIBUTE" in "".join(_header(orig / name))
        assert _header(out / name) == _header(orig / name), name


# ----------------------------------------------------------------------------- reads

READERS = {
    "vorpalio-read": ("vorpalio", ["--block", "4,6,6", "--procs", "2,1,1", "--read"]),
    "iorio-hdf5-read": ("iorio", ["--api", "hdf5", "--block", "16K", "--transfer", "4K",
                                  "--segments", "2", "--read"]),
    "iorio-mpiio-read": ("iorio", ["--api", "mpiio", "--block", "16K", "--transfer", "4K",
                                   "--read"]),
    "iorio-posix-read": ("iorio", ["--api", "posix", "--block", "16K", "--transfer", "8K",
                                   "--read"]),
}  # fmt: skip


def _moved_per_layer(profile: Path) -> dict[tuple[str, str], int]:
    """(layer, written|read) -> bytes over the run's data files."""
    out = {}
    for f in json.loads(profile.read_text())["files"]:
        if f["name"].endswith((".json", ".iotune-skel-files")):
            continue
        for layer in ("hdf5", "mpiio", "posix"):
            for way in ("written", "read"):
                key = (layer, way)
                out[key] = out.get(key, 0) + int(f.get(layer, {}).get(f"bytes_{way}", 0))
    return out


@needs_cc
@pytest.mark.parametrize("case", list(READERS))
def test_skeleton_reads_what_the_application_read_back(case, kernel, libiotune, tmp_path):
    """A program that writes, closes and reads its file back: the skeleton reopens its own
    file (open: existing) and reads the same selections; bytes read and written at every layer
    are the original's within 1 % (HDF5's: equal). Skeletons used to write only."""
    name, args = READERS[case]
    orig, prof = _profiled(tmp_path, [kernel(name), *args], libiotune)
    desc = fp.from_profile(str(prof), str(orig))
    assert any(w.get("read") for f in desc["files"] for w in f["writes"]), desc["files"]
    want = _moved_per_layer(prof)
    assert want[("posix", "read")] > 0
    skeleton = _skeleton(desc, tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    got = _moved_per_layer(_profile(out, [skeleton, "--timing", tmp_path / "t.json"], libiotune))
    assert got[("hdf5", "read")] == want[("hdf5", "read")]
    for key, value in want.items():
        assert abs(got[key] - value) <= 0.01 * value, (key, got, want)
