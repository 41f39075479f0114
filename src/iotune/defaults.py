"""`iotune defaults`: site-wide defaults tuned on proxy applications (Ross, "Tuning ROMIO with
the HACC-IO proxy": one set of ROMIO hints for a platform, chosen on proxies, shipped to every
user).

1. Each proxy (a built-in kernel at a small size, by default every kernel) is tuned with
   `iotune tune`'s own pipeline (iotune.study.run); its recommendation (the minimal set that
   carries a verified gain, or nothing) is its individually tuned setting.
2. The candidate site set is every setting some proxy recommended; where proxies disagree on a
   parameter's value, the value more proxies chose wins (then the larger verified speedup).
3. Every proxy is measured with its defaults, the site set and its own settings, interleaved in
   shuffled rounds. While some proxy is significantly slower with the site set than with its
   defaults (one-sided paired permutation test on the rounds), the setting with the least
   support (fewest proxies, then the smallest speedup) is dropped and the rounds run again.
4. The result: a ROMIO_HINTS file (`key value` lines, the MPI-IO hints), a control file of the
   HDF5 settings (and the hints, for iotune run), and the report of each proxy's default vs site
   vs individual (text, JSON and a plot).
"""

from __future__ import annotations

import json
import random
import statistics
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from iotune import controlfile, params, trial
from iotune.outputs import shell_word, write_output
from iotune.search import noise

# the built-in proxies at small sizes (each run well under a second on 2 ranks here)
PROXIES = {
    "vpicio": ["--particles", "256K"],
    "vorpalio": ["--block", "64,64,40"],
    "gcrmio": ["--cells", "32768"],
    "haccio": ["--particles", "262144"],
    "iorio": [],
}
ALPHA = 0.05
VARIANTS = ("default", "site", "individual")


@dataclass
class Proxy:
    name: str
    command: list[str]  # the application (without the launcher)
    individual: dict[str, str] = field(default_factory=dict)
    speedup: float | None = None  # the individual study's verified speedup
    summary: dict[str, Any] = field(default_factory=dict)


def candidate_set(proxies: Sequence[Proxy]) -> tuple[dict[str, str], dict[str, list[str]]]:
    """(the site set, {setting name: proxies that recommended the chosen value})."""
    votes: dict[str, Counter] = {}
    gain: dict[tuple[str, str], float] = {}
    who: dict[tuple[str, str], list[str]] = {}
    for p in proxies:
        for k, v in p.individual.items():
            votes.setdefault(k, Counter())[v] += 1
            gain[(k, v)] = max(gain.get((k, v), 0.0), p.speedup or 0.0)
            who.setdefault((k, v), []).append(p.name)
    site, support = {}, {}
    for k, c in votes.items():
        v = max(c, key=lambda v: (c[v], gain[(k, v)], v))
        site[k] = v
        support[k] = who[(k, v)]
    return site, support


def hints_file_text(settings: dict[str, str]) -> str:
    """The ROMIO_HINTS file of the MPI-IO hints among the settings (`key value` lines)."""
    lines = ["# site-wide ROMIO hints tuned by iotune defaults (docs/kb.md)"]
    for k, v in sorted(settings.items()):
        p = params.find(k)
        if p is not None and p.is_hint:
            lines.append(f"{k} {v}")
    return "\n".join(lines) + "\n"


def measure(
    proxies: Sequence[Proxy],
    site: dict[str, str],
    run: Callable[[Proxy, dict[str, str]], float | None],
    rounds: int,
    rng: random.Random,
    warmup: int = 0,
) -> dict[str, dict[str, list[float]]]:
    """{proxy: {variant: values}}: each proxy's variants in shuffled order each round, the
    proxies' rounds interleaved too (the machine's drift hits all of them alike), with `warmup`
    discarded identical runs right before each measured one. A round in which some variant
    failed is dropped for that proxy (the rest stay paired). Variants of identical settings (no
    site set, or a proxy's own settings none or the site set) are one configuration, run once
    per round and counted for each: measured apart, the noise between two runs of the same
    settings was reported as a gain."""
    out = {p.name: {v: [] for v in VARIANTS} for p in proxies}

    def measured(p: Proxy, settings: dict[str, str]) -> float | None:
        for _ in range(warmup):
            run(p, settings)
        return run(p, settings)

    for _ in range(rounds):
        for p in rng.sample(list(proxies), len(proxies)):
            settings = {"default": {}, "site": site, "individual": p.individual}
            done: dict[tuple[tuple[str, str], ...], float | None] = {}
            got = {}
            for v in rng.sample(VARIANTS, len(VARIANTS)):
                key = tuple(sorted(settings[v].items()))
                if key not in done:
                    done[key] = measured(p, settings[v])
                got[v] = done[key]
            if all(x is not None for x in got.values()):
                for v, x in got.items():
                    out[p.name][v].append(x)
    return out


