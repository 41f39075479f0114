"""The knowledge base: storing, listing, JSON exchange, bad input (corrupt, foreign, tampered,
newer), concurrent writers, suggestions (another platform, no motif near), warm-start seeds,
and `iotune kb` end to end on a real kernel."""

import json
import multiprocessing
import sqlite3
import subprocess
import sys

import pytest
from conftest import BUILD, launcher

from iotune import kb, space
from iotune.kb import seeds, signature, store

HERE_PLATFORM = {"host": "x86_64:vm", "hdf5": "libhdf5.so.103.3.1", "mpi": "libmpich.so.12"}


def sig(platform=None, ranks=2, **motif):
    m = {
        "interface": "hdf5",
        "transfer_mode": "collective",
        "access_pattern": "sequential",
        "size_class": "large",
        "file_mode": "shared",
        "io_mix": "write",
        "layout": "chunked",
        "filters": "no",
        "fs_kind": "local",
    }
    m.update(motif)
    return signature.Signature(m, {"ranks": ranks}, dict(platform or HERE_PLATFORM))


def entry(settings=None, speedup=1.5, study="s", **kw):
    return store.Entry(
        signature=kw.pop("signature", sig()),
        settings={"fill_time": "never"} if settings is None else settings,
        space="local",
        speedup=speedup,
        p_value=0.01,
        spread={"min": 1.1, "median": 1.5, "max": 1.9, "pairs": 8},
        improved=kw.pop("improved", True),
        study=study,
        **kw,
    )


@pytest.fixture
def base(tmp_path):
    b = kb.KnowledgeBase(kb.resolve_url(str(tmp_path / "kb.sqlite")))
    yield b
    b.close()


def test_add_list_show_and_dedupe(base):
    e = entry()
    rid, new = base.add(e)
    assert new and rid == 1
    assert base.add(e) == (rid, False), "the same entry is stored once"
    rid2, new2 = base.add(entry(study="other"))
    assert new2 and rid2 == 2
    got = base.entries()
    assert [x.study for x in got] == ["s", "other"]
    assert got[0].settings == {"fill_time": "never"}
    assert got[0].signature.key == sig().key
    assert got[0].spread["pairs"] == 8
    assert base.get(1).study == "s" and base.get(e.uid[:8]).study == "s"
    assert base.get(99) is None


def test_export_import_round_trip(base, tmp_path):
    base.add(entry())
    base.add(entry(study="b", signature=sig(io_mix="read")))
    data = json.loads(json.dumps(store.export_json(base.entries())))
    other = kb.KnowledgeBase(kb.resolve_url(str(tmp_path / "other.sqlite")))
    entries = store.import_json(data, "x.json")
    assert other.add_all(entries) == (2, 0)
    assert other.add_all(entries) == (0, 2)
    assert [e.uid for e in other.entries()] == [e.uid for e in base.entries()]


@pytest.mark.parametrize(
    "data, message",
    [
        ({"schema": "something-else"}, "not an iotune knowledge-base export"),
        ([1, 2], "not an iotune knowledge-base export"),
        ({"schema": store.EXPORT_SCHEMA, "version": 99, "entries": []}, "newer iotune"),
        ({"schema": store.EXPORT_SCHEMA, "version": 1, "entries": {}}, "must be a list"),
        ({"schema": store.EXPORT_SCHEMA, "version": 1, "entries": [{"settings": {}}]}, "entry 0"),
    ],
)
def test_foreign_or_broken_exports_are_refused(data, message):
    with pytest.raises(ValueError, match=message):
        store.import_json(data, "x.json")


def test_tampered_export_entry_is_refused():
    e = entry().to_json()
    e["settings"] = {"fill_time": "alloc"}  # changed after export: its uid no longer matches
    data = {"schema": store.EXPORT_SCHEMA, "version": 1, "entries": [e]}
    with pytest.raises(ValueError, match="entry 0: its uid does not match"):
        store.import_json(data, "x.json")


def test_corrupt_file_is_refused(tmp_path):
    bad = tmp_path / "kb.sqlite"
    bad.write_bytes(b"this is not a database at all" * 100)
    with pytest.raises(kb.KBError, match="cannot be read as a database"):
        kb.KnowledgeBase(kb.resolve_url(str(bad)))
    assert bad.read_bytes().startswith(b"this is not"), "left as it was"


