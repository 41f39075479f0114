"""`iotune advise` on hostile inputs: damaged Darshan logs (once a segfault, an abort in free(),
a KeyError traceback, and the log unlinked by the native reader), profiles with damaged values,
datasets created with 0 elements, outputs onto a full disk, and 10^5 files (once quadratic)."""

import json
import os
import shutil
import struct
import subprocess
import sys
import time
from pathlib import Path

import pytest

from iotune import cli, insights, storage_layout, trace_insights
from iotune.advise import darshan_safe

CORPUS = Path(__file__).resolve().parent.parent / "data" / "fuzz" / "darshan"
LOG = CORPUS / "ior_hdf5_example.darshan"  # IOR through HDF5, 4 ranks (shipped in PyDarshan)


def _advise(capsys, *argv):
    status = cli.main(["advise", *map(str, argv)])
    out = capsys.readouterr()
    return status, out.out, out.err


def _one_message(err: str, name: str) -> str:
    """The standard error of a refused input: one line, naming the file, no traceback."""
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert "Traceback" not in err and name in lines[0], err
    return lines[0]


# ----------------------------------------------------------------------------- Darshan logs


@pytest.mark.parametrize("size", [0, 8, 100, 500, 1000, 2000, 3000, 3900, 3966])
def test_truncated_log_is_refused_before_the_native_reader(tmp_path, capsys, size):
    log = tmp_path / "t.darshan"
    log.write_bytes(LOG.read_bytes()[:size])
    status, out, err = _advise(capsys, log, "-o", "-")
    assert status == 1 and out == ""
    line = _one_message(err, str(log))
    assert "truncated" in line or "does not start with a Darshan log format version" in line
    assert log.exists()


@pytest.mark.parametrize(
    "offset, bit, said",
    [(9, 1, "bad magic number"), (16, 3, "unknown compression type"),
     (30, 4, "truncated"), (500, 2, "is corrupt"), (1500, 0, "is corrupt"),
     (3960, 5, "is corrupt")],
)  # fmt: skip
def test_bit_flipped_log_is_refused_with_one_message(tmp_path, capsys, offset, bit, said):
    data = bytearray(LOG.read_bytes())
    data[offset] ^= 1 << bit
    log = tmp_path / "f.darshan"
    log.write_bytes(bytes(data))
    status, _, err = _advise(capsys, log, "-o", "-")
    assert status == 1 and said in _one_message(err, str(log))


def test_check_accepts_real_logs():
    for log in (LOG, CORPUS / "macsio.darshan"):
        assert darshan_safe.check(log) > 0


def test_a_native_crash_is_one_message_and_the_log_survives(tmp_path, capsys, monkeypatch):
    """Without the header check, this truncated log made PyDarshan's C reader crash (SIGSEGV or
    an abort in free()) and once unlink the log: now it crashes a child, reading a copy."""
    pytest.importorskip("darshan")
    log = tmp_path / "crash.darshan"
    shutil.copy(CORPUS / "truncated-500-crashed-reader.darshan", log)
    monkeypatch.setattr(darshan_safe, "check", lambda *a, **k: 0)
    status, _, err = _advise(capsys, log, "-o", "-")
    assert status == 1
    line = _one_message(err, str(log))
    assert "the Darshan reader crashed" in line or "PyDarshan cannot read it" in line
    assert log.read_bytes() == (CORPUS / "truncated-500-crashed-reader.darshan").read_bytes()


def test_a_crash_by_signal_is_named(tmp_path, monkeypatch):
    pytest.importorskip("darshan")
    crash = "import os, signal; os.kill(os.getpid(), signal.SIGSEGV)"
    monkeypatch.setattr(darshan_safe, "_child_command", lambda *a: [sys.executable, "-c", crash])
    with pytest.raises(darshan_safe.DarshanLogError, match=r"crashed \(SIGSEGV\)"):
        darshan_safe.read(LOG)


