"""A screenshot of a page as a browser window of a given width shows it (headless Chromium
through Selenium; the device metrics are set, so widths under Chromium's 500 px window minimum
work): how docs/images/*.png were made.

    python scripts/screenshot.py PAGE.html OUT.png --width 420 [--height 1400]
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
from pathlib import Path


def shoot(page: Path, out: Path, width: int, height: int) -> None:
    from PIL import Image
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = shutil.which("chromium") or "/usr/bin/chromium"
    profile = tempfile.mkdtemp(prefix="iotune-chromium-")
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--disable-background-networking", "--disable-component-update",
                 "--no-first-run", f"--user-data-dir={profile}"):  # fmt: skip
        opts.add_argument(flag)
    driver = webdriver.Chrome(service=Service(shutil.which("chromedriver")), options=opts)
    try:
        metrics = {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False}
        driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", metrics)
        driver.get(page.resolve().as_uri())
        driver.save_screenshot(str(out))
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)
    image = Image.open(out).convert("RGB")
    image.quantize(colors=64).save(out, optimize=True)  # a small PNG for the docs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("page", type=Path)
    ap.add_argument("out", type=Path)
    ap.add_argument("--width", type=int, default=1280, help="window width (default 1280)")
    ap.add_argument("--height", type=int, default=900, help="window height (default 900)")
    args = ap.parse_args()
    shoot(args.page, args.out, args.width, args.height)


if __name__ == "__main__":
    main()
