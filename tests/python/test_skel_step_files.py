"""Skeletons of programs whose files are named by rank or by step (outside testers' findings):
a program whose ranks each write a file of their own and whose steps cannot loop got an
unrolled skeleton whose ranks all wrote one name; a program writing a new file per step and,
at every step, a log and a summary file beside it got a loop body without the log and the
summary. The skeleton's files must be the original's (h5dump -H; sizes of the raw files)."""

import json

import pytest
from test_skel import (
    _h5dump_h,
    _profiled,
    _run_skeleton,
    _skeleton,
    build_hdf5_program,
    needs_cc,
    run_skeleton_traced,
)

from iotune.skel import cost, generate
from iotune.skel import descriptor as dmod
from iotune.skel import steps as stepmod
from iotune.skel.from_profile import from_profile
from iotune.skel.ops import Op, running_offsets

O_WRONLY, O_CREAT, O_TRUNC, O_APPEND = 0o1, 0o100, 0o1000, 0o2000  # Linux


@pytest.fixture(scope="module")
def step_files_program(tmp_path_factory):
    return build_hdf5_program(tmp_path_factory, "skel_step_files")


def _files(directory) -> dict[str, int]:
    return {p.name: p.stat().st_size for p in directory.iterdir()
            if p.is_file() and not p.name.startswith((".", "profile"))}  # fmt: skip


@needs_cc
def test_an_unrolled_skeleton_keeps_a_file_per_rank(step_files_program, libiotune, tmp_path):
    orig, prof = _profiled(tmp_path, [step_files_program, "rank", "part", "3", "8"], libiotune)
    desc = from_profile(str(prof), str(orig))
    assert desc["steps"] == 1  # the history's extents differ per step: unrolled
    assert [f["name"] for f in desc["files"]] == ["part_{rank}.h5"]  # was part_0.h5 on every rank
    out, _ = _run_skeleton(desc, tmp_path)
    assert sorted(_files(out)) == ["part_0.h5", "part_1.h5"]
    for name in ("part_0.h5", "part_1.h5"):
        assert _h5dump_h(out / name) == _h5dump_h(orig / name), name


@needs_cc
def test_a_file_per_step_keeps_the_log_and_summary_written_at_every_step(
    step_files_program, libiotune, tmp_path
):
    orig, prof = _profiled(tmp_path, [step_files_program, "log", "out", "3", "8"], libiotune)
    desc = from_profile(str(prof), str(orig))
    assert desc["steps"] == 3  # still a loop over the steps
    names = {f["name"]: f for f in desc["files"]}
    assert sorted(names) == ["out.log", "out.sum", "out_{step:04}.h5"]
    assert names["out.log"].get("when") == "rank == 0"  # rank 0 logs
    assert len(names["out.log"]["writes"]) == 1 and len(names["out.sum"]["writes"]) == 1
    # the log is opened and closed at every step, the summary once around the steps
    assert [names[n].get("each_step") for n in ("out.log", "out.sum")] == [True, None]
    out = run_skeleton_traced(_skeleton(desc, tmp_path), tmp_path, libiotune)
    # as many opens and closes of each file as the program made (the log's 3 were 1)
    steps = {f"out_{s:04}.h5": (2, 2) for s in range(3)}
    assert _opens(out / "p.json") == _opens(prof) == {"out.log": (3, 3), "out.sum": (2, 2), **steps}
    want, got = _files(orig), _files(out)
    got.pop("p.json")  # the skeleton's profile
    assert sorted(got) == sorted(want)
    for name in want:
        if name.endswith(".h5"):
            assert _h5dump_h(out / name) == _h5dump_h(orig / name), name
        else:
            assert got[name] == want[name], name  # the log's 3 lines, the summary's records


