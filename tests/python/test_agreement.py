"""The agreement bench's decisions (bench/agreement/agree_calc.py): matching, ratios, verdicts."""

import sys

import pytest
from conftest import REPO

sys.path.insert(0, str(REPO / "bench" / "agreement"))
import agree_calc as calc  # noqa: E402


def summary(settings, established=True, speedup=1.8):
    return {"headline": {"settings": settings, "established": established, "speedup": speedup,
                         "low": 1.2, "high": 2.5, "pairs": 6, "candidate": {"a": "1"},
                         "text": "best.xml ..."}}  # fmt: skip


def test_tune_verdict_recommends_only_an_established_gain():
    v = calc.tune_verdict(summary({"fill_time": "never"}))
    assert v["recommends"] and v["settings"] == {"fill_time": "never"}
    assert calc.verdict_words(v) == "fill_time=never: 1.80x [1.20-2.50]"
    v = calc.tune_verdict(summary({}))
    assert not v["recommends"] and calc.verdict_words(v) == "keep defaults"
    v = calc.tune_verdict(summary({"x": "1"}, established=False))
    assert not v["recommends"] and v["settings"] == {}
    assert calc.verdict_words(None) == "not measured"
    assert calc.verdict_words({"error": "tune timed out after 900 seconds"}).startswith("error")


ADVICE = {
    "findings": [
        {"code": "A", "severity": "low", "group": "g", "settings": {"romio_cb_write": "disable"},
         "in_control_file": False},
        {"code": "B", "severity": "high", "group": "g", "settings": {"fill_time": "never"},
         "in_control_file": True},
    ],
    "control_file": [{"name": "fill_time", "value": "never"}],
}  # fmt: skip


def test_names_best_counts_any_finding_and_the_control_file_apart():
    side = calc.advice_side(ADVICE)
    assert side["proposed"] == ["fill_time", "romio_cb_write"]
    assert side["control_file"] == ["fill_time"]
    m = calc.names_best({"romio_cb_write": "disable"}, side)
    assert m["names"] is True and m["control"] is False and m["all_named"] is True
    m = calc.names_best({"cb_buffer_size": "1M", "fill_time": "never"}, side)
    assert m["names"] and m["control"] and m["all_named"] is False
    m = calc.names_best({"chunk_cache_bytes": "8M"}, side)
    assert m["names"] is False and m["control"] is False


def test_names_best_on_keep_defaults_asks_for_a_quiet_control_file():
    side = calc.advice_side(ADVICE)
    assert calc.names_best({}, side)["quiet"] is False
    assert calc.names_best({}, calc.advice_side({"findings": []}))["quiet"] is True
    assert calc.names_best({"a": "1"}, {"error": "x"})["names"] is None


DUMP = """HDF5 "/tmp/x/orig/chk_0001.h5" {
GROUP "/" {
   DATASET "d" {
      DATATYPE  H5T_IEEE_F64LE
      STORAGE_LAYOUT {
         CONTIGUOUS
         SIZE 800
         OFFSET 2048
      }
   }
}
}
"""


def test_structures_equal_up_to_path_and_offset_only():
    skel = DUMP.replace("/tmp/x/orig", "/elsewhere").replace("OFFSET 2048", "OFFSET 4096")
    assert calc.compare_structures({"chk_0001.h5": DUMP}, {"chk_0001.h5": skel})["equal"]
    other = DUMP.replace("F64LE", "F32LE")
    r = calc.compare_structures({"chk_0001.h5": DUMP}, {"chk_0001.h5": other})
    assert r["equal"] is False and "line 4" in r["diff"] and "F32LE" in r["diff"]
    # padding in names is part of the structure
    r = calc.compare_structures({"chk_0001.h5": DUMP}, {"chk_1.h5": DUMP})
    assert r["equal"] is False and "files differ" in r["diff"]
    assert calc.compare_structures({}, {})["equal"] is None


def trace(rank, sigs, runs):
    return {"rank": rank, "signatures": sigs, "runs": runs}


