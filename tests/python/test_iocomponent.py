"""Search what the active MPI-IO component uses (issue 24 item 4): under Open MPI's OMPIO no
ROMIO-only hint is in the space or the guesses (OMPIO never reads them); under ROMIO (MPICH, or
Open MPI launched with `--mca io romio321`) none of Open MPI's MCA parameters; the component is
said on the console."""

import csv
import os
import subprocess
import sys

import pytest
from conftest import need_family

from iotune import mpifamily, params, space


@pytest.mark.parametrize(
    "command,env,component",
    [
        (["mpiexec.openmpi", "--mca", "io", "romio321", "-n", "2", "a"], {}, "romio321"),
        (["mpirun", "-mca", "io", "ompio", "-np", "2", "a"], {"OMPI_MCA_io": "romio321"}, "ompio"),
        (["mpiexec.openmpi", "-n", "2", "a"], {"OMPI_MCA_io": "^ompio"}, "romio321"),
        (["mpiexec.openmpi", "-n", "2", "a"], {"OMPI_MCA_io": "ompio,romio321"}, "ompio"),
        (["a"], {}, "ompio"),  # Open MPI's default
    ],
)
def test_io_component_of_an_open_mpi_launch(command, env, component, monkeypatch, tmp_path):
    monkeypatch.setattr(mpifamily, "MCA_FILES", ())
    assert mpifamily.io_component(command, "openmpi", env)[0] == component


def test_io_component_from_mca_params_conf(monkeypatch, tmp_path):
    conf = tmp_path / "mca-params.conf"
    conf.write_text("# comment\nbtl = ^openib\nio = romio321   # ROMIO\n")
    monkeypatch.setattr(mpifamily, "MCA_FILES", (str(conf),))
    comp, why = mpifamily.io_component(["a"], "openmpi", {})
    assert comp == "romio321" and str(conf) in why
    assert mpifamily.io_component(["a"], "mpich", {})[0] == "romio"
    assert mpifamily.io_component(["a"], None, {}) == (None, "")


def romio_only(names):
    return [n for n in names if params.get(n).is_hint and mpifamily.romio_only(n)]


def test_what_the_runtime_applies_itself_is_no_romio_hint():
    """CephFS's layout (stripe count, stripe size, object size) is set by the runtime on the
    new file whichever MPI-IO component runs: never left out under OMPIO."""
    for name in ("striping_factor", "striping_unit", "striping_object_size"):
        assert not mpifamily.romio_only(name), name
        assert not mpifamily.unread_under(name, "ompio"), name
    assert mpifamily.romio_only("romio_cb_write") and mpifamily.romio_only("start_iodevice")


@pytest.mark.parametrize("preset", space.preset_names())
def test_no_romio_only_hint_under_ompio_and_no_mca_parameter_under_romio(preset):
    sp = space.load(preset)
    ompio = mpifamily.space_for(sp, "openmpi", "ompio")
    assert romio_only(ompio.names()) == []
    assert all(romio_only(g.settings) == [] and g.settings for g in ompio.guesses)
    for f in ompio.forbids:
        assert romio_only(f.when) == []
    assert [d for d in sp.dims if not mpifamily.romio_only(d.name)] == ompio.dims
    for fam, comp in (("openmpi", "romio321"), ("mpich", "romio"), ("mpich", None)):
        romio = mpifamily.space_for(sp, fam, comp)
        assert not [n for n in romio.names() if params.get(n).is_mca]
        assert not [g for g in romio.guesses if any(params.get(n).is_mca for n in g.settings)]
    # the local preset: OMPIO's own parameters and a guess switching the component stay
    if preset == "local":
        assert {"io", "fcoll", "cb_buffer_size", "fill_time"} <= set(ompio.names())
        assert {"io": "romio321"} in [dict(g.settings) for g in ompio.guesses]
        assert "romio_cb_write" in mpifamily.space_for(sp, "openmpi", "romio321").names()


def tune(tmp_path, *launcher_and_app):
    env = {k: v for k, v in os.environ.items() if k != "IOTUNE_LIB"}
    args = [sys.executable, "-m", "iotune", "tune", "--trials", 5, "--leaders", 1, "--repeat", 0,
         "--verify-pairs", 5, "--no-partial", "--no-kb", "--no-progress", "--out",
         tmp_path / "out", "--", *launcher_and_app]  # fmt: skip
    return subprocess.run([str(a) for a in args], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=900)  # fmt: skip


