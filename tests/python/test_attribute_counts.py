"""Attribute and group creations counted per file (hdf5.attribute_creates, group_creates), and
what tune's space makes of them: the file format bounds (libver_low) are searched only when
some file's objects carry many attributes (search/inert.py; bench/README.md, "Many attributes
on one object"). Run with the h5py built on Debian's HDF5 1.10.8 and, when there is one, pip's
h5py (HDF5 2.0); each run is a fraction of a second, nothing is timed."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO

from iotune import space
from iotune.search import inert

# 3 groups (root's too) with 40 attributes each through H5Acreate2, 2 through
# H5Acreate_by_name on a dataset, one attribute replaced (h5py deletes and creates it again)
APP = """
import sys, h5py, numpy as np
from h5py import h5a, h5s, h5t
with h5py.File(sys.argv[1], "w") as f:
    for g in ("a", "b"):
        grp = f.create_group(g)
        for k in range(40):
            grp.attrs[f"k{k}"] = k
    for k in range(40):
        f.attrs[f"r{k}"] = k
    f.attrs["r0"] = -1
    f.create_dataset("a/d", data=np.arange(4))
    for name in (b"x", b"y"):
        h5a.create(f.id, name, h5t.STD_I32LE, h5s.create(h5s.SCALAR), obj_name=b"a/d").close()
with h5py.File(sys.argv[1], "r") as f:
    assert f["a"].attrs["k3"] == 3 and len(f["a/d"].attrs) == 2
"""
ATTRIBUTES, GROUPS, DATASETS = 2 * 40 + 40 + 1 + 2, 2, 1


def wheel_python() -> Path:
    py = Path(os.environ.get("IOTUNE_H5WHEEL_PYTHON", REPO / ".venv-h5wheel" / "bin" / "python"))
    if not py.exists():
        pytest.skip(f"no Python with pip's h5py wheel at {py}: scripts/install.sh makes it")
    return py


PYTHONS = [pytest.param(lambda: Path(sys.executable), id="debian-1.10"),
           pytest.param(wheel_python, id="wheel-2.0")]  # fmt: skip


def profiled(py: Path, where: Path, lib: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("IOTUNE_")}
    env.update(LD_PRELOAD=str(lib), IOTUNE_PROFILE=str(where / "p.json"))
    p = subprocess.run([str(py), "-c", APP, "attrs.h5"], cwd=where, env=env,
                       capture_output=True, text=True, timeout=120)  # fmt: skip
    if p.returncode != 0 and "No module named 'h5py'" in p.stderr:
        pytest.skip(f"{py} has no h5py")
    assert p.returncode == 0, p.stderr
    return json.loads((where / "p.json").read_text())


@pytest.mark.parametrize("python", PYTHONS)
def test_attribute_and_group_creations_are_counted_per_file(python, tmp_path, libiotune):
    prof = profiled(python(), tmp_path, libiotune)
    (f,) = [f for f in prof["files"] if f["name"].endswith("attrs.h5")]
    h = f["hdf5"]
    got = (h["attribute_creates"], h["group_creates"], h["dataset_creates"])
    assert got == (ATTRIBUTES, GROUPS, DATASETS), h
    assert prof["layers"]["hdf5"]["attribute_creates"] == ATTRIBUTES
    # 123 attributes on 4 objects (root, 2 groups, 1 dataset): about 31 per object
    assert inert.traits(prof)["attributes_per_object"] == round(ATTRIBUTES / 4, 1)


def profile_of(attributes: int | None, datasets: int, groups: int) -> dict:
    """A serial h5py program's profile (sec2 file on ext4) with these creations."""
    h5 = {"file_creates": 1, "file_opens": 1, "writes": datasets, "reads": datasets,
          "dataset_creates": datasets, "dataset_opens": datasets}  # fmt: skip
    if attributes is not None:  # an older runtime does not count them
        h5 |= {"attribute_creates": attributes, "group_creates": groups}
    f = {"name": "out.h5", "fs": "ext4", "hdf5_driver": "sec2", "hdf5": h5}
    return {"layers": {"hdf5": h5}, "files": [f], "ranks": 1, "mpi": False,
            "hdf5_library": {"version": "1.10.8", "parallel": True}}  # fmt: skip


METRICS = {"bytes_written": 1 << 20, "bytes_read": 1 << 20}


def test_many_attributes_per_object_put_the_format_bounds_in_the_local_space():
    """bench/hdf5_new_params/many_attrs.py's shape: 4 scans, 3,000 attributes each."""
    sp = space.load("local")
    assert "libver_low" in sp.names()
    facts = inert.traits(profile_of(12_000, datasets=4, groups=4))
    assert facts["attributes_per_object"] == round(12_000 / 9, 1)
    assert "libver_low" not in inert.inert(sp, METRICS, facts)


def test_few_attributes_per_object_leave_the_format_bounds_out_and_say_why():
    """many_small.py's shape: 100 groups of 9 datasets, ~2 attributes per object (no win)."""
    sp = space.load("local")
    out = inert.inert(sp, METRICS, inert.traits(profile_of(2_201, datasets=900, groups=100)))
    assert "libver_low" in out
    assert "2.2 attributes per created object" in out["libver_low"]
    # no attribute at all: left out too; the other HDF5 settings stay searched
    out = inert.inert(sp, METRICS, inert.traits(profile_of(0, datasets=1, groups=0)))
    assert "libver_low" in out and "fill_time" not in out


def test_a_profile_without_attribute_counts_keeps_the_format_bounds():
    """An older runtime's profile cannot say: the cautious decision (searched)."""
    sp = space.load("local")
    assert "libver_low" in sp.names()
    facts = inert.traits(profile_of(None, datasets=900, groups=100))
    assert "attributes_per_object" not in facts
    assert "libver_low" not in inert.inert(sp, METRICS, facts)


def test_the_busiest_file_decides():
    """One file with many attributes per object among files with few keeps the bounds."""
    busy, quiet = profile_of(5_000, 1, 0), profile_of(10, 100, 10)
    quiet["files"][0]["name"] = "other.h5"
    both = {**busy, "files": busy["files"] + quiet["files"]}
    assert inert.traits(both)["attributes_per_object"] == 2_500.0
    # the system's files (e.g. a library's own HDF5 file) never count
    sysf = {**busy["files"][0], "system": True, "name": "/usr/share/x.h5"}
    only_system = {**quiet, "files": quiet["files"] + [sysf]}
    assert inert.traits(only_system)["attributes_per_object"] == 0.1
