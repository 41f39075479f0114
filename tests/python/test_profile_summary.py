"""Profiles that answer a question: files the application did not ask for are classified by the
rule table (data/system_files.tsv), marked and left out of the summary; the summary shows totals,
layers and the top data files; --files lists every file, data files first."""

import json
import subprocess
import sys

import pytest
from conftest import REPO

from iotune import profile as prof


def _file(name, *, time=0.0, written=0, read=0, layer="posix", **extra):
    c = {"bytes_written": written, "bytes_read": read, "writes": 1 if written else 0,
         "reads": 1 if read else 0, "write_time_s": time if written else 0.0,
         "read_time_s": 0.0 if written else time}  # fmt: skip
    return {"name": name, "fs": "ext4", "ranks": 1, "time_s": {"max": time}, layer: c, **extra}


def _profile(files):
    layers = prof._sum_layers(files)
    return {"schema": "iotune-profile", "version": 1, "ranks": 1, "wall_s": 2.0,
            "io": {"time_s": 0.5, "bytes_written": 0, "bytes_read": 0}, "layers": layers,
            "config": {}, "argv": ["python", "-m", "tool"], "files": files}  # fmt: skip


PYTHON_FILES = [
    _file("/work/.venv/pyvenv.cfg", time=0.001, read=300),
    _file("app.py", time=0.002, read=2000),
    _file("/root/.pyenv/versions/3.11.7/lib/python3.11/json/__init__.py", time=0.01, read=9000),
    _file("/work/.venv/lib/python3.11/site-packages/h5py/__init__.py", time=0.01, read=4000),
    _file("/work/.venv/lib/python3.11/site-packages/h5py/defs.cpython-311.so", read=4096),
    _file("/work/__pycache__/helper.cpython-311.pyc", written=500, time=0.0001),
    _file("/proc/self/maps", read=1000),
    _file("/dev/shm/vader_segment.vm.0.2c8f0001.0", written=4096),
    _file("out.dat.locktest.0", written=0, time=0.0001),
    _file("/tmp/ompi.vm.0/pid.16497/1/out.dat_cid-0-16533.sm", written=8),
]


def test_the_shipped_rule_table_reads_and_covers_every_class():
    rules = prof.system_rules()
    assert rules and {r.cls for r in rules} == set(prof.SYSTEM_CLASSES)
    assert all(r.why for r in rules)


@pytest.mark.parametrize(
    "name, written, cls",
    [
        ("/proc/self/status", False, "kernel"),
        ("/sys/devices/system/cpu/online", False, "kernel"),
        ("/dev/shm/mpich_shar_tmpxUC0WY", True, "mpi"),
        ("/dev/null", True, "kernel"),
        ("/etc/ld.so.cache", False, "system"),
        ("/usr/share/zoneinfo/UTC", False, "system"),
        ("/usr/lib/x86_64-linux-gnu/libhdf5_mpich.so.103", False, "system"),
        ("/opt/lib/libfoo.so.1.2", False, "library"),
        ("/opt/lib/libfoo.so", False, "library"),
        ("/x/.venv/pyvenv.cfg", False, "interpreter"),
        ("pyvenv.cfg", False, "interpreter"),
        ("/x/lib/python3.11/os.py", False, "interpreter"),
        ("/x/lib/python3.11/site-packages/numpy/core/_multiarray_umath.so", False, "interpreter"),
        ("/usr/lib/python3/dist-packages/h5py/__init__.py", False, "system"),
        ("script.py", False, "interpreter"),
        ("/x/__pycache__/m.cpython-311.pyc", True, "interpreter"),
        ("/scratch/run/out.h5.locktest.1", True, "mpi"),
        ("/tmp/ompi.node1.1000/pid.77/contact.txt", True, "mpi"),
        (".log_0.txt.shfp.926093404.32463", True, "mpi"),  # ROMIO's shared file pointer
        ("/scratch/run/.out.dat.shfp.1.2", True, "mpi"),
        ("out.shfp.txt", True, None),
        # the application's own data
        ("out.h5", True, None),
        ("/tmp/data.bin", False, None),
        ("/scratch/lib/python_runs/result.h5", False, None),
        ("results.locktest.txt", True, None),
        ("/etc/myapp/output.h5", True, None),  # written: data, wherever it is
        ("generated.py", True, None),  # a program that writes Python code: its output
        ("libout.so", True, None),
    ],
)
def test_classification(name, written, cls):
    rule = prof.classify(name, written)
    assert (rule.cls if rule else None) == cls, rule


def test_rule_table_errors_name_the_line():
    header = "pattern\tmatch\tclass\taccess\twhy\n"
    with pytest.raises(ValueError, match=r"t.tsv:2: unknown class 'sys'"):
        prof.parse_rules(header + "/x/*\tfile\tsys\tany\tbecause\n", "t.tsv")
    with pytest.raises(ValueError, match=r"t.tsv:1: access is any or read"):
        prof.parse_rules("/x/*\tfile\tkernel\twrite\tbecause\n", "t.tsv")
    with pytest.raises(ValueError, match=r"t.tsv:1: match is file or script"):
        prof.parse_rules("/x/*\tpath\tkernel\tany\tbecause\n", "t.tsv")
    with pytest.raises(ValueError, match=r"t.tsv:3: want 5 tab-separated columns"):
        prof.parse_rules("# c\n\n/x/*  file kernel any because\n", "t.tsv")


