"""Hostile knowledge-base input (issue 23): every imported entry is checked in full before
anything is stored (types, finite numbers, settings valid as a control file, its uid), a bad
file is one message naming it and its entry, the store is never poisoned, and the commands that
only read create nothing."""

import json
import os
import sqlite3
from pathlib import Path

import pytest

from iotune import kb
from iotune.cli import main
from iotune.kb import signature, store

MOTIF = {"interface": "hdf5", "transfer_mode": "collective", "access_pattern": "sequential",
         "size_class": "large", "file_mode": "shared", "io_mix": "write", "layout": "chunked",
         "filters": "no", "fs_kind": "local"}  # fmt: skip


def _entry(settings=None, speedup=1.5, motif=None, **kw):
    sig = signature.Signature(dict(motif or MOTIF), {"ranks": 2}, {"host": "x86_64:vm"})
    return store.Entry(signature=sig, settings={"fill_time": "never"} if settings is None
                       else settings, space="local", speedup=speedup, p_value=0.01,
                       improved=True, study=kw.pop("study", "s"), **kw)  # fmt: skip


def _export(tmp_path, items, name="in.json"):
    path = tmp_path / name
    path.write_text(json.dumps({"schema": "iotune-kb-export", "version": 1, "entries": items}))
    return path


def _kb(tmp_path, *args):
    return main(["kb", "--kb", str(tmp_path / "kb.sqlite"), *args])


def _stored(tmp_path):
    base = kb.KnowledgeBase(kb.resolve_url(str(tmp_path / "kb.sqlite")))
    try:
        return base.entries()
    finally:
        base.close()


def test_a_valid_export_imports(tmp_path, capsys):
    good = _entry().to_json()
    assert _kb(tmp_path, "import", str(_export(tmp_path, [good]))) == 0
    assert [e.uid for e in _stored(tmp_path)] == [good["uid"]]


def _with_uid(item):
    """An entry edited and given the uid of its new content (as a forger would)."""
    item = dict(item)
    e = store.Entry.from_json(item)
    item["uid"] = e.uid
    return item


@pytest.mark.parametrize(
    "change, why",
    [
        (lambda d: d.pop("uid"), "no uid"),
        (lambda d: d.update(uid="not-hex"), "uid"),
        (lambda d: d.update(speedup="nan"), "speedup is not a number"),
        (lambda d: d.update(speedup=[1]), "speedup"),
        (lambda d: d.update(speedup=1e300), "speedup is 1e+300, outside [0, 1.84467e+19]"),
        (lambda d: d.update(speedup=-2.0), "speedup"),
        (lambda d: d.update(p_value=7), "p_value"),
        (lambda d: d.update(improved="yes"), "improved"),
        (lambda d: d.update(settings={"chunk_cache_slots": "many"}), "settings"),
        (lambda d: d.update(settings={"no such/key": "1"}), "settings"),
        (lambda d: d.update(settings={"fill_time": 3}), "settings.fill_time"),
        (lambda d: d.update(settings=["fill_time"]), "settings"),
        (lambda d: d["signature"].update(motif={}), "motif"),
        (lambda d: d["signature"].update(motif={"interface": 4}), "motif.interface"),
        (lambda d: d["signature"].update(version="1"), "signature.version"),
        (lambda d: d["signature"]["scale"].update(ranks=-1), "signature.scale.ranks"),
        (lambda d: d["signature"]["scale"].update(ranks=0), "scale.ranks is 0, outside [1, "),
        (lambda d: d["signature"]["scale"].update(ranks=10**30), "outside [1, 1.84467e+19]"),
        (lambda d: d.update(leaders=[{"settings": {"alignment": "x"}}]), "leaders[0].settings"),
        (lambda d: d.update(leaders=[{"settings": {}, "runs": 1.5}]), "leaders[0].runs"),
        (lambda d: d.update(spread={"min": "low"}), "spread.min"),
        (lambda d: d.update(study={"a": 1}), "study"),
    ],
)  # fmt: skip
def test_a_bad_entry_is_refused_with_one_message_and_nothing_stored(tmp_path, capsys, change, why):
    good = _entry(study="good").to_json()
    bad = json.loads(json.dumps(_entry(study="bad").to_json()))
    change(bad)
    if "uid" in bad and bad["uid"] != "not-hex" and why not in ("no uid",):
        try:
            bad = _with_uid(bad)  # the uid matches: only the content is wrong
        except (ValueError, TypeError):
            pass
    path = _export(tmp_path, [good, bad])
    assert _kb(tmp_path, "import", str(path)) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{path}: entry 1: " in err and why in err, err
    assert _stored(tmp_path) == []  # not even the good entry before it


