"""Skeletons of a file opened again after it was written (outside testers' findings): an h5py
program that adds an attribute to a group after opening its file again ("r+"), whose skeleton
made that attribute twice (at the first session's end, from the application's file, and again
where the program made it) and failed; and a checkpoint writer that adds a group per step to
ONE file, flushes, then opens it again read-write, whose skeleton made the file anew at every
step. The skeleton's file must have the original's structure (h5dump -H), made by as many
creates and opens as the program made."""

import json
import subprocess
import sys

import pytest
from conftest import REPO
from test_skel import _h5dump_h, _profiled, _run_skeleton, build_hdf5_program, needs_cc

from iotune.skel import steps as stepmod
from iotune.skel.decomposition import Blocks
from iotune.skel.from_profile import Builder, from_profile
from iotune.skel.ops import Op


@pytest.fixture(scope="module")
def ckpt_program(tmp_path_factory):
    return build_hdf5_program(tmp_path_factory, "skel_ckpt")


def _attribute_creates(desc: dict) -> list[tuple]:
    """(entry's open, object, name) of every attribute the skeleton makes, in its order."""
    out = []
    for f in desc["files"]:
        out += [(f.get("open"), w["object"], w["name"])
                for w in f["writes"] if w.get("attribute") == "create"]  # fmt: skip
        out += [(f.get("open"), a["object"], a["name"]) for a in f.get("attributes", [])]
    return out


@needs_cc
def test_an_attribute_made_after_the_file_is_opened_again_is_made_once_there(libiotune, tmp_path):
    pytest.importorskip("h5py", reason="h5py is not installed (scripts/install.sh builds it)")
    pytest.importorskip("mpi4py", reason="mpi4py is not installed")
    script = REPO / "tests/data/skel_reopen_attr.py"
    orig, prof = _profiled(tmp_path, [sys.executable, script, "r.h5", "16"], libiotune)
    desc = from_profile(str(prof), str(orig))
    assert [(f["name"], f.get("open")) for f in desc["files"]] == [
        ("r.h5", None),
        ("r.h5", "existing"),
    ]
    assert _attribute_creates(desc) == [(None, "/", "title"), ("existing", "/fields", "checked")]
    out, _ = _run_skeleton(desc, tmp_path)  # it failed: H5Acreate of an attribute that exists
    assert _h5dump_h(out / "r.h5") == _h5dump_h(orig / "r.h5")


@needs_cc
def test_a_checkpoint_writer_gets_one_file_with_a_group_per_step(ckpt_program, libiotune, tmp_path):
    orig, prof = _profiled(tmp_path, [ckpt_program, "ckpt.h5", "3", "8"], libiotune)
    desc = from_profile(str(prof), str(orig))
    files = desc["files"]
    assert [(f["name"], f.get("open")) for f in files] == [
        ("ckpt.h5", None),
        ("ckpt.h5", "existing"),
    ]
    steps = [f"/step_{s:03d}" for s in range(3)]
    assert [d["name"] for d in files[0]["datasets"]] == [
        "/energy", *(f"{g}/{x}" for g in steps for x in ("rho", "u"))]  # fmt: skip
    # the steps' datasets of one size are one parameter's (not 8 * a block of 1)
    assert {str(d["dims"]) for d in files[0]["datasets"][1:]} == {"['block * size', 6]"}
    assert sum(1 for w in files[0]["writes"] if w.get("flush")) == 3  # one per step
    assert _attribute_creates(desc) == [(None, g, "time") for g in steps]
    out, _ = _run_skeleton(desc, tmp_path)
    assert sorted(p.name for p in out.glob("*.h5")) == ["ckpt.h5"]
    assert _h5dump_h(out / "ckpt.h5") == _h5dump_h(orig / "ckpt.h5")  # every step's group


@pytest.fixture(scope="module")
def reopen_group_program(tmp_path_factory):
    return build_hdf5_program(tmp_path_factory, "skel_reopen_group")


def _links_in_creation_order(path) -> list[str]:
    """h5dump -H with groups' links in their creation order, without its first line."""
    proc = subprocess.run(["h5dump", "-H", "--sort_by=creation_order", str(path)],
                          capture_output=True, text=True, check=True, timeout=60)  # fmt: skip
    return proc.stdout.splitlines()[1:]


