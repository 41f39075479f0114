"""`iotune compare A B`: two profiles (checked-in runs of the GCRM-IO kernel, and two real runs
made here with different settings), two studies (checked-in output of two short real studies),
files matched by name and by name pattern, and inputs that cannot be compared."""

import contextlib
import io
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from iotune.cli import main
from iotune.compare import diff, read

DATA = Path(__file__).resolve().parents[1] / "data" / "compare"
PA, PB = DATA / "profile_a.json", DATA / "profile_b.json"
SA, SB = DATA / "study_a", DATA / "study_b"


def run(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(["compare", *args])
    return status, out.getvalue(), err.getvalue()


def section(c: diff.Comparison, start: str) -> diff.Section:
    return next(s for s in c.sections if s.title.startswith(start))


def rows(text: str, first: str) -> list[str]:
    """The lines of the text output whose first cell is `first`."""
    return [ln for ln in text.splitlines() if ln.split()[:1] == [first]]


# ----------------------------------------------------------------------------- profiles


def test_two_profiles_as_text():
    status, out, err = run(str(PA), str(PB))
    assert status == 0 and not err, err
    assert out.startswith("iotune compare: two profiles")
    # the control file: fill_time=never in B only
    assert rows(out, "fill_time") == [rows(out, "fill_time")[0]]
    assert rows(out, "fill_time")[0].split() == ["fill_time", "default", "never"]
    # A wrote three checkpoints, B two: two matched by name, one listed as A's alone
    assert "ckpt.0.h5" in out and "ckpt.1.h5" in out
    assert out.split("data files only in A (1)")[1].split() == ["ckpt.2.h5"]
    assert "only in B" not in out
    (files,) = [ln for ln in out.splitlines() if ln.split()[:3] == ["data", "files", "3"]]
    assert files.split()[-3:] == ["3", "2", "0.67x"]  # B/A of 3 and 2 files


def test_two_profiles_as_json_and_the_ratio():
    status, out, _ = run("--json", str(PA), str(PB))
    assert status == 0
    doc = json.loads(out)
    assert doc["kind"] == "profile" and doc["only_in_a"] == ["ckpt.2.h5"]
    a, b = (json.loads(p.read_text()) for p in (PA, PB))
    totals = next(s for s in doc["sections"] if s["title"] == "totals")
    io_time = totals["items"][0]["rows"][0]
    assert io_time["a"] == a["io"]["time_s"] and io_time["b"] == b["io"]["time_s"]
    assert io_time["ratio"] == pytest.approx(b["io"]["time_s"] / a["io"]["time_s"])
    per_file = next(s for s in doc["sections"] if s["title"].startswith("per data file"))
    assert sorted(it["name"] for it in per_file["items"]) == ["ckpt.0.h5", "ckpt.1.h5"]
    f0 = next(f for f in b["files"] if f["name"] == "ckpt.0.h5")
    item = next(it for it in per_file["items"] if it["name"] == "ckpt.0.h5")
    assert item["rows"][0]["b"] == f0["time_s"]["max"]
    assert item["rows"][3]["b"] == sum(f0["hdf5"][k] for k in (
        "file_creates", "file_opens", "file_closes", "dataset_creates", "dataset_opens",
        "writes", "reads"))  # fmt: skip
    applied = [r for r in item["rows"] if r["metric"] == "settings applied"]
    assert applied == [{"metric": "settings applied", "unit": "text", "a": "none",
                        "b": "fill_time=never", "ratio": None}]  # fmt: skip


def test_biggest_differences_first():
    c = diff.compare(read.load(str(PA)), read.load(str(PB)))
    for s in c.sections:
        if s.grouped:
            keys = [it.key() for it in s.items]
            assert keys == sorted(keys), s.title


def _profiles(tmp_path: Path, names_a: list[str], names_b: list[str]) -> diff.Comparison:
    """PA and PB with their data files renamed (the first len(names) of each, copies of the
    last one added where there are more names than files)."""
    paths = []
    for src, names, tag in ((PA, names_a, "a"), (PB, names_b, "b")):
        doc = json.loads(src.read_text())
        files = doc["files"]
        doc["files"] = [dict(files[min(i, len(files) - 1)], name=n) for i, n in enumerate(names)]
        paths.append(tmp_path / f"{tag}.json")
        paths[-1].write_text(json.dumps(doc))
    return diff.compare(read.load(str(paths[0])), read.load(str(paths[1])))


def test_files_matched_by_name_pattern(tmp_path):
    c = _profiles(tmp_path, ["out/chk_0001.h5", "grid.h5", "log.txt"],
                  ["out/chk_0002.h5", "grid.h5", "mesh.h5"])  # fmt: skip
    names = {it.name: it.note for it in section(c, "per data file").items}
    assert names == {"grid.h5": "", "out/chk_0001.h5 / out/chk_0002.h5":
                     "matched by pattern out/chk_*.h5"}  # fmt: skip
    assert (c.only_a, c.only_b) == (["log.txt"], ["mesh.h5"])
    # a series on each side: one group, its figures summed
    c = _profiles(tmp_path, ["run7/ck.0001.h5", "run7/ck.0002.h5", "run7/ck.0003.h5"],
                  ["run8/ck.0011.h5", "run8/ck.0012.h5"])  # fmt: skip
    (item,) = section(c, "per data file").items
    assert item.name == "run*/ck.*.h5 (3 vs 2 files)" and item.rows[0].metric.endswith("summed)")
    assert (c.only_a, c.only_b) == ([], [])
    # digits inside a lettered extension are not numbering: data.h5 is not data.h4
    c = _profiles(tmp_path, ["data.h5"], ["data.h4"])
    assert not section(c, "per data file").items
    assert (c.only_a, c.only_b) == (["data.h5"], ["data.h4"])


def test_top_limits_the_files_shown(tmp_path):
    names = ["a.h5", "b.h5", "c.h5"]
    _profiles(tmp_path, names, names)
    a, b = str(tmp_path / "a.json"), str(tmp_path / "b.json")
    out = run("--top", "2", a, b)[1]
    assert "per data file, biggest differences first (2 of 3; --top 0 for all)" in out
    assert sum(ln.split()[:1] in (["a.h5"], ["b.h5"], ["c.h5"]) for ln in out.splitlines()) == 2
    out = run("--top", "0", a, b)[1]
    assert sum(ln.split()[:1] in (["a.h5"], ["b.h5"], ["c.h5"]) for ln in out.splitlines()) == 3
    assert len(json.loads(run("--json", "--top", "1", a, b)[1])["sections"][-1]["items"]) == 3


def test_names_from_outside_are_escaped(tmp_path):
    evil = "x\x1b[31m<script>alert(1)</script>.h5"
    _profiles(tmp_path, [evil], [evil])
    out_html = tmp_path / "c.html"
    status, out, err = run("--html", str(out_html), str(tmp_path / "a.json"),
                           str(tmp_path / "b.json"))  # fmt: skip
    assert status == 0 and not err
    assert "\x1b" not in out and "x\\x1b[31m<script>" in out
    page = out_html.read_text()
    assert "<script" not in page and "&lt;script&gt;alert(1)&lt;" in page
    assert "src=" not in page and "href=" not in page and "url(" not in page  # self-contained


def test_two_real_runs_of_a_kernel(tmp_path, kernel, libiotune):
    """GCRM-IO run twice through `iotune profile`, at the defaults and with fill_time=never:
    the file is matched by name, the setting is named, and B writes fewer POSIX bytes (the
    fill values are not written)."""
    mpiexec = shutil.which("mpiexec.mpich")
    if not mpiexec:
        pytest.skip("mpiexec.mpich is not installed")
    cfg = tmp_path / "fill.xml"
    cfg.write_text("<Parameters><High_Level_IO_Library><fill_time>never</fill_time>"
                   "</High_Level_IO_Library></Parameters>")  # fmt: skip
    app = [mpiexec, "-n", "2", str(kernel("gcrmio")), "--cells", "2048", "--levels", "8",
           "--chunk-cells", "1024"]  # fmt: skip
    env = {**os.environ, "IOTUNE_LIB": str(libiotune)}
    for name, extra in (("a", []), ("b", ["--config", str(cfg)])):
        r = subprocess.run([sys.executable, "-m", "iotune", "profile", "-o", f"{name}.json",
                            *extra, "--", *app], cwd=tmp_path, env=env, capture_output=True,
                           text=True, timeout=120)  # fmt: skip
        assert r.returncode == 0, r.stdout + r.stderr
    c = diff.compare(read.load(str(tmp_path / "a.json")), read.load(str(tmp_path / "b.json")))
    assert [it.name for it in section(c, "settings that differ").items] == ["fill_time"]
    (item,) = section(c, "per data file").items
    assert item.name.endswith("gcrmio.h5") and not item.note
    posix = next(it for it in section(c, "per layer").items if it.name == "posix")
    written = next(r for r in posix.rows if r.metric == "written")
    assert written.ratio is not None and written.ratio < 0.9, written
    status, out, err = run(str(tmp_path / "a.json"), str(tmp_path / "b.json"))
    assert status == 0 and "fill_time" in out and not err


# ----------------------------------------------------------------------------- studies


def test_two_studies():
    status, out, err = run(str(SA), str(SB / "summary.json"))  # a directory or its summary
    assert status == 0 and not err, err
    assert out.startswith("iotune compare: two studies")
    for title in ("headline", "settings that differ: recommended (best.xml)",
                  "options that differ", "baseline run: totals",
                  "baseline run: per data file"):  # fmt: skip
        assert f"\n{title}" in out, title
    sa, sb = (json.loads((d / "summary.json").read_text()) for d in (SA, SB))
    speedup = rows(out, "speedup")[0].split()
    assert speedup[1:3] == [f"{sa['final']['speedup']:.4g}", f"{sb['final']['speedup']:.4g}"]
    assert speedup[3] == f"{sb['final']['speedup'] / sa['final']['speedup']:.2f}x"
    # best.xml of A holds fill_time=never, B's none: the one setting that differs
    c = diff.compare(read.load(str(SA)), read.load(str(SB)))
    rec = section(c, "settings that differ: recommended")
    assert (
        [(it.name, it.rows[0].a, it.rows[0].b) for it in rec.items]
        == [(k, v, sb["recommended"].get(k, "default")) for k, v in sa["recommended"].items()]
        and sa["recommended"] == {"fill_time": "never"}
        and sb["recommended"] == {}
    )
    doc = json.loads(run("--json", str(SA), str(SB))[1])
    options = next(s for s in doc["sections"] if s["title"] == "options that differ")
    differ = {it["name"] for it in options["items"]}
    assert differ == {k for k in sa if k in sb and sa[k] != sb[k] and isinstance(sa[k], (
        str, int, float, bool)) and k not in read.NOT_OPTIONS}  # fmt: skip


def test_study_options_and_headline_of_newer_summaries(tmp_path):
    """Whatever a newer iotune adds to summary.json (how the study was measured, an interval
    of its headline) is compared too: scalars, and objects of scalars as key.sub."""
    for name, warmup, lo in (("a", 0, 1.1), ("b", 1, 1.2)):
        d = tmp_path / name
        shutil.copytree(SA, d)
        doc = json.loads((d / "summary.json").read_text())
        doc["measurement"] = {"warmup": warmup, "drop_caches": False, "runtime": {"lib": "x"}}
        doc["headline"] = {"speedup": 1.3, "low": lo, "high": 1.5, "wins": 9, "pairs": 10,
                           "established": True}  # fmt: skip
        (d / "summary.json").write_text(json.dumps(doc))
    c = diff.compare(read.load(str(tmp_path / "a")), read.load(str(tmp_path / "b")))
    assert [it.name for it in section(c, "options that differ").items] == ["measurement.warmup"]
    assert read.load(str(tmp_path / "a")).study.options["measurement.runtime.lib"] == "x"
    head = {it.name: it.rows[0] for it in section(c, "headline").items}
    # the headline is best.xml's own (iotune.verdict), not the full winner's "final" figures
    assert (head["interval low"].a, head["interval low"].b) == (1.1, 1.2)
    assert "speedup" not in head or head["speedup"].a == head["speedup"].b == 1.3
    assert read.load(str(tmp_path / "a")).study.headline["speedup"] == 1.3


def test_a_study_without_its_baseline_profile(tmp_path):
    shutil.copytree(SA, tmp_path / "a")
    (tmp_path / "a" / "kb-profile.json").unlink()
    status, out, err = run(str(tmp_path / "a"), str(SB))
    assert status == 0 and "headline" in out and "baseline run" not in out
    assert "no baseline profile" in out and "kb-profile.json" in out


# ----------------------------------------------------------------------------- bad inputs


def _one_line(status: int, out: str, err: str, name: str) -> str:
    assert status == 2 and not out and err.count("\n") == 1, (status, out, err)
    assert err.startswith("iotune: ") and name in err, err
    return err


def test_a_profile_and_a_study_are_refused_in_one_line():
    err = _one_line(*run(str(PA), str(SA)), str(SA))
    assert "a profile" in err and "a study" in err and "two profiles or two studies" in err


@pytest.mark.parametrize("content, says", [
    (b"", "not valid JSON"),
    (b"\x00\xff\xfe" * 40, "not UTF-8"),
    (b"[1, 2]", "neither an iotune profile"),
    (b'{"schema": "iotune-profile", "version": 1}', "profile without"),
    (b'{"study": "s", "final": {"speedup": "fast"}}', "final.speedup is not a number"),
    (b'{"study": "s", "final": [], "verdict": "x"}', "final is not an object"),
    (b'{"study": "s", "final": {}, "recommended": ["a"]}', "recommended is not an object"),
    (b'{"study": "s", "final": {}, "verdict": 3}', "verdict is not text"),
    (b'{"study": "s", "final": {"speedup": 1e999}}', "not finite"),
], ids=["empty", "binary", "list", "profile-parts", "speedup", "final", "settings", "verdict",
        "infinity"])  # fmt: skip
def test_hostile_inputs(tmp_path, content, says):
    bad = tmp_path / "bad.json"
    bad.write_bytes(content)
    for args in ((str(bad), str(PA)), (str(PB), str(bad))):
        err = _one_line(*run(*args), str(bad))
        assert says in err, err


def test_what_is_not_a_file(tmp_path):
    _one_line(*run(str(tmp_path / "missing.json"), str(PA)), "missing.json")
    _one_line(*run(str(tmp_path), str(SA)), str(tmp_path))  # a directory, no summary.json
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    _one_line(*run(str(fifo), str(PA)), str(fifo))  # refused at once, never waited on
    _one_line(*run("/dev/zero", str(PA)), "/dev/zero")


def test_help_states_the_defaults():
    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit):
        main(["compare", "--help"])
    text = " ".join(out.getvalue().split())
    assert "default 20" in text and "default: text" in text and "default: none" in text
    status, out, err = run("--top", "-1", str(PA), str(PB))
    assert status == 2 and not out and "--top must be 0 or more" in err
