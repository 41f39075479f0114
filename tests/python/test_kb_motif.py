"""Issue 22's knowledge-base misreadings: h5bench's contiguous and compound runs shared one
motif key (the compound study's settings were suggested for the contiguous run: 1.03x), and
entries carried the search winner's headline speedup instead of the verification of what
best.xml holds."""

import gzip
import json

import pytest

from iotune import insights, trace_insights
from iotune.cli import main
from iotune.kb import match, signature

H5 = "h5bench.h5"


def _profile_and_trace(tmp_path, type_class, type_size, name="p.json"):
    """A 2-rank HDF5 write run of one dataset, with its trace (schema 4), as the runtime writes
    them; the data file itself is gone (so the layout is unknown to both runs alike)."""
    w = 64 << 20
    hdf5 = {"writes": 16, "collective_writes": 16, "bytes_written": w, "write_time_s": 0.5,
            "dataset_creates": 1}  # fmt: skip
    mpiio = {"collective_writes": 16, "bytes_written": w, "write_time_s": 0.4}
    prof = {"schema": "iotune-profile", "version": 1, "ranks": 2, "wall_s": 1.0,
            "io": {"time_s": 0.5, "bytes_written": w, "bytes_read": 0},
            "layers": {"hdf5": hdf5, "mpiio": mpiio}, "config": {}, "program": "h5bench_write",
            "files": [{"name": H5, "fs": "ext4", "ranks": 2, "time_s": {"max": 0.5},
                       "hdf5": hdf5, "mpiio": mpiio}]}  # fmt: skip
    path = tmp_path / name
    path.write_text(json.dumps(prof))
    n = 8
    trace = {"schema": "iotune-trace", "version": 4, "rank": 0, "ranks": 2, "tick_s": 1e-7,
             "files": [H5],
             "datasets": [{"file": H5, "name": "/particles", "dims": [1 << 20],
                           "maxdims": [1 << 20], "chunks": None, "type_size": type_size,
                           "type_class": type_class, "type_signed": None, "type_order": "LE"}],
             "views": [], "memory": [],
             "signatures": {"layer": ["hdf5"], "func": ["H5Dwrite"], "file": [0], "dataset": [0],
                            "dims": [[1 << 16]], "size": [4 << 20], "step": [4 << 20],
                            "mode": [1]},
             "runs": {"sig": [0], "count": [n], "seq": [0], "stride": [1], "start": [10],
                      "period": [10**7], "busy": [n * 1000], "idle": [0]}}  # fmt: skip
    (tmp_path / f"{name}.trace").mkdir()
    (tmp_path / f"{name}.trace" / "rank-0.json.gz").write_bytes(
        gzip.compress(json.dumps(trace).encode())
    )
    return path


def test_element_types_make_different_motifs(tmp_path):
    floats = signature.from_profile(_profile_and_trace(tmp_path, "float", 4, "contig.json"))
    compound = signature.from_profile(_profile_and_trace(tmp_path, "compound", 32, "cmpd.json"))
    assert floats.motif["element_type"] == "float4"
    assert compound.motif["element_type"] == "compound32"
    assert {k: v for k, v in floats.motif.items() if k != "element_type"} == {
        k: v for k, v in compound.motif.items() if k != "element_type"
    }  # all else alike, as h5bench's two runs were
    assert floats.key != compound.key
    assert not signature.same_motif(floats, compound)
    again = signature.from_profile(_profile_and_trace(tmp_path, "float", 4, "again.json"))
    assert again.key == floats.key  # stable across runs


def test_layouts_make_different_motifs():
    base = {"interface": "hdf5", "transfer_mode": "collective", "io_mix": "write",
            "bytes_written": 100, "element_type": "float4"}  # fmt: skip
    keys = set()
    for layout in ("contiguous", "chunked", "compact"):
        g = insights.Group("x", ["x"], {**base, "layout": layout})
        keys.add(signature.from_groups([g]).key)
    assert len(keys) == 3


def test_the_element_type_is_of_the_datasets_moved():
    calls = [trace_insights.Call(0, "hdf5", "H5Dwrite", "a.h5", "/x", None, None, 4, 4, 0, 4, 1)]
    traces = [{"datasets": [
        {"file": "a.h5", "name": "/x", "type_class": "float", "type_size": 4},
        {"file": "a.h5", "name": "/never_written", "type_class": "compound", "type_size": 32},
        {"file": "b.h5", "name": "/x", "type_class": "integer", "type_size": 8}]}]  # fmt: skip
    assert trace_insights.element_type(["a.h5"], calls, traces) == "float4"
    assert trace_insights.element_type(["a.h5", "b.h5"], [], traces) == "mixed"
    assert trace_insights.element_type(["a.h5"], calls, []) is None
    traces[0]["datasets"][0]["type_class"] = None  # schema 3: no class recorded
    assert trace_insights.element_type(["a.h5"], calls, traces) is None


def test_an_unknown_element_type_on_the_querys_side_is_not_compared():
    m = {"interface": "hdf5", "layout": "chunked", "element_type": "compound32"}
    stored = signature.Signature(dict(m))
    assert signature.same_motif(signature.Signature({**m, "element_type": "unknown"}), stored)
    assert not signature.same_motif(stored, signature.Signature({**m, "element_type": "unknown"}))
    assert not signature.same_motif(signature.Signature({**m, "element_type": "float4"}), stored)
    assert not signature.same_motif(signature.Signature({**m, "layout": "unknown"}), stored)


# ----------------------------------------------------------------------------- verified


