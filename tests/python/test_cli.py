"""The iotune command (run as `python -m iotune`), and the paths and launch helpers under it."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import launcher

from iotune import controlfile, launch, params, paths

REPO = Path(__file__).resolve().parents[2]
VECTORS = REPO / "tests" / "vectors"
SRC = REPO / "src"


def iotune(*args, env=None, cwd=None, python=None, timeout=60):
    """Runs `python -m iotune ARGS`; returns the CompletedProcess (text)."""
    full_env = dict(os.environ)
    for var in ("IOTUNE_LIB", "IOTUNE_KERNELS_DIR", "IOTUNE_CONFIG", "IOTUNE_VERBOSE"):
        full_env.pop(var, None)
    full_env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(SRC), full_env.get("PYTHONPATH")]))
    full_env.update(env or {})
    return subprocess.run(
        [python or sys.executable, "-m", "iotune", *map(str, args)],
        env=full_env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@pytest.fixture
def fake_lib(tmp_path):
    """An existing file to preload: ld.so complains that it is not a library and carries on."""
    lib = tmp_path / "libiotune.so"
    lib.write_bytes(b"")
    return lib


def env_lines(stdout: str) -> dict[str, str]:
    return dict(line.split("=", 1) for line in stdout.splitlines() if "=" in line)


# ----------------------------------------------------------------------------- help, version


@pytest.mark.parametrize("cmd", [[], ["run"], ["check"], ["lib"], ["kernels"]])
def test_help(cmd):
    proc = iotune(*cmd, "--help")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("usage: iotune")


def test_version_and_no_command():
    proc = iotune("--version")
    assert proc.returncode == 0 and proc.stdout.strip() == "iotune 0.1.0"
    proc = iotune()
    assert proc.returncode == 2 and "check" in proc.stdout
    assert iotune("frobnicate").returncode == 2


def test_help_does_not_import_the_tuner():
    code = "import sys, iotune.cli as c; c.build_parser(); print(sorted(sys.modules))"
    proc = subprocess.run(
        [sys.executable, "-c", code],
        env={**os.environ, "PYTHONPATH": str(SRC)},
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0
    assert "optuna" not in proc.stdout and "matplotlib" not in proc.stdout


# ----------------------------------------------------------------------------- check


def test_check_good():
    proc = iotune("check", VECTORS / "good_full.xml")
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    lines = proc.stdout.splitlines()
    assert lines[0].split() == ["layer", "name", "file", "variable", "value"]
    assert lines[1].split() == ["hdf5", "alignment", "-", "-", "1048576,1048576"]
    assert ["hdf5", "chunk", "checkpoint_*.h5", "temperature", "64,64,16"] in [
        ln.split() for ln in lines
    ]
    assert ["fs", "striping_factor", "sample_dataset.h5part", "-", "4"] in [
        ln.split() for ln in lines
    ]
    assert len(lines) == 1 + 25


def test_check_empty():
    proc = iotune("check", VECTORS / "good_empty.xml")
    assert proc.returncode == 0 and "no settings" in proc.stdout


def test_check_bad():
    path = VECTORS / "bad_mixed.xml"
    proc = iotune("check", path)
    assert proc.returncode == 1
    errors = [ln for ln in proc.stderr.splitlines() if ln.startswith(str(path))]
    assert len(errors) == 9
    assert errors[0] == f'{path}:6: <alignment>: "1M" is not two sizes "threshold, boundary"'
    assert f'{path}:14: <cb_nodes>: "-3" is below the minimum 1' in errors
    assert "9 error(s); 9 settings apply" in proc.stderr
    # the settings that still apply are shown
    assert ["mpiio", "cb_nodes", "-", "-", "4"] in [ln.split() for ln in proc.stdout.splitlines()]


def test_check_shows_the_first_problems_and_all_with_all(tmp_path):
    """3000 bad elements: the first PROBLEMS_SHOWN problems (and hints), one line counting the
    rest and naming `iotune check --all` (as the runtime's messages do), which lists them all."""
    path = tmp_path / "many bad.xml"
    body = "<cb_nodez>1</cb_nodez>\n" * 3000
    path.write_text(f"<Parameters><Middleware_Layer>\n{body}</Middleware_Layer></Parameters>\n")
    proc = iotune("check", path)
    assert proc.returncode == 1
    lines = proc.stderr.splitlines()
    shown = controlfile.PROBLEMS_SHOWN
    unknown = [ln for ln in lines if "unknown parameter" in ln]
    assert len(unknown) == shown
    assert unknown[0] == f"{path}:2: <cb_nodez>: unknown parameter (see `iotune check --list`)"
    assert len([ln for ln in lines if "did you mean <cb_nodes>" in ln]) == shown
    more = f"not shown (3000 in all); `iotune check --all '{path}'` lists them all"
    assert f"{path}: 2990 more problems {more}" in lines
    assert f"{path}: 2990 more hints {more}" in lines
    assert lines[-1] == "3000 error(s); 0 settings apply"
    proc = iotune("check", "--all", path)
    assert proc.stderr.count("unknown parameter") == 3000 and "not shown" not in proc.stderr


def test_check_names_check_all_as_a_command_that_pastes(tmp_path):
    """The `iotune check --all PATH` to paste showed a name's terminal controls escaped
    (\\x1b), so the pasted command named another file: bash's $'...' quoting now, which the
    terminal shows as text and bash reads back as the very name."""
    path = tmp_path / "ctl\x1b[2J\x07.xml"
    body = "<cb_nodez>1</cb_nodez>\n" * (controlfile.PROBLEMS_SHOWN + 1)
    path.write_text(f"<Parameters><Middleware_Layer>\n{body}</Middleware_Layer></Parameters>\n")
    proc = iotune("check", path)
    assert "\x1b" not in proc.stderr and "\x07" not in proc.stderr
    word = f"$'{tmp_path}/ctl\\x1b[2J\\x07.xml'"
    (line,) = [ln for ln in proc.stderr.splitlines() if "more problems" in ln]
    assert line.startswith(f"{tmp_path}/ctl\\x1b[2J\\x07.xml: 1 more problems not shown")
    assert line.endswith(f"`iotune check --all {word}` lists them all")
    r = subprocess.run(["bash", "-c", f"printf %s {word}"], capture_output=True, text=True)
    assert r.stdout == str(path)


def test_check_escapes_what_a_terminal_would_act_on(tmp_path):
    """ESC, BEL, CR, the C1 control CSI and bytes that are not UTF-8, in the file's name and
    its values, are shown escaped (outputs.printable), never raw."""
    path = tmp_path / "ctl\x1b]0;t\x07\udcff.xml"
    path.write_bytes(b"<Parameters><Middleware_Layer>\n<cb_nodes>1&#13;\xc2\x9b2J</cb_nodes>\n"
                     b"<cb_nodez>1</cb_nodez>\n<cb_config_list>*:\xc2\x9b2J</cb_config_list>\n"
                     b"</Middleware_Layer></Parameters>\n")  # fmt: skip
    proc = iotune("check", path)
    for raw in ("\x1b", "\x07", "\r", "\x9b", "\udcff", "\ufffd"):
        assert raw not in proc.stderr + proc.stdout, repr(proc.stderr)
    assert "*:\\x9b2J" in proc.stdout  # a valid setting's value, in the table
    shown = f"{tmp_path}/ctl\\x1b]0;t\\x07\\xff.xml"
    lines = proc.stderr.splitlines()
    assert f'{shown}:2: <cb_nodes>: "1\\r\\x9b2J" is not a whole number' in lines
    assert f"hint: {shown}:3: <cb_nodez>: did you mean <cb_nodes> (in <Middleware_Layer>)?" in lines


def test_check_says_what_run_says_of_an_open_mpi_parameter_narrowed_by_filename(tmp_path):
    """`iotune run` said that an Open MPI parameter narrowed by FileName= is ignored (one
    environment per process) but `iotune check` did not (an outside tester's finding): both
    say it from launch.mca_file_problem; a warning, the file stays valid."""
    config = tmp_path / "mca.xml"
    config.write_text('<Parameters><Middleware_Layer>\n<fcoll FileName="*.h5">two_phase</fcoll>'
                      "\n<fcoll>dynamic</fcoll>\n</Middleware_Layer></Parameters>\n")  # fmt: skip
    proc = iotune("check", config)
    assert proc.returncode == 0, proc.stderr
    said = "<fcoll FileName=...>: an Open MPI parameter is set for the whole process, not per file"
    assert proc.stderr.splitlines() == [f"{config}:2: warning: {said}; ignored"]
    (setting,) = [s for s in controlfile.parse_file(config).settings if s.file]
    assert launch.mca_settings([setting])[1] == [f"line 2: {said}; ignored"]


def test_check_does_not_list_an_ignored_open_mpi_parameter_as_applying_and_json_warns(tmp_path):
    """`iotune check` listed an Open MPI parameter narrowed by FileName= among the settings
    that apply while warning it is ignored, and `--json` lacked the warning (an outside
    tester's finding): the table leaves it out, --json says the warning."""
    config = tmp_path / "mca.xml"
    config.write_text('<Parameters><Middleware_Layer>\n<fcoll FileName="*.h5">two_phase</fcoll>'
                      "\n<fcoll>dynamic</fcoll>\n</Middleware_Layer></Parameters>\n")  # fmt: skip
    proc = iotune("check", config)
    assert "two_phase" not in proc.stdout and "dynamic" in proc.stdout, proc.stdout
    got = json.loads(iotune("check", "--json", config).stdout)
    said = "<fcoll FileName=...>: an Open MPI parameter is set for the whole process, not per file"
    assert got["warnings"] == [{"line": 2, "element": None, "message": f"{said}; ignored"}]
    assert len(got["settings"]) == 2  # the reading shared with the runtime is kept whole
    config.write_text('<Parameters><Middleware_Layer>\n<fcoll FileName="*.h5">two_phase</fcoll>'
                      "\n</Middleware_Layer></Parameters>\n")  # fmt: skip
    proc = iotune("check", config)
    assert proc.returncode == 0 and proc.stdout == "no settings\n", proc.stdout


@pytest.mark.parametrize(
    ("min_at", "max_at", "warned"),
    [("", "", True), ('FileName="*.h5"', "", True), ("", 'FileName="*.h5"', True),
     ('FileName="*.h5"', 'FileName="*.nc"', False)],
)  # fmt: skip
def test_check_warns_of_an_mdc_min_size_above_mdc_max_size(tmp_path, min_at, max_at, warned):
    """mdc_min_size above mdc_max_size (the runtime then applies none of the metadata cache
    settings) was not caught by `iotune check` (an outside tester's finding): one warning
    naming the file, the line and both keys, in text and --json; none when the two are for
    different files."""
    config = tmp_path / "mdc.xml"
    config.write_text(f"<Parameters><High_Level_IO_Library>\n"
                      f"<mdc_min_size {min_at}>8M</mdc_min_size>"
                      f"\n<mdc_max_size {max_at}>4M</mdc_max_size>\n</High_Level_IO_Library>"
                      "</Parameters>\n")  # fmt: skip
    proc = iotune("check", config)
    assert proc.returncode == 0, proc.stderr
    said = "mdc_min_size=8388608 is above mdc_max_size=4194304 (lines 2 and 3)"
    lines = [line for line in proc.stderr.splitlines() if "mdc_min_size=" in line]
    if not warned:
        assert lines == [], proc.stderr
        return
    assert len(lines) == 1 and lines[0].startswith(f"{config}:3: <mdc_max_size>: warning: {said}")
    (w,) = [w for w in json.loads(iotune("check", "--json", config).stdout)["warnings"]
            if "mdc_min_size=" in w["message"]]  # fmt: skip
    assert w["line"] == 3 and w["element"] == "mdc_max_size" and said in w["message"]


def test_check_fatal_and_missing(tmp_path):
    proc = iotune("check", VECTORS / "bad_wrong_root.xml")
    assert proc.returncode == 1
    assert ":3: <H5Tuner>: the root element must be <Parameters>" in proc.stderr
    assert "nothing applies" in proc.stderr and proc.stdout == ""
    missing = tmp_path / "missing.xml"
    proc = iotune("check", missing)
    assert proc.returncode == 1
    assert f"{missing}: cannot read the control file" in proc.stderr


@pytest.mark.parametrize("case", ["good_full", "good_hints", "bad_mixed", "bad_wrong_root"])
def test_check_json(case):
    proc = iotune("check", "--json", VECTORS / f"{case}.xml")
    got = json.loads(proc.stdout)
    expected = json.loads((VECTORS / f"{case}.json").read_text())
    assert list(got) == ["settings", "errors", "overrides", "fatal", "warnings"]
    got.pop("warnings")  # this machine's (costs): the runtime's reading is the rest
    assert got == {"overrides": [], **expected}
    assert proc.returncode == (1 if expected["errors"] else 0)


def test_check_json_missing_file(tmp_path):
    proc = iotune("check", "--json", tmp_path / "none.xml")
    assert proc.returncode == 1
    assert json.loads(proc.stdout) == {
        "settings": [],
        "errors": [{"line": None, "element": None, "value": None}],
        "overrides": [],
        "fatal": True,
        "warnings": [],
    }


def test_check_list():
    proc = iotune("check", "--list")
    assert proc.returncode == 0
    lines = proc.stdout.splitlines()
    assert lines[0].split()[:4] == ["name", "layer", "scope", "type"]
    names = [ln.split()[0] for ln in lines[1:]]
    assert names == params.names()
    row = next(ln for ln in lines if ln.startswith("striping_unit "))
    assert "64 KiB..4 GiB" in row and "on Lustre the bytes on one OST" in row and "CephFS" in row
    row = next(ln for ln in lines if ln.startswith("fill_time "))
    assert "ifset, alloc, never" in row


def test_check_needs_a_file():
    proc = iotune("check")
    assert proc.returncode == 2 and "--list" in proc.stderr


# ----------------------------------------------------------------------------- lib, kernels


def test_lib_from_environment(fake_lib, tmp_path):
    proc = iotune("lib", env={"IOTUNE_LIB": fake_lib})
    assert proc.returncode == 0 and proc.stdout.strip() == str(fake_lib.resolve())
    proc = iotune("lib", env={"IOTUNE_LIB": tmp_path / "nope.so"})
    assert proc.returncode == 1
    assert "IOTUNE_LIB" in proc.stderr and "is not a file" in proc.stderr


def base_python():
    """An interpreter outside this virtual environment: its prefix holds no libiotune.so."""
    for candidate in (Path(sys.base_prefix) / "bin" / "python3", Path(sys._base_executable)):
        if candidate.is_file() and Path(sys.base_prefix) != Path(sys.prefix):
            return candidate
    pytest.skip("not running in a virtual environment")


def test_lib_and_kernels_not_built(tmp_path):
    python = base_python()
    if (Path(sys.base_prefix) / "lib" / paths.LIB_NAME).exists():
        pytest.skip("the base interpreter's prefix has a libiotune.so")
    env = {"IOTUNE_BUILD_DIR": tmp_path / "empty-build"}
    proc = iotune("lib", env=env, python=python)
    assert proc.returncode == 1
    assert "libiotune.so not found" in proc.stderr
    assert str(tmp_path / "empty-build" / "runtime" / "libiotune.so") in proc.stderr
    proc = iotune("kernels", env=env, python=python)
    assert proc.returncode == 1 and "built kernels not found" in proc.stderr
    proc = iotune(
        "run", "--config", VECTORS / "good_full.xml", "--", "true", env=env, python=python
    )
    assert proc.returncode == 1 and "libiotune.so not found" in proc.stderr


def test_kernels_from_environment(tmp_path):
    kdir = tmp_path / "kernels"
    kdir.mkdir()
    for name, mode in (("vpicio", 0o755), ("haccio", 0o755), ("notes.txt", 0o644), ("data", 0o644)):
        (kdir / name).write_text("")
        (kdir / name).chmod(mode)
    (kdir / "libhelper.so").write_text("")
    (kdir / "libhelper.so").chmod(0o755)
    (kdir / "CMakeFiles").mkdir()
    proc = iotune("kernels", env={"IOTUNE_KERNELS_DIR": kdir})
    assert proc.returncode == 0, proc.stderr
    rows = [ln.split() for ln in proc.stdout.splitlines()[1:]]
    assert rows == [["haccio", str(kdir / "haccio")], ["vpicio", str(kdir / "vpicio")]]
    proc = iotune("kernels", env={"IOTUNE_KERNELS_DIR": tmp_path / "nope"})
    assert proc.returncode == 1 and "is not a directory" in proc.stderr


def test_paths_api(tmp_path, monkeypatch):
    kdir = tmp_path / "k"
    kdir.mkdir()
    (kdir / "gcrmio").write_text("")
    (kdir / "gcrmio").chmod(0o755)
    monkeypatch.setenv("IOTUNE_KERNELS_DIR", str(kdir))
    assert paths.find_kernels_dir() == kdir.resolve()
    assert paths.find_kernel("gcrmio") == (kdir / "gcrmio").resolve()
    with pytest.raises(paths.NotFound, match="built kernels: gcrmio"):
        paths.find_kernel("vpicio")
    assert paths.repo_root() == REPO
    monkeypatch.setenv("IOTUNE_BUILD_DIR", str(tmp_path))
    assert paths.build_dir() == tmp_path


# ----------------------------------------------------------------------------- run


def test_run_sets_the_environment(fake_lib, tmp_path):
    config = VECTORS / "good_full.xml"
    rel = os.path.relpath(config, tmp_path)
    proc = iotune(
        "run",
        "--config",
        rel,
        "--",
        "env",
        cwd=tmp_path,
        env={"IOTUNE_LIB": fake_lib, "LD_PRELOAD": "/other/libx.so"},
    )
    assert proc.returncode == 0, proc.stderr
    env = env_lines(proc.stdout)
    assert env["LD_PRELOAD"] == f"{fake_lib.resolve()}:/other/libx.so"
    assert env["IOTUNE_CONFIG"] == str(config)
    assert "IOTUNE_VERBOSE" not in env
    assert "iotune:" not in proc.stderr  # a valid control file: nothing to say


def test_run_caps_its_messages_about_open_mpi_parameters(fake_lib, tmp_path):
    """300 Open MPI parameters narrowed by FileName= (each ignored): `iotune run` says the
    first PROBLEMS_SHOWN and counts the rest, as the runtime does for its own messages; the
    control file's name is shown escaped."""
    config = tmp_path / "mca\x1b[2J.xml"
    body = '<fcoll FileName="*.h5">two_phase</fcoll>\n' * 300
    config.write_text(f"<Parameters><Middleware_Layer>\n{body}</Middleware_Layer></Parameters>\n")
    proc = iotune("run", "--config", config, "--", "true", env={"IOTUNE_LIB": fake_lib})
    assert proc.returncode == 0, proc.stderr
    said = [ln for ln in proc.stderr.splitlines() if "not per file" in ln]
    assert len(said) == controlfile.PROBLEMS_SHOWN and "\x1b" not in proc.stderr
    assert said[0].startswith(f"iotune: {tmp_path}/mca\\x1b[2J.xml: line 2: <fcoll FileName=...>")
    more = "290 more problems with Open MPI parameters not shown (300 in all)"
    assert f"iotune: {tmp_path}/mca\\x1b[2J.xml: {more}" in proc.stderr.splitlines()


def test_run_says_an_open_mpi_parameter_with_a_bad_value_is_bad_not_unknown(fake_lib, tmp_path):
    """An Open MPI parameter given a bad value was left in the runtime's copy, and the runtime
    (which knows no Open MPI parameter) called it an unknown parameter (an outside tester's
    finding): `iotune run` says the value is bad with the values accepted, and leaves it out of
    the runtime's copy as it leaves out the valid ones."""
    config = tmp_path / "mca.xml"
    config.write_text("<Parameters><Middleware_Layer>\n<fcoll>bogus</fcoll>\n"
                      "<io_ompio_num_aggregators>-7</io_ompio_num_aggregators>\n"
                      "<cb_nodes>2</cb_nodes>\n</Middleware_Layer></Parameters>\n")  # fmt: skip
    show = 'cat "$IOTUNE_CONFIG"'
    proc = iotune("run", "--config", config, "--", "sh", "-c", show, env={"IOTUNE_LIB": fake_lib})
    assert proc.returncode == 0, proc.stderr
    lines = proc.stderr.splitlines()
    choices = "dynamic, dynamic_gen2, individual, two_phase, vulcan"
    assert f'iotune: {config}: line 2: <fcoll>: "bogus" is not one of {choices}' in lines
    below = '<io_ompio_num_aggregators>: "-7" is below the minimum -1'
    assert f"iotune: {config}: line 3: {below}" in lines
    assert "unknown parameter" not in proc.stderr
    assert "bogus" not in proc.stdout and "-7" not in proc.stdout  # the runtime's copy
    assert "<cb_nodes>2</cb_nodes>" in proc.stdout


def test_run_verbose_and_without_dashes(fake_lib):
    proc = iotune(
        "run",
        "-v",
        "--config",
        VECTORS / "good_empty.xml",
        "env",
        env={"IOTUNE_LIB": fake_lib},
    )
    assert proc.returncode == 0, proc.stderr
    env = env_lines(proc.stdout)
    assert env["IOTUNE_VERBOSE"] == "1"
    assert env["LD_PRELOAD"] == str(fake_lib.resolve())


def mpiexec(*args):
    return ["timeout", "120", *launcher(), "2", *map(str, args)]


@pytest.mark.parametrize("case", ["bad_mixed", "missing"])
def test_run_reports_each_problem_once(case, libiotune, test_prog, tmp_path):
    """The runtime reports the control file's problems (job scripts without the CLI see the
    same); `iotune run` does not repeat them in other words."""
    path = VECTORS / "bad_mixed.xml" if case == "bad_mixed" else tmp_path / "no.xml"
    proc = iotune(
        "run",
        "--config",
        path,
        "--",
        *mpiexec(test_prog("mpiio_probe"), tmp_path / "out.dat"),
        env={"IOTUNE_LIB": libiotune},
        timeout=150,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["mismatches"] == 0
    lines = proc.stderr.splitlines()
    if case == "bad_mixed":
        expected = json.loads((VECTORS / "bad_mixed.json").read_text())["errors"]
        assert len(lines) == len(expected), proc.stderr
        msg = f'iotune: {path}:14: <cb_nodes>: "-3" is below the minimum 1; ignored'
        assert lines.count(msg) == 1, proc.stderr
    else:
        assert len(lines) == 1 and "cannot read the control file" in lines[0], proc.stderr
        assert "no settings from this file are applied" in lines[0]


def test_run_reads_a_control_file_from_a_pipe(libiotune, test_prog, tmp_path):
    """`--config <(...)`: the ranks cannot open the shell's /dev/fd/N, so the CLI copies it
    to a private file, removed afterwards."""
    good = tmp_path / "good.xml"
    good.write_text(
        "<Parameters><Middleware_Layer><cb_buffer_size>4MiB</cb_buffer_size>"
        "</Middleware_Layer></Parameters>\n"
    )
    app = " ".join(mpiexec(test_prog("mpiio_probe"), tmp_path / "out.dat"))
    env = dict(os.environ, PYTHONPATH=str(SRC), IOTUNE_LIB=str(libiotune))
    env.pop("IOTUNE_CONFIG", None)
    cmd = f"{sys.executable} -m iotune run --config <(cat {good}) -- {app}"
    proc = subprocess.run(
        ["bash", "-c", cmd], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=150
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    assert json.loads(proc.stdout)["hints"]["cb_buffer_size"] == str(4 << 20)
    assert not list(tmp_path.glob("*iotune-config-*")), "the copy was left behind"
    # check reads a pipe too
    proc = subprocess.run(
        ["bash", "-c", f"{sys.executable} -m iotune check <(cat {good})"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0 and "cb_buffer_size" in proc.stdout, proc.stderr


def test_run_with_an_empty_config_name_is_an_error(fake_lib):
    proc = iotune("run", "--config", "", "--", "env", env={"IOTUNE_LIB": fake_lib})
    assert proc.returncode == 2 and "--config needs the name of a control file" in proc.stderr
    assert "IOTUNE_CONFIG" not in proc.stdout  # nothing was run


def test_run_forwards_exit_status_and_streams(fake_lib):
    script = "import sys; print('out'); print('err', file=sys.stderr); sys.exit(7)"
    proc = iotune(
        "run",
        "--config",
        VECTORS / "good_empty.xml",
        "--",
        sys.executable,
        "-c",
        script,
        "--config",
        env={"IOTUNE_LIB": fake_lib},
    )
    assert proc.returncode == 7
    assert proc.stdout == "out\n"
    assert proc.stderr.splitlines()[-1] == "err"


def test_run_signal_and_missing_command(fake_lib):
    env = {"IOTUNE_LIB": fake_lib}
    config = VECTORS / "good_empty.xml"
    proc = iotune("run", "--config", config, "--", "sh", "-c", "kill -TERM $$", env=env)
    assert proc.returncode == 128 + 15
    proc = iotune("run", "--config", config, "--", "/no/such/program", env=env)
    assert proc.returncode == 127 and "cannot run /no/such/program" in proc.stderr
    proc = iotune("run", "--config", config, "--", env=env)
    assert proc.returncode == 2 and "give the command" in proc.stderr
    # without --config: the runtime preloaded alone, no control file named
    proc = iotune("run", "--", "env", env={**env, "IOTUNE_CONFIG": "/stale.xml"})
    assert proc.returncode == 0, proc.stderr
    assert f"LD_PRELOAD={fake_lib}" in proc.stdout and "IOTUNE_CONFIG" not in proc.stdout


def test_runtime_env(tmp_path):
    lib = tmp_path / "lib.so"
    base = {"PATH": "/bin", "LD_PRELOAD": f"/a.so {lib} /b.so", "IOTUNE_CONFIG": "/old.xml"}
    env = launch.runtime_env("c.xml", lib=lib, verbose=2, base=base, extra={"X": "1"})
    assert env["LD_PRELOAD"] == f"{lib}:/a.so:/b.so"
    assert env["IOTUNE_CONFIG"] == str(Path("c.xml").absolute())
    assert env["IOTUNE_VERBOSE"] == "2" and env["X"] == "1" and env["PATH"] == "/bin"
    assert base["IOTUNE_CONFIG"] == "/old.xml"  # the caller's mapping is left alone
    env = launch.runtime_env(None, lib=lib, base={})
    assert env == {"LD_PRELOAD": str(lib)}


def test_launch_run_timeout(tmp_path):
    lib = tmp_path / "lib.so"
    lib.write_bytes(b"")
    with pytest.raises(subprocess.TimeoutExpired):
        launch.run(["sleep", "30"], None, lib=lib, timeout=0.5, extra_env={"LD_PRELOAD": ""})
    assert launch.run(["true"], None, lib=lib, extra_env={"LD_PRELOAD": ""}) == 0
    assert launch.exit_status(-9) == 137 and launch.exit_status(3) == 3


def test_library_functions_used_by_the_cli_agree():
    """check --json and the library give the same reading of a file."""
    path = VECTORS / "good_patterns.xml"
    got = json.loads(iotune("check", "--json", path).stdout)
    got.pop("warnings")
    assert got == controlfile.parse_file(path).to_json()


def test_every_option_of_a_written_usage_line_is_in_it():
    """A subcommand that writes its own usage line lists every option there, or says
    [options] (an outside tester: `iotune adapt`'s left out --files, --top and --mpi)."""
    import argparse

    from iotune import cli

    missing = []

    def walk(parser, name):
        for a in parser._actions:
            if isinstance(a, argparse._SubParsersAction):
                for n, sp in a.choices.items():
                    walk(sp, f"{name} {n}")
        if parser.usage and "[options]" not in parser.usage:
            missing.extend(
                f"{name} {a.option_strings[0]}" for a in parser._actions
                if a.option_strings and "-h" not in a.option_strings
                and not any(o in parser.usage for o in a.option_strings)
            )  # fmt: skip

    walk(cli.build_parser(), "iotune")
    assert missing == []


def test_check_says_a_setting_given_twice_for_the_same_files():
    """A control file's second <alignment> for the same files silently replaced the first
    (an outside tester): said with both lines, in the text and in --json's warnings, and kept
    (the later one wins, as before); the runtime says it in the same words (the vector)."""
    case = VECTORS / "good_set_twice.xml"
    proc = iotune("check", case)
    assert proc.returncode == 0
    assert (f"{case}:5: <alignment>: alignment was already set for the same files at line 4: "
            "that earlier setting is ignored") in proc.stderr.splitlines()  # fmt: skip
    assert "chunk_size was already set for the same files and datasets at line 8" in proc.stderr
    got = json.loads(iotune("check", "--json", case).stdout)
    assert [o["line"] for o in got["overrides"]] == [5, 7, 10, 14, 16]
    said = [w for w in got["warnings"] if "already set" in w["message"]]
    assert [(w["line"], w["element"]) for w in said][:2] == [(5, "alignment"), (7, "alignment")]