def test_a_hung_reader_is_stopped(tmp_path, monkeypatch):
    pytest.importorskip("darshan")
    hang = "import time; time.sleep(60)"
    monkeypatch.setattr(darshan_safe, "_child_command", lambda *a: [sys.executable, "-c", hang])
    t = time.monotonic()
    with pytest.raises(darshan_safe.DarshanLogError, match="did not finish within 1 s"):
        darshan_safe.read(LOG, timeout=1)
    assert time.monotonic() - t < 30


def test_the_reader_runs_under_a_memory_bound(monkeypatch):
    pytest.importorskip("darshan")
    grab = "x = bytearray(64 * 1024**3)"  # beyond the bound: MemoryError in the child
    monkeypatch.setattr(darshan_safe, "_child_command", lambda *a: [sys.executable, "-c", grab])
    with pytest.raises(darshan_safe.DarshanLogError, match="out of memory"):
        darshan_safe.read(LOG)


def test_a_python_error_of_the_reader_is_one_message(tmp_path, capsys):
    """A flipped bit in the POSIX module's version: PyDarshan raised KeyError('counters')."""
    pytest.importorskip("darshan")
    status, _, err = _advise(capsys, CORPUS / "flip-posix-version.darshan", "-o", "-")
    assert status == 1
    assert "PyDarshan cannot read it" in _one_message(err, "flip-posix-version.darshan")


def test_a_decompression_bomb_is_refused_in_seconds(tmp_path, capsys):
    """A small log whose compressed regions inflate hugely (a 6 GiB one took 198 s before its
    message): a real log whose POSIX region is replaced by 1 MiB of zlib streams of zeros that
    expand to 1 GiB. Refused by the header check as soon as the region expands beyond 256
    times its size, before the reader starts."""
    import zlib

    data = bytearray((Path(__file__).resolve().parents[1] / "data" / "darshan" /
                      "vpicio-write.darshan").read_bytes())  # fmt: skip
    assert data[:5] == b"3.41\0"  # format 3.41: the map of regions starts at byte 32
    z = zlib.compressobj(9)
    stream = b"".join([z.compress(bytes(8 << 20)) for _ in range(8)] + [z.flush()])
    bomb = stream * 16  # 16 concatenated streams of 64 MiB of zeros
    posix = 32 + 16 * 2  # the name records' map, then module 0 (NULL), then POSIX
    struct.pack_into("<QQ", data, posix, len(data), len(bomb))
    log = tmp_path / "bomb.darshan"
    log.write_bytes(bytes(data) + bomb)
    t = time.monotonic()
    status, out, err = _advise(capsys, log, "-o", "-")
    assert time.monotonic() - t < 15
    assert status == 1 and out == ""
    line = _one_message(err, str(log))
    assert "POSIX records" in line and "decompression bomb" in line, line


def test_a_fifo_named_like_a_log_does_not_block(tmp_path, capsys):
    fifo = tmp_path / "x.darshan"
    os.mkfifo(fifo)
    status, _, err = _advise(capsys, fifo, "-o", "-")
    assert status == 1 and "not a regular file" in _one_message(err, str(fifo))


def test_a_good_log_still_reads(tmp_path, capsys):
    pytest.importorskip("darshan")
    status, out, err = _advise(capsys, LOG, "-o", "-")
    assert status == 0, err
    assert "(darshan log)" in out


# ----------------------------------------------------------------------------- empty datasets


def _write_trace(extent, writes, maxdims=None, type_size=8, version=2):
    """A rank's trace (schema 2) of H5Dwrite calls (step, box, size) on one dataset described
    with extent (and, as schema 4 adds, maxdims: None in it is unlimited)."""
    ds = {"file": "z.h5", "name": "/x", "dims": list(extent), "type_size": type_size}
    if maxdims is not None:
        ds["maxdims"] = list(maxdims)
    sigs = [{"layer": "hdf5", "func": "H5Dwrite", "file": "z.h5", "dataset": 0, "dims": list(box),
             "size": size, "step": step, "mode": 1} for step, box, size in writes]  # fmt: skip
    return {"schema": "iotune-trace", "version": version, "rank": 0, "ranks": 1,
            "datasets": [ds], "signatures": sigs,
            "events": [[i, 1, 0.0, 0.0, 0.0] for i in range(len(sigs))]}  # fmt: skip


