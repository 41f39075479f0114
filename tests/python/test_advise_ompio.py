"""`iotune advise` and Open MPI's MPI-IO component (issue 22): IOT-12 names io=romio321 where
OMPIO ran collective noncontiguous MPI-IO writes (tune's best.xml on the corpus's PnetCDF
cases), and ROMIO's hints are never advised for a run whose component does not read them.

Real profiles (tests/data/ompio/, traced, 2 ranks, Open MPI 4.1.4, made with `iotune profile
--trace -o X.json -- mpiexec.openmpi --oversubscribe [--mca io romio321] -n 2 PROGRAM`):
collective-ompio / collective-romio: the corpus's PnetCDF collective_write (-q -l 64) under
OMPIO and under ROMIO; transpose-ompio: PnetCDF transpose (-q -l 64); nonblocking-ompio:
PnetCDF nonblocking_write (-q -l 64); vorpalio-ompio: the VORPAL-IO kernel (Open MPI build,
--block 100,100,80). Darshan logs (tests/data/darshan/openmpi-*.darshan): the agreement
bench's runs of the Open MPI corpus cases under a Darshan 3.4.7 runtime built for Open MPI.
"""

import json
from pathlib import Path

import pytest

from iotune import advise, cli, controlfile, insights
from iotune.advise import darshan

DATA = Path(__file__).resolve().parents[1] / "data"
OMPIO = DATA / "ompio"


def _advice(capsys, tmp_path, source) -> tuple[dict, dict[str, str]]:
    control = tmp_path / "advice.xml"
    status = cli.main(["advise", str(source), "--json", "-o", str(control)])
    out = capsys.readouterr()
    assert status == 0, out.err
    settings = {}
    if control.exists():
        settings = {s.name: s.value for s in controlfile.parse_file(control).settings}
    return json.loads(out.out), settings


def _findings(advice, code):
    return [f for f in advice["findings"] if f["code"] == code]


@pytest.mark.parametrize("profile", ["collective-ompio.json", "transpose-ompio.json"])
def test_ompio_collective_strided_writes_get_io_romio321(tmp_path, capsys, profile):
    # tune's best.xml: io=romio321 (collective_write, 1.45x) and cb_buffer_size=1M with
    # io=romio321 (transpose, 2.39x); advise had no rule about the component (named nothing)
    advice, settings = _advice(capsys, tmp_path, OMPIO / profile)
    (g,) = advice["groups"]
    assert g["insights"]["mpiio_component"] == "ompio"
    (f,) = _findings(advice, "IOT-12")
    assert f["settings"] == {"io": "romio321"} and f["severity"] == "medium"
    assert "1.45x" in f["source"]  # the measured claim, not a guess
    # ROMIO-only hints are not "undecided" under OMPIO: they do not apply (IOT-3's
    # cb_buffer_size, which OMPIO reads, stays undecided: its value is unknown)
    assert {u["code"] for u in advice["undecided"]} == {"IOT-3"}
    assert settings == {"io": "romio321"}


def test_the_same_writes_under_romio_get_no_component_advice(tmp_path, capsys):
    advice, settings = _advice(capsys, tmp_path, OMPIO / "collective-romio.json")
    (g,) = advice["groups"]
    assert (g["insights"]["transfer_mode"], g["insights"]["access_pattern"]) == (
        "collective",
        "strided",
    )
    assert g["insights"]["mpiio_component"] == "romio"
    assert not _findings(advice, "IOT-12") and not _findings(advice, "IOT-12h")
    assert "io" not in settings


def test_partly_collective_writes_under_ompio_get_nothing(tmp_path, capsys):
    # PnetCDF nonblocking_write: tune searched io and kept the defaults (0.98x). Its subarrays
    # go through file views with holes: strided (it was called sequential before views were
    # counted, trace_insights.noncontiguous_view)
    advice, settings = _advice(capsys, tmp_path, OMPIO / "nonblocking-ompio.json")
    (g,) = advice["groups"]
    assert g["insights"]["mpiio_component"] == "ompio"
    assert g["insights"]["access_pattern"] == "strided"
    assert not _findings(advice, "IOT-12") and not _findings(advice, "IOT-12h")
    assert settings == {}


def test_hdf5_collective_writes_under_ompio_get_only_the_low_measured_claim(tmp_path, capsys):
    # VORPAL-IO under OMPIO: in the landscape ROMIO at its defaults was within the noise;
    # with romio_cb_write=disable it gained 2.5x at 123 MB. Low: not in the control file
    advice, settings = _advice(capsys, tmp_path, OMPIO / "vorpalio-ompio.json")
    (g,) = [g for g in advice["groups"] if g["insights"]["interface"] == "hdf5"]
    assert g["insights"]["mpiio_component"] == "ompio"
    assert not _findings(advice, "IOT-12")
    (f,) = _findings(advice, "IOT-12h")
    assert f["severity"] == "low" and not f["in_control_file"]
    # a ROMIO hint, kept because the same finding switches the component to ROMIO
    assert f["settings"] == {"io": "romio321", "romio_cb_write": "disable"}
    assert "within the noise" in f["source"]
    assert "io" not in settings


