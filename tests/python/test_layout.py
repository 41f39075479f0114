"""The pages people read in a browser (report.html, the compare page) fit the window: no table
pushes a value off the page, at 420 px (a phone, a narrow split window) and 1280 px wide.

Measured in Debian's Chromium, headless: each page is loaded in an iframe of the width (the
headless window itself is at least 500 px wide) and a script writes into the DOM, which
--dump-dom prints, the document's scroll width and every element whose right edge is beyond
the iframe's width. Skipped, saying so, only when Chromium is not installed."""

import html
import json
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
import test_report
from matplotlib.figure import Figure

from iotune import report
from iotune.compare import diff, page, read
from iotune.report import plots

DATA = Path(__file__).resolve().parents[1] / "data" / "compare"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
WIDTHS = (420, 1280)

WRAPPER = """<!doctype html><html><body style="margin:0">
<iframe id="f" src="%s" style="width:%dpx;height:900px;border:0"></iframe><script>
const f = document.getElementById("f");
f.addEventListener("load", () => {
  const doc = f.contentDocument, d = doc.documentElement, w = d.clientWidth, over = [];
  for (const e of doc.body.querySelectorAll("*")) {
    const r = e.getBoundingClientRect();
    if (r.width > 0 && r.right > w + 1)
      over.push(e.tagName + " " + Math.round(r.right) + ": " +
                (e.textContent || e.getAttribute("src") || "").slice(0, 60));
  }
  document.body.setAttribute("data-layout",
    JSON.stringify({scroll: d.scrollWidth, client: w, over: over.slice(0, 10)}));
});
</script></body></html>"""


