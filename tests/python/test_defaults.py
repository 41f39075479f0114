"""iotune defaults: combining proxies' recommendations, dropping what harms a proxy, the
ROMIO_HINTS file and the report (with simulated proxies: their timings are a function of the
settings plus noise, so the logic is tested without the machine's noise)."""

import json
import os
import random
from pathlib import Path

import pytest

from iotune import controlfile, defaults


def proxy(name, individual, speedup=1.5):
    return defaults.Proxy(name, [name], dict(individual), speedup)


def test_candidate_set_majority_then_gain():
    ps = [
        proxy("a", {"cb_buffer_size": "1048576", "fill_time": "never"}, 1.2),
        proxy("b", {"cb_buffer_size": "1048576"}, 1.1),
        proxy("c", {"cb_buffer_size": "4194304"}, 3.0),
        proxy("d", {"romio_cb_write": "disable"}, 1.3),
        proxy("e", {"romio_cb_write": "enable"}, 1.4),
    ]
    site, support = defaults.candidate_set(ps)
    assert site["cb_buffer_size"] == "1048576", "two proxies beat one, however fast"
    assert support["cb_buffer_size"] == ["a", "b"]
    assert site["romio_cb_write"] == "enable", "a tie goes to the larger verified gain"
    assert site["fill_time"] == "never"


def test_hints_file_has_only_romio_hints():
    text = defaults.hints_file_text(
        {"cb_buffer_size": "1048576", "romio_cb_write": "disable", "fill_time": "never"}
    )
    lines = [line for line in text.splitlines() if not line.startswith("#")]
    assert lines == ["cb_buffer_size 1048576", "romio_cb_write disable"]


def simulated(effects, noise=0.02, seed=1):
    """run(proxy, settings): 1 s times the product of the settings' effects on that proxy."""
    rng = random.Random(seed)

    def run(p, settings):
        t = 1.0
        for k, v in settings.items():
            t *= effects.get((p.name, k, v), 1.0)
        return t * (1 + rng.uniform(-noise, noise))

    return run


def test_a_setting_that_harms_one_proxy_is_dropped():
    ps = [
        proxy("gcrm", {"fill_time": "never"}, 1.9),
        proxy("vorpal", {"cb_buffer_size": "1048576"}, 1.4),
        proxy("hacc", {}, None),
    ]
    effects = {
        ("gcrm", "fill_time", "never"): 0.5,
        ("vorpal", "cb_buffer_size", "1048576"): 0.7,
        ("hacc", "cb_buffer_size", "1048576"): 1.5,  # helps vorpal, hurts hacc
    }
    logs = []
    chosen = defaults.choose_site(ps, simulated(effects), 8, random.Random(0), logs.append)
    assert chosen["site"] == {"fill_time": "never"}
    assert "cb_buffer_size" in chosen["dropped"] and "hacc" in chosen["dropped"]["cb_buffer_size"]
    assert defaults.harmed(chosen["results"]) == []
    r = chosen["results"]["gcrm"]
    assert r["site_speedup"] > 1.8 and r["p_site_faster"] < 0.05
    assert len(chosen["history"]) == 2


def test_noise_alone_drops_nothing():
    ps = [proxy("a", {"fill_time": "never"}), proxy("b", {})]
    chosen = defaults.choose_site(ps, simulated({}, noise=0.3), 8, random.Random(3), print)
    assert chosen["site"] == {"fill_time": "never"} and chosen["dropped"] == {}


def test_failed_rounds_are_left_out():
    ps = [proxy("a", {"fill_time": "never"})]
    calls = []

    def run(p, settings):
        calls.append(settings)
        return None if len(calls) == 2 else 1.0

    values = defaults.measure(ps, {"fill_time": "never"}, run, 3, random.Random(0))
    assert [len(v) for v in values["a"].values()] == [2, 2, 2]


def test_outputs(tmp_path):
    ps = [proxy("gcrm", {"fill_time": "never", "cb_buffer_size": "1048576"}), proxy("x", {})]
    chosen = defaults.choose_site(ps, simulated({}), 5, random.Random(0), print)
    files = defaults.write_outputs(tmp_path, ps, chosen, {"command": "test"})
    assert (tmp_path / "romio-hints").read_text().splitlines()[1:] == ["cb_buffer_size 1048576"]
    parsed = controlfile.parse_file(files["control"])
    assert parsed.ok and {s.name for s in parsed.settings} == {"fill_time", "cb_buffer_size"}
    report = files["report"].read_text()
    assert "| gcrm |" in report and "| x |" in report
    data = json.loads(files["json"].read_text())
    assert set(data["results"]["gcrm"]["median_s"]) == {"default", "site", "individual"}
    assert files["plot"].stat().st_size > 1000


def test_warmup_runs_are_discarded():
    ps = [proxy("a", {"alloc_time": "early"})]
    calls = []

    def run(p, settings):
        calls.append(dict(settings))
        return float(len(calls))

    values = defaults.measure(ps, {"fill_time": "never"}, run, 2, random.Random(0), warmup=1)
    assert len(calls) == 12 and sum(len(v) for v in values["a"].values()) == 6
    assert all(x % 2 == 0 for v in values["a"].values() for x in v), "only the second of each"


