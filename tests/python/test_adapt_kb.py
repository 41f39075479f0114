"""The adaptive mode reading an exported knowledge base (IOTUNE_ADAPT_KB, `iotune adapt --kb`),
end to end: the knowledge base is made the way a site makes it (the Python signature of a real
profiled run, exported with store.export_json as `iotune kb export` does); the runtime matches
its learning phase's motif against it, applies the stored settings to the later phases (read
back), the guard reverts them when slower, and bad input leaves the application alone."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import launcher, run_mpi

from iotune import storage_layout
from iotune.kb import signature, store

FILL = ["full", "3", "100000"]
STORED = {"fill_time": "never", "cb_buffer_size": "1048576"}


def _kb(tmp_path, test_prog, libiotune, motif_change=None, stored=STORED, argv=FILL):
    """An export with one entry: the signature of a profiled, traced run of the program."""
    prof = tmp_path / "profiled"
    prof.mkdir()
    run_mpi(2, [test_prog("fill_probe"), *argv], cwd=prof, preload=libiotune,
            env={"IOTUNE_PROFILE": str(prof / "p.json"), "IOTUNE_TRACE": "1"})  # fmt: skip
    sig = signature.from_profile(prof / "p.json")
    sig.motif.update(motif_change or {})
    entry = store.Entry(signature=sig, settings=dict(stored), improved=True, speedup=1.7,
                        study="fill-study")  # fmt: skip
    path = tmp_path / "kb.json"
    path.write_text(json.dumps(store.export_json([entry]), indent=1))
    return path


def _run(tmp, prog, libiotune, kb, argv=FILL, env=None):
    tmp.mkdir()
    e = {"IOTUNE_PROFILE": str(tmp / "p.json"), "IOTUNE_MODE": "adaptive",
         "IOTUNE_ADAPT_KB": str(kb), **(env or {})}  # fmt: skip
    r = run_mpi(2, [prog, *argv], env=e, cwd=tmp, preload=libiotune)
    return json.loads((tmp / "p.json").read_text()), r


def _hints(p):
    return {f["name"]: (f.get("hints") or {}).get("cb_buffer_size") for f in p["files"]}


def _same(a, b, n=3):
    """The files of two runs hold the same data (h5diff: every element, written or not)."""
    for s in range(n):
        r = subprocess.run(["h5diff", a / f"chunked.{s}.h5", b / f"chunked.{s}.h5"],
                           capture_output=True, text=True)  # fmt: skip
        assert r.returncode == 0, r.stdout


@pytest.fixture
def baseline(tmp_path, test_prog):
    base = tmp_path / "base"
    base.mkdir()
    run_mpi(2, [test_prog("fill_probe"), *FILL], cwd=base)
    return base


def test_the_stored_settings_of_the_learning_phases_motif_are_applied(
    tmp_path, test_prog, libiotune, baseline
):
    kb = _kb(tmp_path, test_prog, libiotune)
    p, _ = _run(tmp_path / "adapt", test_prog("fill_probe"), libiotune, kb)
    phases = p["adaptive"]["phases"]
    learn = phases[0]
    assert "KB" in learn["fired"]
    stored = json.loads(kb.read_text())["entries"][0]
    # Python's and C's agree, but for the element type, which the runtime does not see (it is
    # then not compared: signature.LENIENT_FIELDS)
    seen = dict(learn["kb"]["motif"])
    assert seen.pop("element_type") == "unknown" and stored["signature"]["motif"]["element_type"]
    assert seen == {k: v for k, v in stored["signature"]["motif"].items() if k != "element_type"}
    assert learn["kb"]["match"]["uid"] == stored["uid"]
    assert learn["kb"]["match"]["study"] == "fill-study"
    for x in phases[1:2]:  # the guard may act from the second optimised phase on
        kb_applied = {a["name"]: a["value"] for a in x["applied"] if a["rule"] == "KB"}
        assert kb_applied == STORED
        # the rules leave what the stored study set (IOT-1 proposes fill_time too)
        assert not any(a["name"] == "fill_time" and a["rule"] != "KB" for a in x["applied"])
    assert _hints(p)["chunked.0.h5"] != "1048576"  # learning: defaults
    assert _hints(p)["chunked.1.h5"] == "1048576"  # read back from MPI-IO
    lays = storage_layout.read_layouts(tmp_path / "adapt" / "chunked.1.h5")
    assert lays["/data"].fill_time == "never"
    _same(baseline, tmp_path / "adapt")


def test_another_studys_chunk_dimensions_are_not_applied(tmp_path, test_prog, libiotune, baseline):
    """An export shared by another site held chunk=1,1 beside its other settings: the entry
    matched this program by its motif, not by its datasets' shapes, and the mode applied 1x1
    chunks (only the guard could take them back, after slow phases). Chunk dimensions from the
    knowledge base are left out and the profile and the summary say so; the rest applies."""
    from iotune.adapt import format_phases

    kb = _kb(tmp_path, test_prog, libiotune, stored={**STORED, "chunk": "1,1"})
    p, r = _run(tmp_path / "adapt", test_prog("fill_probe"), libiotune, kb)
    phases = p["adaptive"]["phases"]
    assert [x["name"] for x in phases[0]["kb"]["match"]["not_applied"]] == ["chunk"]
    kb_applied = {a["name"]: a["value"] for a in phases[1]["applied"] if a["rule"] == "KB"}
    assert kb_applied == STORED
    own = storage_layout.read_layouts(tmp_path / "base" / "chunked.1.h5")["/data"].chunk
    lays = storage_layout.read_layouts(tmp_path / "adapt" / "chunked.1.h5")
    assert lays["/data"].chunk == own and lays["/data"].fill_time == "never"
    assert "not applied from it: chunk=1,1 (the stored study's dataset shapes" in format_phases(p)
    assert r.stderr == ""
    _same(baseline, tmp_path / "adapt")


SETTINGS_VECTORS = json.loads(
    (Path(__file__).resolve().parents[2] / "tests" / "vectors" / "kb" / "settings.json").read_text()
)["cases"]


@pytest.fixture(scope="module")
def stored_signature(tmp_path_factory, test_prog, libiotune):
    """The signature of one profiled, traced run of the program (made once for the module)."""
    prof = tmp_path_factory.mktemp("profiled")
    run_mpi(2, [test_prog("fill_probe"), *FILL], cwd=prof, preload=libiotune,
            env={"IOTUNE_PROFILE": str(prof / "p.json"), "IOTUNE_TRACE": "1"})  # fmt: skip
    return signature.from_profile(prof / "p.json")


@pytest.mark.parametrize("case", SETTINGS_VECTORS, ids=[c["name"] for c in SETTINGS_VECTORS])
def test_stored_settings_are_applied_as_the_shared_vectors_say(
    tmp_path, test_prog, libiotune, baseline, stored_signature, case
):
    """tests/vectors/kb/settings.json, the runtime's side (the import side: test_kb_inputs.py).
    An outside tester's export held chunk_size=1 (one chunk per element: the registry's minimum
    is now one page) and transfer_mode=independent, which SIO-1 gives as offline advice only;
    the mode applied both. A value the registry refuses is said once, naming the file, the
    entry, its line and the key; a parameter params.tsv marks offline-only is left out
    silently; both are in the match's not_applied with why, and the rest of the entry
    applies. The export is edited after it was written: the runtime does not check uids."""
    from iotune.adapt import format_phases

    entry = store.Entry(signature=stored_signature, settings=dict(STORED), improved=True,
                        speedup=1.7, study="fill-study")  # fmt: skip
    data = store.export_json([entry])
    data["entries"][0]["settings"].update(case["settings"])
    kb = tmp_path / "kb.json"
    kb.write_text(json.dumps(data, indent=1))
    p, r = _run(tmp_path / "adapt", test_prog("fill_probe"), libiotune, kb)
    phases = p["adaptive"]["phases"]
    left = {x["name"]: x for x in phases[0]["kb"]["match"]["not_applied"]}
    kb_applied = {a["name"]: a["value"] for a in phases[1]["applied"] if a["rule"] == "KB"}
    said = [x for x in r.stderr.splitlines() if "IOTUNE_ADAPT_KB" in x]
    rest = {k: v for k, v in STORED.items() if k not in case["settings"]}
    assert {k: v for k, v in kb_applied.items() if k in rest} == rest  # the rest applies
    for name, want in case["runtime"].items():
        value = case["settings"][name]
        if want == "applied":
            assert name not in left and kb_applied.get(name) == value, (left, kb_applied)
            continue
        assert name not in kb_applied, kb_applied
        assert left[name]["value"] == value and want["why"] in left[name]["why"], left
        assert f"not applied from it: {name}={value} (" in format_phases(p)
        if not want["said"]:
            assert said == [], r.stderr
            continue
        line = next(i for i, x in enumerate(kb.read_text().splitlines(), 1) if f'"{name}"' in x)
        assert len(said) == 1, r.stderr
        assert f"IOTUNE_ADAPT_KB={kb}: entry 0 (line {line}): {name}={value}: " in said[0], said
        assert want["why"] in said[0] and said[0].endswith("; not applied"), said
    _same(baseline, tmp_path / "adapt")


@pytest.mark.parametrize("mode", ["reused", "partial"])
def test_a_stored_fill_time_never_applies_only_where_every_element_is_written(
    tmp_path, test_prog, libiotune, mode
):
    """fill_time=never keeps the data only when every element is written (IOT-1 applies it
    only where fully_written is yes); a knowledge base's fill_time=never was applied to a
    program that writes half of each dataset, in space that held another dataset's values:
    the elements never written read back those values instead of the fill value (h5diff
    differed from the run without iotune). params.tsv guards fill_time by IOT-1, so the entry's
    value is left out where IOT-1's condition does not hold, with the comparison that failed;
    the rest of the entry applies. (The fully written case, where it applies: the first test
    and the shared vectors.)"""
    from iotune.adapt import format_phases

    argv = [mode, "3", "100000"]
    base = tmp_path / "base"
    base.mkdir()
    run_mpi(2, [test_prog("fill_probe"), *argv], cwd=base)
    kb = _kb(tmp_path, test_prog, libiotune, argv=argv)  # this program's own signature
    p, r = _run(tmp_path / "adapt", test_prog("fill_probe"), libiotune, kb, argv)
    phases = p["adaptive"]["phases"]
    assert phases[0]["kb"]["match"]["study"] == "fill-study"  # the entry matched
    assert "IOT-1" not in phases[0]["fired"]
    left = {x["name"]: x for x in phases[0]["kb"]["match"]["not_applied"]}
    assert left["fill_time"]["value"] == "never"
    why = "only where rule IOT-1 holds: fully_written == yes (here no)"
    assert left["fill_time"]["why"] == why, left
    for x in phases[1:]:
        kb_applied = {a["name"]: a["value"] for a in x["applied"] if a["rule"] == "KB"}
        assert kb_applied == {"cb_buffer_size": "1048576"}, x["applied"]
        assert not any(a["name"] == "fill_time" for a in x["applied"])
    for s in range(3):
        lays = storage_layout.read_layouts(tmp_path / "adapt" / f"chunked.{s}.h5")
        assert lays["/data"].fill_time != "never"
    assert f"not applied from it: fill_time=never ({why})" in format_phases(p)
    assert "IOTUNE_ADAPT_KB" not in r.stderr  # a valid entry: nothing to warn about
    _same(base, tmp_path / "adapt")


def test_a_stored_fill_time_never_keeps_the_applications_own_fill_value(
    tmp_path, test_prog, libiotune
):
    """Every element written (IOT-1 holds, the entry's fill_time=never passes its guard), but
    the program defines its own fill value: the dataset keeps its fill time, as for a rule's or
    a control file's fill_time=never, and says so (end to end: test_adapt.py's
    test_a_setting_the_file_did_not_take_is_not_reported_as_applied reads a made profile)."""
    from iotune.adapt import format_phases

    argv = ["ownfill", "3", "100000"]
    base = tmp_path / "base"
    base.mkdir()
    run_mpi(2, [test_prog("fill_probe"), *argv], cwd=base)
    kb = _kb(tmp_path, test_prog, libiotune, argv=argv)
    p, r = _run(tmp_path / "adapt", test_prog("fill_probe"), libiotune, kb, argv)
    phases = p["adaptive"]["phases"]
    assert "fill_time" not in {x["name"] for x in phases[0]["kb"]["match"]["not_applied"]}
    notes = {f["name"]: " ".join(f.get("hdf5_notes") or []) for f in p["files"]}
    said = "chunked.1.h5:/data: fill_time=never NOT applied: the application defined a fill value"
    assert said in notes["chunked.1.h5"], notes
    text = format_phases(p)
    assert "fill_time=never (KB) NOT in effect: the application defined a fill value" in text
    for s in range(3):
        lays = storage_layout.read_layouts(tmp_path / "adapt" / f"chunked.{s}.h5")
        assert lays["/data"].fill_time != "never"
    _same(base, tmp_path / "adapt")


def test_a_stored_value_the_runtime_refuses_leaves_the_parameter_to_the_rules(
    tmp_path, test_prog, libiotune
):
    """An entry's fill_time=sometimes is refused (said once) and sets nothing: the rule that
    proposes fill_time (IOT-1) is not held back by it (an outside tester's entry kept SIO-7's
    romio_cb_write from the phases and the summary blamed a control file there was none of)."""
    kb = _kb(tmp_path, test_prog, libiotune, stored={"fill_time": "sometimes"})
    p, r = _run(tmp_path / "adapt", test_prog("fill_probe"), libiotune, kb)
    assert "fill_time=sometimes" in r.stderr and "not applied" in r.stderr, r.stderr
    applied = {(a["rule"], a["name"], a["value"]) for a in p["adaptive"]["phases"][1]["applied"]}
    assert ("IOT-1", "fill_time", "never") in applied, applied


def test_an_override_from_the_knowledge_base_is_not_blamed_on_a_control_file(
    tmp_path, test_prog, libiotune, baseline
):
    """The program chunks its datasets itself; an entry's chunk_size replaces that in the
    optimised phases. The one line that says so named the control file as the winner, where
    there was none (an outside tester)."""
    kb = _kb(tmp_path, test_prog, libiotune, stored={"chunk_size": "65536"})
    p, r = _run(tmp_path / "adapt", test_prog("fill_probe"), libiotune, kb)
    said = [ln for ln in r.stderr.splitlines() if "overrides the application's own chunk=" in ln]
    assert len(said) == 1, r.stderr
    assert "[adaptive mode]" in said[0] and "docs/adaptive.md" in said[0], said
    assert "control file" not in said[0], said
    _same(baseline, tmp_path / "adapt")


def test_the_guard_reverts_the_stored_settings_when_slower(tmp_path, test_prog, libiotune):
    kb = _kb(tmp_path, test_prog, libiotune)
    argv = ["full", "4", "100000"]
    p, _ = _run(tmp_path / "adapt", test_prog("fill_probe"), libiotune, kb, argv,
                env={"IOTUNE_TEST_SLOW_RULE": "KB:1000"})  # fmt: skip
    phases = p["adaptive"]["phases"]
    assert phases[1]["guard"]["slow"] and phases[1]["guard"]["reverted"] == []
    assert "KB" in phases[2]["guard"]["reverted"]
    # what the profile says phase 1 had is what it had, though the KB was reverted since:
    # the stored fill time, not IOT-1's
    assert not any(a["rule"] == "IOT-1" for a in phases[1]["applied"])
    assert not any(a["rule"] == "KB" for a in phases[3]["applied"])
    assert _hints(p)["chunked.3.h5"] != "1048576"


def test_another_motif_is_not_applied(tmp_path, test_prog, libiotune, baseline):
    kb = _kb(tmp_path, test_prog, libiotune, motif_change={"io_mix": "read"})
    p, _ = _run(tmp_path / "adapt", test_prog("fill_probe"), libiotune, kb)
    learn = p["adaptive"]["phases"][0]
    assert learn["kb"]["match"] is None and "KB" not in learn["fired"]
    assert all(a["rule"] != "KB" for x in p["adaptive"]["phases"] for a in x["applied"])
    _same(baseline, tmp_path / "adapt")


@pytest.mark.parametrize(
    "text,said",
    [("{not json", "line 1"),
     ('{"schema": "something-else", "entries": []}', "not an iotune knowledge-base export"),
     ("SQLite format 3\0", "line 1"),
     ('{"schema": "iotune-kb-export", "version": 1, "entries": [\n{"signature": {"motif": {}},'
      ' "settings": {}, "speedup": "fast"}]}', "entry 0 (line 2): 'speedup' must be a number"),
     # no double holds it: read as inf, it was written back into the profile as `inf`, not JSON
     ('{"schema": "iotune-kb-export", "version": 1, "entries": [\n{"signature": {"motif": {}},'
      ' "settings": {}, "speedup": 1e999}]}', "line 2: a number too large for a double"),
     # a signature key that is not its motif's: `iotune kb import` refuses it as edited, and so
     # does the runtime now (it applied the entry; tests/vectors/kb/import.json has more)
     ('{"schema": "iotune-kb-export", "version": 1, "entries": [\n{"signature": {"version": 2,'
      ' "key": "000000000000", "motif": {"interface": "hdf5"}}, "settings": {}}]}',
      "entry 0 (line 2): signature.key '000000000000' is not its motif's key (5c08baef08f2)"),
     # a name twice: Python takes the last, the runtime took the first; both refuse it now
     ('{"schema": "iotune-kb-export", "version": 1,\n "version": 2, "entries": []}',
      'line 2: the name "version" twice in one object'),
     # the key's own line, not only its entry's
     ('{"schema": "iotune-kb-export", "version": 1, "entries": [\n{"signature": {"motif": {}},'
      '\n "settings": {"cb_buffer_size": null}}]}',
      "entry 0 (line 2): setting 'cb_buffer_size' (line 3) is not a string")],
)  # fmt: skip
def test_a_bad_knowledge_base_is_said_once_and_the_run_goes_on(
    tmp_path, test_prog, libiotune, baseline, text, said
):
    kb = tmp_path / "bad.json"
    kb.write_text(text)
    p, r = _run(tmp_path / "adapt", test_prog("fill_probe"), libiotune, kb)
    lines = [x for x in r.stderr.splitlines() if "IOTUNE_ADAPT_KB" in x]
    assert len(lines) == 1 and said in lines[0] and str(kb) in lines[0], r.stderr
    learn = p["adaptive"]["phases"][0]
    assert learn["kb"]["match"] is None and "error" in learn["kb"]
    assert "IOT-1" in learn["fired"]  # the rules go on without it
    _same(baseline, tmp_path / "adapt")


@pytest.mark.parametrize("kind", ["fifo", "directory", "device"])
def test_a_knowledge_base_that_is_not_a_regular_file_is_refused_without_blocking(
    tmp_path, test_prog, libiotune, kind
):
    """A FIFO is opened without blocking (no writer ever comes); a directory or a device is
    said as what it is, not as a parse error or a size."""
    kb = {"fifo": tmp_path / "kb.fifo", "directory": tmp_path, "device": "/dev/zero"}[kind]
    if kind == "fifo":
        os.mkfifo(kb)
    p, r = _run(tmp_path / "adapt", test_prog("fill_probe"), libiotune, kb)
    lines = [x for x in r.stderr.splitlines() if "IOTUNE_ADAPT_KB" in x]
    assert len(lines) == 1 and "not a regular file" in lines[0], r.stderr
    assert "error" in p["adaptive"]["phases"][0]["kb"]


def test_cli_adapt_kb(tmp_path, test_prog, libiotune, build_dir):
    kb = _kb(tmp_path, test_prog, libiotune)
    run = tmp_path / "cli"
    run.mkdir()
    cmd = [sys.executable, "-m", "iotune", "adapt", "--kb-file", str(kb), "--out",
           str(run / "a.json"), "--", *launcher(build_dir), "2", str(test_prog("fill_probe")),
           *FILL]  # fmt: skip
    r = subprocess.run(cmd, cwd=run, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "entry of study fill-study (same motif" in r.stdout
    assert "cb_buffer_size=1048576 (KB)" in r.stdout
    missing = subprocess.run([*cmd[:5], str(tmp_path / "none.json"), *cmd[6:]], cwd=run,
                             capture_output=True, text=True, timeout=120)  # fmt: skip
    assert missing.returncode == 2 and "no such file" in missing.stderr


def test_h5diff_present():
    assert shutil.which("h5diff")


def test_cli_adapt_kb_not_a_regular_file_says_so(tmp_path):
    fifo = tmp_path / "kb.fifo"
    os.mkfifo(fifo)
    for kb, what in ((fifo, "not a regular file"), (tmp_path, "a directory")):
        r = subprocess.run([sys.executable, "-m", "iotune", "adapt", "--kb-file", str(kb), "--",
                            "true"], capture_output=True, text=True, timeout=60)  # fmt: skip
        assert r.returncode == 2 and r.stderr.strip() == f"iotune adapt: --kb-file {kb}: {what}"


def test_a_knowledge_base_beyond_the_size_bound_is_refused_before_it_is_parsed(
    tmp_path, test_prog, libiotune
):
    """Every rank parses the file, so its size bounds every rank's memory: an outside
    tester's 64 MB export cost 490 MB per rank (31 GB for 64 ranks of a node). Now at most
    16 MiB (about 10,000 entries) is read."""
    kb = tmp_path / "big.json"
    with open(kb, "w") as f:
        f.write('{"schema": "iotune-kb-export", "version": 1, "entries": []')
        f.write(" " * (16 << 20))
        f.write("}")
    p, r = _run(tmp_path / "adapt", test_prog("fill_probe"), libiotune, kb)
    lines = [x for x in r.stderr.splitlines() if "IOTUNE_ADAPT_KB" in x]
    assert len(lines) == 1 and f"larger than {16 << 20} bytes" in lines[0], r.stderr
