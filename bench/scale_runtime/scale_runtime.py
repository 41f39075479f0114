"""What the runtime's collective steps cost at 1 and 2 ranks, the inputs of the model in
docs/scale.md: the control file's broadcast (at MPI_Init) and the profile's gathering and
writing (at MPI_Finalize), as a function of the files each rank touched.

A probe (compiled here with mpicc) times its own MPI_Init and MPI_Finalize and touches F
small files per rank. Variants, interleaved in a shuffled order each round, each measured run
after a discarded identical one:
  plain     no preload;
  settings  preloaded, control file docs/examples/full.xml (its settings broadcast at init);
  capture   preloaded, same control file, IOTUNE_PROFILE set (profile gathered and written).
Also counted: the bytes broadcast and gathered, from the runtime's own record sizes
(sizeof(iot_entry), sizeof(iot_file_rec), compiled against runtime/src), and the profile's size.

    .venv/bin/python bench/scale_runtime/scale_runtime.py --rounds 10        (~2 min; raw:
    bench/scale_runtime/)
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench" / "common"))
import mpitools  # noqa: E402  (the MPI tools of the runtime's MPI)

BUILD = Path(os.environ.get("IOTUNE_BUILD_DIR", REPO / "build"))
CONTROL = REPO / "docs" / "examples" / "full.xml"

PROBE = r"""
#include <fcntl.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}
int main(int argc, char **argv)
{
    double t0 = now();
    MPI_Init(&argc, &argv);
    double init = now() - t0;
    int rank, files = argc > 1 ? atoi(argv[1]) : 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    char buf[4096], path[256];
    memset(buf, 'x', sizeof buf);
    for (int i = 0; i < files; i++) {
        snprintf(path, sizeof path, "probe-%d-%d.dat", rank, i);
        int fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0644);
        if (fd < 0 || write(fd, buf, sizeof buf) != (ssize_t)sizeof buf)
            return 1;
        close(fd);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    t0 = now();
    MPI_Finalize();
    double fin = now() - t0;
    printf("SCALEPROBE %d %.9f %.9f\n", rank, init, fin);
    return 0;
}
"""

SIZES = r"""
#include <stdio.h>
#include "capture/capture.h"
#include "config/settings.h"
int main(void)
{
    printf("%zu %zu\n", sizeof(iot_entry), sizeof(iot_file_rec));
    return 0;
}
"""


def compile_probes(tmp: Path) -> tuple[Path, tuple[int, int]]:
    (tmp / "probe.c").write_text(PROBE)
    (tmp / "sizes.c").write_text(SIZES)
    mpicc = mpitools.mpicc()
    subprocess.run([mpicc, "-O2", "-o", str(tmp / "probe"), str(tmp / "probe.c")], check=True)
    gen = next(BUILD.rglob("params_gen.h")).parent
    h5 = subprocess.run(
        ["pkg-config", "--cflags", mpitools.hdf5_pkg()], capture_output=True, text=True
    )
    subprocess.run([mpicc, "-I", str(REPO / "runtime" / "src"), "-I", str(gen),
                    *h5.stdout.split(), "-o", str(tmp / "sizes"), str(tmp / "sizes.c")],
                   check=True)  # fmt: skip
    entry, rec = map(int, subprocess.run([str(tmp / "sizes")], capture_output=True, text=True,
                                         check=True).stdout.split())  # fmt: skip
    return tmp / "probe", (entry, rec)


def control_settings() -> int:
    sys.path.insert(0, str(REPO / "src"))
    from iotune import controlfile

    return len(controlfile.parse_file(CONTROL).settings)


def run(probe: Path, ranks: int, files: int, variant: str, lib: Path, work: Path) -> dict:
    for p in work.glob("probe-*.dat"):
        p.unlink()
    env = {k: v for k, v in os.environ.items() if not k.startswith("IOTUNE_")}
    env.pop("LD_PRELOAD", None)
    profile = work / "profile.json"
    if profile.exists():
        profile.unlink()
    if variant != "plain":
        env["LD_PRELOAD"] = str(lib)
        env["IOTUNE_CONFIG"] = str(CONTROL)
    if variant == "capture":
        env["IOTUNE_PROFILE"] = str(profile)
    cmd = [*mpitools.mpiexec(ranks), str(probe), str(files)]
    r = subprocess.run(cmd, env=env, cwd=work, capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: {r.stderr}")
    rows = [line.split()[1:] for line in r.stdout.splitlines() if line.startswith("SCALEPROBE")]
    return {
        "init_s": max(float(x[1]) for x in rows),
        "finalize_s": max(float(x[2]) for x in rows),
        "profile_bytes": profile.stat().st_size if profile.exists() else None,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--files", default="1,100")
    ap.add_argument("--ranks", default="1,2")
    ap.add_argument(
        "--out", type=Path, default=REPO / "bench" / "scale_runtime" / "scale_runtime.json"
    )
    a = ap.parse_args()
    lib = Path(os.environ.get("IOTUNE_LIB", REPO / ".venv" / "lib" / "libiotune.so"))
    rng = random.Random(1)
    with tempfile.TemporaryDirectory(prefix="iotune-scale-") as d:
        tmp = Path(d)
        probe, (entry_bytes, rec_bytes) = compile_probes(tmp)
        work = tmp / "work"
        work.mkdir()
        cases = [(r, f) for r in map(int, a.ranks.split(",")) for f in map(int, a.files.split(","))]
        variants = ["plain", "settings", "capture"]
        raw: dict[str, list[dict]] = {}
        for _ in range(a.rounds):
            order = [(c, v) for c in cases for v in variants]
            rng.shuffle(order)
            for (ranks, files), v in order:
                run(probe, ranks, files, v, lib, work)  # discarded warm-up
                m = run(probe, ranks, files, v, lib, work)
                raw.setdefault(f"{ranks} ranks, {files} files/rank, {v}", []).append(m)
    k = control_settings()
    summary = {}
    for key, ms in raw.items():
        summary[key] = {
            "init_ms_median": round(1000 * statistics.median(m["init_s"] for m in ms), 3),
            "finalize_ms_median": round(1000 * statistics.median(m["finalize_s"] for m in ms), 3),
            "finalize_ms_min": round(1000 * min(m["finalize_s"] for m in ms), 3),
            "finalize_ms_max": round(1000 * max(m["finalize_s"] for m in ms), 3),
            "profile_bytes": ms[-1]["profile_bytes"],
        }
        print(key, summary[key], flush=True)
    record = {
        "command": " ".join(sys.argv),
        "machine": {"host": platform.node(), "cpus": os.cpu_count(),
                    "platform": platform.platform(), "load_avg_at_end": os.getloadavg()},
        "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        "control_file": str(CONTROL.relative_to(REPO)),
        "control_settings": k,
        "bytes_broadcast_at_init": {"per_entry": entry_bytes, "total": 4 + k * entry_bytes,
                                    "messages": 1 + k},
        "bytes_gathered_per_rank_per_file": rec_bytes,
        "summary": summary,
        "raw": raw,
    }  # fmt: skip
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps(record, indent=1) + "\n")
    print(f"control file: {k} settings, broadcast {4 + k * entry_bytes} bytes in {1 + k} "
          f"messages; gathered per rank and file: {rec_bytes} bytes; raw: {a.out}")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
