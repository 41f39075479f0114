"""Skeletons of a file opened again after it was written (outside testers' findings): an h5py
program that adds an attribute to a group after opening its file again ("r+"), whose skeleton
made that attribute twice (at the first session's end, from the application's file, and again
where the program made it) and failed; and a checkpoint writer that adds a group per step to
ONE file, flushes, then opens it again read-write, whose skeleton made the file anew at every
step. The skeleton's file must have the original's structure (h5dump -H), made by as many
creates and opens as the program made."""

import sys

import pytest
from conftest import REPO
from test_skel import _h5dump_h, _profiled, _run_skeleton, needs_cc

from iotune.skel.decomposition import Blocks
from iotune.skel.from_profile import from_profile


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


def test_a_block_length_met_again_is_its_own_parameter():
    """A checkpoint writer's rows of 64 met after a history's block of 1 were `64 * block2`:
    its steps' datasets of one size then had parameters of their own."""
    blocks = Blocks()
    assert [blocks.expr(n) for n in (64, 1, 64, 128)] == ["block", "block1", "block", "2 * block"]