def _fully(trace):
    return trace_insights.fully_written([c for c in trace_insights.trace_calls(trace)])


def test_a_dataset_described_with_0_elements_is_not_judged():
    """Created with 0 elements, extended, then written: the trace's extent is (0,), once a
    ZeroDivisionError (each box's start is an index modulo the extent)."""
    assert _fully(_write_trace((0,), [(0, (512,), 4096), (0, (512,), 4096)])) is None
    assert _fully(_write_trace((0, 8), [(0, (16, 8), 1024)])) is None


def test_an_extendible_dataset_is_never_said_fully_written():
    """Its extent may have grown past what was written (fill values left): never 'yes'."""
    writes = [(0, (4,), 32)]
    assert _fully(_write_trace((4,), writes)) == "yes"  # a fixed extent: written whole
    assert _fully(_write_trace((4,), writes, maxdims=[None])) is None
    assert _fully(_write_trace((4,), writes, maxdims=[4])) == "yes"


def test_a_selection_of_other_rank_than_its_dataset_is_not_a_box():
    assert _fully(_write_trace((4, 4), [(0, (2,), 16)])) is None  # once a ValueError (zip)


def test_long_runs_and_many_boxes_take_bounded_time():
    # 10^7 adjacent 1-D writes in one run: one interval, not 10^7 boxes
    trace = _write_trace((10**7,), [(0, (1,), 8)])
    trace["events"] = [[0, 10**7, 0.0, 0.0, 0.0]]
    sig = trace["signatures"][0]
    sig["step"] = 8
    t = time.monotonic()
    calls = trace_insights.trace_calls(trace)
    calls[0].offset = 0  # the run starts at the dataset's start
    assert trace_insights.fully_written(calls) == "yes"
    # 4096 scattered 2-D boxes: the sweep keeps only the boxes of the current slab
    scattered = [(((i * 7919) % 4096 * 3, (i * 104729) % 4096 * 3), (2, 2)) for i in range(4096)]
    assert trace_insights._union_volume(scattered) == 4096 * 4
    # a staircase of 4096 tall boxes: ~10^7 box visits, past the budget: unknown, quickly
    stairs = [((i, i), (4096, 1)) for i in range(4096)]
    with pytest.raises(trace_insights._TooMuch):
        trace_insights._union_volume(stairs)
    assert time.monotonic() - t < 60  # seconds, on a loaded machine (the old sweep: minutes)


def _profile_with_trace(tmp_path, trace, hdf5=None):
    hdf5 = hdf5 or {"writes": 2, "bytes_written": 8192, "collective_writes": 0,
                    "independent_writes": 2, "dataset_creates": 1}  # fmt: skip
    prof_path = tmp_path / "p.json"
    profile = {"schema": "iotune-profile", "version": 1, "ranks": 1, "wall_s": 1.0,
               "io": {"time_s": 0.1, "bytes_written": 8192, "bytes_read": 0}, "layers": {},
               "config": {"settings": []},
               "files": [{"name": "z.h5", "ranks": 1, "hdf5": hdf5,
                          "posix": {"writes": 3, "bytes_written": 20000}}]}  # fmt: skip
    prof_path.write_text(json.dumps(profile))
    (tmp_path / "p.json.trace").mkdir()
    (tmp_path / "p.json.trace" / "rank-0.json").write_text(json.dumps(trace))
    return prof_path


def test_advise_on_a_run_that_extended_an_empty_dataset(tmp_path, capsys):
    trace = _write_trace((0,), [(0, (512,), 4096), (0, (512,), 4096)], maxdims=[None])
    status, out, err = _advise(capsys, _profile_with_trace(tmp_path, trace), "--json", "-o", "-")
    assert status == 0, err
    (g,) = [g for g in json.loads(out)["groups"] if g["insights"]["interface"]]
    assert g["insights"]["fully_written"] is None