SUMMARY = {
    "study": "h5bench-compound",
    "space": "local",
    "command": "mpiexec -n 2 ./h5bench_write cfg",
    "best_settings": {f"s{i}": "x" for i in range(7)},
    # the winner (7 settings) measured 2.0x; reduced to one setting, verified on its own: 1.03x
    "final": {"improved": True, "speedup": 2.0, "p_nominal": 0.001,
              "pair_ratios": [1.8, 2.0, 2.2]},
    "minimal": {"settings": {"cb_buffer_size": "4194304"},
                "verified": {"improved": True, "speedup": 1.03, "p_nominal": 0.04, "pairs": 4,
                             "wins": 4, "verdict": "faster",
                             "pair_ratios": [1.01, 1.02, 1.04, 1.05]}},
    "recommended": {"cb_buffer_size": "4194304"},
}  # fmt: skip


def _sig():
    return signature.Signature({"interface": "hdf5", "element_type": "compound32"}, {"ranks": 2})


def test_the_entry_is_the_verified_recommendation_not_the_winners_headline():
    e = match.entry_from_summary(SUMMARY, _sig())
    assert e.settings == {"cb_buffer_size": "4194304"}  # what best.xml holds
    assert (e.speedup, e.p_value, e.improved) == (1.03, 0.04, True)
    assert e.spread == {"min": 1.01, "median": pytest.approx(1.03), "max": 1.05, "pairs": 4}


def test_without_a_reduction_the_winners_own_verification_is_the_recommendations():
    s = {**SUMMARY, "minimal": {"settings": {"cb_buffer_size": "4194304"}},
         "recommended": {"cb_buffer_size": "4194304"}}  # fmt: skip
    assert match.entry_from_summary(s, _sig()).speedup == 2.0
    nothing = {**SUMMARY, "final": {"improved": False, "speedup": 0.97}, "recommended": {},
               "minimal": {"settings": {}}}  # fmt: skip
    e = match.entry_from_summary(nothing, _sig())
    assert (e.settings, e.improved, e.speedup) == ({}, False, 0.97)


def test_kb_add_list_and_suggest_show_the_verified_speedup(tmp_path, capsys):
    study = tmp_path / "study"
    study.mkdir()
    (study / "summary.json").write_text(json.dumps(SUMMARY))
    profile = _profile_and_trace(tmp_path, "compound", 32, "kb-profile.json")
    db = str(tmp_path / "kb.sqlite")
    assert main(["kb", "--kb", db, "add", str(study), "--profile", str(profile)]) == 0
    capsys.readouterr()
    assert main(["kb", "--kb", db, "list"]) == 0
    out = capsys.readouterr().out
    assert "1.03x" in out and "2.00x" not in out and "cb_buffer_size=4194304" in out
    out_xml = tmp_path / "s.xml"
    assert main(["kb", "--kb", db, "suggest", "--profile", str(profile), "-o", str(out_xml)]) == 0
    out = capsys.readouterr().out
    assert "verified 1.03x p=0.04" in out and "suggested: cb_buffer_size=4194304" in out
    # the contiguous (float) run of the same program is another motif: no "same motif" evidence
    contig = _profile_and_trace(tmp_path, "float", 4, "contig.json")
    assert main(["kb", "--kb", db, "suggest", "--profile", str(contig), "-o", "-"]) == 0
    out = capsys.readouterr().out
    assert "same motif" not in out and "another motif" in out


def test_an_entry_without_a_speedup_lists_as_a_dash_not_dash_x():
    from types import SimpleNamespace

    from iotune.kb import cli as kb_cli

    some = {"cb_nodes": "2"}
    assert kb_cli.headline(SimpleNamespace(speedup=None, verdict={}, settings=some)) == "-"
    assert kb_cli.headline(SimpleNamespace(speedup=1.5, verdict={}, settings=some)) == "1.50x"


def test_a_study_that_kept_the_defaults_is_not_listed_as_verified(tmp_path, capsys):
    """An outside tester: `kb list`/`suggest` showed a study that found nothing as 'verified
    0.38x (no 90% interval from 2 pairs ...) p=0.75 ... :' with an empty list of settings."""
    nothing = {**SUMMARY, "final": {"improved": False, "speedup": 0.38}, "recommended": {},
               "minimal": {"settings": {}}}  # fmt: skip
    study = tmp_path / "study"
    study.mkdir()
    (study / "summary.json").write_text(json.dumps(nothing))
    profile = _profile_and_trace(tmp_path, "compound", 32, "kb-profile.json")
    db = str(tmp_path / "kb.sqlite")
    assert main(["kb", "--kb", db, "add", str(study), "--profile", str(profile)]) == 0
    capsys.readouterr()
    assert main(["kb", "--kb", db, "list"]) == 0
    out = capsys.readouterr().out
    assert "none (the defaults were kept)" in out and "0.38x" not in out
    good = tmp_path / "good"
    good.mkdir()
    (good / "summary.json").write_text(json.dumps(SUMMARY))
    contig = _profile_and_trace(tmp_path, "float", 4, "contig.json")  # another motif's gain
    assert main(["kb", "--kb", db, "add", str(good), "--profile", str(contig)]) == 0
    capsys.readouterr()
    assert main(["kb", "--kb", db, "suggest", "--profile", str(profile), "-o", "-"]) == 0
    out = capsys.readouterr().out
    evidence = [ln for ln in out.splitlines() if "evidence:" in ln]
    kept = [ln for ln in evidence if "kept the defaults at " in ln]
    assert len(evidence) == 2 and len(kept) == 1 and "verified" not in kept[0], out
    assert not any(ln.rstrip().endswith(":") for ln in evidence), out
