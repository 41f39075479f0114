"""The runtime at MPI-IO's side, end to end with 2 ranks: a hint that makes MPI_File_open fail
is withdrawn and the run goes on (issue 9, point 1); each hint's verdict (in effect, not, not
verifiable) and its cause in the profile and the verbose report (issue 9 point 7, issue 16
point 4); warnings once per run (issue 9 point 7)."""

import json
import os
import subprocess

import pytest
from conftest import BUILD, builds, run_mpi

NO_MATCH = ["nosuchhost:1", "*:0"]


def config(tmp_path, body, name="c.xml"):
    path = tmp_path / name
    path.write_text(f"<Parameters><Middleware_Layer>\n{body}\n</Middleware_Layer></Parameters>\n")
    return path


def iotune_lines(stderr):
    return [ln for ln in stderr.splitlines() if ln.startswith("iotune:")]


def profiled(tmp_path, prog, out, cfg, build=BUILD, name="p.json", **kw):
    profile = tmp_path / name
    proc = run_mpi(
        2,
        [prog, out],
        cwd=tmp_path,
        preload=kw.pop("preload", None),
        config=cfg,
        env={"IOTUNE_PROFILE": str(profile), **kw.pop("env", {})},
        build=build,
        timeout=120,
        check=False,
        **kw,
    )
    return proc, json.loads(profile.read_text()) if profile.exists() else None


def file_entry(profile, suffix):
    return next(f for f in profile["files"] if f["name"].endswith(suffix))