def same_as_default(site: dict[str, str], p: Proxy) -> list[str]:
    """The variants whose settings are the defaults' (none): no gain to report for them."""
    return [v for v, s in (("site", site), ("individual", p.individual)) if not s]


def compare(values: dict[str, list[float]], same: Sequence[str] = ()) -> dict[str, Any]:
    """Medians, ratios and the tests of one proxy's rounds (lower is better); `same`: the
    variants of the defaults' own settings (same_as_default), measured as the defaults."""
    d, s, i = values["default"], values["site"], values["individual"]
    if not d:
        return {"rounds": 0}
    med = {k: statistics.median(v) for k, v in values.items()}
    return {
        "rounds": len(d),
        "same_as_default": list(same),
        "median_s": med,
        "summary": {k: noise.summary(v) for k, v in values.items()},
        "site_speedup": med["default"] / med["site"],
        "individual_speedup": med["default"] / med["individual"],
        # one-sided: is the site set slower than the defaults? faster?
        "p_site_slower": noise.paired_test(s, d, maximize=False),
        "p_site_faster": noise.paired_test(d, s, maximize=False),
        "p_individual_faster": noise.paired_test(d, i, maximize=False),
    }


def harmed(results: dict[str, dict[str, Any]], alpha: float = ALPHA) -> list[str]:
    return [
        name
        for name, r in results.items()
        if r.get("rounds") and r["p_site_slower"] < alpha and r["site_speedup"] < 1.0
    ]


def choose_site(
    proxies: Sequence[Proxy],
    run: Callable[[Proxy, dict[str, str]], float | None],
    rounds: int,
    rng: random.Random,
    log: Callable[[str], None] = print,
    warmup: int = 0,
) -> dict[str, Any]:
    """Steps 2 and 3: the site set that harms no proxy significantly, and the measurements."""
    site, support = candidate_set(proxies)
    dropped: dict[str, str] = {}
    history = []
    while True:
        log(f"measuring default / site / individual on {len(proxies)} proxies, {rounds} rounds; "
            f"site set: {site or '(none)'}")  # fmt: skip
        values = measure(proxies, site, run, rounds, rng, warmup)
        results = {p.name: compare(values[p.name], same_as_default(site, p)) for p in proxies}
        history.append({"site": dict(site), "values": values, "results": results})
        hurt = harmed(results)
        if not hurt or not site:
            break
        gain = {p.name: p.speedup or 0.0 for p in proxies}
        weakest = min(
            site,
            key=lambda k: (len(support[k]), max(gain[n] for n in support[k]), k),
        )
        dropped[weakest] = (
            f"{weakest}={site[weakest]} (from {', '.join(support[weakest])}) dropped: "
            f"{', '.join(hurt)} significantly slower with the site set"
        )
        log(dropped[weakest])
        site = {k: v for k, v in site.items() if k != weakest}
    return {"site": site, "support": support, "dropped": dropped, "results": results,
            "values": values, "history": history}  # fmt: skip


