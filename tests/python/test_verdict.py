"""The final phases of a study: the sequential test's error and power, the minimal
recommendation, what is left out of the search and why, the settings table."""

import random
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from iotune import linkage, pairs, reduction, space, study, tune_config
from iotune.report import table
from iotune.search import inert, sequential

HERE = Path(__file__).resolve().parent


def _run_test(rng, gain, noise, d, max_pairs=20):
    a, b = [], []
    for _ in range(max_pairs):
        a.append(rng.lognormvariate(0, noise))
        b.append(rng.lognormvariate(0, noise) / gain)
        v = sequential.verdict(a, b, d)
        if v.decided:
            return v
    return v


def test_sequential_looks_do_not_inflate_false_wins():
    """A/A with a look after every pair: at most alpha false wins (a plain test at every look
    would give several times more)."""
    d = sequential.design(5, 20)
    assert d.error <= sequential.ALPHA and d.level < sequential.ALPHA
    rng = random.Random(1)
    wins = sum(_run_test(rng, 1.0, 0.5, d).improved for _ in range(3000))
    assert wins / 3000 <= 0.065  # alpha plus three standard errors
    naive = sequential.Design(5, 20, 0.05, 0.05, 0.05, 0.0)  # p < 0.05 at every look
    rng = random.Random(1)
    naive_wins = sum(_run_test(rng, 1.0, 0.5, naive).improved for _ in range(3000))
    assert naive_wins / 3000 > 0.08


def test_six_pairs_all_won_are_significant_and_the_bound_holds(monkeypatch):
    """The early look: at Pocock's level alone six pairs all won (p = 1/64) fell short, so a
    clear gain took 7 pairs; spending 1/64 at the 6th look keeps the overall bound."""
    for top in (20, 30):
        d = sequential.design(5, top)
        assert (d.early, d.early_level, d.first_possible()) == (6, 1 / 64, 6)
        assert d.error <= sequential.ALPHA
        sweep = sequential.verdict([1.0] * 6, [0.5] * 6, d)
        assert sweep.decided and sweep.improved and sweep.pairs == 6
        five = sequential.verdict([1.0] * 5, [0.5] * 5, d)
        assert not five.decided  # 1/32: no look before the 6th can reject
        one_lost = sequential.verdict([1.0] * 5 + [0.9], [0.5] * 5 + [1.0], d)
        assert not one_lost.significant  # at the 6th look only a clean sweep rejects
        monkeypatch.setattr(sequential, "EARLY_PAIRS", 0)
        plain = sequential.design(5, top)
        monkeypatch.undo()
        assert plain.first_possible() == 7 and plain.early is None
        assert d.level < plain.level  # the later looks pay for the early one, a little
        assert d.level > 0.85 * plain.level
    rng = random.Random(5)  # A/A: the early look adds no false wins beyond alpha
    d = sequential.design(5, 20)
    wins = sum(_run_test(rng, 1.0, 0.5, d).improved for _ in range(3000))
    assert wins / 3000 <= 0.065
    # where Pocock's level already lets six pairs all won reject, nothing changes
    assert sequential.design(5, 15).early is None and sequential.design(5, 15).first_possible() == 6


def test_the_reduction_tests_contributions_without_the_early_look(tmp_path, monkeypatch):
    """The early look is for tests against the defaults; a setting's contribution in the
    reduction is tested at Pocock's level at every look, as before 2026-11-28."""
    made = []
    real = pairs.Pairs.__init__

    def spy(self, *a, **k):
        real(self, *a, **k)
        made.append(self.design)

    monkeypatch.setattr(pairs.Pairs, "__init__", spy)
    best = {"cb_buffer_size": "1048576", "chunk_cache_bytes": "2097152"}
    ev = _timed(lambda s: 0.5 if s.get("cb_buffer_size") == "1048576" else 1.0)
    reduction.minimal(_cfg(tmp_path), best, ev, False, random.Random(0), log=lambda m: None)
    assert made and all(d.early is None and d.first_possible() == 7 for d in made)
    made.clear()
    pairs.verify(_cfg(tmp_path), best, ev, False, random.Random(0))
    assert made and made[0].early == 6


