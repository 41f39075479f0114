"""What a skeleton's I/O time also depends on, besides the bytes (issue 22): the memory a read
goes into and a raw file's size set before its writes.

- h5py reads `dset[...]` into a new NumPy array: H5Dread faults its pages in (the h5py corpus
  skeletons, reading into memory made before their first step, were 0.83-0.90x the original).
  The runtime's trace says whether a read's memory was resident before the call (mode bit 2),
  the descriptor's read gets `fresh: true`, and the skeleton reads into memory mapped for it.
- h5perf's MPI-IO mode sets its file's size to 0 after opening it (MPI_File_set_size); ext4
  then writes the file back at its close (its close took 45 ms, the skeleton's 0.2 ms: 0.81x).
  The runtime traces MPI_File_set_size, the descriptor has a `set_size` entry among the writes,
  and the skeleton sets the size there too."""

import json
import os
from pathlib import Path

import pytest
from conftest import REPO, run_mpi
from test_skel import MPICC, _profiled, _skeleton, build_hdf5_program, needs_cc

from iotune.skel import descriptor as dmod
from iotune.skel import from_profile as fp
from iotune.skel import generate as gen
from iotune.skel.trace_calls import load_traces


@pytest.fixture(scope="module")
def fresh_program(tmp_path_factory) -> Path:
    return build_hdf5_program(tmp_path_factory, "skel_fresh_read")


@pytest.fixture(scope="module")
def set_size_program(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("skel_set_size") / "skel_set_size"
    import subprocess

    subprocess.run([MPICC, "-O1", "-o", str(out), str(REPO / "tests/data/skel_set_size.c")],
                   check=True, timeout=120)  # fmt: skip
    return out


def _run_traced(skeleton: Path, out: Path, libiotune: Path) -> Path:
    out.mkdir()
    prof = out / "p.json"
    env = {"IOTUNE_PROFILE": str(prof), "IOTUNE_TRACE": "1",
           "IOTUNE_SESSION": f"test-skel-memory-{os.getpid()}-{out.parent.name}"}  # fmt: skip
    run_mpi(2, [skeleton, "--dir", out, "--timing", out / "t.json"], env=env, cwd=out,
            preload=libiotune, timeout=120)  # fmt: skip
    return prof


def _reads(prof: Path) -> list[list[tuple[bool, bool]]]:
    """Per rank, each H5Dread's (fresh, collective)."""
    _, traces = load_traces(str(prof))
    return [[(c.fresh, c.collective) for c in t.calls if c.func == "H5Dread"] for t in traces]


@needs_cc
def test_a_read_into_untouched_memory_is_made_into_fresh_memory(fresh_program, libiotune, tmp_path):
    orig, prof = _profiled(tmp_path, [fresh_program, "fresh.h5"], libiotune)
    # the first read's memory was mapped just before it, the second's is the same, now resident
    assert _reads(prof) == [[(True, False), (False, False)]] * 2
    desc = fp.from_profile(str(prof), str(orig))
    (f,) = [f for f in desc["files"] if any(w.get("read") for w in f["writes"])]
    reads = [w for w in f["writes"] if w.get("read")]
    assert [w.get("fresh") for w in reads] == [True, None], f["writes"]
    skeleton = _skeleton(desc, tmp_path)
    src = (tmp_path / "src" / "skeleton.c").read_text()
    assert "0, 1, active);" in src and "0, 0, active);" in src  # independent; fresh, not
    # the skeleton's reads are the original's: the first into untouched memory, then resident
    assert _reads(_run_traced(skeleton, tmp_path / "out", libiotune)) == _reads(prof)


@needs_cc
def test_a_file_size_set_is_set_by_the_skeleton(set_size_program, libiotune, tmp_path):
    orig, prof = _profiled(tmp_path, [set_size_program, "set_size.dat"], libiotune)
    desc = fp.from_profile(str(prof), str(orig))
    (f,) = [f for f in desc["files"] if f["name"] == "set_size.dat"]
    sizes = [w.get("set_size") for w in f["writes"]]
    mib = 1 << 20
    assert sizes == [0, None, 4 * mib + 4096], f["writes"]  # before and after the writes
    # a size set has no offset by nature: no note that data is "written at the running position"
    assert not [n for n in desc.get("notes", []) if "has no offset" in n], desc["notes"]
    skeleton = _skeleton(desc, tmp_path)
    sprof = _run_traced(skeleton, tmp_path / "out", libiotune)
    assert (tmp_path / "out" / "set_size.dat").stat().st_size == 4 * mib + 4096
    _, traces = load_traces(str(sprof))
    for t in traces:
        calls = [(c.func, c.size) for c in t.calls if c.file.endswith("set_size.dat")]
        assert [c for c in calls if c[0] == "MPI_File_set_size"] == [
            ("MPI_File_set_size", 0),
            ("MPI_File_set_size", 4 * mib + 4096),
        ], calls
    # counted as the file's MPI-IO metadata time, in the original and the skeleton alike
    for p in (prof, sprof):
        (rec,) = [r for r in json.loads(p.read_text())["files"] if r["name"].endswith(".dat")]
        assert rec["mpiio"]["meta_time_s"] > 0


DESC = """\
skel: 1
ranks: 2
files:
  - name: a.dat
    api: mpiio
    writes:
      - set_size: 0
      - {offset: rank * 64, size: 64}
      - {set_size: 4096, when: rank == 0}
  - name: b.h5
    datasets:
      - {name: /x, type: float64, dims: [1024]}
    writes:
      - {dataset: /x, start: [rank * 512], count: [512]}
      - {dataset: /x, start: [rank * 512], count: [512], read: true, fresh: true}
"""


def test_set_size_and_fresh_are_read_and_checked(tmp_path):
    d = dmod.parse_text(DESC, "m.yaml")
    a, b = d.files
    assert a.writes[0].set_size is not None and a.writes[2].when is not None
    assert b.writes[1].fresh and not b.writes[0].fresh
    gen.generate(d, str(tmp_path / "src"), "m.yaml", cc=MPICC)
    src = (tmp_path / "src" / "skeleton.c").read_text()
    assert "skel_set_size(f, 0LL, 1);" in src or "skel_set_size(f, 0, 1);" in src, src
    bad = {
        "set_size: rank": ("set_size", "rank"),
        "set_size: 0 - 1": (r"writes\[0\]", "file size -1 negative"),
        "{set_size: 4096, when: rank == 0, size: 3}": ("size", ""),
    }
    for new, (field, words) in bad.items():
        old = "set_size: 0" if not new.startswith("{") else "{set_size: 4096, when: rank == 0}"
        text = DESC.replace(old, new, 1)
        with pytest.raises(dmod.DescriptorError, match=field) as e:
            dmod.parse_text(text, "m.yaml")
        assert words in str(e.value) and "m.yaml:" in str(e.value)
    for new in ("read: false, fresh: true", "read: true, fresh: 1"):
        with pytest.raises(dmod.DescriptorError, match="fresh"):
            dmod.parse_text(DESC.replace("read: true, fresh: true", new), "m.yaml")
    h5_size = DESC.replace("      - {dataset: /x, start: [rank * 512], count: [512]}\n",
                           "      - {set_size: 0}\n", 1)  # fmt: skip
    with pytest.raises(dmod.DescriptorError, match="set_size"):
        dmod.parse_text(h5_size, "m.yaml")
    raw = "- {offset: rank * 64, size: 64"
    raw_fresh = DESC.replace(raw + "}", raw + ", read: true, fresh: true}")
    with pytest.raises(dmod.DescriptorError, match="fresh"):
        dmod.parse_text(raw_fresh, "m.yaml")
