#!/usr/bin/env python3
"""Two replays of the same studies (replay.py --studies, the same seeds) side by side, before
and after a change of the reduction's bar (reduction.SHOWN_MIN_GAIN: a setting beside others
stays only when its contribution is shown to reach --min-gain): per landscape, distinct
verdicts, the commonest best.xml and its share, runs, quality; and every setting beside
others in a verdict judged by the landscape's own medians: its true contribution (the
verdict's true time without it over the verdict's), so that a setting dropped although it
truly gained --min-gain or more (the bar's cost in power) and a setting kept although it did
not (noise in best.xml) are counted.

  .venv/bin/python bench/replay/compare_min_gain_bar.py BEFORE.json AFTER.json
"""

import json
import statistics
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import replay  # noqa: E402

MIN_GAIN = 0.05


def parse(key: str) -> dict[str, str]:
    if key == "(defaults)":
        return {}
    return dict(kv.split("=", 1) for kv in key.split(";"))


def secondary(land: replay.Landscape, key: str) -> list[tuple[str, float]]:
    """Each setting of a verdict with more than one: its true contribution."""
    settings = parse(key)
    if len(settings) < 2:
        return []
    t = land.truth.get(key)
    out = []
    for k in settings:
        without = replay.space.config_key({n: v for n, v in settings.items() if n != k})
        tw = land.truth.get(without or "(defaults)")
        if t and tw and t != float("inf"):
            out.append((f"{k}={settings[k]}", tw / t))
    return out


def stats(land: replay.Landscape, rs: list[dict]) -> dict:
    verdicts = Counter(r["recommended"] for r in rs)
    sec = [c for r in rs for _, c in secondary(land, r["recommended"])]
    return {
        "distinct verdicts": len(verdicts),
        "commonest": verdicts.most_common(1)[0],
        "multi-setting verdicts": sum(len(parse(r["recommended"])) > 1 for r in rs),
        "settings in them truly < min-gain": sum(c < 1 + MIN_GAIN for c in sec),
        "settings in them truly >= min-gain": sum(c >= 1 + MIN_GAIN for c in sec),
        "runs mean": round(statistics.mean(r["runs"]["total"] for r in rs), 1),
        "reduction runs mean": round(statistics.mean(r["runs"].get("reduction", 0) for r in rs), 1),
        "quality mean": round(statistics.mean(r["quality"] for r in rs), 3),
    }


def main(before: str, after: str) -> int:
    a, b = json.load(open(before)), json.load(open(after))
    for name, la in a["landscapes"].items():
        files = [Path(f) for f in la["files"]]
        kernel = name.split(" ")[0] if not name.startswith("flat") else None
        if name.startswith("flat"):
            base = replay.load_landscape(files, files and _kernel_of(a, files))
            land = replay.flat_landscape(base)
        else:
            land = replay.load_landscape(files, kernel)
        for strategy, res in la["strategies"].items():
            ra, rb = res["runs"], b["landscapes"][name]["strategies"][strategy]["runs"]
            print(f"{name} {strategy}")
            print("  before:", stats(land, ra))
            print("  after: ", stats(land, rb))
            dropped, lost = [], []
            for x, y in zip(ra, rb, strict=True):
                if x["recommended"] == y["recommended"]:
                    continue
                gone = set(parse(x["recommended"]).items()) - set(parse(y["recommended"]).items())
                for k, c in secondary(land, x["recommended"]):
                    if tuple(k.split("=", 1)) in gone:
                        (lost if c >= 1 + MIN_GAIN else dropped).append(c)
                was = [(k, round(c, 3)) for k, c in secondary(land, x["recommended"])]
                print(f"  seed {x['seed']}: {x['recommended']} (quality {x['quality']:.2f}, "
                      f"{x['runs']['total']} runs) -> {y['recommended']} (quality "
                      f"{y['quality']:.2f}, {y['runs']['total']} runs); true contributions "
                      f"before: {was}")  # fmt: skip
            print(f"  settings the change removed from a verdict: {len(dropped)} truly below "
                  f"{1 + MIN_GAIN:g}x {sorted(round(c, 3) for c in dropped)}, {len(lost)} truly "
                  f"at or above it {sorted(round(c, 3) for c in lost)}")  # fmt: skip
    return 0


def _kernel_of(results: dict, files: list[Path]) -> str | None:
    for name in results["landscapes"]:
        if not name.startswith("flat"):
            return name.split(" ")[0]
    return None


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:3]))