@pytest.fixture
def zero_extend(tmp_path):
    """tests/data/zero_extend.c built against the system's parallel HDF5 (MPICH)."""
    mpicc, pkgconf = shutil.which("mpicc.mpich"), shutil.which("pkg-config")
    if not (mpicc and pkgconf):
        pytest.skip("needs mpicc.mpich and pkg-config")
    flags = subprocess.run([pkgconf, "--cflags", "--libs", "hdf5-mpich"], capture_output=True,
                           text=True)  # fmt: skip
    if flags.returncode:
        pytest.skip("needs hdf5-mpich")
    exe = tmp_path / "zero_extend"
    src = Path(__file__).resolve().parent.parent / "data" / "zero_extend.c"
    subprocess.run([mpicc, "-Wall", "-Werror", "-o", str(exe), str(src), *flags.stdout.split()],
                   check=True, timeout=120)  # fmt: skip
    return exe


def test_a_real_run_that_extends_empty_datasets(tmp_path, capsys, libiotune, zero_extend):
    """A real MPI program: chunked datasets created with 0 elements, extended and written
    step by step, one left empty. advise once died of ZeroDivisionError on its profile, and
    the knowledge base's signature of it (the end of `iotune tune`) too."""
    from conftest import BUILD, launcher, run_mpi

    from iotune.kb import capture

    profile = tmp_path / "p.json"
    env = {"IOTUNE_PROFILE": str(profile), "IOTUNE_TRACE": "1", "IOTUNE_SESSION": "zero-extend"}
    run_mpi(2, [zero_extend], env=env, cwd=tmp_path, preload=libiotune, timeout=120)
    status, out, err = _advise(capsys, profile, "--json", "-o", "-")
    assert status == 0, err
    advice = json.loads(out)
    (g,) = [g for g in advice["groups"] if g["insights"]["interface"]]
    assert g["insights"]["layout"] == "chunked" and g["insights"]["fully_written"] is None
    assert "IOT-1" in {u["code"] for u in advice["undecided"]}  # not guessed either way
    sig = capture.profile_signature([*launcher(BUILD), "2", str(zero_extend)], lib=libiotune,
                                    cwd=tmp_path, timeout=120)  # fmt: skip
    assert sig.motif


# ----------------------------------------------------------------------------- outputs

FPP = {
    "schema": "iotune-profile",
    "version": 1,
    "ranks": 2,
    "wall_s": 1.0,
    "io": {"time_s": 0.1, "bytes_written": 8192, "bytes_read": 0},
    "layers": {},
    "config": {"settings": []},
    "files": [
        {
            "name": f"/lus/a.r{r}.dat",
            "ranks": 1,
            "fs": "lustre",
            "posix": {"writes": 4, "bytes_written": 4096, "write_time_s": 0.01},
        }
        for r in range(2)
    ],
}  # fmt: skip  (file per process on Lustre: SIO-9)


