"""Instructions per intercepted call of two runtime libraries, measured in one run, interleaved:
bench/callcost/callcost.py's slopes (callgrind, N1 and N2 calls) for each mode and variant,
library A and
library B in turn, R rounds; the median per call of each, and B against A. For a change meant to
cost nothing per call (a restructuring): the slopes move by a few instructions from run to run
(the plain program, without any preload, too), so one run of each proves little.

    python3 tools/callcost_compare.py --a /work/main/build/runtime/libiotune.so \\
        --b build/runtime/libiotune.so [--rounds 3] [--prog build/bench/c/callcost] [--out F]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def load_callcost():
    spec = importlib.util.spec_from_file_location(
        "callcost", ROOT / "bench" / "callcost" / "callcost.py"
    )
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--a", type=Path, required=True, help="libiotune.so before")
    ap.add_argument("--b", type=Path, required=True, help="libiotune.so after")
    ap.add_argument("--prog", type=Path, default=ROOT / "build" / "bench" / "c" / "callcost")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args(argv)
    cc = load_callcost()
    cc.PROG = args.prog.resolve()
    libs = {"a": args.a.resolve(), "b": args.b.resolve()}
    per: dict[str, dict[str, dict[str, list[float]]]] = {}
    with tempfile.TemporaryDirectory(prefix="iotune-callcost-") as tmp:
        tmpdir = Path(tmp)
        (tmpdir / "empty.xml").write_text("<Parameters/>\n")
        for r in range(args.rounds):
            for mode, (n1, n2, k) in cc.MODES.items():
                for variant in cc.VARIANTS:
                    for name in ("a", "b") if r % 2 == 0 else ("b", "a"):
                        cc.LIB = libs[name]
                        i1 = cc.instructions(mode, n1, variant, tmpdir)
                        i2 = cc.instructions(mode, n2, variant, tmpdir)
                        slope = (i2 - i1) / ((n2 - n1) * k)
                        per.setdefault(name, {}).setdefault(mode, {}).setdefault(variant, [])
                        per[name][mode][variant].append(slope)
                        print(
                            f"round {r + 1} {name} {mode} {variant}: {slope:.1f}", file=sys.stderr
                        )
    print("| call | variant | A median (min-max) | B median (min-max) | B - A |")
    print("|---|---|---|---|---|")
    for mode in cc.MODES:
        for variant in cc.VARIANTS:
            a, b = per["a"][mode][variant], per["b"][mode][variant]
            ma, mb = statistics.median(a), statistics.median(b)
            span_a, span_b = f"{min(a):.1f}-{max(a):.1f}", f"{min(b):.1f}-{max(b):.1f}"
            print(f"| {mode} | {variant} | {ma:.1f} ({span_a}) | {mb:.1f} ({span_b}) "
                  f"| {mb - ma:+.1f} ({(mb - ma) / ma:+.1%}) |")  # fmt: skip
    if args.out:
        record = {"libs": {k: str(v) for k, v in libs.items()}, "prog": str(cc.PROG),
                  "per_call": per}  # fmt: skip
        args.out.write_text(json.dumps(record, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