def tried(out):
    with open(out / "trials.csv", newline="") as f:
        return [row["config"] for row in csv.DictReader(f)]


@pytest.mark.parametrize("forced", [False, True])
def test_tune_under_open_mpi_searches_what_the_component_reads(forced, tmp_path):
    """A real Open MPI kernel: under OMPIO no trial sets a ROMIO-only hint and the guess that
    switches to ROMIO is tried; launched with --mca io romio321, ROMIO's hints are searched and
    no Open MPI parameter. The console names the component."""
    build = need_family("openmpi")
    mca = ["--mca", "io", "romio321"] if forced else []
    proc = tune(tmp_path, "mpiexec.openmpi", "--oversubscribe", *mca, "-n", "2",
                build / "kernels" / "vorpalio", "--block", "16,12,8")  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    configs = tried(tmp_path / "out")
    names = {kv.split("=")[0] for c in configs for kv in c.split(";") if "=" in kv}
    if forced:
        assert "MPI-IO component ROMIO (--mca io romio321" in proc.stdout
        assert "romio_cb_write=disable" in configs, configs
        assert not [n for n in names if params.get(n).is_mca], configs
    else:
        assert "MPI-IO component OMPIO (Open MPI's default); not searched, ROMIO-only hints:" in (
            proc.stdout
        )
        assert romio_only(names) == [], configs
        assert "io=romio321" in configs, configs


@pytest.mark.parametrize("component", ["ompio", "romio321"])
def test_advise_reads_no_romio_hint_under_ompio(component, tmp_path):
    """OMPIO echoes every hint it is given (LAB-NOTES) and reads none of ROMIO's own: under it
    the insights leave ROMIO's hints unknown, so no rule of rules.tsv proposes them; under
    ROMIO (Open MPI launched with --mca io romio321) they are what ROMIO reports."""
    from iotune import insights
    from iotune import profile as prof

    build = need_family("openmpi")
    config = tmp_path / "c.xml"
    config.write_text("<Parameters><Middleware_Layer><romio_cb_write>enable</romio_cb_write>"
                      "</Middleware_Layer></Parameters>")  # fmt: skip
    mca = ["--mca", "io", "romio321"] if component == "romio321" else []
    argv = ["mpiexec.openmpi", "--oversubscribe", *mca, "-n", "2",
            build / "kernels" / "vorpalio", "--block", "8,6,4", "--steps", "2"]  # fmt: skip
    proc = subprocess.run(
        [sys.executable, "-m", "iotune", "profile", "--config", config, "--out",
         tmp_path / "p.json", "--", *map(str, argv)],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    p = prof.load(tmp_path / "p.json")
    assert p.data["mpi_library"]["io_component"] == component
    (group,) = [g for g in insights.from_profile(p) if "vorpalio" in g.pattern]
    got = group.values.get("hint_romio_cb_write")
    assert got == (None if component == "ompio" else "enable"), group.values


def test_an_unreadable_mca_params_conf_is_passed_over_at_once(monkeypatch, tmp_path):
    """A FIFO, a directory, a binary or huge file where mca-params.conf is expected: no block,
    no traceback; the next file, or OMPIO, stands."""
    fifo = tmp_path / "fifo.conf"
    os.mkfifo(fifo)
    huge = tmp_path / "huge.conf"
    huge.write_bytes(b"x" * (2 << 20))
    binary = tmp_path / "bin.conf"
    binary.write_bytes(b"\xff\xfe\x00 junk\nio = romio321\n\x00")
    good = tmp_path / "good.conf"
    good.write_text("io=romio321\n")
    for bad in (fifo, tmp_path, huge, tmp_path / "missing.conf"):
        monkeypatch.setattr(mpifamily, "MCA_FILES", (str(bad), str(good)))
        assert mpifamily.io_component(["a"], "openmpi", {})[0] == "romio321", bad
        monkeypatch.setattr(mpifamily, "MCA_FILES", (str(bad),))
        assert mpifamily.io_component(["a"], "openmpi", {}) == ("ompio", "Open MPI's default")
    monkeypatch.setattr(mpifamily, "MCA_FILES", (str(binary),))
    assert mpifamily.io_component(["a"], "openmpi", {})[0] == "romio321"  # as Open MPI reads it