def _group(**values) -> insights.Group:
    g = insights.Group("data.h5", ["data.h5"])
    base = {"ranks": 2, "files": 1, "file_ranks": 2, "file_mode": "shared", "io_mix": "write",
            "interface": "hdf5", "transfer_mode": "collective", "access_pattern": "sequential",
            "writes": 8, "reads": 0, "fs": "ext4", "parallel_fs": "no", "layout": "contiguous",
            "hint_romio_cb_write": "automatic", "hint_cb_buffer_size": 16 << 20}  # fmt: skip
    g.values.update({**base, **values})
    for name in insights.NAMES:
        g.values.setdefault(name, None)
    return g


def test_romio_hint_findings_are_not_made_for_an_ompio_run():
    # SIO-7 (romio_cb_write=disable) fires on sequential collective writes under ROMIO
    under_romio = advise.advise([_group(mpiio_component="romio")], "x")
    assert [f.code for f in under_romio.findings] == ["SIO-7"]
    under_ompio = advise.advise([_group(mpiio_component="ompio")], "x")
    assert not [f for f in under_ompio.findings if "romio_cb_write" in dict(f.settings)]
    assert any("SIO-7" in line and "OMPIO" in line for line in under_ompio.limits)
    assert not under_ompio.settings


def test_unread_hints_names_only_romio_hints_without_a_switch_to_romio():
    assert advise.unread_hints([("romio_cb_write", "disable")], "ompio") == ["romio_cb_write"]
    assert advise.unread_hints([("romio_cb_write", "disable")], "romio") == []
    assert advise.unread_hints([("romio_cb_write", "disable")], None) == []
    assert advise.unread_hints([("io", "romio321"), ("romio_cb_write", "disable")], "ompio") == []
    assert advise.unread_hints([("cb_buffer_size", "1048576")], "ompio") == []  # OMPIO reads it


# ----------------------------------------------------------------------------- Darshan logs


def _log(name: str) -> Path:
    pytest.importorskip("darshan")
    return DATA / "darshan" / name


def test_darshan_log_of_ompio_names_io_and_assumes_no_romio_defaults(tmp_path, capsys):
    # before: IOT-3 cb_buffer_size=1M from ROMIO's 16 MiB default assumed (OMPIO reads its own)
    advice, settings = _advice(capsys, tmp_path, _log("openmpi-pnetcdf-collective-write.darshan"))
    (g,) = [g for g in advice["groups"] if g["insights"]["interface"] == "mpiio"]
    assert g["insights"]["mpiio_component"] == "ompio"
    assert ".sm" in g["notes"]["mpiio_component"]
    assert g["insights"]["hint_cb_buffer_size"] is None
    assert "not assumed" in g["notes"]["hint_cb_buffer_size"]
    assert not _findings(advice, "IOT-3")
    assert [f["settings"] for f in _findings(advice, "IOT-12")] == [{"io": "romio321"}]
    assert settings == {"io": "romio321"}


def test_darshan_log_of_hdf5_under_ompio_proposes_no_romio_hint(tmp_path, capsys):
    # netCDF-4's tst_parallel3 (tune kept the defaults): before, IOT-3 cb_buffer_size (in the
    # control file) and SIO-7 romio_cb_write, both from ROMIO's defaults assumed
    advice, settings = _advice(capsys, tmp_path, _log("openmpi-netcdf4-tst-parallel3.darshan"))
    assert not _findings(advice, "IOT-3") and not _findings(advice, "SIO-7")
    assert settings == {}
    for g in advice["groups"]:
        if g["insights"]["interface"] == "hdf5":
            assert "ROMIO's choice" not in (g["notes"].get("access_pattern") or "")


def test_darshan_log_without_open_mpi_says_it_assumed_romio(tmp_path, capsys):
    advice, _ = _advice(capsys, tmp_path, _log("vorpalio-write.darshan"))  # MPICH
    (g,) = [g for g in advice["groups"] if g["insights"]["interface"] == "hdf5"]
    assert g["insights"]["mpiio_component"] == "romio"
    assert g["notes"]["mpiio_component"].startswith("assumed")
    (f,) = _findings(advice, "IOT-3")
    assert any("ROMIO's default" in a for a in f["assumed"])
    assert any(a.startswith("assumed: ROMIO;") for a in f["assumed"])  # its access pattern


def test_mpi_io_of_reads_open_mpi_files():
    ompio = ["/d/out.nc", "/tmp/ompi.vm.0/pid.7/1/out.nc_cid-0-7.sm"]
    assert darshan.mpi_io_of(ompio)[0] == "ompio"
    assert darshan.mpi_io_of(["/d/out.nc", "/d/out.nc.locktest.0"])[0] == "ompio"
    session = darshan.mpi_io_of(["/d/out.nc", "/tmp/ompi.vm.0/pid.7/1/topo"])
    assert session[0] is None and session[2] and session[1].startswith("unknown")
    mpich = darshan.mpi_io_of(["/d/out.nc"])
    assert mpich[0] == "romio" and mpich[1].startswith("assumed") and not mpich[2]
