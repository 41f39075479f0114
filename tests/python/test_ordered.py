"""Ordered MPI-IO calls under an injected romio_cb_write / romio_cb_read=disable. ROMIO
(MPICH 4.0.2 here) puts MPI_File_write_ordered's records out of rank order and makes
MPI_File_read_ordered read the wrong ones when collective buffering is disabled: the adaptive
mode (SIO-7, IOT-4) and advise's control file gave a tester's programs such hints and changed
what they wrote and read. The runtime now withdraws an injected "disable" from a handle at its
first ordered call (the application's own value back, collectively), says so once and keeps
it in the profile; the program's records are those of a run without iotune."""

import json

from conftest import run_mpi

HINTS = ("<Parameters><Middleware_Layer><romio_cb_write>disable</romio_cb_write>"
         "<romio_cb_read>disable</romio_cb_read></Middleware_Layer></Parameters>")  # fmt: skip
FILES = [f"log_{s}.txt" for s in range(3)]


def _with_hints(tmp_path, test_prog, libiotune, profile):
    """The probe without iotune (base/), then with the control file's disables (tuned/)."""
    base, tuned = tmp_path / "base", tmp_path / "tuned"
    base.mkdir()
    tuned.mkdir()
    run_mpi(2, [test_prog("ordered_probe")], cwd=base)
    cfg = tmp_path / "c.xml"
    cfg.write_text(HINTS)
    env = {"IOTUNE_PROFILE": str(tuned / "p.json")} if profile else {}
    r = run_mpi(2, [test_prog("ordered_probe")], cwd=tuned, preload=libiotune, config=cfg, env=env)
    return base, tuned, r


def _files(where):
    return {n: (where / n).read_bytes() for n in FILES}


def test_the_mpi_itself_misorders_them_with_the_hints(tmp_path, test_prog):
    """Why the runtime acts (a fact of this MPI, not of iotune): the same hints given to ROMIO
    directly. Another MPI may order them right; then there is nothing to show here."""
    hints = tmp_path / "hints.txt"
    hints.write_text("romio_cb_write disable\nromio_cb_read disable\n")
    r = run_mpi(2, [test_prog("ordered_probe")], cwd=tmp_path, check=False,
                env={"ROMIO_HINTS": str(hints)})  # fmt: skip
    assert r.returncode in (0, 3), r.stderr


def test_an_injected_disable_is_withdrawn_at_the_first_ordered_call(tmp_path, test_prog,
                                                                     libiotune):  # fmt: skip
    base, tuned, r = _with_hints(tmp_path, test_prog, libiotune, profile=True)
    assert "0 records out of order" in r.stdout
    assert _files(tuned) == _files(base)
    said = [ln for ln in r.stderr.splitlines() if "withdrawn at the first ordered call" in ln]
    assert len(said) == 2 and "romio_cb_write=automatic again" in said[0], r.stderr
    files = {f["name"]: f for f in json.loads((tuned / "p.json").read_text())["files"]}
    for n in FILES:
        assert {w["setting"] for w in files[n]["withdrawn"]} == {"romio_cb_write", "romio_cb_read"}
    assert all(f["system"] == "mpi" for n, f in files.items() if ".shfp." in n)


def test_without_profile_and_with_the_applications_own_value(tmp_path, test_prog, libiotune):
    """The control file alone (no profile, so nothing captured) still withdraws it; the
    application's own hint (none here) is what comes back: automatic."""
    base, tuned, r = _with_hints(tmp_path, test_prog, libiotune, profile=False)
    assert "0 records out of order" in r.stdout, r.stdout
    assert _files(tuned) == _files(base)  # the reads' own check can miss it: both misordered


def test_the_adaptive_mode_keeps_ordered_records_in_order(tmp_path, test_prog, libiotune):
    base, adapt = tmp_path / "base", tmp_path / "adapt"
    base.mkdir()
    adapt.mkdir()
    run_mpi(2, [test_prog("ordered_probe")], cwd=base)
    env = {"IOTUNE_PROFILE": str(adapt / "p.json"), "IOTUNE_MODE": "adaptive"}
    r = run_mpi(2, [test_prog("ordered_probe")], cwd=adapt, preload=libiotune, env=env)
    assert "0 records out of order" in r.stdout
    assert _files(adapt) == _files(base)