def test_trace_bytes_per_layer_rank_and_direction_on_data_files_only():
    sigs = [
        {"layer": "hdf5", "func": "H5Dwrite", "file": "out/a.h5", "size": 100},
        {"layer": "posix", "func": "pread", "file": "a.h5", "size": 10},
        {"layer": "posix", "func": "pwrite", "file": "lib.so", "size": 1000},
        {"layer": "hdf5", "func": "H5Dcreate", "file": "a.h5", "size": 0},
    ]
    t = [trace(0, sigs, [(0, 3), (1, 2), (2, 5), (3, 1)]), trace(1, sigs, [(0, 1)])]
    b = calc.trace_bytes(t, ["/x/a.h5"])
    assert b == {"hdf5": {"0": {"w": 300, "r": 0}, "1": {"w": 100, "r": 0}},
                 "posix": {"0": {"w": 0, "r": 20}}}  # fmt: skip


def test_profile_bytes_sums_layers_of_the_data_files():
    prof = {"files": [{"name": "a.h5", "hdf5": {"bytes_written": 5}, "posix": {"bytes_read": 2}},
                      {"name": "x.py", "posix": {"bytes_read": 99}}]}  # fmt: skip
    assert calc.profile_bytes(prof, ["a.h5"]) == {"hdf5": {"all": {"w": 5, "r": 0}},
                                                  "posix": {"all": {"w": 0, "r": 2}}}  # fmt: skip
    merged = calc.merge_bytes({"hdf5": {"0": {"w": 1, "r": 0}}}, {"hdf5": {"all": {"w": 5}}})
    assert set(merged["hdf5"]) == {"0", "all"}


def test_compare_bytes_worst_relative_difference():
    o = {"hdf5": {"0": {"w": 1000, "r": 0}, "1": {"w": 1000, "r": 0}}}
    s = {"hdf5": {"0": {"w": 1005, "r": 0}, "1": {"w": 1000, "r": 0}}}
    r = calc.compare_bytes(o, s)
    assert r["within"] and r["worst"] == pytest.approx(0.005)
    s["hdf5"]["1"]["w"] = 250  # a compound type written as bytes: 4x fewer
    r = calc.compare_bytes(o, s)
    assert not r["within"] and r["worst"] == pytest.approx(0.75) and "rank 1" in r["where"]
    s = dict(o, posix={"0": {"w": 0, "r": 24}})  # a layer only the skeleton used
    assert calc.compare_bytes(o, s)["worst"] == 1.0
    assert calc.compare_bytes({}, {})["within"] is None


def test_paired_ratio_and_within():
    r = calc.paired_ratio([1.0, 2.0, 1.0, None], [1.1, 1.8, 1.0, 3.0])
    assert r["n"] == 3 and r["median"] == pytest.approx(1.0) and r["min"] == pytest.approx(0.9)
    assert calc.paired_ratio([], [])["median"] is None
    assert calc.within(1.09) and calc.within(1 / 1.09)
    assert not calc.within(1.11) and not calc.within(0.85)
    assert calc.within(None) is None


PHASES = [
    {"file": "chk_0.h5", "class": "chk_#.h5", "role": "learning", "applied": []},
    {"file": "chk_1.h5", "class": "chk_#.h5", "role": "applying",
     "applied": [{"name": "fill_time", "value": "never", "rule": "R"},
                 {"name": "romio_cb_write", "value": "disable", "rule": "S"}]},
    {"file": "x.h5", "class": "x.h5", "role": "no data", "applied": []},
]  # fmt: skip


def test_adapt_applied_recurring_and_against_best():
    applied = calc.applied_settings(PHASES)
    assert applied == {"chk_1.h5": {"fill_time": "never", "romio_cb_write": "disable"}}
    assert calc.recurring(PHASES) and not calc.recurring(PHASES[:1] + PHASES[2:])
    vs = calc.adapt_against_best(applied, {"fill_time": "never", "cb_buffer_size": "1048576"})
    assert vs == {"same": ["fill_time"], "missing": ["cb_buffer_size"],
                  "extra": ["romio_cb_write"]}  # fmt: skip
    # the same name with another value is not the same setting
    assert calc.adapt_against_best(applied, {"fill_time": "alloc"})["missing"] == ["fill_time"]