def test_foreign_sqlite_database_is_refused_and_left_alone(tmp_path):
    foreign = tmp_path / "other.db"
    con = sqlite3.connect(foreign)
    con.execute("create table studies (id integer)")
    con.commit()
    con.close()
    with pytest.raises(kb.KBError, match="not an iotune knowledge base"):
        kb.KnowledgeBase(kb.resolve_url(str(foreign)))
    tables = {r[0] for r in sqlite3.connect(foreign).execute("select name from sqlite_master")}
    assert tables == {"studies"}


def test_newer_schema_is_refused(base, tmp_path):
    base.add(entry())
    con = sqlite3.connect(tmp_path / "kb.sqlite")
    con.execute("update iotune_kb_meta set value='99' where key='version'")
    con.commit()
    con.close()
    with pytest.raises(kb.KBError, match="newer iotune"):
        kb.KnowledgeBase(kb.resolve_url(str(tmp_path / "kb.sqlite")))


def test_unreadable_rows_are_skipped(base, tmp_path):
    base.add(entry())
    con = sqlite3.connect(tmp_path / "kb.sqlite")
    con.execute(
        "insert into iotune_kb_entries (uid, created, signature_key, signature_version, data) "
        "values ('x', 'now', 'k', 1, '{not json')"
    )
    con.commit()
    con.close()
    assert len(base.entries()) == 1 and base.unreadable == 1


def test_a_directory_is_no_knowledge_base(tmp_path):
    with pytest.raises(kb.KBError, match="is a directory"):
        kb.KnowledgeBase(kb.resolve_url(str(tmp_path)))