def _opens(profile) -> dict[str, tuple[int, int]]:
    """Per file of the run: (opens, closes) at the highest layer that opened it, all ranks
    (the program's log is opened by stdio, its skeleton's by POSIX calls)."""
    out = {}
    for f in json.loads(profile.read_text())["files"]:
        name = f["name"].rsplit("/", 1)[-1]
        if name.startswith("out"):
            layer = next(x for x in ("mpiio", "stdio", "posix") if (f.get(x) or {}).get("opens"))
            out[name] = (f[layer]["opens"], f[layer]["closes"])
    return out


@needs_cc
def test_calls_made_once_before_a_group_per_step_are_made_at_the_first_step(
    step_files_program, libiotune, tmp_path
):
    orig, prof = _profiled(tmp_path, [step_files_program, "once", "o", "3", "8"], libiotune)
    desc = from_profile(str(prof), str(orig))
    assert desc["steps"] == 3  # a loop (it was unrolled: --steps could not scale it)
    (f,) = desc["files"]
    assert f["groups"] == ["/step_{step}"]
    once = [w for w in f["writes"] if w.get("once")]
    assert [(w.get("attribute"), w.get("dataset")) for w in once] == [
        ("create", None), ("write", None), (None, "/mesh")]  # fmt: skip
    assert [w.get("dataset") for w in f["writes"] if not w.get("once")] == ["/step_{step}/x"]
    out, timing = _run_skeleton(desc, tmp_path)
    assert _h5dump_h(out / "o.h5") == _h5dump_h(orig / "o.h5")
    assert len(json.loads(timing.read_text())["per_rank"][0]["steps"]) == 3


def test_once_entries_are_made_at_the_first_step_only():
    """`once: true` in a descriptor: the generated code makes the entry at step 0 only, and
    the cost counts its bytes once."""
    text = """\
skel: 1
ranks: 2
steps: 4
files:
- name: o.h5
  datasets:
  - {name: /mesh, type: float64, dims: [8 * size]}
  - {name: '/s{step}/x', type: float64, dims: [8 * size]}
  writes:
  - {dataset: /mesh, start: [rank * 8], count: [8], once: true}
  - {attribute: create, object: /, name: steps, type: int32, once: true}
  - {dataset: '/s{step}/x', start: [rank * 8], count: [8]}
"""
    d = dmod.parse_text(text, "o.yaml")
    assert [w.once for w in d.files[0].writes] == [True, True, False]
    source = generate.skeleton_c(d, "o.yaml")
    assert source.count("if (step == 0) {") == 2
    assert cost.estimate(d, 2).total_bytes == 2 * 64 + 4 * 2 * 64  # /mesh once, x each step
    with pytest.raises(dmod.DescriptorError, match="once"):
        dmod.parse_text(text.replace("once: true}", "once: 1}", 1), "o.yaml")


@needs_cc
def test_a_dataset_without_a_step_number_written_at_every_step_is_made_once(tmp_path):
    """A file open over the steps with a group per step and a dataset written at every step
    (the latest state): the skeleton created that dataset again at step 1 and stopped."""
    desc = {"skel": 1, "name": "latest", "ranks": 2, "steps": 3, "files": [{
        "name": "l.h5", "api": "hdf5",
        "datasets": [{"name": "/latest", "type": "float64", "dims": ["8 * size"]},
                     {"name": "/step_{step}/x", "type": "float64", "dims": ["8 * size"]}],
        "writes": [{"dataset": "/step_{step}/x", "start": ["rank * 8"], "count": [8]},
                   {"dataset": "/latest", "start": ["rank * 8"], "count": [8]}]}]}  # fmt: skip
    out, timing = _run_skeleton(desc, tmp_path)
    assert len(json.loads(timing.read_text())["per_rank"][1]["steps"]) == 3
    dump = "\n".join(_h5dump_h(out / "l.h5"))
    assert dump.count('DATASET "latest"') == 1 and dump.count('GROUP "step_') == 3


