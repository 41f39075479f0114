"""Trace bytes per rank and trace files per job as ranks grow (issue 28, item 2): a regular
pattern (the IOR-like kernel: every rank its block of each segment of a shared file, several
steps) traced at P ranks on H emulated hosts (scripts/emuhosts.sh; 1 host: plain mpiexec),
each run writing both forms of the trace (IOTUNE_TRACE_FILES=both): the ranks' own files
(rank-N.json.gz, as before issue 28) and one file per host (host-I.json.gz, schema 5). Per run:
the files and bytes of each form, per rank; the host files' shapes and what their members carry
of their own; and whether every rank's trace read from the host files equals its own file's
(iotune.trace). Sizes only: the run's wall time is recorded but is not a measurement (ranks
beyond the 2 cores are oversubscribed under nice on a shared VM).

    python3 bench/scale_trace/scale_trace.py --lib build/runtime/libiotune.so \\
        --ranks 2,16,64 --hosts 1,2,4 --out bench/scale_trace/scale_trace.json
    python3 bench/scale_trace/scale_trace.py --table bench/scale_trace/scale_trace.json
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench" / "common"))
sys.path.insert(0, str(REPO / "src"))
from emuseries import Series, emulated_hosts, run_kernel  # noqa: E402

from iotune import trace as iotrace  # noqa: E402

ARGS = ["--api", "mpiio", "--block", "65536", "--transfer", "4096", "--segments", "8",
        "--steps", "4"]  # fmt: skip


def host_stats(path: Path) -> dict:
    doc = json.loads(gzip.decompress(path.read_bytes()))
    members = doc["members"]
    return {"members": len(members), "shapes": len(doc["shapes"]),
            "own_steps": sum("step" in m for m in members),
            "own_order": sum("sig" in m["runs"] for m in members),
            "own_files": sum("files" in m for m in members),
            "inline_shapes": sum(isinstance(m["shape"], dict) for m in members)}  # fmt: skip


def same_traces(prof: Path, ranks: int) -> bool:
    """Every rank's trace from the host files equals its own file's (but for the version and
    the host's name and number)."""
    found = iotrace.by_rank(prof)
    d = Path(f"{prof}.trace")
    for r in range(ranks):
        own = iotrace.read(d / f"rank-{r}.json.gz")
        path, merged = found.get(r, (None, None))
        if merged is None or not path.endswith(".json.gz") or "host-" not in path:
            return False
        drop = {"version", "host", "host_index"}
        if {k: v for k, v in merged.items() if k not in drop} != {
                k: v for k, v in own.items() if k != "version"}:  # fmt: skip
            return False
    return True


def run(lib: Path, kernel: Path, ranks: int, hosts: int, level: str, timeout: int) -> dict:
    with tempfile.TemporaryDirectory(prefix="iotune-scaletrace-") as d:
        prof = Path(d) / "p.json"
        env = {"LD_PRELOAD": str(lib), "IOTUNE_PROFILE": str(prof), "IOTUNE_TRACE": level,
               "IOTUNE_TRACE_FILES": "both"}  # fmt: skip
        r, wall = run_kernel(kernel, ARGS, ranks, hosts, env, d, timeout)
        tdir = Path(f"{prof}.trace")
        if r.returncode != 0 or not tdir.is_dir():
            return {"error": f"exit {r.returncode}: {r.stderr[-500:]}"}
        rank_files = sorted(tdir.glob("rank-*.json.gz"))
        host_files = sorted(tdir.glob("host-*.json.gz"))
        rb = sum(p.stat().st_size for p in rank_files)
        hb = sum(p.stat().st_size for p in host_files)
        per_host = [{"file": p.name, "bytes": p.stat().st_size, **host_stats(p)}
                    for p in host_files]  # fmt: skip
        return {
            "wall_s": round(wall, 3),
            "profile_hosts": (json.loads(prof.read_text()).get("hosts") or {}).get("count"),
            "before": {"files": len(rank_files), "bytes": rb, "bytes_per_rank": rb / ranks},
            "after": {
                "files": len(host_files),
                "bytes": hb,
                "bytes_per_rank": hb / ranks,
                "hosts": per_host,
            },  # fmt: skip
            "expanded_equal": same_traces(prof, ranks),
            "stderr": r.stderr[-300:],
        }


def table(paths: list[Path]) -> str:
    """The runs of result files as docs/scale.md's table (markdown)."""
    lines = ["| level | ranks | hosts | files before / after | bytes before / after | bytes per "
             "rank before / after | shapes | members with own steps / order / files | "
             "expanded = own files | hosts counted |", "|" + "---|" * 10]  # fmt: skip
    runs = [r for p in paths for r in json.loads(p.read_text())["runs"]]
    for r in sorted(runs, key=lambda r: (r["level"], r["hosts"], r["ranks"])):
        if "error" in r:
            lines.append(f"| {r['level']} | {r['ranks']} | {r['hosts']} | {r['error'][:60]} |"
                         + " |" * 6)  # fmt: skip
            continue
        b, a = r["before"], r["after"]
        hs = a["hosts"]
        own = [sum(h[k] for h in hs) for k in ("own_steps", "own_order", "own_files")]
        lines.append(
            f"| {r['level']} | {r['ranks']} | {r['hosts']} | {b['files']} / {a['files']}"
            f" | {b['bytes']:,} / {a['bytes']:,} B"
            f" | {b['bytes_per_rank']:,.0f} / {a['bytes_per_rank']:,.0f} B"
            f" | {sum(h['shapes'] for h in hs)} | {own[0]} / {own[1]} / {own[2]}"
            f" | {'yes' if r['expanded_equal'] else 'NO'} | {r['profile_hosts']} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    if argv is None:
        argv = sys.argv[1:]
    if argv[:1] == ["--table"]:
        print(table([Path(x) for x in argv[1:]]))
        return 0
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--lib", type=Path, required=True)
    kernels = os.environ.get("IOTUNE_KERNELS_DIR", REPO / "build" / "kernels")
    ap.add_argument("--kernels", type=Path, default=Path(kernels))
    ap.add_argument("--ranks", default="2,16,64")
    ap.add_argument("--hosts", default="1,2")
    ap.add_argument("--levels", default="1", help="IOTUNE_TRACE levels: 1, all")
    ap.add_argument("--timeout", type=int, default=600)
    ap.add_argument("--out", type=Path, required=True)
    a = ap.parse_args(argv)
    kernel = a.kernels / "iorio"
    series = Series(a.out, ["iorio", *ARGS], keep_earlier=True)
    with emulated_hosts([int(h) for h in a.hosts.split(",")]) as hosts_list:
        for level in a.levels.split(","):
            for hosts in hosts_list:
                for ranks in [int(x) for x in a.ranks.split(",")]:
                    got = run(a.lib.resolve(), kernel, ranks, hosts, level, a.timeout)
                    row = {"level": level, "ranks": ranks, "hosts": hosts, **got}
                    series.add(row)
                    print(table([a.out]).splitlines()[-1] if "error" not in row else row,
                          flush=True)  # fmt: skip
    series.save()
    return 0


if __name__ == "__main__":
    sys.exit(main())
