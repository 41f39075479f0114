"""Two builds of the runtime give the same profile of every kernel, apart from times: a check for
changes meant to change no behaviour (a restructuring, a move of files).

Each kernel of a build's kernels/ folder runs at a small size on 2 MPICH ranks under each mode
(profile; profile with every parameter's control file; adaptive; profile with a trace of every
layer), preloaded with library A twice and library B twice. A field that differs between the two
runs of one library is volatile (times, rates, the session): it is left out and named; so are
the fields that are times or follow from times by their name (TIME_FIELD: `*_s`, `*_time`,
`slowest_rank`, ...), volatile or not in a given pair of runs. Every other field must be the
same for A and B. The libraries' own paths are written as <lib>.

    python3 tools/profile_identity.py --a /work/main/build/runtime/libiotune.so \\
        --b build/runtime/libiotune.so [--kernels build/kernels] [--out result.json]
Exits 1 when a field differs, naming the kernel, mode and field.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# The kernels at the sizes of their CTest smoke runs (kernels/CMakeLists.txt).
KERNELS = {
    "vpicio": ["--particles", "1000", "--steps", "2", "--read", "--cleanup"],
    "vorpalio": ["--block", "4,3,2", "--steps", "2", "--read", "--cleanup"],
    "gcrmio": [
        "--cells",
        "100",
        "--levels",
        "5",
        "--chunk-cells",
        "30",
        "--iterations",
        "2",
        "--read",
        "--cleanup",
    ],  # fmt: skip
    "iorio": [
        "--block",
        "64K",
        "--transfer",
        "16K",
        "--segments",
        "2",
        "--steps",
        "2",
        "--read",
        "--cleanup",
    ],  # fmt: skip
    "haccio": ["--particles", "1000", "--read", "--cleanup"],
}
KERNELS["gcrmio-h5py"] = KERNELS["gcrmio"]  # the same kernel written with h5py
# Times, and what only times decide (which rank was slowest, rates, shares of time).
TIME_FIELD = re.compile(
    r"(_s|_time|seconds|_per_s|meta_fraction|imbalance|slowest_rank|slowest|session|wall|epoch)$"
)
MODES = {
    "profile": {},
    "config": {"IOTUNE_CONFIG": str(ROOT / "tests" / "data" / "probe_all.xml")},
    "adaptive": {"IOTUNE_MODE": "adaptive"},
    "trace": {"IOTUNE_TRACE": "all"},
}


def flatten(value, path="", out=None) -> dict[str, object]:
    out = {} if out is None else out
    if isinstance(value, dict):
        for k, v in value.items():
            flatten(v, f"{path}.{k}", out)
    elif isinstance(value, list):
        for i, v in enumerate(value):
            flatten(v, f"{path}[{i}]", out)
        if not value:
            out[path] = []
    else:
        out[path] = value
    return out


def run(lib: Path, kernel: Path, args: list[str], env_add: dict[str, str]) -> dict[str, object]:
    with tempfile.TemporaryDirectory(prefix="iotune-identity-") as d:
        prof = Path(d) / "profile.json"
        env = dict(os.environ, LD_PRELOAD=str(lib), IOTUNE_PROFILE=str(prof), **env_add)
        for k in ("IOTUNE_SESSION", "IOTUNE_RANK_CHILD"):
            env.pop(k, None)
        r = subprocess.run(["timeout", "120", "mpiexec.mpich", "-n", "2", str(kernel), *args],
                           cwd=d, env=env, capture_output=True, text=True)  # fmt: skip
        if r.returncode != 0:
            sys.exit(f"{kernel.name} with {lib}: exit {r.returncode}\n{r.stderr[-2000:]}")
        text = prof.read_text().replace(str(lib), "<lib>").replace(d, "<dir>")
        return flatten(json.loads(text))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--a", type=Path, required=True, help="libiotune.so before")
    ap.add_argument("--b", type=Path, required=True, help="libiotune.so after")
    ap.add_argument("--kernels", type=Path, default=ROOT / "build" / "kernels")
    ap.add_argument("--out", type=Path, help="the result as JSON")
    args = ap.parse_args(argv)
    a, b = args.a.resolve(), args.b.resolve()
    result = {"a": str(a), "b": str(b), "runs": []}
    bad = 0
    for name, kargs in KERNELS.items():
        kernel = args.kernels / name
        if not kernel.exists():
            print(f"{name:9s} not built in {args.kernels}: left out")
            continue
        for mode, env_add in MODES.items():
            a1, b1, a2, b2 = (run(lib, kernel, kargs, env_add) for lib in (a, b, a, b))
            volatile = {p for x, y in ((a1, a2), (b1, b2)) for p in x.keys() | y.keys()
                        if x.get(p) != y.get(p)
                        or TIME_FIELD.search(p.rsplit(".", 1)[-1].split("[")[0])}  # fmt: skip
            differ = sorted(p for p in a1.keys() | b1.keys() if p not in volatile
                            and a1.get(p, "<absent>") != b1.get(p, "<absent>"))  # fmt: skip
            fields = len(a1.keys() - volatile)
            print(f"{name:9s} {mode:9s} {fields:5d} fields identical, {len(volatile):4d} volatile"
                  f"{'' if not differ else f', {len(differ)} DIFFER'}")  # fmt: skip
            for p in differ[:20]:
                print(f"    {p}: {a1.get(p, '<absent>')!r} -> {b1.get(p, '<absent>')!r}")
            bad += len(differ)
            result["runs"].append({"kernel": name, "mode": mode, "identical_fields": fields,
                                   "volatile": sorted(volatile), "differ": differ})  # fmt: skip
    names = sorted({p.rsplit(".", 1)[-1] for r in result["runs"] for p in r["volatile"]})
    print("volatile fields (by last name):", " ".join(names))
    if args.out:
        args.out.write_text(json.dumps(result, indent=1) + "\n")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