@pytest.fixture
def full_fs(tmp_path):
    """A 64 KiB tmpfs, filled up (root only; skipped elsewhere)."""
    mnt = tmp_path / "full"
    mnt.mkdir()
    if (
        os.geteuid() != 0
        or subprocess.run(
            ["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mnt)], capture_output=True
        ).returncode
    ):
        pytest.skip("mounting a tmpfs needs root")
    try:
        with open(mnt / "filler", "wb") as f:
            try:
                f.write(b"x" * (1 << 20))
            except OSError:
                pass
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


def _fpp(tmp_path):
    p = tmp_path / "fpp.json"
    p.write_text(json.dumps(FPP))
    return p


def test_a_control_file_onto_a_full_disk_is_one_message(tmp_path, capsys, full_fs):
    control = full_fs / "advice.xml"
    status, _, err = _advise(capsys, _fpp(tmp_path), "-o", control)
    assert status == 1
    assert "cannot write the control file" in _one_message(err, str(control))
    assert not control.exists() and os.listdir(full_fs) == ["filler"]


def test_an_html_page_onto_a_full_disk_is_one_message(tmp_path, capsys, full_fs):
    page = full_fs / "advice.html"
    status, _, err = _advise(capsys, _fpp(tmp_path), "-o", "-", "--html", page)
    assert status == 1
    assert "cannot write the HTML page" in _one_message(err, str(page))
    assert os.listdir(full_fs) == ["filler"]  # no half page left behind


def test_an_html_page_onto_dev_full_is_one_message(tmp_path, capsys):
    status, _, err = _advise(capsys, _fpp(tmp_path), "-o", "-", "--html", "/dev/full")
    # a device is written in place (iotune.outputs.write_output), never replaced by a file
    assert status == 1 and "No space left on device" in _one_message(err, "/dev/full")
    assert Path("/dev/full").is_char_device()


def test_an_html_page_in_a_missing_directory_is_one_message(tmp_path, capsys):
    page = tmp_path / "no" / "such" / "dir" / "a.html"
    status, _, err = _advise(capsys, _fpp(tmp_path), "-o", "-", "--html", page)
    assert status == 1 and "cannot write the HTML page" in _one_message(err, str(page))


def test_advice_onto_a_full_standard_output_is_one_message(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(Path(insights.__file__).parents[1])}
    with open("/dev/full", "w") as full:
        proc = subprocess.run(
            [sys.executable, "-m", "iotune", "advise", str(_fpp(tmp_path)), "-o", "-"],
            stdout=full, stderr=subprocess.PIPE, text=True, env=env, timeout=120,
        )  # fmt: skip
    assert proc.returncode == 1
    line = _one_message(proc.stderr, "standard output")
    assert "No space left" in line


# ----------------------------------------------------------------------------- damaged profiles


@pytest.mark.parametrize(
    "path, value, key",
    [(("ranks",), "two", "ranks"), (("ranks",), None, "ranks"),
     (("files", 0), 7, "files[0]"), (("files", 0, "name"), 12, "files[0].name"),
     (("files", 0, "ranks"), -1, "files[0].ranks"), (("files", 0, "fs"), [], "files[0].fs"),
     (("files", 0, "posix"), [1, 2], "files[0].posix"),
     (("files", 0, "posix", "bytes_written"), 10**30, "files[0].posix.bytes_written"),
     (("files", 0, "posix", "last_offset"), "x", "files[0].posix.last_offset"),
     (("files", 0, "posix", "sizes"), {"0-100": "many"}, "files[0].posix.sizes.0-100"),
     (("files", 1, "time_s"), {"imbalance": None}, "files[1].time_s.imbalance"),
     (("files", 1, "hints"), {"cb_buffer_size": [1]}, "files[1].hints.cb_buffer_size"),
     (("files", 1, "applied"), {"hdf5": {"chunk_cache_bytes": "big"}},
      "files[1].applied.hdf5.chunk_cache_bytes"),
     (("config",), {"settings": [{"name": "chunk_cache_bytes", "value": "x"}]},
      "config.settings[0].value")],
)  # fmt: skip
def test_a_damaged_profile_value_is_one_message_naming_the_key(tmp_path, capsys, path, value, key):
    data = json.loads(json.dumps(FPP))
    target = data
    for k in path[:-1]:
        target = target[k]
    target[path[-1]] = value
    p = tmp_path / "bad.json"
    p.write_text(json.dumps(data))
    status, out, err = _advise(capsys, p, "-o", "-")
    assert status == 1 and out == ""
    line = _one_message(err, str(p))
    # named by advise's own checks ("KEY: why") or by the profile's shape check ("KEY is ...")
    assert f": {key}: " in line or f": {key} is " in line, line


def test_a_verification_pair_that_measured_0_has_no_ratio():
    """A run with no I/O in the measured phase measures 0 s: the end of `iotune tune` divided
    by it (ZeroDivisionError) and, with every pair so, took min() of nothing."""
    from types import SimpleNamespace

    from iotune import pairs

    assert pairs.pair_ratio(2.0, 1.0, maximize=False) == 2.0
    assert pairs.pair_ratio(0.0, 1.0, maximize=False) is None
    assert pairs.pair_ratio(1.0, 0.0, maximize=False) is None
    assert pairs.pair_ratio(0.0, 5.0, maximize=True) is None
    v = SimpleNamespace(pairs=3, improved=True, speedup=1.5, wins=3, futile=False)
    text = pairs._verdict_text(v, [], SimpleNamespace(alpha=0.05))
    assert "1.50x faster" in text


def test_an_analysis_error_while_filing_a_study_is_said_not_raised(
    tmp_path, libiotune, monkeypatch
):
    """The end of `iotune tune` files the study under the run's signature: an arithmetic error
    in the analysis made the finished tune exit 1; now there is no signature, and it is said."""
    from iotune.kb import capture, signature

    def broken(*a, **k):
        raise ZeroDivisionError("integer modulo by zero")

    monkeypatch.setattr(signature, "from_profile", broken)
    app = [sys.executable, "-c", "open('out.dat', 'w').write('x' * 4096)"]
    with pytest.raises(capture.CaptureFailed, match="could not be analysed.*ZeroDivisionError"):
        capture.profile_signature(app, lib=libiotune, cwd=tmp_path, timeout=120)


def test_an_html_page_onto_a_fifo_nobody_reads_does_not_block(tmp_path, capsys):
    fifo = tmp_path / "page.html"
    os.mkfifo(fifo)
    status, _, err = _advise(capsys, _fpp(tmp_path), "-o", "-", "--html", fifo)
    assert status == 1 and "cannot write the HTML page" in _one_message(err, str(fifo))


def test_an_unforeseen_analysis_error_is_one_line(tmp_path, capsys, monkeypatch):
    """The last resort: a bug in an analysis gives one line naming the file (and asks for a
    report), never a traceback; the fuzz tests fail on it, so it is never the answer to a
    known bad input."""

    def bug(*a, **k):
        raise KeyError("x")

    monkeypatch.setattr(insights, "from_profile", bug)
    status, _, err = _advise(capsys, _fpp(tmp_path), "-o", "-")
    assert status == 1 and "internal error (KeyError" in _one_message(err, "fpp.json")


# ----------------------------------------------------------------------------- time


@pytest.mark.parametrize(
    "naming, small", [("per_process", 5000), ("series", 2000), ("distinct", 2000)]
)
def test_advise_time_grows_linearly_with_the_files(tmp_path, capsys, naming, small):
    """advise was quadratic in the files (60,000 files 20 s, 10^6 never ended). Ten times the
    files must cost about ten times the CPU time (quadratic: a hundred), loosely bounded for a
    loaded machine; bench/advise_scale/advise_scale.py measures 10^6 files."""
    import many_files

    cpu = {}
    for n in (small, 10 * small):
        profile = many_files.write(tmp_path / f"{naming}-{n}.json", n, naming)
        t = time.process_time()
        status, out, err = _advise(capsys, profile, "--json", "-o", "-")
        cpu[n] = time.process_time() - t
        assert status == 0, err
        assert sum(len(g["files"]) for g in json.loads(out)["groups"]) == n
    assert cpu[10 * small] < 30 * max(cpu[small], 0.05), cpu
    assert cpu[10 * small] < 60, cpu


GOLDEN = Path(__file__).resolve().parent.parent / "data" / "advise_golden"


@pytest.mark.parametrize("naming, n", [("per_process", 300), ("series", 300), ("distinct", 100)])
def test_advise_says_what_it_said_before_it_was_made_faster(tmp_path, capsys, monkeypatch,
                                                            naming, n):  # fmt: skip
    """Issue 23's speed-ups (sums of the counters read only, one-file groups, the marks, the
    JSON written in pieces) change no character of the advice: the text and JSON that the code
    before them (1315f8d) wrote for the same generated profiles (tests/data/advise_golden; since
    then only the keys of insights added later, e.g. read_size_mean, were added to them, and
    each group's layers: its HDF5 checkpoints have no MPI-IO layer, so SIO-8 and SIO-8r are no
    longer "not decided" for them, nor is their MPI-IO component listed)."""
    import many_files

    monkeypatch.chdir(tmp_path)  # the advice names the profile as given
    many_files.write(tmp_path / f"g-{naming}.json", n, naming)
    for options, ext in ((["--json"], "json"), ([], "txt")):
        status, out, err = _advise(capsys, f"g-{naming}.json", *options, "-o", "-")
        assert status == 0, err
        assert out == (GOLDEN / f"{naming}-{n}.{ext}").read_text(), (naming, ext)


def test_advise_json_of_many_groups_is_json_dumps_of_the_advice(tmp_path, capsys, monkeypatch):
    """Beyond 1,000 groups the JSON is written a thousand groups at a time: the same text as
    json.dumps() of the whole advice (compact), and up to 1,000 groups as with indent=2."""
    import many_files

    # 1200 one-file groups (lone names are grouped by extension only beyond a larger number)
    monkeypatch.setattr(insights, "LONE_NAMES_MAX", 10**9)

    from iotune import profile as prof
    from iotune.advise import advise, render

    for n, indent in ((1200, None), (40, 2)):
        path = many_files.write(tmp_path / f"d{n}.json", n, "distinct")
        status, out, err = _advise(capsys, path, "--json", "-o", "-")
        assert status == 0, err
        groups = insights.from_profile(prof.load(path), search_dirs=[str(tmp_path)])
        a = advise(groups, str(path))
        assert out == json.dumps(json.loads(out), indent=indent) + "\n"
        assert render.as_json(a) == json.dumps(a.to_json(), indent=indent)


def test_a_well_formed_profile_is_checked_and_classified_once(tmp_path, monkeypatch):
    """10^6 HDF5 checkpoints took 76 s: the shape check named every counter of every file
    (a key's name built whether or not its value was wrong), advise's own check walked the
    counters profile_schema had checked, and every file was classified again after loading.
    A well-formed profile: no file through the explaining checks, each file classified once;
    the same groups as before."""
    from collections import Counter

    import many_files

    from iotune import profile as prof
    from iotune import profile_schema
    from iotune.advise import checked

    n = 240
    path = many_files.write(tmp_path / "series.json", n, "series")
    calls: Counter[str] = Counter()

    def counting(what, real):
        def f(*a, **k):
            calls[what] += 1
            return real(*a, **k)

        return f

    monkeypatch.setattr(profile_schema, "_file", counting("schema._file", profile_schema._file))
    monkeypatch.setattr(checked, "_counters", counting("checked._counters", checked._counters))
    monkeypatch.setattr(prof, "classify", counting("classify", prof.classify))
    monkeypatch.setattr(prof, "_marker", counting("marker", prof._marker))
    monkeypatch.setattr(insights, "_system_file", counting("again", insights._system_file))
    p = checked.profile(prof.load(path), str(path))
    groups = insights.from_profile(p, search_dirs=[str(tmp_path)])
    # one pass marks the files, matching each name once (classify(), which wants to know
    # whether a file was written, only for a name a read-only rule matches: none here)
    assert calls == {"marker": 1}, calls
    assert sorted(len(g.files) for g in groups) == [n // 4] * 4


def test_hdf5_files_of_a_directory_that_is_not_there_cost_one_look(tmp_path, monkeypatch):
    """advise reads each HDF5 file's layouts when it finds the file: 10^6 checkpoints written
    on another machine were 10^6 failed looks. Their directory is looked at once; a file in a
    directory that is there is still looked for (and found: test_advise.py)."""
    import many_files

    from iotune import profile as prof

    path = many_files.write(tmp_path / "series.json", 200, "series")
    looks: list[str] = []
    real_isdir, real_isfile = os.path.isdir, os.path.isfile
    monkeypatch.setattr(os.path, "isdir", lambda p: looks.append(f"dir {p}") or real_isdir(p))
    monkeypatch.setattr(os.path, "isfile", lambda p: looks.append(f"file {p}") or real_isfile(p))
    groups = insights.from_profile(prof.load(path), search_dirs=[str(tmp_path)])
    assert looks == ["dir /scratch/run/"], looks[:5]
    assert all("is gone" in g.notes["layout"] for g in groups)
    looks.clear()
    storage_layout.find_and_read("chk_1.h5", [str(tmp_path)], {})
    assert looks == [f"dir {tmp_path}/", f"file {tmp_path}/chk_1.h5"]


def test_a_damaged_file_among_well_formed_ones_is_still_named(tmp_path, capsys):
    """The fast path gives way to the explaining check: the key of the bad value is said."""
    import many_files

    path = many_files.write(tmp_path / "series.json", 50, "series")
    data = json.loads(path.read_text())
    data["files"][37]["hdf5"]["writes"] = float(2**70)
    data["files"][41]["hints"] = {"cb_buffer_size": [1]}
    path.write_text(json.dumps(data))
    status, out, err = _advise(capsys, path, "-o", "-")
    assert status == 1 and out == "" and "files[37].hdf5.writes" in _one_message(err, str(path))
    del data["files"][37]["hdf5"]["writes"]
    path.write_text(json.dumps(data))
    status, out, err = _advise(capsys, path, "-o", "-")
    assert status == 1 and "files[41].hints.cb_buffer_size" in _one_message(err, str(path))


def test_advise_text_escapes_names_from_the_profile(tmp_path, capsys):
    hostile = json.loads(json.dumps(FPP))
    for f in hostile["files"]:
        f["name"] = f["name"].replace("/lus/", "/lus/\x1b]0;t\x07")
    p = tmp_path / "fpp.json"
    p.write_text(json.dumps(hostile))
    status, out, _ = _advise(capsys, p, "-o", "-")
    assert "\x1b" not in out and "\x07" not in out, out
    status, out, _ = _advise(capsys, p, "-o", "-", "--json")
    assert "\\u001b" in out  # JSON stays exact


def test_a_control_character_in_a_damaged_profile_is_one_escaped_line(tmp_path, capsys):
    """A counter named "\\x1e" (found by test_fuzz_advise) reached standard error raw in the
    message that refuses the profile: a terminal control, and a line break to splitlines()."""
    data = {"schema": "iotune-profile", "version": 1, "ranks": 2, "wall_s": 1.0,
            "io": {"time_s": 0.1, "bytes_written": 8192, "bytes_read": 0}, "layers": {},
            "config": {"settings": []},
            "files": [{"name": "/lus/a.r0.dat", "ranks": None, "fs": "lustre",
                       "posix": {"\x1e\x1b[2J": None}},
                      {"name": "/lus/a.r1.dat", "ranks": 1, "fs": "lustre", "posix": {
                          "writes": 4, "bytes_written": 4096, "write_time_s": 0.01}}]}  # fmt: skip
    path = tmp_path / "p.json"
    path.write_text(json.dumps(data))
    assert cli.main(["advise", str(path)]) == 1
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "\x1b" not in err and "\x1e" not in err, repr(err)
    assert err.startswith(f"iotune: advise: {path}: ") and "posix.\\x1e\\x1b[2J" in err


def test_a_darshan_log_is_read_under_a_login_nodes_lower_memory_limit(tmp_path):
    """An outside tester's `ulimit -v 1500000; iotune advise log.darshan`: the reader's own
    bound (2 GiB and up) was above the hard limit, setting it failed in the child, and a
    SubprocessError traceback came out. The bound is now at most the hard limit."""
    from iotune.advise import darshan_safe

    if not darshan_safe.available():
        pytest.skip("PyDarshan not installed")
    log = Path(__file__).resolve().parents[1] / "data" / "darshan" / "ph5example.darshan"
    limit = 1_500_000 * 1024
    code = (
        f"import resource, sys; resource.setrlimit(resource.RLIMIT_AS, ({limit}, {limit})); "
        "from iotune.cli import main; sys.exit(main(['advise', sys.argv[1]]))"
    )
    proc = subprocess.run([sys.executable, "-c", code, str(log)], capture_output=True,
                          text=True, timeout=300, cwd=tmp_path)  # fmt: skip
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.returncode == 0, proc.stderr


def test_names_with_line_breaks_are_shown_escaped_in_the_advice():
    """An outside tester's file named with a newline: advise's `files ...` line printed it raw,
    a line break that forged a line of the advice."""
    from iotune.advise import Advice, render

    group = insights.Group("out\nforged*.h5", ["out\nforged1.h5"], {"interface": "HDF5"})
    lines = render.text(Advice("run\n.json", "iotune profile", [group])).splitlines()
    assert not any(line.startswith("forged") or line == ".json (iotune profile)" for line in lines)
    assert any(line.startswith("files out") and "forged" in line for line in lines), lines
