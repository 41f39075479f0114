"""The machine's own noise (iotune.hostnoise, iotune.freedmem): detection from fake /sys and
/proc trees, the message said once before the first trial, the record in the study and its
summary, the freed-memory hold restored after a failure, SIGTERM and other holders, and the
option in --help."""

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import optuna
import pytest
from hostroot import NO_REPORTING, make_root, param

from iotune import freedmem, hostnoise

HERE = Path(__file__).resolve().parent
SPACE = str(HERE / "fake_space.toml")
FAKE_OPTS = ["--launcher", "none", "--no-preload", "--objective", "kernel", "--no-progress",
             "--verify-pairs", "6", "--no-kb"]  # fmt: skip


def keys(sources):
    return [s.key for s in sources]


# ----------------------------------------------------------------------------- detection


def test_this_vms_free_page_reporting_is_found(tmp_path):
    root = make_root(tmp_path, min_free_ms="0")
    (src,) = hostnoise.detect(root, nprocs=2)
    assert src.key == "free_page_reporting"
    assert src.facts == {"device": "virtio0", "min_free_ms": 0, "page_reporting_order": 9,
                         "reported_kib": 61493112}  # fmt: skip
    assert "--hold-freed-memory" in src.control
    assert src.cost.startswith("here: ") and "0.24-0.33 s with freed memory held" in src.cost


@pytest.mark.parametrize(
    "tree",
    [
        {"balloon": False},  # bare metal, or a VM without a balloon
        {"features": NO_REPORTING},  # a balloon without the reporting feature
        {"driver": None},  # a balloon no driver is bound to
        {"driver": "vfio-pci"},  # bound to another driver
    ],
)
def test_no_reporting_is_found_without_an_active_reporting_balloon(tmp_path, tree):
    assert hostnoise.detect(make_root(tmp_path, **tree), nprocs=2) == []


def test_a_kernel_without_min_free_ms_names_the_control_that_exists(tmp_path):
    (src,) = hostnoise.detect(make_root(tmp_path, min_free_ms=None), nprocs=2)
    assert "no min_free_ms" in src.control and "--warmup 1" in src.control
    assert "min_free_ms" not in src.facts


def test_frequency_scaling_is_found_unless_every_cpu_runs_performance(tmp_path):
    root = make_root(tmp_path / "a", balloon=False, governors=["powersave", "performance"])
    (src,) = hostnoise.detect(root)
    assert src.key == "cpu_frequency" and "powersave on 1 of 2 CPUs" in src.found
    assert src.facts["governors"] == {"powersave": 1, "performance": 1}
    assert src.cost.startswith("not measured here")
    root = make_root(tmp_path / "b", balloon=False, governors=["performance"] * 4)
    assert hostnoise.detect(root) == []


@pytest.mark.parametrize(
    "load,online,nprocs,said",
    [
        ("0.22", "0-1", 2, False),  # quiet
        ("2.89", "0-1", 2, True),  # this machine with the other helpers' work
        ("0.60", "0-1", 2, True),  # 2 ranks on 2 cores and more than half a core used
        ("0.60", "0-7", 2, False),  # the ranks have cores of their own
        ("4.50", "0-7", 2, True),  # half the cores busy
        ("3.00", "0-3,6-9", 2, False),  # 8 cores online
    ],
)
def test_other_load_against_the_cores_and_the_ranks(tmp_path, load, online, nprocs, said):
    root = make_root(tmp_path, balloon=False, online=online, loadavg=f"{load} 1.0 1.0 1/92 3")
    found = hostnoise.detect(root, nprocs=nprocs)
    assert keys(found) == (["load"] if said else [])
    if said:
        assert found[0].facts["load1"] == float(load)
        assert found[0].cost.startswith("here: ")


def test_unreadable_or_garbled_files_are_no_source_and_no_crash(tmp_path):
    root = make_root(tmp_path, balloon=False, online="x-y", loadavg="garbage")
    (root / "sys/bus/virtio/devices/virtio1/device").write_text("not hex\n")
    assert hostnoise.detect(root) == []
    assert hostnoise.cores(root) == (os.cpu_count() or 1)
    assert hostnoise.detect(tmp_path / "nothing-here") == []


# ----------------------------------------------------------------------------- the hold


def test_the_hold_is_restored_after_an_exception(tmp_path):
    root = make_root(tmp_path, min_free_ms="250")
    said = []
    with pytest.raises(RuntimeError):
        with hostnoise.controlled(2, True, 0, False, said.append, root=root) as rec:
            assert param(root).read_text().strip() == str(freedmem.HOLD_MS)
            assert rec["hold_freed_memory"] == {
                "asked": True, "held": True, "param": str(param(root)), "was": "250",
                "set": str(freedmem.HOLD_MS)}  # fmt: skip
            raise RuntimeError("the study failed")
    assert param(root).read_text().strip() == "250"
    assert not list((root / "run" / "iotune").glob("*.json"))  # no holder left behind
    assert sum("freed memory held in the VM" in line for line in said) == 1