@needs_cc
@pytest.mark.parametrize("calls", ["H5Gcreate2", "old"])
def test_a_group_made_after_the_file_is_opened_again_is_made_there(
    reopen_group_program, libiotune, tmp_path, calls
):
    """old: the second session's groups made by H5Gcreate1 and by H5Gcreate_anon + H5Olink
    (an outside tester's finding: untraced, they were made at the file's creation)."""
    argv = [reopen_group_program, "g.h5", "8", *(["old"] if calls == "old" else [])]
    orig, prof = _profiled(tmp_path, argv, libiotune)
    desc = from_profile(str(prof), str(orig))
    files = desc["files"]
    assert [(f["name"], f.get("open")) for f in files] == [("g.h5", None), ("g.h5", "existing")]
    # H5Gcreate is traced: each group in the session the program made it in
    later = ["/restart", "/restart_anon"] if calls == "old" else ["/restart"]
    assert [f.get("groups") for f in files] == [["/fields"], later]
    counted = [f["hdf5"]["group_creates"] for f in json.loads(prof.read_text())["files"]
               if f["name"].endswith("g.h5")]  # fmt: skip
    assert counted == [2 * (1 + len(later))]  # every creation call of the 2 ranks counted
    out, _ = _run_skeleton(desc, tmp_path)
    got, want = _links_in_creation_order(out / "g.h5"), _links_in_creation_order(orig / "g.h5")
    assert got == want  # /fields, /density, then /restart(, /restart_anon), /restart_count


def test_groups_of_an_older_trace_are_made_at_the_files_creation():
    """A trace without H5Gcreate (an older runtime's): the groups of the application's file
    are made by the first entry, as before."""
    ops = [_op("open"), _op("close"), _op("open", func="H5Fopen"), _op("close")]
    b = Builder({"program": "p"}, [], None)
    b.ranks, b.data_files = 2, {"c.h5"}
    b._layout = lambda name: {"groups": ["/a", "/g"], "datasets": {}}  # type: ignore[method-assign]
    desc = b._assemble([ops, ops], 1, 0.0)
    assert [f.get("groups") for f in desc["files"]] == [["/a", "/g"], None]
    made = Op("gcreate", "H5Gcreate", "c.h5", "hdf5", None, None, None, None, None, 0, False,
              0.0, 0.0, attr_on="/g")  # fmt: skip
    ops = [*ops[:3], made, ops[3]]
    desc = b._assemble([ops, ops], 1, 0.0)
    assert [f.get("groups") for f in desc["files"]] == [["/a"], ["/g"]]


def _op(kind: str, dataset: str | None = None, step: int | None = None, **kw) -> Op:
    func = {"open": "H5Fcreate", "close": "H5Fclose", "write": "H5Dwrite", "read": "H5Dread",
            "sync": "H5Fflush", "extend": "H5Dset_extent"}[kind]  # fmt: skip
    return Op(kind, kw.pop("func", func), "c.h5", "hdf5", dataset, None, [0],
              kw.pop("count", [4]), None, 32, True, 0.0, 0.0, step=step, **kw)  # fmt: skip


def test_a_group_per_step_loops_only_when_the_steps_repeat_the_same_calls():
    def run(s: int, extent: bool = False) -> list[Op]:
        grow = [_op("extend", "/energy", count=[s + 1]), _op("write", "/energy")] if extent else []
        return [_op("write", "/step_{step:03}/x", s), *grow, _op("sync")]

    ops = [_op("open"), *run(0), *run(1), *run(2), _op("close")]
    body = stepmod.step_body(ops, 3, "dataset", {"c.h5"})
    assert body == [*ops[:3], ops[-1]]  # opened before the steps, one flush per step
    # a dataset growing by a row per step: extents of their own at each step
    grown = [_op("open"), *run(0, True), *run(1, True), *run(2, True), _op("close")]
    assert stepmod.step_body(grown, 3, "dataset", {"c.h5"}) is None
    # the file opened again to read the steps back: no loop around the file's two sessions
    again = [_op("open", func="H5Fopen"), *(_op("read", "/step_{step:03}/x", s) for s in range(3))]
    assert stepmod.step_body([*ops, *again, _op("close")], 3, "dataset", {"c.h5"}) is None
    # another file's calls (a script the interpreter reads) do not count
    other = Op("read", "read", "app.py", "posix", None, None, None, None, 0, 9, False, 0.0, 0.0)
    assert stepmod.step_body([other, *ops], 3, "dataset", {"c.h5"}) == [other, *body]


def test_a_block_length_met_again_is_its_own_parameter():
    """A checkpoint writer's rows of 64 met after a history's block of 1 were `64 * block2`:
    its steps' datasets of one size then had parameters of their own."""
    blocks = Blocks()
    assert [blocks.expr(n) for n in (64, 1, 64, 128)] == ["block", "block1", "block", "2 * block"]