SETTINGS_VECTORS = json.loads(
    (Path(__file__).resolve().parents[2] / "tests" / "vectors" / "kb" / "settings.json").read_text()
)["cases"]


@pytest.mark.parametrize("case", SETTINGS_VECTORS, ids=[c["name"] for c in SETTINGS_VECTORS])
def test_stored_settings_are_imported_as_the_shared_vectors_say(tmp_path, capsys, case):
    """tests/vectors/kb/settings.json, the import side (the runtime's: test_adapt_kb.py): a
    value outside the registry's range (chunk_size=1, below its minimum of one page) refuses
    the file, naming it, the entry and the key; a setting that is only offline advice
    (transfer_mode) is a valid entry: kb suggest and tune's warm start use it."""
    good = _entry(study="good").to_json()
    item = _entry(settings=dict(case["settings"]), study="case").to_json()
    path = _export(tmp_path, [good, item])
    status = _kb(tmp_path, "import", str(path))
    err = capsys.readouterr().err
    if case["import"] == "stored":
        assert status == 0, err
        assert {e.uid for e in _stored(tmp_path)} == {good["uid"], item["uid"]}
    else:
        assert status == 1 and err.count("\n") == 1, err
        assert f"{path}: entry 1: {case['import']}" in err, err
        assert _stored(tmp_path) == []


@pytest.mark.parametrize(
    "content, why",
    [
        (b'{"schema": "iotune-kb-export", "version": 1, "entries": [{"speedup": NaN}]}', "NaN"),
        (b'{"schema": "iotune-kb-export", "version": 1e999, "entries": []}', "finite"),
        (b'{"schema": "iotune-kb-export", "version": [], "entries": []}', "version"),
        (b'{"schema": "iotune-kb-export", "version": "1", "entries": []}', "version"),
        (b'{"schema": "iotune-kb-export", "entries": ' + b"[" * 5000 + b"]" * 5000 + b"}",
         "nested"),
        (b"\xff\xfe\x00binary", "UTF-8"),
        (b'["iotune-kb-export"]', "not an iotune knowledge-base export"),
    ],
)  # fmt: skip
def test_a_bad_file_is_one_message(tmp_path, capsys, content, why):
    path = tmp_path / "in.json"
    path.write_bytes(content)
    assert _kb(tmp_path, "import", str(path)) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(path) in err and why in err, err


def test_devices_and_fifos_are_refused_at_once(tmp_path, capsys):
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    good = _export(tmp_path, [_entry().to_json()], "good.json")
    assert _kb(tmp_path, "import", "/dev/zero", str(fifo), str(good)) == 1
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 2 and "/dev/zero" in err[0] and str(fifo) in err[1]
    assert len(_stored(tmp_path)) == 1  # the good file after them still imported