def layout(path: Path, width: int) -> dict:
    """{"scroll", "client", "over"} of a page laid out width px wide in headless Chromium."""
    if not CHROMIUM:
        pytest.skip("Chromium is not installed (Debian: chromium): the layout is not checked")
    wrapper = path.parent / f".layout-{width}.html"
    wrapper.write_text(WRAPPER % (path.name, width), encoding="utf-8")
    profile = tempfile.mkdtemp(prefix="iotune-chromium-")
    try:
        r = subprocess.run(
            [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             "--no-first-run", "--allow-file-access-from-files", f"--user-data-dir={profile}",
             "--window-size=1400,1000", "--dump-dom", wrapper.as_uri()],
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
    finally:
        shutil.rmtree(profile, ignore_errors=True)
        wrapper.unlink()
    m = re.search(r'data-layout="([^"]*)"', r.stdout)
    assert m, f"no layout measured (status {r.returncode}): {r.stderr[-2000:]}"
    return json.loads(html.unescape(m.group(1)))


def assert_fits(path: Path) -> None:
    for width in WIDTHS:
        got = layout(path, width)
        assert width - 20 <= got["client"] <= width, got  # less a vertical scroll bar
        assert got["scroll"] <= got["client"] and not got["over"], (width, got)


LONG = "/scratch/" + "very_long_directory_name_without_any_space_" * 6 + "app"


@pytest.fixture
def long_report(tmp_path) -> Path:
    """report.html of a study whose values are long: a command of one 270-character word,
    settings strings of a dozen settings, a long verdict and long reasons."""
    many = {f"setting_{i}": f"value_{'x' * 20}_{i}" for i in range(12)}
    summary = dict(
        test_report.SUMMARY,
        command=f"mpiexec -n 2 {LONG} --input {LONG}.deck",
        storage=f"sqlite:///{LONG}/study.db",
        ran_in=LONG,
        not_searched={"romio_cb_read": "the baseline run read nothing " * 5},
        verdict="tuned settings are 2.00x faster than the defaults " * 6,
        final={
            **test_report.SUMMARY["final"],
            "variants": {"default": {}, "tuned": many},
            "verdict": "tuned settings are 2.00x faster than the defaults, measured in "
            "interleaved pairs of runs, each default run next to a tuned one " * 3,
        },
        leaders={"values": {";".join(f"{k}={v}" for k, v in many.items()): [0.5, 0.52]}},
    )
    return report.write_all(tmp_path, test_report.make_study(), test_report.SPACE, summary)


def test_the_report_fits_at_420_and_1280_px(long_report):
    assert_fits(long_report)


def test_the_compare_page_fits_at_420_and_1280_px(tmp_path):
    a = json.loads((DATA / "profile_a.json").read_text())
    b = json.loads((DATA / "profile_b.json").read_text())
    for f in a["files"] + b["files"]:  # long names, matched by name
        f["name"] = f"{LONG}/{f['name'].rsplit('/', 1)[-1]}"
    b["config"]["settings"].append({"name": "cb_config_list", "value": "*:*," * 40})
    (tmp_path / "a.json").write_text(json.dumps(a))
    (tmp_path / "b.json").write_text(json.dumps(b))
    c = diff.compare(read.load(str(tmp_path / "a.json")), read.load(str(tmp_path / "b.json")))
    out = tmp_path / "compare.html"
    out.write_text(page.render(c), encoding="utf-8")
    assert_fits(out)
    studies = diff.compare(read.load(str(DATA / "study_a")), read.load(str(DATA / "study_b")))
    out.write_text(page.render(studies), encoding="utf-8")
    assert_fits(out)


def test_the_check_sees_an_overflowing_table(tmp_path):
    """The measure itself: a table with a long unbroken value, styled as the report was before
    its layout was fixed, overflows at 420 px (so the tests above can fail)."""
    old_css = (
        "body{font-family:sans-serif;max-width:1100px;margin:2em auto}"
        "table{border-collapse:collapse}td{border:1px solid #ccc;padding:3px 8px}"
    )
    path = tmp_path / "old.html"
    path.write_text(
        f"<!doctype html><html><head><style>{old_css}</style></head><body><table><tr>"
        f"<td>command</td><td>{html.escape(LONG)}</td></tr></table></body></html>"
    )
    got = layout(path, 420)
    assert got["scroll"] > 420 and got["over"], got


def test_figure_titles_are_not_cut(tmp_path, monkeypatch):
    """verify.png's title (the verdict) and trials.png's (the study's name) lie inside their
    figures, however long."""
    figures: list[Figure] = []
    monkeypatch.setattr(plots.plt, "close", figures.append)
    verdict = "tuned settings are 1.30x faster than the defaults (1.10x to 1.52x, 95 %) " * 3
    summary = dict(test_report.SUMMARY, study="s" * 150, verdict=verdict,
                   final={**test_report.SUMMARY["final"], "verdict": verdict})  # fmt: skip
    assert plots.plot_verify(tmp_path / "verify.png", summary)
    rows = [{"number": 0, "status": "ok", "value": 1.0, "origin": "defaults"}]
    plots.plot_trials(tmp_path / "trials.png", rows, summary)
    for fig in figures:
        renderer = fig.canvas.get_renderer()
        title = fig.axes[0].title
        box = title.get_window_extent(renderer)
        assert title.get_text().replace("\n", " ").strip()
        assert box.x0 >= 0 and box.x1 <= fig.bbox.width and box.y1 <= fig.bbox.height, (
            title.get_text(),
            box,
            fig.bbox,
        )
    assert " ".join(figures[0].axes[0].title.get_text().split()) == " ".join(verdict.split())
    # params.png's title names the objective, which a space file may make long
    figures.clear()
    rows = report.trial_rows(test_report.make_study(), test_report.SPACE)
    long_objective = dict(summary, objective="the time of the checkpoint phase " * 4)
    assert plots.plot_params(tmp_path / "params.png", rows, test_report.SPACE, long_objective)
    (fig,) = figures
    box = fig._suptitle.get_window_extent(fig.canvas.get_renderer())
    assert box.x0 >= 0 and box.x1 <= fig.bbox.width and box.y1 <= fig.bbox.height, box
