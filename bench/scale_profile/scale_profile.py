"""What the profile's end costs as ranks grow (issue 28, item 4): one kernel writing one shared
file (vpicio) at P ranks on H emulated hosts (scripts/emuhosts.sh; 1 host: plain mpiexec),
with the runtime before the reduction (--before, e.g. main's build: every rank's records
gathered to rank 0) and after it (--after: reduced). Per run: the bytes rank 0 receives at the
finish (after: counted by the runtime, IOTUNE_REDUCE_STATS; before: P x records x the record's
size, what MPI_Gatherv moved), the profile's size, the job's wall time and the reduction's time
on rank 0, and whether the two profiles agree apart from times. Ranks beyond the cores are
oversubscribed (functional numbers: times are those of a loaded 2-core VM).

    python3 bench/scale_profile/scale_profile.py --before /work/main/build/runtime/libiotune.so \\
        --after build/runtime/libiotune.so --ranks 2,16,64 --hosts 1,2 --out scale_profile.json
    python3 bench/scale_profile/scale_profile.py --table scale_profile.json ...   (markdown)
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench" / "common"))
sys.path.insert(0, str(REPO / "tools"))
from emuseries import Series, emulated_hosts, run_kernel  # noqa: E402
from profile_identity import TIME_FIELD, flatten  # noqa: E402

ARGS = ["--particles", "1000", "--steps", "2"]


def timed(path: str) -> bool:
    """A field that is a time, or follows from times (profile_identity's TIME_FIELD on any part
    of its path: files[0].time_s.max), or names the run (argv, program, session)."""
    parts = [p.split("[")[0] for p in path.split(".") if p]
    return parts[:1] in (["argv"], ["program"], ["start"]) or any(
        TIME_FIELD.search(p) for p in parts
    )


def run(lib: Path, kernel: Path, ranks: int, hosts: int, timeout: int) -> dict:
    with tempfile.TemporaryDirectory(prefix="iotune-scale-") as d:
        prof, stats = Path(d) / "p.json", Path(d) / "stats.json"
        env = {"LD_PRELOAD": str(lib), "IOTUNE_PROFILE": str(prof),
               "IOTUNE_REDUCE_STATS": str(stats)}  # fmt: skip
        r, wall = run_kernel(kernel, ARGS, ranks, hosts, env, d, timeout)
        if r.returncode != 0 or not prof.exists():
            return {"error": f"exit {r.returncode}: {r.stderr[-500:]}"}
        text = prof.read_text().replace(d, "<dir>")
        p = json.loads(text)
        out = {
            "wall_s": round(wall, 3),
            "profile_bytes": len(text.encode()),
            "records": sum(int(f.get("ranks", 1)) for f in p["files"]),
            "hosts": (p.get("hosts") or {}).get("count"),
            "leak_on_stderr": "leak" in r.stderr.lower(),
            "flat": {k: v for k, v in flatten(json.loads(text)).items() if not timed(k)},
        }
        if stats.exists():
            out["stats"] = json.loads(stats.read_text())
        return out


def table(paths: list[Path]) -> str:
    """The runs of result files as docs/scale.md's table (markdown)."""
    lines = ["| ranks | hosts | into rank 0, gathered (before) | reduced: payload | through the "
             "tree | rank 0 peak RSS | profile before / after | wall before / after | reduction "
             "on rank 0 | fields compared, differ |", "|" + "---|" * 10]  # fmt: skip
    runs = [r for p in paths for r in json.loads(p.read_text())["runs"]]
    for r in sorted(runs, key=lambda r: (r["hosts"], r["ranks"])):
        if "error" in r:
            lines.append(f"| {r['ranks']} | {r['hosts']} | {r['error'][:60]} |" + " |" * 7)
            continue
        b, a, s = r["before"], r["after"], r["after"].get("stats", {})
        differ = ", ".join(d.lstrip(".") for d in r["profile_fields_differ"][:3])
        lines.append(
            f"| {r['ranks']} | {r['hosts']} | {b['bytes_to_rank0']:,} B | {s['bytes_to_rank0']:,} B"
            f" | {s['tree_bytes_to_rank0']:,} B | {s['rank0_max_rss_kb'] / 1024:.1f} MiB"
            f" | {b['profile_bytes']:,} / {a['profile_bytes']:,} B"
            f" | {b['wall_s']:.1f} / {a['wall_s']:.1f} s | {s['reduce_s']:.3f} s"
            f" | {r['profile_fields_compared']},"
            f" {r.get('profile_fields_differ_count', len(r['profile_fields_differ']))}"
            + (f" ({differ})" if differ else "") + " |")  # fmt: skip
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    if argv is None:
        argv = sys.argv[1:]
    if argv[:1] == ["--table"]:
        print(table([Path(x) for x in argv[1:]]))
        return 0
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--before", type=Path, required=True)
    ap.add_argument("--after", type=Path, required=True)
    kernels = os.environ.get("IOTUNE_KERNELS_DIR", REPO / "build" / "kernels")
    ap.add_argument("--kernels", type=Path, default=Path(kernels))
    ap.add_argument("--ranks", default="2,16,64")
    ap.add_argument("--hosts", default="1,2")
    ap.add_argument("--timeout", type=int, default=600)
    ap.add_argument("--out", type=Path, required=True)
    a = ap.parse_args(argv)
    kernel = a.kernels / "vpicio"
    series = Series(a.out, ["vpicio", *ARGS])
    with emulated_hosts([int(h) for h in a.hosts.split(",")]) as hosts_list:
        for hosts in hosts_list:
            for ranks in [int(x) for x in a.ranks.split(",")]:
                before = run(a.before.resolve(), kernel, ranks, hosts, a.timeout)
                after = run(a.after.resolve(), kernel, ranks, hosts, a.timeout)
                row = {"ranks": ranks, "hosts": hosts}
                if "error" in before or "error" in after:
                    row["error"] = before.get("error") or after.get("error")
                    series.add(row)
                    print(row)
                    continue
                s = after.get("stats", {})
                fb, fa = before.pop("flat"), after.pop("flat")
                differ = sorted(k for k in fb.keys() | fa.keys() if fb.get(k) != fa.get(k))
                row.update({
                    "before": {**before, "bytes_to_rank0": before["records"]
                               * s.get("file_rec_bytes", 0) + 12 * ranks},
                    "after": after, "profile_fields_differ": differ[:20],
                    "profile_fields_differ_count": len(differ),
                    "profile_fields_differ_outside_per_rank":
                        [k for k in differ if ".per_rank." not in k],
                    "profile_fields_compared": len(fb)})  # fmt: skip
                series.add(row)
                print(f"P={ranks:4d} H={hosts} rank0 bytes before "
                      f"{row['before']['bytes_to_rank0']:>10,} after "
                      f"{s.get('bytes_to_rank0', 0):>10,}"
                      f" (tree {s.get('tree_bytes_to_rank0', 0):,})"
                      f" profile {before['profile_bytes']}/{after['profile_bytes']} B"
                      f" wall {before['wall_s']}/{after['wall_s']} s reduce {s.get('reduce_s')} s"
                      f" rss {s.get('rank0_max_rss_kb')} KiB"
                      f" differ {len(differ)}")  # fmt: skip
    series.save()
    return 0


if __name__ == "__main__":
    sys.exit(main())
