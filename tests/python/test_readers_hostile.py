"""Hostile profiles and traces (issue 23): binary files, infinities, deep nesting, FIFOs,
devices, wrong types and impossible numbers each give one message naming the file, never a
traceback or a hang."""

import gzip
import json
import os

import pytest

from iotune import profile as prof
from iotune import trace as iotrace
from iotune.cli import main
from iotune.inputs import InputError


def _profile(**over):
    doc = {"schema": "iotune-profile", "version": 1, "ranks": 2, "wall_s": 1.5,
           "io": {"time_s": 0.5, "bytes_written": 1000, "bytes_read": 0},
           "layers": {"posix": {"bytes_written": 1000, "writes": 2, "write_time_s": 0.4}},
           "config": {"path": None, "digest": None, "settings": []}, "argv": ["./app"],
           "files": [{"name": "out.dat", "ranks": 2, "time_s": {"max": 0.5},
                      "posix": {"bytes_written": 1000, "writes": 2, "write_time_s": 0.4,
                                "sizes": {"100-1K": 2}}}]}  # fmt: skip
    doc.update(over)
    return doc


def _show(path, capsys):
    status = main(["show", str(path)])
    out = capsys.readouterr()
    return status, out.out, out.err


def test_a_valid_profile_is_shown(tmp_path, capsys):
    p = tmp_path / "p.json"
    p.write_text(json.dumps(_profile()))
    status, out, err = _show(p, capsys)
    assert status == 0 and "out.dat" in out and not err


@pytest.mark.parametrize(
    "content, why",
    [
        (b"\x89HDF\r\n\x1a\n\x00\x00\xff\xfe", "not UTF-8"),
        (b'{"schema": "iotune-profile", "version": 1, "ranks": 1, "wall_s": Infinity}', "not a"),
        (b'{"schema": "iotune-profile", "version": 1, "ranks": 1, "wall_s": 1e999}', "finite"),
        (b"[" * 100000 + b"]" * 100000, "nested"),
        (b'{"a": ' * 5000 + b"1" + b"}" * 5000, "nested"),
        (b"", "not valid JSON"),
    ],
)  # fmt: skip
def test_show_refuses_unreadable_files_in_one_line(tmp_path, capsys, content, why):
    p = tmp_path / "bad.json"
    p.write_bytes(content)
    status, out, err = _show(p, capsys)
    assert status == 1 and not out
    assert err.count("\n") == 1 and str(p) in err and why in err, err


@pytest.mark.parametrize(
    "over, key",
    [
        ({"ranks": "2"}, "ranks"),
        ({"ranks": 0}, "ranks"),
        ({"ranks": 10**40}, "ranks"),
        ({"ranks": True}, "ranks"),
        ({"wall_s": None}, "wall_s"),
        ({"io": []}, "io"),
        ({"io": {"time_s": 1, "bytes_written": -5, "bytes_read": 0}}, "io.bytes_written"),
        ({"layers": {"posix": {"bytes_written": "lots"}}}, "layers.posix.bytes_written"),
        ({"layers": {"posix": {"sizes": 7}}}, "layers.posix.sizes"),
        ({"files": [7]}, "files[0]"),
        ({"files": [{"name": 3}]}, "files[0].name"),
        ({"files": [{"name": "f", "ranks": None, "time_s": {"max": None}}]}, "files[0].time_s.max"),
        ({"files": [{"name": "f", "phase": {"start_s": "x", "end_s": 1}}]}, "phase.start_s"),
        ({"files": [{"name": "f", "applied": {"hdf5": [1]}}]}, "files[0].applied.hdf5"),
        ({"files": [{"name": "f", "hdf5": {"writes": {"a": "b"}}}]}, "files[0].hdf5.writes"),
        ({"argv": ["./app", 5]}, "argv[1]"),
        ({"hosts": {"count": 2, "names": [None]}}, "hosts.names[0]"),
        ({"config": {"settings": "all"}}, "config.settings"),
        ({"mpi_library": "str"}, "mpi_library"),  # advise failed on it with an internal error
        ({"mpi_library": {"io_component": 3}}, "mpi_library.io_component"),
        ({"hdf5_library": {"version": 5, "parallel": True}}, "hdf5_library.version"),
        ({"hdf5_library": {"version": "1.14.3", "parallel": "maybe"}}, "hdf5_library.parallel"),
    ],
)  # fmt: skip
def test_show_names_the_key_of_the_wrong_type(tmp_path, capsys, over, key):
    p = tmp_path / "bad.json"
    p.write_text(json.dumps(_profile(**over)))
    status, out, err = _show(p, capsys)
    assert status == 1 and not out and err.count("\n") == 1 and key in err and str(p) in err, err