def test_adapt_share_and_acceptance():
    assert calc.adapt_share(2.0, 1.8) == pytest.approx(0.8)
    assert calc.adapt_share(1.0, 1.5) is None and calc.adapt_share(2.0, None) is None
    row = {"tune": {"recommends": True}, "adapt": {"recurring": True, "share": 0.75,
                                                   "applied": {"f": {"a": "1"}}}}  # fmt: skip
    assert calc.adapt_accepted(row) is True
    row["adapt"]["share"] = 0.3
    assert calc.adapt_accepted(row) is False
    # a share reached with nothing applied is the timing's noise (ph5example: 0.5x the time)
    row["adapt"] = {"recurring": True, "share": 2.0, "applied": {}, "said": "nothing applied: x"}
    assert calc.adapt_accepted(row) is False
    # "nothing applied" without a reason per setting of best.xml no longer counts as saying why
    row["adapt"] = {"recurring": True, "share": 0.0, "applied": {},
                    "said": "nothing applied: no rule fired on a learning phase"}  # fmt: skip
    assert calc.adapt_accepted(row) is False
    row["tune"]["settings"] = {"fill_time": "never"}
    row["adapt"]["said"] += (
        "; not applied: IOT-1 fill_time=never (undecided: fully_written "
        "unknown: a rank wrote a dataset in more than 8 separate boxes)"
    )
    assert calc.adapt_verdict(row) == (True, "says why")
    # a guard's revert is a timing (maybe noise): it does not say why
    row["adapt"]["said"] = (
        "applied per file: f (1 of 8 phases): fill_time=never; the guard "
        "reverted IOT-1 for f after phase 1, phase 2 ran slower ..."
    )
    assert calc.adapt_accepted(row) is False
    row["adapt"]["recurring"] = False
    assert calc.adapt_accepted(row) is None
    # applied something short of tune's gain: met only when the line names every setting of
    # best.xml among what it could not use (offline advice, or no phase of that access left)
    row = {"tune": {"recommends": True, "settings": {"fill_time": "never"}},
           "adapt": {"recurring": True, "share": 0.1, "applied": {"f": {"fill_time": "never"}},
                     "said": "applied per file: f (1 of 2 phases): fill_time=never"}}  # fmt: skip
    assert calc.adapt_accepted(row) is False
    row["adapt"]["said"] += "; fill_time=never reached no phase that wrote (the class's ...)"
    assert calc.adapt_accepted(row) is True
    row["tune"]["settings"] = {"fill_time": "never", "transfer_mode": "independent"}
    assert calc.adapt_accepted(row) is False
    row["adapt"]["said"] += "; held, not applied (offline advice only: ...): SIO-1 transfer_mode="
    assert calc.adapt_accepted(row) is True
    # the line's form since 2026-11-27 (iotune.adapt): the rule with its reason, held or not
    held = ("not applied: SIO-1 transfer_mode=independent (offline advice, held on 4 of 6 "
            "phases, proposed by iotune advise and iotune tune: HDF5 may need ...)")  # fmt: skip
    unheld = ("not applied: SIO-1 transfer_mode=independent (needs transfer_mode == "
              "collective|mixed, was independent; offline advice only: HDF5 may ...)")  # fmt: skip
    for clause in (held, unheld):
        applied = "applied per file: f (1 of 2 phases): fill_time=never"
        row["adapt"]["said"] = f"{applied}; fill_time=never reached no phase that wrote; {clause}"
        assert calc.adapt_accepted(row) is True, clause
    assert (
        calc.adapt_accepted({"tune": {"recommends": False}, "adapt": {"recurring": True}}) is None
    )


def test_adapt_counts_the_learning_phase_bound_only_below_70_percent_at_tunes_low_end():
    """h5perf -i 4: fill_time=never applied to 3 of 4 writes (the first, learning, phase at the
    defaults): even a perfect application reaches 1/(1/4 + 3/(4 g)), 62 % of tune's gain at
    its interval's low end g = 1.86: the line's count explains the 55 % measured. At 8 writes
    the bound (85 % at g = 1.25) does not explain a low share."""
    assert abs(calc.learning_bound(4, 3, 2.0886776710581154) - 0.5894) < 1e-3  # docs' 59 %
    said = (
        "applied per file: #pio_tmp_1.h5 (7 of 8 phases): fill_time=never; each class "
        "learned from its first phase, which ran with the defaults: #pio_tmp_*.h5 (1 of 8 "
        "phases, 4 writing), so a write setting could reach at most 3 of its 4 writes"
    )
    row = {
        "tune": {
            "recommends": True,
            "settings": {"fill_time": "never"},
            "speedup": 2.09,
            "low": 1.86,
        },
        "adapt": {
            "recurring": True,
            "share": 0.55,
            "said": said,
            "against_best": {"same": ["fill_time"], "missing": [], "extra": []},
        },
    }
    ok, how = calc.adapt_verdict(row)
    assert ok is True and how == "learning bound 62%", how
    row["adapt"]["against_best"]["missing"] = ["fill_time"]  # not applied: the bound says nothing
    assert calc.adapt_accepted(row) is False
    row["adapt"]["against_best"]["missing"] = []
    row["adapt"]["said"] += "; the guard reverted IOT-1 for #pio_tmp_*.h5 after phase 2 ..."
    assert calc.adapt_accepted(row) is False
    eight = said.replace("4 writing", "8 writing").replace("3 of its 4", "7 of its 8")
    row["adapt"]["said"], row["tune"]["low"] = eight, 1.25
    assert calc.adapt_accepted(row) is False