@pytest.mark.parametrize("value", NO_MATCH)
@pytest.mark.parametrize("prog", ["mpiio_probe", "h5probe"])
def test_a_hint_that_fails_the_open_is_withdrawn_and_the_data_is_identical(
    prog, value, test_prog, libiotune, tmp_path
):
    """cb_config_list matching no host makes ROMIO's MPI_File_open fail ("No aggregators
    match"): the runtime opens once more with the application's own hints, the program runs
    to its end with the same data, and one line and the profile name the withdrawn hint."""
    ext = ".h5" if prog == "h5probe" else ".dat"
    run_mpi(2, [test_prog(prog), tmp_path / f"plain{ext}"], cwd=tmp_path, timeout=120)
    cfg = config(
        tmp_path, f"<cb_config_list>{value}</cb_config_list>\n<cb_buffer_size>4MiB</cb_buffer_size>"
    )
    proc, profile = profiled(
        tmp_path, test_prog(prog), tmp_path / f"tuned{ext}", cfg, preload=libiotune
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert json.loads(proc.stdout)["mismatches"] == 0
    if ext == ".h5":
        subprocess.run(
            ["h5diff", tmp_path / "plain.h5", tmp_path / "tuned.h5"], check=True, timeout=60
        )
    else:
        assert (tmp_path / "plain.dat").read_bytes() == (tmp_path / "tuned.dat").read_bytes()
    lines = iotune_lines(proc.stderr)
    assert len(lines) == 1, proc.stderr  # one line, also for HDF5's second open of the file
    assert f"withdrawn: cb_config_list={value} [c.xml:2]" in lines[0]
    assert "No aggregators match" in lines[0]
    f = file_entry(profile, f"tuned{ext}")
    withdrawn = {w["setting"]: w for w in f["withdrawn"]}
    assert withdrawn["cb_config_list"]["value"] == value
    assert "No aggregators match" in withdrawn["cb_config_list"]["reason"]
    assert "cb_config_list" not in f["applied"]["mpiio"]
    assert f["hint_effect"]["cb_config_list"]["in_effect"] == "no"
    assert f["hints"]["cb_config_list"] == "*:1"  # ROMIO's default: the application's own


def test_the_applications_own_error_is_unchanged(test_prog, libiotune, tmp_path):
    """An open that fails with the application's own hints too: it sees its own error."""
    missing = tmp_path / "no" / "such" / "dir" / "x.dat"
    plain = run_mpi(2, [test_prog("mpiio_probe"), missing], cwd=tmp_path, check=False)
    cfg = config(tmp_path, "<cb_config_list>nosuchhost:1</cb_config_list>")
    tuned = run_mpi(
        2,
        [test_prog("mpiio_probe"), missing],
        cwd=tmp_path,
        preload=libiotune,
        config=cfg,
        check=False,
    )
    assert plain.returncode == tuned.returncode == 3, tuned.stderr[-2000:]
    mine, own = json.loads(tuned.stdout), json.loads(plain.stdout)
    # MPICH numbers each error code with its place in a ring of error stacks: the class and
    # the message are the error
    assert (mine["class"], mine["message"]) == (own["class"], own["message"])
    assert "withdrawn" not in tuned.stderr


def test_each_hint_has_a_verdict_and_a_cause(test_prog, libiotune, tmp_path):
    """MPICH's ROMIO on a file system without striping: cb_nodes=2 is capped by the default
    cb_config_list (one aggregator per host), striping hints are not in effect (ROMIO's UFS
    driver echoes striping_unit without using it), cb_buffer_size is in effect."""
    cfg = config(
        tmp_path,
        "<cb_nodes>2</cb_nodes>\n<cb_buffer_size>1MiB</cb_buffer_size>\n"
        "<striping_factor>4</striping_factor>\n<striping_unit>1MiB</striping_unit>",
    )
    proc, profile = profiled(
        tmp_path, test_prog("mpiio_probe"), tmp_path / "o.dat", cfg, preload=libiotune, verbose=True
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    effect = file_entry(profile, "o.dat")["hint_effect"]
    assert effect["cb_buffer_size"] == {
        "requested": "1048576",
        "read_back": "1048576",
        "in_effect": "yes",
        "reason": None,
    }
    assert effect["cb_nodes"]["read_back"] == "1"
    assert effect["cb_nodes"]["in_effect"] == "no"
    assert "capped by cb_config_list=*:1" in effect["cb_nodes"]["reason"]
    for key in ("striping_factor", "striping_unit"):
        assert effect[key]["in_effect"] == "no", key
        assert "has no striping" in effect[key]["reason"], key
    assert effect["striping_unit"]["read_back"] == "1048576"  # echoed, yet not in effect
    err = proc.stderr
    assert "striping_unit=1048576 (in effect)" not in err
    assert "striping_unit=1048576 (NOT in effect: " in err
    assert "cb_nodes=2 (NOT in effect: MPI-IO uses 1: capped by cb_config_list=*:1" in err
    mpi = profile["mpi_library"]
    assert (mpi["family"], mpi["io_component"], mpi["hints_verifiable"]) == ("MPICH", "romio", True)
    assert mpi["library"].startswith("MPICH Version: ") and mpi["standard"]


def test_cb_nodes_on_a_one_rank_file_blames_the_communicator(test_prog, libiotune, tmp_path):
    """A file opened on MPI_COMM_SELF (IOR asks each file's size that way; file per process)
    has one aggregator whatever cb_nodes and cb_config_list say: the report says so instead
    of blaming cb_config_list, and the shared opens report cb_nodes=2 in effect."""
    cfg = config(tmp_path, "<cb_nodes>2</cb_nodes>\n<cb_config_list>*:*</cb_config_list>")
    proc = run_mpi(2, [test_prog("nodata_probe"), "1", "1024", "nocreate"], cwd=tmp_path,
                   preload=libiotune, config=cfg, verbose=True, timeout=120)  # fmt: skip
    lines = iotune_lines(proc.stderr)
    assert any("cb_nodes=2 (in effect)" in ln for ln in lines), lines
    mine = [ln for ln in lines if "cb_nodes=2 (NOT in effect" in ln]
    assert mine and all("MPI-IO uses 1: the file's communicator has 1 rank)" in ln for ln in mine)
    assert not any("capped by cb_config_list" in ln for ln in lines), lines


@pytest.mark.parametrize("io", [None, "romio321"])
def test_open_mpi_never_says_in_effect(io, tmp_path):
    """Open MPI echoes every hint in MPI_File_get_info: a hint its component reads is "not
    verifiable here", one OMPIO never reads is "not used by OMPIO"."""
    found = builds()
    if "openmpi" not in found:
        pytest.skip("Open MPI not built")
    build = found["openmpi"]
    prog = build / "tests" / "c" / "mpiio_probe"
    cfg = config(
        tmp_path, "<cb_buffer_size>1MiB</cb_buffer_size>\n<romio_cb_write>disable</romio_cb_write>"
    )
    env = {"OMPI_MCA_io": io} if io else {}
    proc, profile = profiled(
        tmp_path,
        prog,
        tmp_path / "o.dat",
        cfg,
        build=build,
        preload=build / "runtime" / "libiotune.so",
        env=env,
        verbose=True,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "(in effect)" not in proc.stderr
    effect = file_entry(profile, "o.dat")["hint_effect"]
    mpi = profile["mpi_library"]
    assert mpi["family"] == "Open MPI" and mpi["hints_verifiable"] is False
    assert effect["cb_buffer_size"]["in_effect"] == "unverifiable"
    if io is None:
        assert mpi["io_component"] == "ompio"
        assert effect["romio_cb_write"]["in_effect"] == "no"
        assert effect["romio_cb_write"]["reason"] == "not used by OMPIO"
    else:
        assert (mpi["io_component"], mpi["io_component_from"]) == ("romio321", "OMPI_MCA_io")
        assert effect["romio_cb_write"]["in_effect"] == "unverifiable"


def test_a_warning_is_said_once_by_a_pipeline_of_programs(libiotune, tmp_path, test_prog):
    """Three serial HDF5 programs started by one shell read the same faulty control file: its
    problem is reported once for the run, not once per process."""
    run_mpi(1, [test_prog("h5probe"), tmp_path / "d.h5"], cwd=tmp_path, timeout=120)
    cfg = config(tmp_path, "<cb_nodes>lots</cb_nodes>")
    env = dict(os.environ, LD_PRELOAD=str(libiotune), IOTUNE_CONFIG=str(cfg))
    env.pop("IOTUNE_SESSION", None)
    proc = subprocess.run(
        ["sh", "-c", "h5dump -H d.h5; h5ls d.h5; h5dump -H d.h5; true"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    lines = iotune_lines(proc.stderr)
    assert lines == [f'iotune: {cfg}:2: <cb_nodes>: "lots" is not a whole number; ignored'], lines


def test_a_warning_is_said_once_per_run_by_jobs_of_two_ranks(libiotune, tmp_path, test_prog):
    """Rank 0 alone reports a faulty control file; a second job of the same run (one session,
    as `iotune run -- sh -c 'mpiexec ...; mpiexec ...'` gives) stays quiet."""
    cfg = config(tmp_path, "<cb_nodes>lots</cb_nodes>")
    env = {"IOTUNE_SESSION": f"once-{os.getpid()}-{tmp_path.name}"}
    outs = []
    for name in ("a.h5", "b.h5"):
        proc = run_mpi(
            2,
            [test_prog("h5probe"), tmp_path / name],
            cwd=tmp_path,
            preload=libiotune,
            config=cfg,
            env=env,
        )
        outs.append(iotune_lines(proc.stderr))
    assert len(outs[0]) == 1, outs
    assert outs[1] == [], outs


@pytest.mark.parametrize("value", NO_MATCH)
def test_open_mpi_romio_gets_no_cb_config_list_that_would_abort_it(value, tmp_path):
    """Open MPI's ROMIO (romio321) aborts the whole job inside MPI_File_open on a
    cb_config_list that matches no host: the runtime checks it first and withdraws it."""
    found = builds()
    if "openmpi" not in found:
        pytest.skip("Open MPI not built")
    build = found["openmpi"]
    prog = build / "tests" / "c" / "mpiio_probe"
    env = {"OMPI_MCA_io": "romio321"}
    run_mpi(2, [prog, tmp_path / "plain.dat"], cwd=tmp_path, build=build, env=env)
    cfg = config(tmp_path, f"<cb_config_list>{value}</cb_config_list>")
    lib = build / "runtime" / "libiotune.so"
    proc, profile = profiled(
        tmp_path, prog, tmp_path / "t.dat", cfg, build=build, preload=lib, env=env
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert (tmp_path / "plain.dat").read_bytes() == (tmp_path / "t.dat").read_bytes()
    lines = iotune_lines(proc.stderr)
    assert len(lines) == 1 and f"withdrawn: cb_config_list={value} [c.xml:2]" in lines[0], lines
    (w,) = file_entry(profile, "t.dat")["withdrawn"]
    assert (w["setting"], w["value"]) == ("cb_config_list", value)
    assert "matches no host" in w["reason"]