def test_defaults_refuses_verify_pairs_below_one(tmp_path):
    """`iotune defaults --verify-pairs 0` would reach sequential.design's ValueError."""
    import subprocess
    import sys

    r = subprocess.run(
        [sys.executable, "-m", "iotune", "defaults", "--verify-pairs", "0", "--out",
         str(tmp_path / "d"), "--no-kb"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert r.returncode != 0 and "Traceback" not in r.stderr
    assert "--verify-pairs 0" in r.stderr and r.stderr.strip().count("\n") == 0
    assert not (tmp_path / "d").exists()


def test_defaults_restart_reaches_each_proxy_study(tmp_path, monkeypatch):
    """The measured-options refusal names --restart: `iotune defaults` takes it and passes it
    to every proxy study (and does not without it)."""
    from iotune import cli, study

    seen = []

    def fake_run(cfg, say):
        seen.append(cfg.restart)
        raise study.StudyError("stop here")

    monkeypatch.setattr(study, "run", fake_run)
    base = ["defaults", "--proxies", "vpicio", "--out", str(tmp_path / "d"), "--no-kb"]
    assert cli.main([*base, "--restart"]) != 0
    assert cli.main(base) != 0
    assert seen == [True, False]


def test_outputs_go_through_the_one_output_writer(tmp_path, monkeypatch):
    """`iotune defaults` wrote its files with Path.write_text (not atomic; a directory in the
    way was a traceback): every file goes through outputs.write_output, as every other
    command's, and a path it cannot write is one OutputError naming it."""
    from iotune import outputs

    ps = [proxy("gcrm", {"fill_time": "never"})]
    chosen = defaults.choose_site(ps, simulated({}), 3, random.Random(0), print)
    written = []

    def recording(path, data, what="output"):
        written.append(Path(path).name)
        return outputs.write_output(path, data, what)

    monkeypatch.setattr(defaults, "write_output", recording)
    files = defaults.write_outputs(tmp_path, ps, chosen, {"command": "test"})
    assert sorted(written) == sorted(p.name for p in files.values()) and len(files) == 5
    assert sorted(os.listdir(tmp_path)) == sorted(written)  # no temporary file left
    blocked = tmp_path / "again"
    (blocked / "defaults.md").mkdir(parents=True)
    with pytest.raises(outputs.OutputError, match=r"defaults.md: cannot write the report: a dir"):
        defaults.write_outputs(blocked, ps, chosen, {"command": "test"})


def test_how_to_use_the_files_is_commands_that_paste(tmp_path):
    """The output folder's name was printed raw into the commands to paste: quoted as bash
    reads it back now, $'...' for a name with terminal controls."""
    import subprocess

    out = tmp_path / "site\x1b[2J defaults"
    files = {"hints": out / "romio-hints", "control": out / "site.xml"}
    line = defaults.how_to_use(files)
    assert "\x1b" not in line
    assert f"ROMIO_HINTS=$'{tmp_path}/site\\x1b[2J defaults/romio-hints' (MPICH/ROMIO)" in line
    word = line.rsplit("--config ", 1)[1]
    r = subprocess.run(["bash", "-c", f"printf %s {word}"], capture_output=True, text=True)
    assert r.stdout == str(files["control"])
    plain = defaults.how_to_use({"hints": Path("/d/romio-hints"), "control": Path("/d/site.xml")})
    assert plain.endswith("ROMIO_HINTS=/d/romio-hints (MPICH/ROMIO), or the settings with "
                          "iotune run --config /d/site.xml")  # fmt: skip


def test_identical_settings_are_the_same_not_a_gain(tmp_path):
    """No site set and a proxy whose own settings are none: site, individual and default are one
    configuration. Measured apart, the noise between them was reported as a gain (1.07x); now
    each is run once per round and the report says "same settings"."""
    ps = [proxy("a", {}), proxy("b", {"fill_time": "never"})]
    calls = []
    noisy = simulated({}, noise=0.3)

    def run(p, settings):
        calls.append((p.name, dict(settings)))
        return noisy(p, settings)

    chosen = defaults.choose_site([ps[0]], run, 6, random.Random(0), print)
    r = chosen["results"]["a"]
    assert chosen["site"] == {} and len(calls) == 6  # one run per round
    assert r["site_speedup"] == r["individual_speedup"] == 1.0
    assert r["same_as_default"] == ["site", "individual"]
    row = next(ln for ln in defaults.report_lines([ps[0]], chosen) if ln.startswith("| a |"))
    assert "| same settings | same settings |" in row and "x |" not in row
    # the site set equal to a proxy's own: one configuration too, a ratio of the defaults
    calls.clear()
    chosen = defaults.choose_site([ps[1]], run, 4, random.Random(0), print)
    r = chosen["results"]["b"]
    assert r["site_speedup"] == r["individual_speedup"] and len(calls) == 8
    assert r["same_as_default"] == []