def test_the_early_look_gives_its_interval(tmp_path):
    """A verification decided by six pairs all won has an interval at that look's level (at
    the later looks' level six pairs have none, and the headline would not call it shown)."""
    from iotune import verdict

    d = sequential.design(5, 20)
    rec = {"rounds": [{"default": 1.0, "tuned": 0.6 + i / 100} for i in range(6)],
           "design": {"level": d.level, "early": d.early, "early_level": d.early_level},
           "improved": True}  # fmt: skip
    m = verdict.measure(rec, maximize=False)
    assert m["low"] is not None and m["low"] > 1.0 and verdict.established(m)
    rec["design"] = {"level": d.level}
    assert verdict.measure(rec, maximize=False)["low"] is None


def test_sequential_test_finds_a_clear_gain_early_and_stops_a_futile_one():
    d = sequential.design(5, 20)
    rng = random.Random(2)
    v = _run_test(rng, 2.0, 0.1, d)
    assert v.improved and v.pairs < 10
    v = sequential.verdict([1.0] * 12, [1.1] * 12, d)  # B lost every pair: no way back
    assert v.decided and v.futile and not v.improved


def test_verify_pairs_that_cannot_decide_are_named():
    assert pairs.check_verify_pairs(4) and "can never show a gain" in pairs.check_verify_pairs(4)
    assert pairs.check_verify_pairs(5) is None and pairs.check_verify_pairs(20) is None
    # a huge value would simulate its design for minutes and gigabytes before any trial
    assert "at most 50" in pairs.check_verify_pairs(51)
    assert "at most 50" in pairs.check_verify_pairs(10**9)
    for n in (0, -1):  # was a ValueError from sequential.design
        assert "needs at least one pair" in pairs.check_verify_pairs(n)


def _cfg(tmp_path, **kw):
    # the verification and reduction of a fixed re-measurement (tpe): the default strategy's
    # race keeps the defaults without a verification when nothing leaves them behind
    kw.setdefault("strategy", "tpe")
    sp = space.load(HERE / "fake_space.toml")
    return tune_config.TuneConfig(app=["x"], out=tmp_path, space=sp, seed=3, **kw)


def _timed(rule):
    rng = random.Random(4)

    def evaluate(settings, cap):
        from iotune.trial import Outcome

        t = rule(settings) * rng.lognormvariate(0, 0.05)
        return Outcome("ok", t, "kernel", t)

    return evaluate


def test_minimal_recommendation_keeps_only_the_setting_that_carries_the_gain(tmp_path):
    best = {"cb_buffer_size": "1048576", "chunk_cache_bytes": "2097152", "romio_cb_write": "enable"}
    ev = _timed(lambda s: 0.5 if s.get("cb_buffer_size") == "1048576" else 1.0)
    res = reduction.minimal(_cfg(tmp_path), best, ev, False, random.Random(0), log=lambda m: None)
    assert res["settings"] == {"cb_buffer_size": "1048576"}
    assert res["contributions"]["cb_buffer_size"]["cost"] > 1.5
    assert set(res["removed"]) == {"chunk_cache_bytes", "romio_cb_write"}


def test_minimal_recommendation_keeps_one_of_two_ways_to_the_same_gain(tmp_path):
    """Either setting alone gives the gain, so removing one at a time costs nothing: they must
    not both be dropped."""
    best = {"cb_buffer_size": "1048576", "romio_cb_write": "enable", "chunk_cache_bytes": "2097152"}

    def rule(s):
        return 0.5 if s.get("cb_buffer_size") or s.get("romio_cb_write") else 1.0

    res = reduction.minimal(_cfg(tmp_path), best, _timed(rule), False, random.Random(0), print)
    assert len(res["settings"]) == 1 and "chunk_cache_bytes" not in res["settings"]


