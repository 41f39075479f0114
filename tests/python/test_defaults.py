"""iotune defaults: combining proxies' recommendations, dropping what harms a proxy, the
ROMIO_HINTS file and the report (with simulated proxies: their timings are a function of the
settings plus noise, so the logic is tested without the machine's noise)."""

import json
import random

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
    ps = [proxy("a", {"fill_time": "never"})]
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