def test_url_resolution(monkeypatch, tmp_path):
    monkeypatch.delenv("IOTUNE_KB", raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    assert kb.resolve_url() == f"sqlite:///{tmp_path}/iotune/kb.sqlite"
    pg = "postgresql://u@h/db"
    assert kb.resolve_url(None, pg) == pg, "a shared study's PostgreSQL server"
    assert kb.resolve_url(None, "sqlite:///x/study.db").endswith("iotune/kb.sqlite")
    monkeypatch.setenv("IOTUNE_KB", str(tmp_path / "env.sqlite"))
    assert kb.resolve_url(None, pg).endswith("env.sqlite")
    assert kb.resolve_url("sqlite:///given.db") == "sqlite:///given.db"


def _writer(args):
    path, worker, n = args
    b = kb.KnowledgeBase(path if "://" in path else kb.resolve_url(path))
    for i in range(n):
        b.add(entry(study=f"w{worker}-{i}"))
    b.close()
    return worker


def test_concurrent_writers(tmp_path):
    """Four processes open a new knowledge base at once (creating its tables) and each add
    ten entries, plus an entry they all add: nothing is lost, nothing doubled."""
    path = str(tmp_path / "shared.sqlite")
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(4) as pool:
        assert sorted(pool.map(_writer, [(path, w, 10) for w in range(4)])) == [0, 1, 2, 3]
        pool.map(_writer, [(path, "same", 1)] * 4)
    b = kb.KnowledgeBase(kb.resolve_url(path))
    studies = [e.study for e in b.entries()]
    assert len(studies) == 41 and len(set(studies)) == 41


# ----------------------------------------------------------------------------- suggestions


def test_suggest_picks_the_nearest_and_says_so():
    here = sig(ranks=1)
    entries = [
        entry({"romio_cb_write": "disable"}, study="far", signature=sig(io_mix="read")),
        entry({"fill_time": "never"}, study="near", signature=sig(ranks=64)),
        entry({"chunk_cache_bytes": "8M"}, study="nothing", improved=False),
    ]
    for i, e in enumerate(entries):
        e.id = i + 1
    s = kb.suggest(entries, here)
    assert s.settings == {"fill_time": "never"}
    assert [m.entry.study for m in s.evidence] == ["near", "far"], (
        "unimproved entries are no evidence"
    )
    assert s.notes == []
    assert s.to_json()["evidence"][0]["same_motif"] is True


def test_suggest_from_another_platform_says_so():
    here = sig(platform={**HERE_PLATFORM, "hdf5": "libhdf5.so.200.0.0"})
    s = kb.suggest([entry()], here)
    assert s.settings == {"fill_time": "never"}
    assert any("another platform" in n and "hdf5" in n for n in s.notes)


def test_suggest_without_a_near_motif_says_so_and_without_gains_keeps_defaults():
    s = kb.suggest([entry(signature=sig(interface="posix", io_mix="read"))], sig())
    assert any("no stored study has this motif" in n for n in s.notes)
    s = kb.suggest([entry(improved=False)], sig())
    assert s.settings == {} and "keep them" in s.notes[0]


def test_suggest_keeps_the_defaults_a_study_of_the_same_motif_found_best():
    # IOR tuned (nothing beat the defaults), then h5bench (another motif) gained: suggesting
    # for IOR again must not hand it h5bench's settings as if its motif were unknown
    same = entry(improved=False, study="ior")
    other = entry({"fill_time": "never"}, study="h5bench", signature=sig(interface="mpiio"))
    same.id, other.id = 1, 2
    s = kb.suggest([same, other], sig())
    assert s.settings == {}
    assert not any("no stored study has this motif" in n for n in s.notes)
    assert "found nothing better than the defaults" in s.notes[0] and "ior" in s.notes[0]
    assert [m.entry.study for m in s.evidence] == ["ior", "h5bench"]


def test_warm_start_seeds_fit_the_space():
    sp = space.load("local")
    e1 = entry({"fill_time": "never", "not_a_param_here": "1"})
    e1.id = 1
    e2 = entry({"striping_factor": "8"})  # not in the local space: nothing left, dropped
    e2.id = 2
    e3 = entry({"fill_time": "never"}, study="dup")  # the same guess again: dropped
    e3.id = 3
    seeded, chosen = seeds.seeded_space(sp, [e1, e2, e3], sig())
    assert [g.settings for g in chosen] == [{"fill_time": "never"}]
    assert seeded.guesses[0].name.startswith(seeds.PREFIX)
    assert seeded.guesses[1:] == sp.guesses
    assert seeded.names() == sp.names()


def test_entry_from_a_study_summary():
    summary = {
        "study": "g",
        "space": "local",
        "command": "mpiexec -n 2 ./g",
        "recommended": {"fill_time": "never"},
        "final": {
            "improved": True,
            "speedup": 1.3,
            "p_nominal": 0.02,
            "pair_ratios": [1.1, 1.3, 1.6],
        },  # fmt: skip
    }
    e = kb.entry_from_summary(summary, sig(), "dir")
    assert (e.speedup, e.p_value, e.improved, e.settings) == (
        1.3,
        0.02,
        True,
        {"fill_time": "never"},
    )
    assert e.spread == {"min": 1.1, "median": 1.3, "max": 1.6, "pairs": 3}
    # a serial HDF5 study's settings are stored with the switch that lets them reach sec2 files
    serial = {**summary, "recommended": {"chunk_cache_bytes": "8388608"},
              "switched_on": {"serial_files": {"value": "true", "why": "sec2 files"}}}  # fmt: skip
    assert kb.entry_from_summary(serial, sig(), "dir").settings == {
        "chunk_cache_bytes": "8388608",
        "serial_files": "true",
    }


# ----------------------------------------------------------------------------- the command


def iotune(*args, env=None, cwd=None):
    return subprocess.run(
        [sys.executable, "-m", "iotune", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        cwd=cwd,
    )


def test_kb_suggest_on_a_real_run(tmp_path, libiotune, monkeypatch):
    """A stored study of GCRM-IO at 2 ranks, from another platform; `kb suggest` of GCRM-IO
    at 1 rank and another size finds it, writes its settings and says where they came from."""
    import os

    monkeypatch.setenv("IOTUNE_LIB", str(libiotune))
    path = tmp_path / "kb.sqlite"
    from iotune.kb import capture

    stored = capture.profile_signature(
        [*launcher(BUILD), "2", str(BUILD / "kernels" / "gcrmio"), "--cells", "16384"],
        lib=libiotune,
        cwd=tmp_path,
    )
    stored.platform["hdf5"] = "libhdf5_mpich.so.99.0.0"  # as if tuned on another machine
    b = kb.KnowledgeBase(kb.resolve_url(str(path)))
    b.add(entry({"fill_time": "never"}, study="gcrm-2", signature=stored))
    b.add(entry({"romio_cb_write": "disable"}, study="other", signature=sig(io_mix="read")))
    b.close()
    env = {**os.environ, "IOTUNE_KB": str(path)}
    out = tmp_path / "s.xml"
    cmd = [*launcher(BUILD), "1", str(BUILD / "kernels" / "gcrmio"), "--cells", "32768"]
    p = iotune("kb", "suggest", "-o", out, "--json", "--", *cmd, env=env, cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    got = json.loads(p.stdout)
    assert got["settings"] == {"fill_time": "never"}
    assert got["evidence"][0]["study"] == "gcrm-2" and got["evidence"][0]["same_motif"]
    assert got["evidence"][0]["other_platform"] == ["hdf5"]
    assert any("another platform" in n for n in got["notes"])
    from iotune import controlfile

    parsed = controlfile.parse_file(out)
    assert parsed.ok and {s.name: s.value for s in parsed.settings} == {"fill_time": "never"}
    assert "gcrm-2" in out.read_text(), "the evidence is in the control file"
    # list, export and import through the command
    assert "gcrm-2" in iotune("kb", "list", env=env).stdout
    exp = tmp_path / "e.json"
    assert iotune("kb", "export", "-o", exp, env=env).returncode == 0
    p = iotune("kb", "--kb", tmp_path / "new.sqlite", "import", exp, exp, env=env)
    assert p.returncode == 0 and "2 entries added" in p.stdout and "2 already there" in p.stdout
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    p = iotune("kb", "import", bad, env=env)
    assert p.returncode == 1 and "bad.json" in p.stderr
    junk = tmp_path / "junk.sqlite"
    junk.write_text("junk" * 1000)
    p = iotune("kb", "--kb", junk, "list", env=env)
    assert p.returncode == 1 and "cannot be read as a database" in p.stderr


def test_tune_warm_starts_from_the_kb_and_files_the_study(tmp_path, libiotune):
    """A stored GCRM-IO entry (another size) is the first trial after the baseline of a new
    study with --warm-start kb; the finished study is filed, and `kb add` of its directory
    finds the same entry."""
    import csv
    import os

    from iotune.kb import capture

    path = tmp_path / "kb.sqlite"
    stored = capture.profile_signature(
        [*launcher(BUILD), "2", str(BUILD / "kernels" / "gcrmio"), "--cells", "16384"],
        lib=libiotune,
        cwd=tmp_path,
    )
    b = kb.KnowledgeBase(kb.resolve_url(str(path)))
    b.add(
        entry(
            {"cb_buffer_size": "2097152", "IBM_largeblock_io": "true"}, study="g", signature=stored
        )
    )  # GPFS only: not in the local space
    b.close()
    env = {**os.environ, "IOTUNE_KB": str(path), "IOTUNE_LIB": str(libiotune)}
    p = iotune(
        "tune", "--kernel", "gcrmio", "--warm-start", "kb", "--trials", 4, "--verify-pairs", 5,
        "--leaders", 2, "--repeat", 1, "--no-partial", "--no-progress", "--out", "out",
        env=env, cwd=tmp_path,
    )  # fmt: skip
    assert p.returncode == 0, p.stdout + p.stderr
    assert "from the knowledge base: kb: entry 1" in p.stdout
    rows = list(csv.DictReader(open(tmp_path / "out" / "trials.csv")))
    assert rows[1]["config"] == "cb_buffer_size=2097152"
    assert (tmp_path / "out" / "kb-profile.json").is_file()
    b = kb.KnowledgeBase(kb.resolve_url(str(path)))
    got = b.entries()
    assert len(got) == 2 and got[1].signature.key == stored.key
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert got[1].settings == summary["recommended"]
    b.close()
    p = iotune("kb", "add", tmp_path / "out", env=env)
    assert p.returncode == 0 and "already stored as entry 2" in p.stdout, p.stdout + p.stderr


def test_a_server_that_cannot_be_reached_is_said_without_its_password():
    pytest.importorskip("psycopg")
    with pytest.raises(kb.KBError) as e:
        kb.KnowledgeBase("postgresql://me:s3cret@127.0.0.1:1/kb")
    assert "s3cret" not in str(e.value) and "127.0.0.1" in str(e.value)
    with pytest.raises(kb.KBError, match="not a database URL") as e:
        kb.KnowledgeBase("nonsense://me:s3cret@h/x")
    assert "s3cret" not in str(e.value)


def test_postgresql_beside_a_shared_study(pg_server, monkeypatch, tmp_path):
    """The knowledge base in the PostgreSQL database a shared study uses (Optuna's tables
    there already), the password from the environment as for the study, concurrent writers,
    and no password in any output."""
    import os

    import optuna

    from iotune import storage

    url = pg_server.url()
    optuna.create_study(storage=storage.open_storage(url), study_name=f"kb-{os.getpid()}")
    bare = pg_server.url(with_password=False)
    monkeypatch.setenv(storage.PASSWORD_ENV, pg_server.password)
    monkeypatch.delenv("IOTUNE_KB")
    assert kb.resolve_url(None, bare) == bare, "the shared study's server"
    b = kb.KnowledgeBase(bare)
    before = len(b.entries())
    rid, new = b.add(entry(study=f"pg-{os.getpid()}"))
    assert new and b.add(entry(study=f"pg-{os.getpid()}")) == (rid, False)
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(2) as pool:
        pool.map(_writer, [(bare, f"pg{os.getpid()}-{w}", 5) for w in range(2)])
    assert len(b.entries()) == before + 11
    b.close()
    env = {**os.environ, "IOTUNE_KB": bare}
    p = iotune("kb", "list", env=env)
    assert p.returncode == 0 and f"pg-{os.getpid()}" in p.stdout
    assert pg_server.password not in p.stdout + p.stderr


# ----------------------------------------------------------------------------- library defaults


def test_an_entry_drops_the_defaults_of_the_hdf5_release_the_study_ran_on():
    """8 MiB of chunk cache is a change on 1.10 and nothing on 2.0 (h5versions.tsv): the entry
    of a study on 2.0 keeps only what differs, with the switch only if a setting is left."""
    summary = {
        "study": "w", "space": "local", "command": "python app.py",
        "recommended": {"chunk_cache_bytes": "8388608", "fill_time": "never"},
        "switched_on": {"serial_files": {"value": "true", "why": "sec2 files"}},
        "final": {"improved": True, "speedup": 1.3, "p_nominal": 0.02, "pair_ratios": [1.3]},
        "leaders": {"order": ["a"], "settings": {"a": {"chunk_cache_slots": "8191"}},
                    "values": {"a": [1.0]}},
    }  # fmt: skip
    on_2 = kb.entry_from_summary({**summary, "hdf5_library": {"version": "2.0.0"}}, sig())
    assert on_2.settings == {"fill_time": "never", "serial_files": "true"}
    assert all(x["settings"] == {} for x in on_2.leaders), on_2.leaders
    on_110 = kb.entry_from_summary({**summary, "hdf5_library": {"version": "1.10.8"}}, sig())
    assert on_110.settings == {"chunk_cache_bytes": "8388608", "fill_time": "never",
                               "serial_files": "true"}  # fmt: skip
    unknown = kb.entry_from_summary(summary, sig())  # an older summary: as it was
    assert unknown.settings == on_110.settings


def test_suggest_leaves_out_the_defaults_of_the_new_runs_release():
    e = entry({"chunk_cache_slots": "8191", "serial_files": "true"})
    e.id = 1
    assert kb.suggest([e], sig(), hdf5=(1, 10, 8)).settings == {
        "chunk_cache_slots": "8191", "serial_files": "true"}  # fmt: skip
    s = kb.suggest([e], sig(), hdf5=(2, 0, 0))
    assert s.settings == {}  # the switch alone changes nothing
    assert "chunk_cache_slots=8191 is HDF5 2.0.0's own default: left out" in s.notes


def test_the_study_summary_and_traits_carry_the_hdf5_release():
    from iotune import h5versions
    from iotune.search import inert

    t = inert.traits({"hdf5_library": {"version": "2.0.0", "parallel": False}, "files": []})
    assert t["hdf5_library"] == {"version": "2.0.0", "parallel": False}
    assert "hdf5_library" not in inert.traits({"hdf5_library": None, "files": []})
    assert h5versions.profile_version({"hdf5_library": t["hdf5_library"]}) == (2, 0, 0)
