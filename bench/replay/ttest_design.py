#!/usr/bin/env python3
"""Sequential paired t-tests on log ratios vs the signed-rank design (issue 25: fewer pairs to a
verified verdict; bench/README.md, "A t-test lane for the verification"). Simulates, with a
fixed seed, the false-win rate of candidate designs under symmetric nulls (normal, Laplace, t3,
Cauchy, contaminated mixtures like the VM's 3-7x freed-memory outliers, pair-to-pair changing
scale, bimodal runs, two draws of one configuration of the held landscapes, the real A/A pairs
of bench/verify_power/; and, reported but not calibrated on (STRESS), uniform, two-point and
an order effect within a pair), and their power and pairs at gains 1.1, 1.3, 1.6x on the held
landscapes' noise (at 1x and 2x) and on outlier-contaminated noise.

Designs: "W 5..20"  the signed-rank test, Pocock over looks 5..20 (sequential.design());
         "T 3..20", "T 4..20": a t-test on the log ratios, Pocock over those looks, its per-look
               nominal level the largest whose false-win rate under every calibration null
               stays <= alpha with two Monte-Carlo standard errors of margin ("every null":
               the STRESS nulls too);
         "W 5..20 (alpha a) + T 3..k": the signed-rank design at a plus a t lane at looks 3..k,
               its level set so the whole design's false-win rate stays <= alpha.

  PYTHONPATH=src nice -n 19 .venv/bin/python bench/replay/ttest_design.py \
      --sims 100000 --power-sims 20000 --out bench/replay/ttest-design.json
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from iotune.search import sequential as SQ  # noqa: E402

MAXP = 20
ALPHA = 0.05


def t_sf(t: np.ndarray, df: int) -> np.ndarray:
    """One-sided P(T_df >= t), exact for integer df (Abramowitz & Stegun 26.7.3-4)."""
    th = np.arctan(t / math.sqrt(df))
    s, c = np.sin(th), np.cos(th)
    if df % 2:
        if df == 1:
            a = 2 * th / math.pi
        else:
            acc, term = c.copy(), c.copy()
            for k in range(3, df - 1, 2):
                term = term * c * c * (k - 1) / k
                acc = acc + term
            a = 2 / math.pi * (th + s * acc)
    else:
        acc, term = np.ones_like(c), np.ones_like(c)
        for k in range(2, df - 1, 2):
            term = term * c * c * (k - 1) / k
            acc = acc + term
        a = s * acc
    return (1 - a) / 2  # a = P(|T| < |t|) carries t's sign


def t_min_p(d: np.ndarray, first: int, last: int) -> np.ndarray:
    """The smallest one-sided t p-value of each row over looks first..last (sd 0: p 1)."""
    best = np.ones(d.shape[0])
    cs, cs2 = np.cumsum(d, axis=1), np.cumsum(d * d, axis=1)
    for n in range(first, last + 1):
        m = cs[:, n - 1] / n
        var = np.maximum(cs2[:, n - 1] - n * m * m, 0) / (n - 1)
        sd = np.sqrt(var)
        with np.errstate(divide="ignore", invalid="ignore"):
            t = np.where(sd > 1e-12 * np.maximum(np.abs(m), 1e-300), m * math.sqrt(n) / sd, -np.inf)
        best = np.minimum(best, t_sf(t, n - 1))
    return best


def t_looks_p(d: np.ndarray, first: int, last: int) -> np.ndarray:
    """p per look (rows x looks), for the first-crossing look in power runs."""
    out = np.ones((d.shape[0], MAXP + 1))
    cs, cs2 = np.cumsum(d, axis=1), np.cumsum(d * d, axis=1)
    for n in range(first, last + 1):
        m = cs[:, n - 1] / n
        sd = np.sqrt(np.maximum(cs2[:, n - 1] - n * m * m, 0) / (n - 1))
        with np.errstate(divide="ignore", invalid="ignore"):
            t = np.where(sd > 1e-12 * np.maximum(np.abs(m), 1e-300), m * math.sqrt(n) / sd, -np.inf)
        out[:, n] = t_sf(t, n - 1)
    return out


def w_looks_p(d: np.ndarray, first: int, last: int) -> np.ndarray:
    """Signed-rank exact p per look (ties in |d| broken against B's wins, zeros dropped)."""
    out = np.ones((d.shape[0], MAXP + 1))
    for n in range(first, last + 1):
        x = d[:, :n]
        mag = np.abs(x) * (1 - (x > 0) * 1e-12)  # equal magnitudes: B's wins rank lower (as
        # sequential._w_plus: conservative)
        ranks = mag.argsort(axis=1, kind="stable").argsort(axis=1) + 1
        nz = (x != 0).sum(axis=1)
        zeros = n - nz
        w = ((ranks - zeros[:, None]) * (x > 0)).sum(axis=1)
        p = np.ones(d.shape[0])
        for k in np.unique(nz):
            if k == 0:
                continue
            tail = np.asarray(SQ._tail(int(k)))
            sel = nz == k
            p[sel] = tail[np.clip(w[sel], 0, len(tail) - 1)]
        out[:, n] = p
    return out


def landscape_runs() -> dict[str, list[np.ndarray]]:
    """Each held landscape's configurations' log runs (>= 5 runs), at 1x and 2x the noise."""
    import replay as R

    held = [R.LANDSCAPES / f for f in R.HELD]
    out = {}
    for k in ("vorpalio", "gcrmio"):
        land = R.load_landscape(held, k)
        runs = []
        for s in land.samples.values():
            v = np.array([x for x, _, _ in s if x is not None and x > 0])
            if len(v) >= 5:
                runs.append(np.log(v))
        out[k] = runs
        out[k + "x2"] = [np.median(r) + 2 * (r - np.median(r)) for r in runs]
    return out


def real_aa() -> dict[str, np.ndarray]:
    """Real A/A pairs: log(A / A') of the defaults run twice per round, in shuffled order
    (bench/verify_power/verify-*.json: 15 sessions of GCRM-IO and VORPAL-IO, 24-30 rounds)."""
    out = {}
    for f in sorted((HERE.parent / "verify_power").glob("verify-*.json")):
        if f.name == "verify-power.json":
            continue
        rounds = json.loads(f.read_text()).get("rounds") or []
        d = [math.log(r["A"] / r["A2"]) for r in rounds if (r.get("A") or 0) > 0
             and (r.get("A2") or 0) > 0]  # fmt: skip
        if len(d) >= 5:
            out[f.stem] = np.array(d)
    return out


def nulls(rng: np.random.Generator, sims: int, lands: dict) -> dict[str, np.ndarray]:
    sh = (sims, MAXP)
    n = rng.standard_normal

    def contaminated(p: float) -> np.ndarray:
        out = 0.15 * n(sh)
        hit = rng.random(sh) < p
        sign = np.where(rng.random(sh) < 0.5, -1, 1)
        return out + hit * sign * np.log(rng.uniform(3, 7, sh))

    out = {
        "normal": n(sh),
        "laplace": rng.laplace(size=sh),
        "t3": rng.standard_t(3, sh),
        "cauchy": rng.standard_cauchy(sh),
        "contaminated 5%": contaminated(0.05),
        "contaminated 20%": contaminated(0.2),
        "one side's outliers 30%": 0.1 * n(sh)
        + (rng.random(sh) < 0.3) * np.where(rng.random(sh) < 0.5, -1, 1) * np.log(5),
        "scale changes": n(sh) * np.exp(1.5 * n(sh)),
        "uniform": rng.uniform(-1, 1, sh),
        **{f"bimodal runs {q:.0%} slow": runs_diff(rng, sh, q) for q in (0.5, 0.25, 0.1)},
        # the pair's second run 1.3x faster (page cache, a warm-up the first run paid for),
        # the order random (noise.interleaved): symmetric, and exactly the signed-rank test's
        # null (fair signs), but near-equal magnitudes
        **{
            f"order effect 1.3x, noise {j:.0%}": np.where(rng.random(sh) < 0.5, -1, 1)
            * math.log(1.3)
            + j * n(sh)
            for j in (0.03, 0.1)
        },
        "two points": np.where(rng.random(sh) < 0.5, -1.0, 1.0) * (1 + 1e-9 * rng.random(sh)),
    }
    for name, runs in lands.items():
        cfg = rng.integers(0, len(runs), sims)
        d = np.empty(sh)
        for i, r in enumerate(runs):
            sel = cfg == i
            k = int(sel.sum())
            a = r[rng.integers(0, len(r), (k, MAXP))]
            b = r[rng.integers(0, len(r), (k, MAXP))]
            d[sel] = a - b
        out[f"landscape {name} (same config twice)"] = d
    # real A/A pairs resampled, which side is "tuned" a coin flip (verify_power's A/A rows)
    aa = real_aa()
    names = sorted(aa)
    pick = rng.integers(0, len(names), sims)
    d = np.empty(sh)
    for i, k in enumerate(names):
        sel = pick == i
        d[sel] = aa[k][rng.integers(0, len(aa[k]), (int(sel.sum()), MAXP))]
    out[f"real A/A pairs ({len(names)} sessions)"] = d * np.where(rng.random(sh) < 0.5, -1, 1)
    # the session with the largest order effect (the later run faster by 0.22 in log)
    k = "verify-vorpalio-warmup1-drop-s2"
    if k in aa:
        out[f"real A/A pairs ({k})"] = aa[k][rng.integers(0, len(aa[k]), sh)] * np.where(
            rng.random(sh) < 0.5, -1, 1
        )
    return out


def runs_diff(rng: np.random.Generator, sh: tuple, q: float, jitter: float = 0.03) -> np.ndarray:
    """A pair's log ratio when every run is slow (3-7x: the VM's freed memory) with
    probability q, else within a few per cent: x - y of two such runs."""

    def run() -> np.ndarray:
        slow = rng.random(sh) < q
        return jitter * rng.standard_normal(sh) + slow * np.log(rng.uniform(3, 7, sh))

    return run() - run()


def se(e: float, sims: int) -> float:
    return math.sqrt(max(e * (1 - e), 1e-12) / sims)


# nulls reported but not calibrated against (a t lane calibrated on them cannot reject before
# 2^-n <= alpha, the signed-rank test's own floor): neither uniform nor two-point is the law of
# x - y for two independent runs (such a law has a non-negative characteristic function), but
# an order effect within a pair (the second run faster, the order random) is two-point-like:
# n pairs of near-equal magnitude all won with probability 2^-n, and a large t statistic
STRESS = ("uniform", "two points", "order effect 1.3x, noise 3%", "order effect 1.3x, noise 10%")


def calibrate(
    minps: dict[str, np.ndarray], sims: int, alpha: float, other=None, stress: bool = False
) -> float:
    """The largest nominal level L with max over the calibration nulls (not STRESS) of
    P(min p <= L [or other]) + 2 se <= alpha."""
    lo, hi = 0.0, alpha
    for _ in range(50):
        mid = (lo + hi) / 2
        worst = 0.0
        for name, mp in minps.items():
            if name in STRESS and not stress:
                continue
            hit = mp <= mid
            if other is not None:
                hit = hit | other[name]
            e = hit.mean()
            worst = max(worst, e + 2 * se(e, sims))
        lo, hi = (mid, hi) if worst <= alpha else (lo, mid)
    return lo


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sims", type=int, default=100_000)
    ap.add_argument("--power-sims", type=int, default=20_000)
    ap.add_argument("--seed", type=int, default=20261127)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    lands = landscape_runs()
    nl = nulls(rng, args.sims, lands)
    wdes = SQ.design()
    res: dict = {
        "sims": args.sims,
        "seed": args.seed,
        "alpha": ALPHA,
        "designs": {},
        "nulls": list(nl),
    }
    # per null: min p of each lane
    wp = {k: w_looks_p(d, 5, MAXP) for k, d in nl.items()}
    designs = {}
    designs["W 5..20"] = {"w": (5, MAXP, wdes.level), "t": None}
    for first in (3, 4):
        tmin = {k: t_min_p(d, first, MAXP) for k, d in nl.items()}
        lv = calibrate(tmin, args.sims, ALPHA)
        designs[f"T {first}..20"] = {"w": None, "t": (first, MAXP, lv)}
        tmin = {k: t_min_p(d, first, MAXP) for k, d in nl.items()}
        lv = calibrate(tmin, args.sims, ALPHA, stress=True)
        designs[f"T {first}..20, every null"] = {"w": None, "t": (first, MAXP, lv)}
    for alpha_w in (0.04, 0.03):
        wlev = SQ.design(alpha=alpha_w).level
        whit = {k: (p[:, 5:] <= wlev).any(axis=1) for k, p in wp.items()}
        for last in (4, 5, 6):
            tmin = {k: t_min_p(d, 3, last) for k, d in nl.items()}
            lv = calibrate(tmin, args.sims, ALPHA, other=whit)
            designs[f"W 5..20 (alpha {alpha_w}) + T 3..{last}"] = {
                "w": (5, MAXP, wlev),
                "t": (3, last, lv),
            }
            if alpha_w == 0.04 and last == 6:
                lv = calibrate(tmin, args.sims, ALPHA, other=whit, stress=True)
                designs[f"W 5..20 (alpha {alpha_w}) + T 3..{last}, every null"] = {
                    "w": (5, MAXP, wlev),
                    "t": (3, last, lv),
                }
    for name, des in designs.items():
        row = {"w": des["w"], "t": des["t"], "false_win": {}}
        for k, d in nl.items():
            hit = np.zeros(d.shape[0], bool)
            if des["w"]:
                a, b, lv = des["w"]
                hit |= (wp[k][:, a : b + 1] <= lv).any(axis=1)
            if des["t"]:
                a, b, lv = des["t"]
                hit |= t_min_p(d, a, b) <= lv
            e = float(hit.mean())
            row["false_win"][k] = [e, se(e, args.sims)]
        cal = {k: v for k, v in row["false_win"].items() if k not in STRESS}
        row["worst_false_win"] = max(v[0] for v in cal.values())
        row["worst_null"] = max(cal, key=lambda k: cal[k][0])
        row["worst_false_win_every_null"] = max(v[0] for v in row["false_win"].values())
        row["worst_null_every"] = max(row["false_win"], key=lambda k: row["false_win"][k][0])
        res["designs"][name] = row
        print(
            f"{name:42s} W={des['w']} T={des['t']} worst false win {row['worst_false_win']:.4f} "
            f"({row['worst_null']}); "
            + ", ".join(f"{k[:22]} {v[0]:.4f}" for k, v in row["false_win"].items()),
            flush=True,
        )
    # power: pairs' log ratios = log(gain) + a null draw of the landscape's noise
    prng = np.random.default_rng(args.seed + 1)
    pn = nulls(prng, args.power_sims, lands)
    res["power"] = {}
    for noise in [f"landscape {k} (same config twice)" for k in lands] + ["contaminated 5%"]:
        for gain in (1.1, 1.3, 1.6):
            d = pn[noise] + math.log(gain)
            wpp = w_looks_p(d, 5, MAXP)
            for name, des in designs.items():
                first = np.full(d.shape[0], MAXP + 1)
                if des["w"]:
                    a, b, lv = des["w"]
                    for n in range(b, a - 1, -1):
                        first = np.where(wpp[:, n] <= lv, n, first)
                if des["t"]:
                    a, b, lv = des["t"]
                    tp = t_looks_p(d, a, b)
                    for n in range(b, a - 1, -1):
                        first = np.where((tp[:, n] <= lv) & (n < first), n, first)
                shown = first <= MAXP
                pairs = np.where(shown, first, MAXP)
                row = {
                    "power": float(shown.mean()),
                    "median_pairs_if_shown": float(np.median(first[shown]))
                    if shown.any()
                    else None,
                    "mean_pairs": float(pairs.mean()),
                    "within_4": float((first <= 4).mean()),
                }
                res["power"][f"{noise} | {gain} | {name}"] = row
                print(
                    f"{noise[:38]:38s} {gain:4} {name:42s} power {row['power']:.3f} "
                    f"median pairs {row['median_pairs_if_shown']} mean {row['mean_pairs']:.2f} "
                    f"<=4: {row['within_4']:.3f}",
                    flush=True,
                )
    if args.out:
        Path(args.out).write_text(json.dumps(res, indent=1) + "\n")


if __name__ == "__main__":
    main()