def test_show_refuses_a_fifo_and_a_device_at_once(tmp_path, capsys):
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    for path in (fifo, "/dev/zero", tmp_path):
        status, out, err = _show(path, capsys)
        assert status == 1 and str(path) in err
        assert "not a regular file" in err or "a directory" in err


def test_a_damaged_adaptive_section_is_one_message(tmp_path, capsys):
    p = tmp_path / "p.json"
    p.write_text(json.dumps(_profile(adaptive={"phases": [{"file": "x"}]})))
    status, out, err = _show(p, capsys)
    assert status == 1 and not out and "adaptive section" in err and str(p) in err


def test_profile_errors_are_input_errors():
    assert issubclass(prof.ProfileError, InputError)
    assert issubclass(iotrace.TraceError, InputError)


# ----------------------------------------------------------------------------- traces


def _trace(**over):
    doc = {"schema": "iotune-trace", "version": 4, "rank": 0, "ranks": 1, "tick_s": 1e-7,
           "files": ["f"], "datasets": [], "views": [], "memory": [],
           "signatures": {"layer": ["posix"], "func": ["pwrite"], "file": [0], "dataset": [-1],
                          "dims": [None], "size": [8], "step": [8], "mode": [0]},
           "runs": {"sig": [0], "count": [3], "seq": [0], "stride": [1], "start": [10],
                    "period": [1000], "busy": [3], "idle": [0]}}  # fmt: skip
    doc.update(over)
    return doc


def _write_trace(tmp_path, doc):
    path = tmp_path / "rank-0.json.gz"
    path.write_bytes(gzip.compress(json.dumps(doc).encode()))
    return path


def test_a_valid_trace_reads(tmp_path):
    tr = iotrace.read(_write_trace(tmp_path, _trace()))
    assert tr["events"][0][:2] == [0, 3]


@pytest.mark.parametrize(
    "over, why",
    [
        ({"runs": {"sig": [0], "count": [3], "seq": [0], "stride": [0], "start": [0],
                   "period": [0], "busy": [0], "idle": [0]}}, "runs.stride[0]"),
        ({"runs": {"sig": [5], "count": [1], "seq": [0], "stride": [0], "start": [0],
                   "period": [0], "busy": [0], "idle": [0]}}, "signature 5"),
        ({"runs": {"sig": [0, 0], "count": [1], "seq": [0], "stride": [0], "start": [0],
                   "period": [0], "busy": [0], "idle": [0]}}, "differ in length"),
        ({"tick_s": 0}, "tick_s"),
        ({"tick_s": "fast"}, "tick_s"),
        ({"files": []}, "past the 0 files"),
        ({"signatures": {"layer": [1], "func": ["f"], "file": [0], "dataset": [-1],
                         "dims": [None], "size": [1], "step": [0], "mode": [0]}}, "layer"),
        ({"signatures": []}, "signatures is not an object"),
        ({"views": [{"blocks": [[1, 2, 3]]}]}, "views[0].blocks[0]"),
        ({"datasets": [{"name": "d", "dims": ["x"]}]}, "datasets[0].dims[0]"),
        ({"version": True}, "version True"),
    ],
)  # fmt: skip
def test_a_damaged_trace_is_one_trace_error(tmp_path, over, why):
    path = _write_trace(tmp_path, _trace(**over))
    with pytest.raises(iotrace.TraceError) as e:
        iotrace.read(path)
    assert str(path) in str(e.value) and why in str(e.value), str(e.value)