MPIIO_ONLY_PROFILE = {
    "layers": {
        "hdf5": {"file_creates": 0, "file_opens": 0, "writes": 0, "reads": 0},
        "mpiio": {"opens": 2},
    },
    "files": [
        {
            "name": "out.dat",
            "fs": "ext4",
            "applied": {"hdf5": {}, "mpiio": {"cb_buffer_size": "1048576", "striping_factor": "4"}},
            "hints": {"cb_buffer_size": "1048576", "cb_nodes": "1"},
        }
    ],
}


def test_an_mpiio_only_run_leaves_hdf5_and_striping_out():
    sp = space.load("sc13-lustre")
    facts = inert.traits(MPIIO_ONLY_PROFILE)
    out = inert.inert(sp, {"bytes_read": 10, "bytes_written": 10}, facts)
    for d in sp.dims:
        if d.layer == "hdf5":
            assert out[d.name] == inert.NO_HDF5
        elif d.layer == "fs":
            assert "without striping (ext4)" in out[d.name]
        else:
            assert d.name not in out
    # striping_factor was applied but MPI-IO did not keep it: not in effect
    assert "striping_factor" in facts["not_in_effect"]
    assert "cb_buffer_size" not in facts["not_in_effect"]


def test_static_hdf5_and_unknown_rank_counts_are_left_out():
    sp = space.load("local")
    out = inert.inert(sp, {}, {"static_hdf5": True})
    assert {d.name for d in sp.dims if d.layer == "hdf5"} == set(out)
    assert set(out.values()) == {inert.STATIC_HDF5}
    why = inert.excluded_values(sp, {})
    assert "collective" in why["transfer_mode"]
    assert inert.excluded_values(sp, {"same_dataset_calls": True}) == {}
    traits = inert.traits({"files": [{"hdf5": {"chunked_datasets": 0}}], "layers": {}})
    assert inert.inert(sp, {}, traits).get("chunk_cache_bytes") is None  # chunk_size searched


@pytest.mark.skipif(not shutil.which("cc") or not shutil.which("nm"), reason="no cc/nm")
def test_static_hdf5_link_is_detected(tmp_path, test_prog):
    src = tmp_path / "s.c"
    src.write_text("int H5Fcreate(void) { return 0; }\nint main(void) { return H5Fcreate(); }\n")
    subprocess.run(["cc", "-o", tmp_path / "s", src], check=True)
    assert linkage.static_hdf5(str(tmp_path / "s"))
    assert not linkage.static_hdf5(str(test_prog("h5probe")))  # imports it from libhdf5
    assert not linkage.static_hdf5(str(HERE / "fake_app.py"))
    # iotune run says, once, that the control file's HDF5 settings cannot reach it
    xml = tmp_path / "c.xml"
    xml.write_text("<Parameters><High_Level_IO_Library><fill_time>never</fill_time>"
                   "</High_Level_IO_Library></Parameters>")  # fmt: skip
    run = [sys.executable, "-m", "iotune", "run", "--config", xml, "--", tmp_path / "s"]
    proc = subprocess.run(run, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.count("HDF5 settings not applied (fill_time)") == 1, proc.stderr
    assert "linked in statically" in proc.stderr


def test_a_negative_verdict_shows_a_table_not_a_dict():
    summary = {
        "recommended": {},
        "best_settings": {"cb_buffer_size": "1048576", "fill_time": "never"},
        "minimal": {},
    }
    lines = table.settings_lines(summary)
    assert lines[0].startswith("best candidate, not recommended (candidate.xml)")
    assert lines[1].split() == ["parameter", "layer", "value", "removing", "it", "costs"]
    assert any(line.split()[:3] == ["fill_time", "hdf5", "never"] for line in lines)
    assert not any("{" in line for line in lines)


def test_a_negative_verdict_still_writes_candidate_xml(tmp_path):
    import optuna

    from iotune import controlfile
    from iotune.search import loop, warmstart
    from iotune.trial import Outcome

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    cfg = _cfg(tmp_path, leaders=1, repeat=0, verify_pairs=8)
    s = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=0))
    warmstart.enqueue(s, cfg.space, True)
    phase = {"search": True}
    rng = random.Random(5)

    def evaluate(settings, cap):
        if phase["search"]:  # the search saw a gain that verification does not confirm
            t = 0.5 if settings.get("cb_buffer_size") == "1048576" else 1.0
        else:
            t = rng.lognormvariate(0, 0.3)
        return Outcome("ok", t, "kernel", t)

    loop.run(s, cfg.space, evaluate, budget=4)
    phase["search"] = False
    summary = study.finish(cfg, s, evaluate, log=lambda m: None)
    assert not summary["recommended"] and summary["best_settings"]
    assert controlfile.parse_file(tmp_path / "best.xml").settings == []
    cand = controlfile.parse_file(tmp_path / "candidate.xml")
    assert {x.name: x.value for x in cand.settings} == summary["best_settings"]
    assert "candidate.xml" in (tmp_path / "report.html").read_text()


