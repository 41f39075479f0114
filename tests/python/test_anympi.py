"""Any MPI: runtimes built per MPI family side by side, the one matching the application
picked, any launcher recognised, and Open MPI's own I/O parameters (MCA) applied through the
environment. The end-to-end tests run Debian's Open MPI software (h5py, netCDF-4, PnetCDF)
under the Open MPI runtime; they skip when that MPI is not built."""

import json
import os
import re
import shutil
import subprocess
import sys

import pytest
from conftest import BUILD, REPO, builds, launcher, need_family, run_mpi

from iotune import controlfile, launch, mpifamily, params, paths, space
from iotune import profile as prof

MCA = [p.name for p in params.all_params() if p.is_mca]


def iotune(*args, cwd=None, env=None, timeout=300):
    full = {k: v for k, v in os.environ.items() if not k.startswith("IOTUNE_")}
    full.update({k: str(v) for k, v in (env or {}).items()})
    return subprocess.run(
        [sys.executable, "-m", "iotune", *map(str, args)],
        cwd=cwd,
        env=full,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def openmpi_run(nprocs, argv):
    """mpirun.openmpi with its flags: the launcher of the Open MPI build."""
    return [*launcher(need_family("openmpi")), str(nprocs), *map(str, argv)]


# ----------------------------------------------------------------------------- launchers


@pytest.mark.parametrize(
    "command,n_launcher",
    [
        ("mpirun.openmpi --oversubscribe -n 2 ./app x", 4),
        ("mpiexec.hydra -genv A B -n 2 app -n 3", 6),
        ("mpiexec.mpich -np 2 -ppn 1 ./app", 5),
        ("/usr/bin/mpirun --mca io romio321 -x FOO -np 2 python3 s.py", 8),
        ("mpiexec -n4 ./app", 2),
        ("srun -N 1 --ntasks=2 -c 2 --exclusive ./app", 7),
        ("flux run -n 2 -N 1 ./app", 6),
        ("flux run -n 2 -- ./app -x", 5),
        ("aprun -n 4 -N 2 -cc depth ./a", 7),
        ("jsrun -n 2 -a 1 --smpiargs -gpu ./a", 7),
        ("ibrun -n 4 -o 0 ./a", 5),
        ("orterun -H a,b ./a", 3),
        ("./app -n 2", 0),
        ("python3 mpirun.py", 0),
    ],
)
def test_split_launcher(command, n_launcher):
    argv = command.split()
    assert launch.split_launcher(argv) == (argv[:n_launcher], argv[n_launcher:])
    assert launch.is_launcher(argv) == (n_launcher > 0)


def test_unknown_option_takes_a_value_unless_a_program_follows(tmp_path):
    app = tmp_path / "app"
    app.write_text("")
    assert launch.split_launcher(["mpirun", "--new-flag", str(app), "a"]) == (
        ["mpirun", "--new-flag"],
        [str(app), "a"],
    )
    assert launch.split_launcher(["mpirun", "--new-opt", "v", "true", "a"]) == (
        ["mpirun", "--new-opt", "v"],
        ["true", "a"],
    )


def test_launch_command_templates_and_defaults(tmp_path):
    assert launch.launch_command("none", 2, ["a"]) == ["a"]
    assert launch.launch_command("srun", 4, ["a"]) == ["srun", "-n", "4", "--export=ALL", "a"]
    tpl = "mpirun.openmpi --oversubscribe -n {n}"
    assert launch.launch_command(tpl, 2, ["a", "b"]) == [
        *"mpirun.openmpi --oversubscribe -n 2".split(),
        "a",
        "b",
    ]
    assert launch.launch_command("flux run", 3, ["a"]) == ["flux", "run", "-n", "3", "a"]
    build = paths.Build(
        "openmpi",
        tmp_path / "lib.so",
        None,
        "test",
        {"mpiexec": "/usr/bin/mpiexec.openmpi", "numproc_flag": "-n", "preflags": ["--x"]},
    )
    assert launch.launch_command(None, 2, ["a"], build) == [
        "/usr/bin/mpiexec.openmpi",
        "--x",
        "-n",
        "2",
        "a",
    ]
    assert launch.default_launcher(build) == "/usr/bin/mpiexec.openmpi --x -n {n}"
    with pytest.raises(ValueError):
        launch.launch_command("none", 2, [])


def test_absolute_program(tmp_path):
    cmd = launch.absolute_program(["mpirun.openmpi", "-n", "2", "./app", "./in"], cwd=tmp_path)
    assert cmd == ["mpirun.openmpi", "-n", "2", str(tmp_path / "app"), "./in"]
    assert launch.absolute_program(["./app", "x"], cwd=tmp_path) == [str(tmp_path / "app"), "x"]
    assert launch.absolute_program(["app"], cwd=tmp_path) == ["app"]


def test_root_permission_only_for_root_running_open_mpi_unset(monkeypatch):
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    allow = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
             "PRTE_ALLOW_RUN_AS_ROOT": "1", "PRTE_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}  # fmt: skip
    assert launch.root_permission(["mpirun.openmpi", "-n", "2", "./app"], {}) == allow
    assert launch.root_permission(["/usr/bin/mpiexec.openmpi", "./app"], {"PATH": "/x"}) == allow
    # the user's own setting stands, whatever it is
    assert (
        launch.root_permission(["mpirun.openmpi", "./app"], {"OMPI_ALLOW_RUN_AS_ROOT": "0"}) == {}
    )
    assert launch.root_permission(["mpirun.openmpi", "./app"], {"PRTE_ALLOW_RUN_AS_ROOT": ""}) == {}
    # not Open MPI's launcher, or no launcher: nothing
    assert launch.root_permission(["mpiexec.mpich", "-n", "2", "./app"], {}) == {}
    assert launch.root_permission(["srun", "-n", "2", "./app"], {}) == {}
    assert launch.root_permission(["./app", "mpirun.openmpi"], {}) == {}
    env = launch.runtime_env(None, lib="/x/libiotune.so", base={}, command=["mpirun.openmpi", "a"])
    assert {k: env[k] for k in allow} == allow
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    assert launch.root_permission(["mpirun.openmpi", "-n", "2", "./app"], {}) == {}


def test_iotune_run_as_root_with_open_mpi_launcher(tmp_path):
    """As root, Open MPI's mpirun refuses to start unless told: iotune tells it, when the
    user has not."""
    if os.geteuid() != 0:
        pytest.skip("not root")
    need_family("openmpi")
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("IOTUNE_", "OMPI_ALLOW_RUN_AS_ROOT"))}  # fmt: skip
    proc = subprocess.run(
        [sys.executable, "-m", "iotune", "run", "--", "mpirun.openmpi", "--oversubscribe",
         "-n", "1", "/bin/sh", "-c", "echo $OMPI_ALLOW_RUN_AS_ROOT$OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"],
        env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "11"


# ----------------------------------------------------------------------------- which runtime


def test_each_family_built_side_by_side(tmp_path):
    found = builds()
    assert found, "no build at all"
    for family, build in found.items():
        assert json.loads((build / "iotune-mpi.json").read_text())["family"] == family
        runtime = build / "runtime" / "libiotune.so"
        # it links no MPI (that would load one MPI into every program: issue 16) ...
        assert not any("mpi" in name for name in mpifamily.loaded_libraries(runtime))
        # ... and tells its family by itself, also copied away from its build
        copy = tmp_path / family / "libiotune.so"
        copy.parent.mkdir()
        shutil.copy(runtime, copy)
        assert paths.library_family(copy) == family
        fam, lib = mpifamily.family_of_program(build / "tests" / "c" / "h5probe")
        assert fam == family, lib
    if shutil.which("mpicc.mpich") and shutil.which("mpicc.openmpi"):
        assert set(found) == {"mpich", "openmpi"}


@pytest.mark.parametrize(
    "name,family",
    [("mpirun.openmpi", "openmpi"), ("mpiexec.openmpi", "openmpi"), ("mpiexec.hydra", "mpich"),
     ("mpiexec.mpich", "mpich"), ("mpirun.mpich", "mpich")],
)  # fmt: skip
def test_family_of_launcher(name, family):
    if shutil.which(name) is None:
        pytest.skip(f"no {name}")
    assert mpifamily.family_of_launcher(name)[0] == family


def test_family_of_plain_mpirun_follows_its_links_or_version(tmp_path):
    """A private PATH where mpirun is Open MPI's: the family comes from where it leads."""
    target = shutil.which("mpirun.openmpi")
    if target is None:
        pytest.skip("no Open MPI")
    (tmp_path / "mpirun").symlink_to(target)
    os.environ["PATH"], old = f"{tmp_path}:{os.environ['PATH']}", os.environ["PATH"]
    try:
        assert mpifamily.family_of_launcher("mpirun")[0] == "openmpi"
    finally:
        os.environ["PATH"] = old


def test_iotune_lib_picks_the_runtime_of_the_application():
    found = builds()
    default = iotune("lib")
    assert default.returncode == 0, default.stderr
    first = next(iter(found))
    assert default.stdout.strip().endswith(
        f"/{first}/libiotune.so"
    ) or default.stdout.strip() == str((found[first] / "runtime" / "libiotune.so").resolve())
    listed = iotune("lib", "--all")
    assert [ln.split()[0] for ln in listed.stdout.splitlines()[1:]] == list(found)
    for family, build in found.items():
        asked = iotune("lib", "--mpi", family)
        assert asked.returncode == 0 and f"{family}" in asked.stdout, asked.stderr
        prog = build / "tests" / "c" / "h5probe"
        chosen = iotune("lib", "--for", prog)
        assert chosen.returncode == 0, chosen.stderr
        assert chosen.stdout.strip() == asked.stdout.strip()
        assert f"{prog} loads libmpi" in chosen.stderr  # and says why


def test_lib_for_a_family_not_built_says_how_to_build_it(tmp_path):
    env = {"IOTUNE_BUILD_DIR": tmp_path}
    python = sys.executable
    proc = subprocess.run(
        [python, "-c", "from iotune import cli; cli.main(['lib', '--mpi', 'openmpi'])"],
        env={**os.environ, **env, "PYTHONPATH": str(REPO / "src")},
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    if paths.builds().get("openmpi") and "install prefix" in paths.builds()["openmpi"].where:
        assert proc.returncode == 0  # installed into this environment: found there
    else:
        assert "IOTUNE_MPI=openmpi" in proc.stderr


@pytest.mark.parametrize("family", ["mpich", "openmpi"])
def test_kernel_profiled_under_the_runtime_of_its_mpi(family, tmp_path):
    """Each family's kernel under its own launcher: iotune profile picks the matching runtime,
    which captures the kernel's I/O, and the kernel verifies what it wrote."""
    build = need_family(family)
    argv = [*launcher(build), "2", build / "kernels" / "vorpalio", "--block", "8,6,4",
            "--steps", "2", "--read"]  # fmt: skip
    proc = iotune("profile", "--out", tmp_path / "p.json", "--", *argv, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    name = paths.FAMILY_NAMES[family]
    assert f"runtime for {name} (" in proc.stderr and "vorpalio loads libmpi" in proc.stderr
    assert '"verified":true' in proc.stdout
    p = prof.load(tmp_path / "p.json")
    assert p.ranks == 2 and p.bytes_written > 0 and p.bytes_read > 0


# ----------------------------------------------------------------------------- OMPIO parameters


def test_mca_parameters_are_in_the_registry_but_not_in_the_runtime():
    names = [p.name for p in params.all_params() if p.is_mca]
    assert set(MCA) <= set(names)
    assert all(params.get(n).layer == "mpiio" for n in names)
    header = (BUILD / "runtime" / "generated" / "params_gen.h").read_text()
    assert "IOT_P_CB_BUFFER_SIZE" in header
    assert not any(f"IOT_P_{n.upper()}," in header for n in names)
    # their names only, for the runtime to say what they are (config/settings.c)
    listed = header.split("iot_params_mca[] = {", 1)[1].split("};", 1)[0]
    assert re.findall(r'"([^"]+)"', listed) == names
    assert params.get("io").normalise("ROMIO321") == "romio321"
    with pytest.raises(params.ValueProblem):
        params.get("fcoll").normalise("fastest")


def test_split_mca_and_blanked_control_file(tmp_path):
    runtime, env = launch.split_mca({"fcoll": "two_phase", "cb_buffer_size": "1048576"})
    assert runtime == {"cb_buffer_size": "1048576"}
    assert env == {"OMPI_MCA_fcoll": "two_phase"}
    path = controlfile.write(tmp_path / "c.xml", {"fcoll": "vulcan", "cb_nodes": "2"})
    text = path.read_text()
    assert "<fcoll>" in text and controlfile.parse_file(path).ok
    blank = launch.without_elements(text, ["fcoll"])
    assert "fcoll" not in blank and "<cb_nodes>" in blank
    assert blank.count("\n") == text.count("\n") and len(blank) == len(text)


def test_space_keeps_mca_parameters_only_for_open_mpi():
    sp = space.parse(
        {
            "params": {
                "fcoll": {"values": ["dynamic", "two_phase"]},
                "cb_buffer_size": {"values": ["1M", "4M"]},
            },
            "guesses": [{"name": "g", "settings": {"fcoll": "two_phase"}}],
        }
    )
    assert mpifamily.space_for(sp, "openmpi").names() == ["fcoll", "cb_buffer_size"]
    mpich = mpifamily.space_for(sp, "mpich")
    assert mpich.names() == ["cb_buffer_size"] and mpich.guesses == []
    local = space.load("local")
    ompio = {"io", "fcoll", "io_ompio_num_aggregators", "io_ompio_bytes_per_agg"}
    assert ompio <= set(mpifamily.space_for(local, "openmpi").names())
    assert not ompio & set(mpifamily.space_for(local, "mpich").names())
    assert not ompio & set(mpifamily.space_for(local, None).names())


def test_run_applies_open_mpi_parameters_through_the_environment(tmp_path):
    """iotune run: the control file's MCA parameters reach the ranks (read back through MPI_T)
    and the runtime gets the rest without complaint."""
    build = need_family("openmpi")
    prog = build / "tests" / "c" / "mpit_probe"
    config = tmp_path / "c.xml"
    config.write_text(
        "<Parameters><Middleware_Layer>\n<cb_buffer_size>1M</cb_buffer_size>\n"
        "<fcoll>two_phase</fcoll>\n<io_ompio_num_aggregators>1</io_ompio_num_aggregators>\n"
        "<io_ompio_bytes_per_agg>2M</io_ompio_bytes_per_agg>\n"
        "<io_ompio_grouping_option>7</io_ompio_grouping_option>\n"
        "<io_ompio_cycle_buffer_size>1M</io_ompio_cycle_buffer_size>\n"
        "</Middleware_Layer></Parameters>\n"
    )
    cmd = openmpi_run(2, [prog, "m.dat", *MCA])
    plain = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert plain.returncode == 0, plain.stderr
    assert json.loads(plain.stdout)["fcoll"] == ""
    proc = iotune("run", "--verbose", "--config", config, "--", *cmd, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    assert got["fcoll"] == "two_phase"
    assert got["io_ompio_num_aggregators"] == "1"
    assert got["io_ompio_bytes_per_agg"] == str(2 << 20)
    assert got["io_ompio_grouping_option"] == "7"
    assert got["io_ompio_cycle_buffer_size"] == str(1 << 20)
    assert "unknown parameter" not in proc.stderr
    assert "runtime for Open MPI" in proc.stderr and "loads libmpi.so" in proc.stderr
    assert "OMPI_MCA_fcoll=two_phase" in proc.stderr
    assert not list(tmp_path.glob(".iotune-config-*"))  # the runtime's copy is removed
    # a problem of the control file is said with the user's file name, not the copy's
    bad = config.with_name("bad.xml")
    bad.write_text(config.read_text().replace("<cb_buffer_size>1M", "<cb_buffer_size>lots"))
    proc = iotune("run", "--verbose", "--config", bad, "--", *cmd, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert f"{bad}:2: <cb_buffer_size>:" in proc.stderr, proc.stderr
    assert ".iotune-config-" not in proc.stderr
    # ROMIO instead of OMPIO: the component in force, read back the same way
    romio = config.with_name("romio.xml")
    romio.write_text(
        "<Parameters><Middleware_Layer><io>romio321</io></Middleware_Layer></Parameters>"
    )
    proc = iotune("run", "--config", romio, "--", *cmd, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout.strip().splitlines()[-1])["io"] == "romio321"
    # the same control file for an MPICH program: said once, not applied
    if "mpich" in builds():
        mprog = builds()["mpich"] / "tests" / "c" / "mpiio_probe"
        proc = iotune(
            "run", "--config", config, "--", *launcher(builds()["mpich"]), "1", mprog, "x.dat",
            cwd=tmp_path,
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        assert proc.stderr.count("not applied: the runtime is for MPICH") == 1, proc.stderr


def test_tune_with_open_mpi_launcher_runs_each_trial_once(tmp_path):
    """iotune tune -- mpirun.openmpi -n 2 ./app (relative path): no nested launcher, every
    trial ok, and the OMPIO parameters of the space searched."""
    build = need_family("openmpi")
    shutil.copy(build / "kernels" / "haccio", tmp_path / "haccio")
    sp = tmp_path / "space.toml"
    sp.write_text(
        'name = "ompio"\n[params.fcoll]\nvalues = ["dynamic", "two_phase"]\n'
        '[params.io_ompio_bytes_per_agg]\nvalues = ["1M", "32M"]\n'
    )
    mpirun = launcher(build)
    proc = iotune(
        "tune", "--space", sp, "--trials", "3", "--verify-pairs", "5", "--leaders", "1",
        "--repeat", "1", "--no-partial", "--no-progress", "--out", "out", "--",
        *mpirun, "2", "./haccio", "--particles", "2000",
        cwd=tmp_path, timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    each = [ln for ln in proc.stdout.splitlines() if "each trial runs" in ln]
    command = f"{' '.join(mpirun)} 2 ./haccio --particles 2000"
    assert each == [f"iotune tune: each trial runs in {tmp_path}: {command}"]
    assert "runtime for Open MPI" in proc.stdout
    rows = (tmp_path / "out" / "trials.csv").read_text().splitlines()
    header = rows[0].split(",")
    status = header.index("status")
    assert all(r.split(",")[status] == "ok" for r in rows[1:]), rows
    assert "fcoll" in header


# ----------------------------------------------------------------------------- Open MPI software


def h5diff(a, b):
    proc = subprocess.run(["h5diff", str(a), str(b)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr


CONFIG = (
    "<Parameters><High_Level_IO_Library><alignment>0, 65536</alignment>"
    "</High_Level_IO_Library><Middleware_Layer><cb_buffer_size>1M</cb_buffer_size>"
    "<fcoll>two_phase</fcoll></Middleware_Layer></Parameters>\n"
)


def profiled(tmp_path, name, argv):
    """Runs argv plain in tmp/plain and under `iotune profile` in tmp/tuned; the profile."""
    for sub in ("plain", "tuned"):
        (tmp_path / sub).mkdir()
    plain = subprocess.run(
        argv, cwd=tmp_path / "plain", capture_output=True, text=True, timeout=120
    )
    assert plain.returncode == 0, plain.stdout + plain.stderr
    (tmp_path / "c.xml").write_text(CONFIG)
    out = tmp_path / "p.json"
    proc = iotune("profile", "--config", tmp_path / "c.xml", "--out", out, "--", *argv,
                  cwd=tmp_path / "tuned")  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "runtime for Open MPI" in proc.stderr
    p = prof.load(out)
    (f,) = [f for f in p.files if f["name"].endswith(name)]
    return p, f


def test_debian_h5py_under_the_open_mpi_runtime(tmp_path):
    need_family("openmpi")
    python = "/usr/bin/python3"
    check = subprocess.run([python, "-c", "import h5py._debian_h5py_mpi, mpi4py"],
                           capture_output=True, timeout=60)  # fmt: skip
    if check.returncode != 0:
        pytest.skip("Debian's python3-h5py-mpi is not installed")
    script = tmp_path / "w.py"
    script.write_text(
        "import sys\nimport h5py\nimport numpy as np\nfrom mpi4py import MPI\n"
        "c = MPI.COMM_WORLD\n"
        "with h5py.File(sys.argv[1], 'w', driver='mpio', comm=c) as f:\n"
        "    d = f.create_dataset('x', (c.size * 1000, 10), dtype='f8')\n"
        "    with d.collective:\n"
        "        rows = slice(c.rank * 1000, (c.rank + 1) * 1000)\n"
        "        d[rows] = np.arange(10000).reshape(1000, 10) + c.rank\n"
        "    print('offset', d.id.get_offset())\n"
    )
    argv = openmpi_run(2, [python, script, "h.h5"])
    p, f = profiled(tmp_path, "h.h5", argv)
    assert f["applied"]["hdf5"]["alignment"] == "0,65536"
    assert f["hints"]["cb_buffer_size"] == "1048576"
    h5diff(tmp_path / "plain" / "h.h5", tmp_path / "tuned" / "h.h5")
    # read back from the file itself: the dataset starts on a 64 KiB boundary only when tuned
    offsets = {}
    for sub in ("plain", "tuned"):
        got = subprocess.run(
            [python, "-c", f"import h5py; print(h5py.File('{tmp_path / sub / 'h.h5'}')['x'].id"
             ".get_offset())"], capture_output=True, text=True, timeout=60, check=True,
        )  # fmt: skip
        offsets[sub] = int(got.stdout)
    assert offsets["tuned"] % 65536 == 0 and offsets["plain"] % 65536 != 0


def test_netcdf4_parallel_program_under_the_open_mpi_runtime(tmp_path):
    build = need_family("openmpi")
    prog = build / "tests" / "c" / "nc4_probe"
    if not prog.exists():
        pytest.skip("no parallel netCDF-4 of Open MPI (libnetcdf-mpi-dev)")
    p, f = profiled(tmp_path, "n.nc", openmpi_run(2, [prog, "n.nc"]))
    assert f["applied"]["hdf5"]["alignment"] == "0,65536"
    assert f["hints"]["cb_buffer_size"] == "1048576"
    assert f["hdf5"]["bytes_written"] > 0 and f["mpiio"]["collective_writes"] > 0
    h5diff(tmp_path / "plain" / "n.nc", tmp_path / "tuned" / "n.nc")


def test_pnetcdf_program_under_the_open_mpi_runtime(tmp_path):
    build = need_family("openmpi")
    prog = build / "tests" / "c" / "pnc_probe"
    if not prog.exists():
        pytest.skip("no PnetCDF of Open MPI (libpnetcdf-dev)")
    p, f = profiled(tmp_path, "p.nc", openmpi_run(2, [prog, "p.nc"]))
    assert f["applied"]["mpiio"]["cb_buffer_size"] == "1048576"
    assert f["hints"]["cb_buffer_size"] == "1048576"
    assert f["mpiio"]["collective_writes"] > 0
    plain = (tmp_path / "plain" / "p.nc").read_bytes()
    assert plain == (tmp_path / "tuned" / "p.nc").read_bytes()


# ----------------------------------------------------------------------------- mismatch


@pytest.mark.parametrize("program_mpi,runtime_mpi", [("openmpi", "mpich"), ("mpich", "openmpi")])
def test_runtime_of_the_other_family_leaves_the_program_alone(program_mpi, runtime_mpi, tmp_path):
    """Issue 16 point 2: a runtime of one ABI family preloaded into a program of the other
    (HDF5 over MPI-IO, 2 ranks, every setting of probe_all.xml) detects it before any MPI
    call: the program runs to the end, its data is unchanged and one line says why."""
    found = builds()
    if set(found) != {"mpich", "openmpi"}:
        pytest.skip("needs both MPI families built")
    prog = found[program_mpi] / "tests" / "c" / "h5probe"
    wrong = found[runtime_mpi] / "runtime" / "libiotune.so"
    config = REPO / "tests" / "data" / "probe_all.xml"
    plain = run_mpi(2, [prog, "a.h5"], cwd=tmp_path, build=found[program_mpi], timeout=60)
    proc = run_mpi(2, [prog, "b.h5"], cwd=tmp_path, build=found[program_mpi], timeout=60,
                   preload=wrong, config=config, check=False,
                   env={"IOTUNE_PROFILE": str(tmp_path / "p.json")})  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    messages = [ln for ln in proc.stderr.splitlines() if ln.startswith("iotune:")]
    assert len(messages) == 1, proc.stderr
    assert "built for" in messages[0] and "applies no setting" in messages[0]
    assert json.loads(proc.stdout)["mismatches"] == json.loads(plain.stdout)["mismatches"] == 0
    assert json.loads(proc.stdout)["create"] == json.loads(plain.stdout)["create"]  # untouched
    assert not (tmp_path / "p.json").exists()  # nothing captured, no half-true profile
    h5diff(tmp_path / "a.h5", tmp_path / "b.h5")


H5PY_WRITER = (
    "import sys\nimport h5py\nimport numpy as np\nfrom mpi4py import MPI\n"
    "c = MPI.COMM_WORLD\n"
    "with h5py.File(sys.argv[1], 'w', driver='mpio', comm=c) as f:\n"
    "    d = f.create_dataset('x', (c.size * 1000, 10), dtype='f8', chunks=(500, 10))\n"
    "    with d.collective:\n"
    "        rows = slice(c.rank * 1000, (c.rank + 1) * 1000)\n"
    "        d[rows] = np.arange(10000).reshape(1000, 10) + c.rank\n"
)


def mpi_python(family: str) -> str:
    """A Python whose h5py and mpi4py are built on family's MPI, or skip: Debian's
    python3-h5py-mpi for Open MPI, this environment's h5py (scripts/install.sh) for MPICH."""
    python = "/usr/bin/python3" if family == "openmpi" else sys.executable
    package = "h5py._debian_h5py_mpi" if family == "openmpi" else "h5py"
    probe = subprocess.run(
        [python, "-c", f"import mpi4py, {package}.defs as d; print(d.__file__)"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    if probe.returncode != 0:
        pytest.skip(f"no h5py with MPI in {python}")
    fam, _ = mpifamily.family_of_program(probe.stdout.strip())  # defs links libhdf5
    if fam != family:
        pytest.skip(f"the h5py of {python} is not built on {family} ({fam})")
    return python


@pytest.mark.parametrize("program_mpi,runtime_mpi", [("openmpi", "mpich"), ("mpich", "openmpi")])
def test_runtime_of_the_other_family_leaves_a_python_program_alone(
    program_mpi, runtime_mpi, tmp_path
):
    """Issue 16 point 2 for Python: h5py and mpi4py load their MPI with dlopen, after start-up.
    A runtime of the other family preloaded into it must not bring an MPI of its own (the
    program's MPI calls would land in it): the program runs to the end, writes the same data
    and one line says why nothing was applied."""
    found = builds()
    if set(found) != {"mpich", "openmpi"}:
        pytest.skip("needs both MPI families built")
    python = mpi_python(program_mpi)
    script = tmp_path / "w.py"
    script.write_text(H5PY_WRITER)
    argv = [*launcher(found[program_mpi]), "2", python, script]
    plain = subprocess.run([*map(str, argv), "a.h5"], cwd=tmp_path, capture_output=True,
                           text=True, timeout=120)  # fmt: skip
    assert plain.returncode == 0, plain.stderr[-2000:]
    env = dict(os.environ, LD_PRELOAD=str(found[runtime_mpi] / "runtime" / "libiotune.so"),
               IOTUNE_CONFIG=str(REPO / "tests" / "data" / "probe_all.xml"),
               IOTUNE_PROFILE=str(tmp_path / "p.json"))  # fmt: skip
    proc = subprocess.run([*map(str, argv), "b.h5"], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=120)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    messages = [ln for ln in proc.stderr.splitlines() if "iotune" in ln]
    assert len(messages) == 1, proc.stderr
    assert "built for" in messages[0] and "applies no setting" in messages[0]
    assert not (tmp_path / "p.json").exists()
    h5diff(tmp_path / "a.h5", tmp_path / "b.h5")


@pytest.mark.parametrize("runtime_mpi", ["mpich", "openmpi"])
def test_either_runtime_leaves_a_shell_pipeline_without_mpi_alone(runtime_mpi, tmp_path):
    """Programs without MPI (a shell and what it starts) load either runtime silently."""
    found = builds()
    if runtime_mpi not in found:
        pytest.skip(f"{runtime_mpi} not built")
    env = dict(os.environ, LD_PRELOAD=str(found[runtime_mpi] / "runtime" / "libiotune.so"),
               IOTUNE_CONFIG=str(REPO / "tests" / "data" / "probe_all.xml"))  # fmt: skip
    proc = subprocess.run(["sh", "-c", "echo hello > x.txt; cat x.txt"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "hello\n", "")


@pytest.mark.parametrize("family", ["mpich", "openmpi"])
def test_a_runtime_named_by_iotune_lib_is_launched_by_its_own_mpi(family, monkeypatch):
    """IOTUNE_LIB names a runtime: trials get the launcher of that runtime's MPI, never the
    mpiexec on PATH (Debian's alternative, which may belong to the other MPI)."""
    from iotune import tune_cli

    need_family(family)
    build = paths.find_build(family)
    monkeypatch.setenv("IOTUNE_LIB", str(build.lib))
    choice = mpifamily.choose(["./app"])
    assert choice.build is None and choice.family == family
    template = tune_cli._launcher(None, ["./app"], choice.launcher_build())
    assert template.split()[0] == build.mpi["mpiexec"], template


def test_iotune_build_dir_wins_over_the_installed_runtime(tmp_path, monkeypatch):
    """A build tree asked for by name is the one used, even where one is installed."""
    tree = tmp_path / "mybuild"
    (tree / "runtime").mkdir(parents=True)
    (tree / "runtime" / "libiotune.so").write_bytes(b"")
    (tree / "iotune-mpi.json").write_text(json.dumps({"family": "mpich"}))
    installed = tmp_path / "prefix" / "lib" / "iotune" / "mpich"
    installed.mkdir(parents=True)
    (installed / "libiotune.so").write_bytes(b"")
    monkeypatch.setattr(sys, "prefix", str(tmp_path / "prefix"))
    monkeypatch.delenv("IOTUNE_LIB", raising=False)
    monkeypatch.delenv("IOTUNE_BUILD_DIR", raising=False)
    assert paths.builds()["mpich"].where == "install prefix"  # nothing asked: installed first
    monkeypatch.setenv("IOTUNE_BUILD_DIR", str(tree))
    found = paths.builds()["mpich"]
    assert found.where == f"build tree {tree}" and found.lib == (tree / "runtime" / "libiotune.so")
    assert paths.find_library("mpich") == tree / "runtime" / "libiotune.so"