def rows_for_acceptance():
    rec = {"recommends": True, "settings": {"a": "1"}, "speedup": 2.0}
    ok_skel = {"h5dump": {"equal": True}, "bytes": {"within": True}, "time_within": True}
    return [
        {"case": "p1", "kind": "project", "tune": rec, "advise_run_match": {"names": True},
         "skel": ok_skel, "kb": {"key": "k1", "motif": {"layout": "chunked",
                                                         "element_type": "float8"}}},
        {"case": "p2", "kind": "project", "tune": rec, "advise_run_match": {"names": False},
         "skel": {"h5dump": {"equal": False}, "bytes": {"within": True}, "time_within": False},
         "kb": {"key": "k1", "motif": {"layout": "contiguous", "element_type": "float8"}}},
        {"case": "c1", "kind": "corpus", "tune": {"recommends": False},
         "advise_run_match": {"names": None, "quiet": True}, "skel": ok_skel},
    ]  # fmt: skip


def test_acceptance_counts_only_the_cases_each_criterion_applies_to():
    rows = rows_for_acceptance()
    acc = calc.acceptance(rows, "project")
    assert acc["rows"] == 2 and acc["tune_recommends"] == 2
    assert acc["advise_names_run"] == (1, 2) and acc["skel_h5dump_equal"] == (1, 2)
    assert acc["skel_time_within"] == (1, 2) and acc["advise_names_log"] == (0, 0)
    acc_c = calc.acceptance(rows, "corpus")
    assert acc_c["advise_names_run"] == (0, 0) and acc_c["skel_bytes_within"] == (1, 1)
    lines = calc.summary_lines(acc, "project")
    assert any("1/2 (50%)" in line and "NOT MET" in line for line in lines)
    assert any("n/a (0 cases)" in line and "no case" in line for line in lines)


def test_motif_clash_and_table():
    rows = rows_for_acceptance()
    assert calc.motif_clashes(rows) == ["k1: p1, p2"]
    rows[1]["kb"]["key"] = "k2"
    assert calc.motif_clashes(rows) == []
    table = calc.table_rows(rows)
    assert len(table) == 2 + len(rows)
    assert "| project | p2 |" in table[3] and "**no**" in table[3]
    assert "quiet: yes" in table[4]


def test_skel_bytes_judged_where_the_original_is_stable():
    orig = {"hdf5": {"0": {"w": 1000, "r": 0}}, "posix": {"all": {"w": 2000, "r": 15_000}}}
    again = {"hdf5": {"0": {"w": 1000, "r": 0}}, "posix": {"all": {"w": 2000, "r": 0}}}
    skel = {"hdf5": {"0": {"w": 1000, "r": 0}}, "posix": {"all": {"w": 2000, "r": 7}}}
    assert calc.unstable_cells(orig, again) == {("posix", "all", "r")}
    row = {"skel": {"bytes_orig": orig, "bytes_skel": skel, "bytes": {"within": False}},
           "orig_repeat": {"bytes_second": again}}  # fmt: skip
    r = calc.skel_bytes(row)
    assert r["within"] is True and r["unstable"] == ["posix rank all r"]
    # a stable cell the skeleton misses still fails
    skel["hdf5"]["0"]["w"] = 500
    r = calc.skel_bytes(row)
    assert r["within"] is False and "hdf5 rank 0 w" in r["where"]
    # without a second run of the original: the plain comparison
    del row["orig_repeat"]
    assert calc.skel_bytes(row)["within"] is False


