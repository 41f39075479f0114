"""Motif signatures on tiny real runs of every kernel: stable across problem sizes, rank counts
(where the motif is the same) and repeated runs; different motifs apart."""

import shutil
import sys

import pytest
from conftest import BUILD, launcher

from iotune.kb import capture, signature

# two problem sizes per kernel (tiny: each run well under a second)
SIZES = {
    "vpicio": (["--particles", "64K"], ["--particles", "256K"]),
    "vorpalio": (["--block", "32,32,16"], ["--block", "48,48,20"]),
    "gcrmio": (["--cells", "16384"], ["--cells", "32768"]),
    "haccio": (["--particles", "65536"], ["--particles", "200000"]),
    "iorio": ([], ["--block", "2M"]),
}
# a one-rank run of VORPAL-IO writes its whole block at once: contiguous, not strided (a true
# change of motif), and so does HACC-IO's one call through its view (its 9 variables' pieces
# are one run of the file when no other rank's lie between them); every other kernel keeps
# its motif from 2 ranks to 1
ONE_RANK_SAME = ("vpicio", "gcrmio", "iorio")


def sig(kernel_path, nprocs, args, cwd, lib):
    return capture.profile_signature(
        [*launcher(BUILD), str(nprocs), str(kernel_path), *args], lib=lib, cwd=cwd, timeout=120
    )


@pytest.fixture(scope="module")
def signatures(tmp_path_factory, libiotune):
    """{(kernel, nprocs, size index, run): Signature}"""
    out = {}
    for name, sizes in SIZES.items():
        path = BUILD / "kernels" / name
        for n, i, run in ((2, 0, 0), (2, 0, 1), (2, 1, 0), (1, 1, 0)):
            d = tmp_path_factory.mktemp(f"{name}-{n}-{i}-{run}")
            out[(name, n, i, run)] = sig(path, n, sizes[i], d, libiotune)
    return out


@pytest.mark.parametrize("name", list(SIZES))
def test_stable_across_runs_and_sizes(signatures, name):
    first = signatures[(name, 2, 0, 0)]
    assert signatures[(name, 2, 0, 1)].key == first.key, "another run of the same command"
    assert signatures[(name, 2, 1, 0)].key == first.key, "another problem size"
    assert signatures[(name, 2, 1, 0)].to_json()["motif"] == first.motif
    # the same motif at another size is near, whatever the scale difference
    assert signature.distance(first, signatures[(name, 2, 1, 0)]) < 2.0


@pytest.mark.parametrize("name", ONE_RANK_SAME)
def test_stable_across_rank_counts(signatures, name):
    assert signatures[(name, 1, 1, 0)].key == signatures[(name, 2, 0, 0)].key


def test_motifs_are_told_apart(signatures):
    keys = {name: signatures[(name, 2, 0, 0)].key for name in SIZES}
    assert len(set(keys.values())) == len(keys), keys
    # and any two different motifs are farther apart than the same motif at another size
    for a in SIZES:
        for b in SIZES:
            if a < b:
                d = signature.distance(signatures[(a, 2, 0, 0)], signatures[(b, 2, 0, 0)])
                assert d >= 2.0, (a, b, d)


def test_signature_fields(signatures):
    g = signatures[("gcrmio", 2, 0, 0)]
    assert g.motif["interface"] == "hdf5"
    assert g.motif["layout"] == "chunked"
    assert g.motif["file_mode"] == "shared"
    assert g.motif["io_mix"] == "write"
    assert signatures[("vorpalio", 2, 0, 0)].motif["access_pattern"] == "strided"
    assert signatures[("haccio", 2, 0, 0)].motif["interface"] == "mpiio"
    # one call per rank through a view of 9 pieces between the other rank's (before the view
    # counted: sequential, the motif of a rank's one contiguous region)
    assert signatures[("haccio", 2, 0, 0)].motif["access_pattern"] == "strided"
    assert signatures[("haccio", 1, 1, 0)].motif["access_pattern"] == "sequential"
    assert g.scale["ranks"] == 2 and g.scale["scale_class"] == "2-16"
    assert g.platform.get("mpi_family") == "mpich"
    assert "hdf5" in g.platform and "host" in g.platform


@pytest.mark.skipif(shutil.which("mpiexec.mpich") is None, reason="MPICH not installed")
def test_h5py_gcrm_is_the_gcrm_motif(tmp_path, libiotune):
    """The same motif written by a Python program gets the C kernel's signature."""
    pytest.importorskip("h5py")
    import h5py

    if not h5py.get_config().mpi:
        pytest.skip("h5py without MPI")
    script = BUILD.parent / "kernels" / "gcrmio_h5py.py"
    if not script.is_file():
        pytest.skip("no gcrmio_h5py.py")
    py = sig(sys.executable, 2, [str(script), "--cells", "16384"], tmp_path, libiotune)
    c = sig(BUILD / "kernels" / "gcrmio", 2, ["--cells", "16384"], tmp_path, libiotune)
    assert py.motif == c.motif


def test_one_rank_counts_as_shared():
    from iotune.insights import Group

    g = Group("x.h5", ["x.h5"], {"file_mode": "single", "files": 1})
    assert signature.file_mode(g) == "shared"
    g = Group("x*.dat", ["x1.dat", "x2.dat"], {"file_mode": "single", "files": 2})
    assert signature.file_mode(g) == "per_process"


def test_distance_properties():
    a = signature.Signature(
        motif={"interface": "hdf5", "io_mix": "write", "layout": "chunked"},
        scale={"ranks": 2},
        platform={"hdf5": "1", "host": "x"},
    )
    b = signature.Signature(dict(a.motif), {"ranks": 2048}, dict(a.platform))
    c = signature.Signature({**a.motif, "io_mix": "read"}, {"ranks": 2}, dict(a.platform))
    d = signature.Signature(dict(a.motif), {"ranks": 2}, {"hdf5": "2", "host": "x"})
    assert signature.distance(a, a) == 0
    assert signature.distance(a, b) == signature.distance(b, a) > 0
    assert signature.distance(a, b) < signature.distance(a, c), "scale weighs less than motif"
    assert signature.platform_differences(a, d) == ["hdf5"]
    assert a.key == b.key == d.key != c.key
    old = signature.Signature(dict(a.motif), version=signature.VERSION + 1)
    assert signature.distance(a, old) == float("inf")
    assert old.key != a.key
