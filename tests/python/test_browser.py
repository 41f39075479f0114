"""The report of a short real study, as a person sees it: opened in headless Chromium (Debian's
chromium + chromium-driver, through Selenium), offline; and optuna-dashboard serving the same
study's storage on a loopback port."""

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import local_servers
import pytest

TIMEOUT = 120
CHROMIUM_FLAGS = [
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-extensions",
    "--no-first-run",
    "--window-size=1200,2400",
]


@pytest.fixture(scope="module")
def study_dir(tmp_path_factory, kernel, libiotune) -> Path:
    """A short real study (tiny GCRM-IO, 1 rank): its output directory with report.html."""
    out = tmp_path_factory.mktemp("browser") / "out"
    app = [str(kernel("gcrmio")), "--cells", "2048", "--levels", "8", "--chunk-cells", "1024"]
    r = subprocess.run(
        [sys.executable, "-m", "iotune.tune_cli", "--trials", "5", "-n", "1", "--cap", "0",
         "--leaders", "2", "--repeat", "1", "--verify-pairs", "5", "--no-progress",
         "--seed", "1", "--study", "browser", "--out", str(out), "--", *app],
        env={**os.environ, "IOTUNE_LIB": str(libiotune)}, cwd=out.parent,
        capture_output=True, text=True, timeout=TIMEOUT,
    )  # fmt: skip
    assert r.returncode == 0, r.stdout + r.stderr
    return out


def _browser():
    """A Selenium driver of the system's headless Chromium, or a skip saying what is missing."""
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        pytest.skip("selenium is not installed (pip install -e '.[dev]')")
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    driver = shutil.which("chromedriver")
    if not chromium or not driver:
        pytest.skip("Chromium is not installed (Debian: chromium chromium-driver)")
    opts = webdriver.ChromeOptions()
    opts.binary_location = chromium
    profile = tempfile.mkdtemp(prefix="iotune-chromium-")
    for flag in [*CHROMIUM_FLAGS, f"--user-data-dir={profile}"]:
        opts.add_argument(flag)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    # the driver is given: Selenium must not look for one on the network
    service = Service(executable_path=driver)
    return webdriver.Chrome(service=service, options=opts), profile


def test_report_in_headless_chromium(study_dir):
    html = (study_dir / "report.html").read_text()
    # offline: nothing is fetched from elsewhere (fonts, scripts, style sheets, images)
    assert not re.search(r"""(src|href)\s*=\s*['"]?(https?:)?//""", html, re.I)
    assert "@import" not in html and "url(" not in html
    browser, profile = _browser()
    try:
        browser.set_page_load_timeout(30)
        browser.get((study_dir / "report.html").as_uri())
        images = browser.execute_script(
            "return Array.from(document.images).map(i => [i.getAttribute('src'), i.complete, "
            "i.naturalWidth, i.naturalHeight]);"
        )
        verdict = browser.execute_script(
            "const v = document.querySelector('.verdict'); return v ? v.innerText : null;"
        )
        tables = browser.execute_script(
            "return Array.from(document.querySelectorAll('table')).map(t => "
            "Array.from(t.rows).map(r => Array.from(r.cells).map(c => c.innerText)));"
        )
        resources = browser.execute_script(
            "return performance.getEntriesByType('resource').map(e => e.name);"
        )
        logs = browser.get_log("browser")
        shot = study_dir / "report.png"
        browser.set_window_size(1200, min(6000, browser.execute_script(
            "return document.body.scrollHeight;") + 50))  # fmt: skip
        assert browser.save_screenshot(str(shot))
    finally:
        browser.quit()
        shutil.rmtree(profile, ignore_errors=True)
    where = os.environ.get("IOTUNE_SCREENSHOT_DIR")  # to look at it (kept out of git)
    if where:
        shutil.copy(shot, Path(where) / "report.png")

    assert len(images) >= 2, images  # trials.png and the verification figure at least
    for src, complete, width, height in images:
        assert complete and width > 0 and height > 0, f"image {src} did not load"
    assert verdict and ("faster" in verdict or "no better setting" in verdict), verdict
    assert len(tables) >= 3, tables
    settings_cells = [c for t in tables for row in t for c in row]
    assert not any("{" in c or "': '" in c for c in settings_cells), "a Python dict is shown"
    # the default-vs-tuned table whenever a verification ran (none when the search found
    # nothing to verify, which a loaded machine can make happen)
    final = json.loads((study_dir / "summary.json").read_text()).get("final") or {}
    verify = next((t for t in tables if t[0][:2] == ["variant", "settings"]), None)
    assert (verify is not None) == bool(final.get("summary")), (final, tables)
    if verify is not None:
        assert any(row[0] == "default" and row[1] == "defaults" for row in verify[1:]), verify
    assert all(u.startswith("file:") for u in resources), resources
    severe = [e for e in logs if e.get("level") == "SEVERE"]
    assert not severe, severe
    assert shot.stat().st_size > 10_000


def test_optuna_dashboard_serves_the_study(study_dir):
    exe = str(Path(sys.executable).with_name("optuna-dashboard"))
    exe = exe if Path(exe).exists() else (shutil.which("optuna-dashboard") or exe)
    if not Path(exe).exists():
        pytest.skip("optuna-dashboard is not installed (pip install -e '.[dev]')")
    port = local_servers.free_port()
    storage = f"sqlite:///{study_dir / 'study.db'}"
    log = study_dir / "dashboard.log"
    with open(log, "w") as out:
        proc = subprocess.Popen(
            [exe, storage, "--host", "127.0.0.1", "--port", str(port), "--quiet"],
            stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 40
        studies = None
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                with urllib.request.urlopen(f"{base}/api/studies", timeout=5) as r:
                    studies = json.load(r)
                break
            except OSError:
                time.sleep(0.3)
        assert studies is not None, log.read_text()
        names = [s["study_name"] for s in studies["study_summaries"]]
        assert names == ["browser"], studies
        sid = studies["study_summaries"][0]["study_id"]
        with urllib.request.urlopen(f"{base}/api/studies/{sid}", timeout=10) as r:
            detail = json.load(r)
        assert len(detail["trials"]) >= 5
        with urllib.request.urlopen(f"{base}/dashboard", timeout=10) as r:
            page = r.read().decode()
        assert r.status == 200 and "<script" in page
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