@pytest.mark.parametrize("stop", [True, False])
def test_the_default_strategy_stops_a_verification_below_min_gain(tmp_path, monkeypatch, stop):
    """tpe's verification too ends once the gain's interval lies below --min-gain (only
    `local`'s did before 2026-11-28): a winner the verification finds no faster than the
    defaults at a 2 % noise costs a few pairs, not the test's whole futility bound."""
    import optuna

    from iotune.search import loop, warmstart
    from iotune.trial import Outcome

    monkeypatch.setattr(study, "STOP_BELOW_MIN_GAIN", stop)
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    cfg = _cfg(tmp_path, leaders=1, repeat=0, verify_pairs=20)
    s = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=0))
    warmstart.enqueue(s, cfg.space, True)
    phase = {"search": True}
    rng = random.Random(5)

    def evaluate(settings, cap):
        t = 0.5 if phase["search"] and settings.get("cb_buffer_size") == "1048576" else 1.0
        t *= rng.lognormvariate(0, 0.02)
        return Outcome("ok", t, "kernel", t)

    loop.run(s, cfg.space, evaluate, budget=4)
    phase["search"] = False
    summary = study.finish(cfg, s, evaluate, log=lambda m: None)
    final = summary["final"]
    assert not summary["recommended"] and not final["improved"]
    assert final["below_min_gain"] == stop
    if stop:
        assert final["pairs"] < 8 and "below a gain of 5% (--min-gain)" in final["verdict"]
    else:
        assert final["pairs"] >= 8


def test_a_study_is_named_after_its_application():
    from iotune import identity, launch

    assert launch.split_launcher(["mpirun.openmpi", "--oversubscribe", "-np", "2", "./a", "x"]) == (
        ["mpirun.openmpi", "--oversubscribe", "-np", "2"],
        ["./a", "x"],
    )
    assert launch.split_launcher(["flux", "run", "-n", "4", "b"])[1] == ["b"]
    assert launch.split_launcher(["./a", "-n", "2"]) == ([], ["./a", "-n", "2"])
    one = identity.default_name(["mpiexec", "-n", "2", "./vpicio", "in.cfg"])
    assert one.startswith("vpicio-") and len(one) == len("vpicio-") + 8
    assert one != identity.default_name(["mpiexec", "-n", "2", "./vpicio", "other.cfg"])
    assert one == identity.default_name(["mpiexec", "-n", "2", "./vpicio", "in.cfg"])