def test_a_poisoned_row_is_skipped_and_suggest_still_works(tmp_path, capsys):
    """A row written by another program (or an older iotune) with invalid settings: list skips
    and counts it, suggest uses the valid entries."""
    assert _kb(tmp_path, "import", str(_export(tmp_path, [_entry().to_json()]))) == 0
    bad = _entry(settings={"chunk_cache_slots": "many"}, study="poison", speedup=9.0)
    with sqlite3.connect(tmp_path / "kb.sqlite") as c:
        c.execute("insert into iotune_kb_entries (uid, created, signature_key, "
                  "signature_version, data) values (?, ?, ?, ?, ?)",
                  (bad.uid, "2026", bad.signature.key, 1, json.dumps(bad.to_json())))  # fmt: skip
    capsys.readouterr()
    assert _kb(tmp_path, "list") == 0
    out = capsys.readouterr()
    assert "poison" not in out.out and "1 unreadable entries skipped" in out.err
    entries = _stored(tmp_path)
    s = kb.suggest(entries, entries[0].signature)
    assert s.settings == {"fill_time": "never"}


def test_add_refuses_to_store_an_invalid_entry(tmp_path):
    base = kb.KnowledgeBase(kb.resolve_url(str(tmp_path / "kb.sqlite")))
    with pytest.raises(kb.KBError, match="entry not stored: settings"):
        base.add(_entry(settings={"alignment": "huge"}))
    with pytest.raises(kb.KBError, match="speedup"):
        base.add(_entry(speedup=float("nan")))
    assert base.entries() == []
    base.close()


@pytest.mark.parametrize("action", [["list"], ["list", "--json"], ["show", "1"], ["export"],
                                    ["suggest", "--profile", "p.json"]])  # fmt: skip
def test_read_only_commands_on_a_missing_kb_create_nothing(tmp_path, capsys, action):
    where = tmp_path / "no" / "such" / "dir" / "kb.sqlite"
    assert main(["kb", "--kb", str(where), *action]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "does not exist" in err and str(where) in err
    assert not (tmp_path / "no").exists()


def test_read_only_commands_create_no_tables_in_an_empty_file(tmp_path, capsys):
    empty = tmp_path / "kb.sqlite"
    empty.touch()
    assert main(["kb", "--kb", str(empty), "list"]) == 1
    assert "does not exist" in capsys.readouterr().err
    assert empty.stat().st_size == 0


def test_a_fifo_as_the_knowledge_base_is_refused(tmp_path, capsys):
    fifo = tmp_path / "kb.sqlite"
    os.mkfifo(fifo)
    assert main(["kb", "--kb", str(fifo), "list"]) == 1
    assert "not a regular file" in capsys.readouterr().err


def test_kb_add_of_a_damaged_summary_is_one_message(tmp_path, capsys):
    study = tmp_path / "study"
    study.mkdir()
    profile = Path(__file__).parents[1] / "data" / "fuzz" / "profile" / "ok_real_gcrmio.json"
    (study / "kb-profile.json").write_text(profile.read_text())
    for text in ('{"final": {"pair_ratios": ["x"]}}', '{"final": [], "recommended": 3}',
                 '{"final": {"speedup": NaN}}', "[1]"):  # fmt: skip
        (study / "summary.json").write_text(text)
        status = _kb(tmp_path, "add", str(study), "--profile", str(study / "kb-profile.json"))
        err = capsys.readouterr().err
        assert status == 1 and err.count("\n") == 1 and "summary" in err, err
        assert "no signature" not in err  # the profile was fine: the summary was refused
    assert not (tmp_path / "kb.sqlite").exists() or _stored(tmp_path) == []


def test_kb_list_prints_an_imported_study_name_escaped(tmp_path, capsys):
    hostile = "x\x1b]0;pwned\x07\nforged 99 line"
    assert _kb(tmp_path, "import", str(_export(tmp_path, [_entry(study=hostile).to_json()]))) == 0
    capsys.readouterr()
    assert _kb(tmp_path, "list") == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\x07" not in out and "\nforged" not in out
    assert "x\\x1b]0;pwned\\x07\\nforged 99 line" in out
    assert _kb(tmp_path, "list", "--json") == 0  # JSON stays exact
    assert json.loads(capsys.readouterr().out)[0]["study"] == hostile