def report_lines(proxies: Sequence[Proxy], chosen: dict[str, Any]) -> list[str]:
    lines = [
        "| proxy | default (median s) | site | individual | site vs default | "
        "individual vs default | site slower? (p) | individual settings |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for p in proxies:
        r = chosen["results"].get(p.name, {})
        if not r.get("rounds"):
            lines.append(f"| {p.name} | - | - | - | - | - | - | (no successful rounds) |")
            continue
        m = r["median_s"]
        ind = " ".join(f"{k}={v}" for k, v in sorted(p.individual.items())) or "(defaults)"
        same = r.get("same_as_default", ())
        vs = {v: "same settings" if v in same else f"{r[f'{v}_speedup']:.2f}x"
              for v in ("site", "individual")}  # fmt: skip
        lines.append(
            f"| {p.name} | {m['default']:.4f} | {m['site']:.4f} | {m['individual']:.4f} | "
            f"{vs['site']} | {vs['individual']} | "
            f"{'yes' if p.name in harmed(chosen['results']) else 'no'} "
            f"({r['p_site_slower']:.3f}) | {ind} |"
        )
    return lines


def plot_png(proxies: Sequence[Proxy], chosen: dict[str, Any]) -> bytes:
    """Bars per proxy: site and individual speedups over the defaults (medians), with each
    round's ratio as a dot; the PNG image."""
    import io

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = [p.name for p in proxies if chosen["results"].get(p.name, {}).get("rounds")]
    fig, ax = plt.subplots(figsize=(1.6 * max(len(names), 2) + 1.5, 3.4))
    for j, variant in enumerate(VARIANTS):
        heights = []
        for i, n in enumerate(names):
            v = chosen["values"][n]
            ratios = [d / x for d, x in zip(v["default"], v[variant], strict=True)]
            heights.append(chosen["results"][n]["median_s"]["default"]
                           / chosen["results"][n]["median_s"][variant])  # fmt: skip
            ax.scatter([i + (j - 1) * 0.27] * len(ratios), ratios, s=6, color="k", zorder=3)
        ax.bar([i + (j - 1) * 0.27 for i in range(len(names))], heights, width=0.25,
               label=variant)  # fmt: skip
    ax.axhline(1.0, color="grey", lw=0.8)
    ax.set_xticks(range(len(names)), names)
    ax.set_ylabel("speedup over the defaults")
    ax.set_title("default vs site-wide vs individually tuned (median; dots: rounds)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    image = io.BytesIO()
    fig.savefig(image, format="png", dpi=110)
    plt.close(fig)
    return image.getvalue()


def write_outputs(out: Path, proxies: Sequence[Proxy], chosen: dict[str, Any],
                  meta: dict[str, Any]) -> dict[str, Path]:  # fmt: skip
    out.mkdir(parents=True, exist_ok=True)
    site = chosen["site"]
    files = {
        "hints": out / "romio-hints",
        "control": out / "site.xml",
        "report": out / "defaults.md",
        "json": out / "defaults.json",
        "plot": out / "defaults.png",
    }
    # every file through the one output writer (atomic, links followed, a stream in place)
    write_output(files["hints"], hints_file_text(site), "hints file")
    write_output(files["control"], controlfile.render(site), "control file")
    lines = [
        "# Site-wide defaults (iotune defaults)",
        "",
        "site set: " + (" ".join(f"{k}={v}" for k, v in sorted(site.items())) or "(none)"),
        *[f"- {why}" for why in chosen["dropped"].values()],
        "",
        *report_lines(proxies, chosen),
        "",
        f"command: {meta.get('command', '')}",
    ]
    write_output(files["report"], "\n".join(lines) + "\n", "report")
    data = {
        **meta,
        "site": site,
        "support": chosen["support"],
        "dropped": chosen["dropped"],
        "proxies": {
            p.name: {
                "command": p.command,
                "individual": p.individual,
                "individual_study_speedup": p.speedup,
            }
            for p in proxies
        },  # fmt: skip
        "results": chosen["results"],
        "history": chosen["history"],
    }
    write_output(files["json"], json.dumps(data, indent=1) + "\n", "results")
    try:
        image = plot_png(proxies, chosen)
    except Exception as e:  # the plot is a convenience: the numbers are in the report
        files.pop("plot")
        write_output(out / "defaults-plot-error.txt", f"{type(e).__name__}: {e}\n", "plot error")
    else:
        write_output(files["plot"], image, "plot")
    return files


def how_to_use(files: dict[str, Path]) -> str:
    """The line that says how to use the files write_outputs() wrote: commands to paste, so
    their names are quoted as bash reads them back (outputs.shell_word)."""
    return (
        f"iotune defaults: use the hints with ROMIO_HINTS={shell_word(files['hints'])} "
        f"(MPICH/ROMIO), or the settings with iotune run --config {shell_word(files['control'])}"
    )


def run_value(opts: trial.TrialOptions, settings: dict[str, str]) -> float | None:
    o = trial.run_trial(settings, opts)
    return o.value if o.ok else None