def test_a_reduction_slower_than_the_defaults_is_not_recommended(tmp_path, monkeypatch):
    """The minimal step judges each removal with a few noisy pairs: settings that together
    carry the gain can all be dropped. What is left must beat the defaults on its own, or the
    whole verified winner is recommended."""
    import optuna

    from iotune.search import loop
    from iotune.trial import Outcome

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    cfg = _cfg(tmp_path, leaders=1, repeat=0, verify_pairs=8)
    s = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=0))
    winner = {"cb_buffer_size": "1048576", "romio_cb_write": "disable"}
    s.enqueue_trial(cfg.space.trial_params_for(winner))
    alone = {"romio_cb_write": "disable"}
    # as seen under noise: the step drops the setting that carries the gain
    monkeypatch.setattr(
        reduction,
        "minimal",
        lambda *a, **k: {"settings": dict(alone), "contributions": {}, "removed": {}, "runs": 0},
    )
    rng = random.Random(6)

    def evaluate(settings, cap):
        t = 1.0
        if settings.get("cb_buffer_size") == "1048576":
            t = 0.5
        elif settings.get("romio_cb_write") == "disable":
            t = 2.0  # harmful alone
        t *= rng.lognormvariate(0, 0.05)
        return Outcome("ok", t, "kernel", t)

    loop.run(s, cfg.space, evaluate, budget=1)
    summary = study.finish(cfg, s, evaluate, log=lambda m: None)
    assert summary["final"]["improved"]
    assert summary["recommended"] == winner
    assert summary["minimal"]["rejected"]["settings"] == alone


def test_what_the_runtime_says_did_not_take_effect_is_read_from_a_real_profile(
    mpirun, test_prog, libiotune, tmp_path
):
    """The tuner reads the runtime's own records (withdrawn settings, each hint's verdict),
    so a hint that was withdrawn or dropped never reaches best.xml."""
    import json

    def not_in_effect(extra: str) -> dict[str, str]:
        cfg = tmp_path / "c.xml"
        cfg.write_text(
            f"<Parameters><Middleware_Layer>\n<cb_buffer_size>1MiB</cb_buffer_size>\n{extra}\n"
            "</Middleware_Layer>\n<Parallel_File_System><striping_factor>4</striping_factor>"
            "</Parallel_File_System>\n</Parameters>\n"
        )
        profile = tmp_path / "p.json"
        mpirun(2, [test_prog("mpiio_probe"), tmp_path / "out.dat"], cwd=tmp_path,
               preload=libiotune, config=cfg, env={"IOTUNE_PROFILE": str(profile)})  # fmt: skip
        return inert.traits(json.loads(profile.read_text()))["not_in_effect"]

    off = not_in_effect("")
    assert "striping_factor" in off, off  # ext4 here: no striping
    assert "cb_buffer_size" not in off, off
    # a hint that makes MPI_File_open fail: the open is made again without the injected hints
    off = not_in_effect("<cb_config_list>nosuchhost:1</cb_config_list>")
    assert all(off[n].startswith("withdrawn") for n in ("cb_config_list", "cb_buffer_size")), off


def test_romio_hints_are_left_out_under_ompio():
    from dataclasses import replace

    searching_io = space.load("local")
    sp = replace(searching_io, dims=[d for d in searching_io.dims if d.name != "io"])
    facts = {"io_component": "ompio", "mpiio_calls": 2}
    out = inert.inert(sp, {"bytes_read": 10, "bytes_written": 10}, facts)
    hints = [d.name for d in sp.dims if d.param.is_hint]
    assert out.get("romio_cb_write") == inert.NOT_OMPIO
    assert all(out.get(h) != inert.NOT_OMPIO for h in inert.OMPIO_HINTS if h in hints)
    facts["io_component"] = "romio321"
    assert inert.NOT_OMPIO not in inert.inert(sp, {}, facts).values()


def test_romio_hints_stay_under_ompio_when_the_component_is_searched():
    """With `io` (ompio | romio321) in the space, ROMIO's hints apply in the trials that switch
    to ROMIO: VORPAL-IO under Open MPI gained 2.5-3.7x from io=romio321 with
    romio_cb_write=disable, each needed (bench/README.md, Open MPI beside MPICH)."""
    sp = space.load("local")
    facts = {"io_component": "ompio", "mpiio_calls": 2}
    out = inert.inert(sp, {"bytes_read": 10, "bytes_written": 10}, facts)
    assert "romio_cb_write" not in out and "romio_ds_write" not in out, out
    assert inert.NOT_OMPIO not in out.values()