def test_a_gzip_bomb_is_refused_without_expanding_it(tmp_path, monkeypatch):
    path = tmp_path / "rank-0.json.gz"
    path.write_bytes(gzip.compress(b" " * 10_000_000))
    monkeypatch.setattr(iotrace, "MAX_EXPANDED", 1_000_000)
    with pytest.raises(iotrace.TraceError, match="expands to more than") as e:
        iotrace.read(path)  # through read(): the bound is the module's, read at each call
    assert str(path) in str(e.value)
    path.write_bytes(gzip.compress(b"{}")[:-6])
    with pytest.raises(iotrace.TraceError, match="truncated"):
        iotrace.read(path)


def test_runs_of_stride_zero_are_a_value_error_not_a_division_by_zero():
    """calls() on runs not checked by read() (trace_schema refuses them there): a run of
    several calls with stride 0 divided by zero once another run came next in order."""
    runs = [
        iotrace.Run(0, 3, 0, 0, 0.0, 1.0, 3.0, 3.0),
        iotrace.Run(1, 2, 1, 1, 0.5, 1.0, 2.0, 2.0),
    ]
    with pytest.raises(ValueError, match="stride 0 for 3 calls"):
        list(iotrace.calls(runs))
    single = [
        iotrace.Run(0, 1, 0, 0, 0.0, 0.0, 1.0, 1.0),
        iotrace.Run(1, 2, 1, 1, 1.0, 1.0, 2.0, 2.0),
    ]
    assert [(r.sig, k0, k1) for r, k0, k1 in iotrace.calls(single)] == [(0, 0, 0), (1, 0, 1)]


def test_interleaved_runs_that_expand_without_end_are_refused(tmp_path, monkeypatch):
    # two runs of 10^12 calls each, interleaved call by call: 2 * 10^12 blocks to rebuild
    big = 10**12
    runs = {"sig": [0, 1], "count": [big, big], "seq": [0, 1], "stride": [2, 2],
            "start": [0, 1], "period": [1000, 1000], "busy": [1, 1], "idle": [0, 0]}  # fmt: skip
    sigs = {k: v * 2 for k, v in _trace()["signatures"].items()}
    monkeypatch.setattr(iotrace, "MAX_BLOCKS", 1000)
    with pytest.raises(iotrace.TraceError, match="more than 1000 blocks"):
        iotrace.read(_write_trace(tmp_path, _trace(runs=runs, signatures=sigs)))


def test_a_trace_fifo_is_refused_at_once(tmp_path):
    fifo = tmp_path / "rank-0.json.gz"
    os.mkfifo(fifo)
    with pytest.raises(iotrace.TraceError, match="not a regular file"):
        iotrace.read(fifo)


def test_advise_on_a_symlink_loop_is_one_message(tmp_path, capsys):
    (tmp_path / "l1").symlink_to(tmp_path / "l2")
    (tmp_path / "l2").symlink_to(tmp_path / "l1")
    status = main(["advise", "-o", "-", str(tmp_path / "l1")])
    err = capsys.readouterr().err
    assert status == 1 and err.count("\n") == 1 and "l1" in err, err


def test_advise_says_a_trace_it_cannot_read_not_that_there_is_none(tmp_path, capsys):
    p = tmp_path / "prof.json"
    p.write_text(json.dumps(_profile()))
    (tmp_path / "prof.json.trace").mkdir()
    (tmp_path / "prof.json.trace" / "host-0.json.gz").write_bytes(gzip.compress(b"\xff\xfe" * 99))
    status = main(["advise", "-o", "-", str(p)])
    out = capsys.readouterr().out
    assert status == 0
    assert "no trace (profile with --trace)" not in out
    assert "its traces could not be read" in out and "host-0.json.gz" in out, out