def test_asking_for_a_hold_where_there_is_nothing_to_hold(tmp_path):
    said = []
    root = make_root(tmp_path / "a", balloon=False)
    with hostnoise.controlled(2, True, 0, False, said.append, root=root) as rec:
        assert rec["hold_freed_memory"]["held"] is False
    assert param(root).read_text().strip() == "0"  # untouched
    assert any("nothing to hold" in line for line in said)
    root = make_root(tmp_path / "b", min_free_ms=None)
    with hostnoise.controlled(2, True, 0, False, said.append, root=root) as rec:
        assert "no page_reporting min_free_ms" in rec["hold_freed_memory"]["why"]


def test_a_parameter_that_cannot_be_written_holds_nothing_and_says_why(tmp_path):
    p = tmp_path / "min_free_ms"
    p.mkdir()  # cannot be read or written as a value
    with freedmem.hold(p, 5000, state_dir=tmp_path / "state") as rec:
        assert rec["held"] is False and str(p) in rec["why"]


def test_two_holders_share_one_hold_and_the_last_restores(tmp_path):
    p, state = tmp_path / "min_free_ms", tmp_path / "state"
    p.write_text("0\n")
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        with freedmem.hold(p, 5000, state_dir=state):
            # another process joins (its id noted in the shared state), then this one leaves
            (f,) = state.glob("hold-*.json")
            data = json.loads(f.read_text())
            data["holders"].append(other.pid)
            f.write_text(json.dumps(data))
        assert p.read_text().strip() == "5000"  # the other still measures
        with freedmem.hold(p, 5000, state_dir=state) as rec:
            assert rec["was"] == "0" and rec["shared_with"] == 1
    finally:
        other.kill()
        other.wait()
    assert p.read_text().strip() == "5000"  # it was still there when the second left
    with freedmem.hold(p, 5000, state_dir=state) as rec:  # the other is gone: dropped
        assert rec == {"held": True, "param": str(p), "was": "0", "set": "5000"}
    assert p.read_text().strip() == "0"
    assert not list(state.iterdir())  # no state or lock file left behind


def test_a_holder_killed_with_sigkill_is_repaired_by_the_next(tmp_path):
    p, state = tmp_path / "min_free_ms", tmp_path / "state"
    p.write_text("0\n")
    code = (
        "import os, sys; from pathlib import Path; from iotune import freedmem\n"
        f"with freedmem.hold(Path({str(p)!r}), 5000, state_dir=Path({str(state)!r})):\n"
        "    os.kill(os.getpid(), 9)\n"
    )
    r = subprocess.run([sys.executable, "-c", code], timeout=60)
    assert r.returncode == -signal.SIGKILL
    assert p.read_text().strip() == "5000"  # nothing could restore it
    with freedmem.hold(p, 5000, state_dir=state) as rec:
        assert rec["was"] == "0"  # the state file remembered the value before the hold
    assert p.read_text().strip() == "0"


def test_a_killed_holders_hold_is_repaired_before_the_next_study(tmp_path):
    root = make_root(tmp_path, min_free_ms=str(freedmem.HOLD_MS))
    state = freedmem.state_path(root / "run" / "iotune", param(root))
    state.parent.mkdir(parents=True)
    state.write_text(json.dumps({"was": "0", "holders": [2**31 - 1]}))  # no such process
    said = []
    with hostnoise.controlled(2, False, 0, False, said.append, root=root):
        assert param(root).read_text().strip() == "0"
    assert "restored to 0" in said[0] and not state.exists()
    assert freedmem.repair(param(root), state.parent) is None  # nothing left to repair


def test_garbled_state_files_do_not_stop_the_hold(tmp_path):
    p, state = tmp_path / "min_free_ms", tmp_path / "state"
    p.write_text("7\n")
    with freedmem.hold(p, 5000, state_dir=state):
        (f,) = state.glob("hold-*.json")
    for text in ("", "{", "[]", '{"holders": "x"}', '{"holders": [1e999]}', "\x00\xff"):
        f.write_text(text)
        with freedmem.hold(p, 5000, state_dir=state) as rec:
            assert rec["held"] and p.read_text().strip() == "5000"
        assert p.read_text().strip() == "7", text


# ----------------------------------------------------------------------------- said, kept


def test_the_message_is_one_block_naming_each_source_its_cost_and_control(tmp_path):
    root = make_root(tmp_path, governors=["powersave"], loadavg="2.5 1 1 1/9 9")
    sources = hostnoise.detect(root, nprocs=2)
    assert keys(sources) == ["free_page_reporting", "cpu_frequency", "load"]
    lines = hostnoise.message(sources, None, 1, True)
    text = "\n".join(lines)
    assert lines[0].startswith("noise on this machine")
    assert text.count("control: ") == 3 and text.count("here: ") == 2
    assert lines[-1] == ("controls in this run: --warmup 1, --drop-caches on, "
                         "--hold-freed-memory off")  # fmt: skip
    quiet = hostnoise.message([], None, 0, False)
    assert quiet == ["no known noise source on this machine (checked: free page reporting, "
                     "CPU frequency scaling, other load)"]  # fmt: skip