def _op(kind: str, file: str, step: int | None, offset: int | None = None) -> Op:
    func = {"open": "open", "close": "close", "write": "pwrite"}[kind]
    return Op(kind, func, file, "posix", None, None, None, None, offset, 8, False, 0.0, 0.0,
              step=step)  # fmt: skip


def test_a_file_per_step_loops_with_the_calls_on_other_files_of_each_step():
    def step(s: int, log_offset: int = 0) -> list[Op]:
        f = "d_{step}.dat"
        return [_op("open", f, s), _op("write", f, s, 0), _op("close", f, s),
                _op("write", "run.log", None, log_offset)]  # fmt: skip

    script = _op("open", "app.py", None)  # an interpreter's own file: not the program's data
    ops = [script, _op("open", "run.log", None), *step(0), *step(1), *step(2),
           _op("close", "run.log", None)]  # fmt: skip
    body = stepmod.step_body(ops, 3, "file", {"run.log"})
    assert body == [*ops[1:6], ops[-1]]  # the log's open, one step with its log write, close
    # a log written at moving offsets: the steps differ, so the calls are unrolled
    moving = [ops[1], *step(0, 0), *step(1, 8), *step(2, 16), ops[-1]]
    assert stepmod.step_body(moving, 3, "file", {"run.log"}) is None
    # ... unless they are its running position (fwrite, no offset traced): moved per step
    for op in moving:
        op.running = op.file == "run.log" and op.kind == "write"
    body = stepmod.step_body(moving, 3, "file", {"run.log"})
    assert body == [*moving[:5], moving[-1]] and body[4].per_step == 8
    moving[10].offset = 20  # not the same bytes at every step: unrolled
    assert stepmod.step_body(moving, 3, "file", {"run.log"}) is None


def test_writes_without_an_offset_are_at_the_running_position():
    log = [_op("open", "a.log", None), _op("write", "a.log", None), _op("close", "a.log", None)]
    log[0].mode = O_WRONLY | O_CREAT | O_APPEND
    ops = [*log, *(_op(o.kind, o.file, None) for o in log)]
    ops[3].mode = O_WRONLY | O_CREAT | O_APPEND
    ops += [_op("open", "a.log", None), _op("write", "a.log", None), _op("write", "a.log", None)]
    ops[6].mode = O_WRONLY | O_CREAT | O_TRUNC
    running_offsets(ops)
    # appended to (fopen "a"), then made anew (fopen "w") and written twice
    assert [op.offset for op in ops if op.kind == "write"] == [0, 8, 0, 8]


EACH_STEP = """\
skel: 1
ranks: 2
steps: 3
files:
- name: run.log
  api: posix
  each_step: true
  writes:
  - {offset: step * 16, size: 16, when: rank == 0, transfer: independent}
- name: out_{step}.h5
  datasets:
  - {name: /x, type: float64, dims: [8 * size]}
  writes:
  - {dataset: /x, start: [rank * 8], count: [8]}
"""


def test_each_step_opens_a_file_at_every_step_and_makes_it_at_the_first():
    d = dmod.parse_text(EACH_STEP, "e.yaml")
    assert [f.each_step for f in d.files] == [True, False]
    source = generate.skeleton_c(d, "e.yaml")
    # inside the step loop (twice: sizing and timed), created at step 0, opened after
    assert source.count('skel_open(s, "run.log", SKEL_POSIX, step, (step > 0 ? '
                        "SKEL_OPEN_EXISTING : 0) | 0, 1);") == 2  # fmt: skip
    with pytest.raises(dmod.DescriptorError, match=r"files\[0\]\.each_step"):
        dmod.parse_text(EACH_STEP.replace("each_step: true", "each_step: 1"), "e.yaml")
    for new in ("once: 1", "once: true\n  each_step: true"):
        with pytest.raises(dmod.DescriptorError, match=r"files\[0\]\.once"):
            dmod.parse_text(EACH_STEP.replace("each_step: true", new), "e.yaml")