def test_skel_bytes_unstable_in_any_repeat_of_the_original():
    """Two runs of the original that agree by chance do not make a cell stable: a cell that
    moves in any of its repeats is left out (checkpoint's POSIX reads under collective writes
    moved 44.6-47.2 MB over 6 runs; two of them gave the same)."""
    orig = {"posix": {"all": {"w": 2000, "r": 45_613_056}}}
    same = {"posix": {"all": {"w": 2000, "r": 45_613_056}}}
    moved = {"posix": {"all": {"w": 2000, "r": 47_185_920}}}
    skel = {"posix": {"all": {"w": 2000, "r": 46_137_344}}}
    row = {"skel": {"bytes_orig": orig, "bytes_skel": skel, "bytes": {"within": False}},
           "orig_repeat": {"bytes_second": same, "bytes_repeats": [same]}}  # fmt: skip
    assert calc.skel_bytes(row)["within"] is False
    row["orig_repeat"]["bytes_repeats"] = [same, moved]
    r = calc.skel_bytes(row)
    assert r["within"] is True and r["unstable"] == ["posix rank all r"]
    skel["posix"]["all"]["w"] = 1000  # a stable cell the skeleton misses still fails
    assert calc.skel_bytes(row)["within"] is False


def test_acceptance_judges_bytes_as_the_table_does():
    """The summary counts a case whose only gap is in a cell the original moves as within,
    as the table's column shows it (it counted the plain comparison: 5/8 beside eight yes)."""
    orig = {"posix": {"all": {"w": 2000, "r": 15_000}}}
    again = {"posix": {"all": {"w": 2000, "r": 0}}}
    skel = {"posix": {"all": {"w": 2000, "r": 7}}}
    row = {"case": "c", "kind": "corpus", "tune": {"recommends": False},
           "skel": {"bytes_orig": orig, "bytes_skel": skel, "bytes": {"within": False}},
           "orig_repeat": {"bytes_second": again}}  # fmt: skip
    assert calc.acceptance([row])["skel_bytes_within"] == (1, 1)
    assert "yes" in calc.table_rows([row])[2].split("|")[7]


def test_run_files_are_the_runs_own_even_when_removed():
    prof = {"files": [{"name": "#pio_tmp_0.h5"}, {"name": "/run/x/out/a.h5"},
                      {"name": "/usr/lib/python3.11/os.py"}, {"name": "/proc/self/maps"},
                      {"name": "p.json"}, {"name": "/run/x/outside.h5"}]}  # fmt: skip
    assert calc.run_files(prof, "/run/x/out/", ("p.json",)) == ["#pio_tmp_0.h5", "a.h5"]


def test_advise_of_a_command_preloads_the_runtime_of_its_mpi(monkeypatch, tmp_path):
    """`iotune advise -- mpiexec.openmpi ...` ran the program under the MPICH runtime (found by
    the agreement bench on the PnetCDF and netCDF-4 corpus cases: no profile, no advice)."""
    from conftest import need_family

    from iotune import launch, paths
    from iotune.advise import cli

    need_family("openmpi")
    need_family("mpich")
    monkeypatch.delenv("IOTUNE_LIB", raising=False)
    seen = {}

    def fake_run(command, config, lib=None, extra_env=None):
        seen["lib"] = str(lib)
        return 0

    monkeypatch.setattr(launch, "run", fake_run)
    cmd = ["mpiexec.openmpi", "-n", "2", "true"]
    assert cli._profile_first(cmd, str(tmp_path / "p.json")) == 0
    assert paths.library_family(seen["lib"]) == "openmpi"
    cli._profile_first(["mpiexec.mpich", "-n", "2", "true"], str(tmp_path / "p.json"))
    assert paths.library_family(seen["lib"]) == "mpich"


def test_compare_runs_overlapping_ranges_agree_and_a_steady_gap_does_not():
    def cell(v):
        return {"posix": {"all": {"w": 100, "r": v}}}

    # one run each: compare_bytes' test
    assert calc.compare_runs([cell(1000)], [cell(1005)])["within"]
    assert not calc.compare_runs([cell(1000)], [cell(1100)])["within"]
    # the original's own runs spread over 1000-1100: a skeleton inside the range agrees
    r = calc.compare_runs([cell(1000), cell(1100)], [cell(1150), cell(1050)])
    assert r["within"], r
    # a skeleton that stays above the original's whole range does not
    r = calc.compare_runs([cell(1000), cell(1100)], [cell(1200), cell(1210)])
    assert not r["within"] and r["where"].startswith("posix rank all r"), r
    assert abs(r["worst"] - 100 / 1100) < 1e-9
    # a skeleton that moved nothing where the original did
    r = calc.compare_runs([cell(1000)], [{"posix": {"all": {"w": 100, "r": 0}}}])
    assert not r["within"] and r["worst"] == 1.0
    assert calc.compare_runs([{}], [{}])["within"] is None