def test_the_defaults_spread_and_the_report_line():
    assert hostnoise.defaults_spread([1.0, 2.0]) is None  # too few to say
    s = hostnoise.defaults_spread([0.25, 0.84, 0.3, 0.26, None, 0.0])
    assert s["n"] == 4 and s["min"] == 0.25 and s["max"] == 0.84 and s["noisy"]
    assert not hostnoise.defaults_spread([1.0, 1.01, 0.99])["noisy"]
    rec = {"sources": {"free_page_reporting": {}}, "hold_freed_memory": {"held": True},
           "warmup": 1, "drop_caches": False, "defaults_spread": s, "unit": "s",
           "runs": [{"held": False}, {"held": True}]}  # fmt: skip
    line = hostnoise.report_line(rec)
    assert line.startswith("free page reporting; freed memory held; warm-up 1, cache drops off")
    assert "held in 1 of the study's 2 runs" in line and "0.25-0.84 s (CV" in line
    assert hostnoise.report_line(None) is None


def _tune(root: Path, out: Path, *extra, env=None, popen=False):
    cmd = [sys.executable, "-m", "iotune.tune_cli", "--space", SPACE, *FAKE_OPTS, "--out", out,
           "--study", "s", "--seed", "1", *map(str, extra)]  # fmt: skip
    kw = dict(env={**os.environ, hostnoise.ROOT_ENV: str(root), **(env or {})},
              cwd=tempfile.mkdtemp(prefix="tune-cwd-"), text=True)  # fmt: skip
    if popen:
        return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, **kw)
    return subprocess.run(cmd, capture_output=True, timeout=180, **kw)


def test_tune_says_it_once_before_the_first_trial_and_records_it(tmp_path):
    root = make_root(tmp_path / "root", loadavg="2.89 1 1 1/9 9")
    out = tmp_path / "out"
    app = tmp_path / "app.py"  # notes the parameter's value in every trial
    seen = tmp_path / "seen"
    app.write_text(f"open({str(seen)!r}, 'a').write(open({str(param(root))!r}).read())\n"
                   + (HERE / "fake_app.py").read_text())  # fmt: skip
    r = _tune(root, out, "--trials", 6, "--hold-freed-memory", "--", sys.executable, app)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.count("noise on this machine") == 1
    first = r.stdout.index("noise on this machine")
    assert first < r.stdout.index("each trial runs")  # before the first trial
    assert r.stdout.count("free page reporting is on") == 1
    assert r.stdout.count("freed memory held in the VM during the study") == 1
    assert "noise measured: the defaults'" in r.stdout
    assert set(seen.read_text().split()) == {str(freedmem.HOLD_MS)}  # held in every trial
    assert param(root).read_text().strip() == "0"  # restored
    rec = json.loads((out / "summary.json").read_text())["host_noise"]
    assert sorted(rec["sources"]) == ["free_page_reporting", "load"]
    assert rec["hold_freed_memory"]["held"] is True and rec["hold_freed_memory"]["was"] == "0"
    assert rec["defaults_spread"]["n"] >= 5 and rec["runs"] == [
        {"sources": ["free_page_reporting", "load"], "held": True}]  # fmt: skip
    study = optuna.load_study(study_name="s", storage=f"sqlite:///{out}/study.db")
    assert study.user_attrs["host_noise"]["runs"][0]["held"] is True
    assert "Noise on this machine: free page reporting, other load; freed memory held" in (
        out / "report.html").read_text()  # fmt: skip


def test_sigterm_during_the_study_restores_the_hold(tmp_path):
    root = make_root(tmp_path / "root", min_free_ms="1000")
    pids = tmp_path / "pids"
    space = tmp_path / "slow.toml"
    space.write_text(
        '[params.romio_cb_write]\nvalues = ["automatic", "disable"]\ndefault = "automatic"\n'
        '[[guesses]]\nname = "slow"\nsettings = { romio_cb_write = "disable" }\n'
    )
    proc = _tune(root, tmp_path / "out", "--trials", 3, "--cap", 0, "--hold-freed-memory",
                 "--space", space, "--", sys.executable, HERE / "fake_app.py",
                 env={"SLOW_S": "60", "FAKE_APP_PIDS": str(pids)}, popen=True)  # fmt: skip
    deadline = time.monotonic() + 60
    started = lambda: len(pids.read_text().split()) if pids.exists() else 0  # noqa: E731
    while time.monotonic() < deadline and started() < 2:
        time.sleep(0.1)  # the defaults ran; the slow guess is running
    assert param(root).read_text().strip() == str(freedmem.HOLD_MS)
    proc.send_signal(signal.SIGTERM)
    text = proc.communicate(timeout=30)[0]
    assert proc.returncode == 143, text
    assert param(root).read_text().strip() == "1000"


def test_help_names_the_option_and_its_default():
    r = subprocess.run([sys.executable, "-m", "iotune.tune_cli", "--help"], capture_output=True,
                       text=True, timeout=60)  # fmt: skip
    flat = " ".join(r.stdout.split())
    assert "--hold-freed-memory" in flat and "(root; default: off;" in flat