@pytest.mark.parametrize(
    "argv, script",
    [
        (["/v/.venv/bin/python3", "-u", "/k/gcrmio-h5py", "--cells", "5"], "/k/gcrmio-h5py"),
        (["python", "run"], "run"),
        (["/usr/bin/python3.11", "-m", "pkg", "file"], None),
        (["/bin/bash", "-c", "echo x > out"], None),
        (["/bin/bash", "job.sh"], "job.sh"),
        (["./app", "input.deck"], None),  # not an interpreter: input.deck is the app's data
        (["/v/bin/python3"], None),
        ([], None),
        ("python x", None),
    ],
)
def test_the_script_an_interpreter_runs(argv, script):
    found = prof.script_of(argv)
    assert (found[0] if found else None) == script


def test_a_script_without_a_suffix_is_the_interpreters_unless_written():
    data = _profile([_file("/k/gcrmio-h5py", read=20000), _file("input.deck", read=100)])
    data["argv"] = ["/v/.venv/bin/python3", "/k/gcrmio-h5py", "input.deck"]
    p = prof.parse(data)
    assert [f.get("system") for f in p.files] == ["interpreter", None]
    data["files"][0] = _file("/k/gcrmio-h5py", written=10)  # a program that rewrites itself
    assert prof.parse(data).files[0].get("system") is None
    data["argv"] = ["./app", "/k/gcrmio-h5py"]
    assert prof.parse(data).files[0].get("system") is None


def test_files_are_marked_on_loading_and_kept_in_the_json(tmp_path):
    data = _profile([_file("out.h5", time=0.3, written=10**6, layer="hdf5"), *PYTHON_FILES])
    path = tmp_path / "p.json"
    path.write_text(json.dumps(data))
    p = prof.load(path)
    assert [f["name"] for f in p.data_files] == ["out.h5"]
    assert len(p.system_files) == len(PYTHON_FILES) and len(p.files) == 1 + len(PYTHON_FILES)
    marks = {f["name"]: f["system"] for f in p.system_files}
    assert marks["app.py"] == "interpreter" and marks["/proc/self/maps"] == "kernel"
    assert marks["out.dat.locktest.0"] == "mpi"
    assert "system" not in data["files"][1]  # the caller's data is left alone
    shown = subprocess.run(
        [sys.executable, "-m", "iotune", "show", "--json", str(path)],
        capture_output=True, text=True, timeout=60, cwd=REPO,
    )  # fmt: skip
    files = json.loads(shown.stdout)["files"]
    assert len(files) == 1 + len(PYTHON_FILES)
    assert [f.get("system") for f in files][:3] == [None, "interpreter", "interpreter"]


def test_a_mark_the_runtime_gave_is_kept():
    f = _file("weird.bin", written=10)
    p = prof.parse(_profile([{**f, "system": "mpi"}, _file("app.py", read=10)]))
    assert [x.get("system") for x in p.files] == ["mpi", "interpreter"]


def test_summary_leaves_out_what_the_application_did_not_ask_for():
    files = [
        _file("small.h5", time=0.01, written=1000, layer="hdf5"),
        *PYTHON_FILES,
        _file("big.h5", time=0.4, written=4 << 20, layer="hdf5"),
    ]
    text = prof.summary(prof.parse(_profile(files)))
    assert "2 data files; 10 not asked for by the application" in text
    assert "(1 kernel interfaces, 6 interpreter files, 3 MPI helper files)" in text
    assert "--files lists them" in text
    for f in PYTHON_FILES:
        assert f["name"] not in text
    table = text[text.index("top data files by I/O time (2 of 2)") :].splitlines()
    assert table[3].startswith("  big.h5") and table[4].startswith("  small.h5")  # slowest first
    assert "per layer (data files)" in text
    layer_line = next(ln for ln in text.splitlines() if ln.startswith("  hdf5"))
    assert "4.0 MiB" in layer_line  # 4 MiB + 1000 B of the data files
    assert "posix" not in text.split("top data files")[0].split("per layer")[1]


def test_top_limits_the_table_and_files_lists_everything_data_first():
    files = [*PYTHON_FILES[:3]] + [
        _file(f"d{i}.h5", time=0.01 * i, written=100, layer="hdf5") for i in range(1, 13)
    ]
    p = prof.parse(_profile(files))
    text = prof.summary(p, top=3)
    assert "top data files by I/O time (3 of 12)" in text
    rows = text.split("top data files")[1].splitlines()[3:]
    assert [r.split()[0] for r in rows] == ["d12.h5", "d11.h5", "d10.h5"]
    full = prof.summary(p, files=True)
    blocks = [ln for ln in full.splitlines() if ln.startswith("file ")]
    assert [b.split()[1] for b in blocks][:12] == [f"d{i}.h5" for i in range(12, 0, -1)]
    assert all("[not asked for: interpreter]" in b for b in blocks[12:]) and len(blocks) == 15
    assert "top data files" not in full and "listed below" in full


def test_summary_of_a_profile_without_system_files_is_about_all_files():
    p = prof.parse(_profile([_file("a.dat", time=0.1, written=100)]))
    text = prof.summary(p)
    assert "per layer (all files)" in text and "1 data file (--files" in text
    assert "not asked for" not in text


def test_show_options(tmp_path):
    path = tmp_path / "p.json"
    path.write_text(json.dumps(_profile([_file("a.dat", written=5), *PYTHON_FILES[:2]])))

    def show(*args):
        run = subprocess.run([sys.executable, "-m", "iotune", "show", *args, str(path)],
                             capture_output=True, text=True, timeout=60, cwd=REPO)  # fmt: skip
        assert run.returncode == 0, run.stderr
        return run.stdout

    assert "pyvenv.cfg" not in show() and "app.py" not in show("--top", "0")
    listed = show("--files")
    assert listed.index("file a.dat") < listed.index("file app.py") < listed.index("pyvenv.cfg")
