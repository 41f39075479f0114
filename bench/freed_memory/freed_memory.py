"""Keep a VM from handing freed memory back to its host while a benchmark runs.

Why: on a VM whose kernel reports free pages to the hypervisor (virtio-balloon free page
reporting, `/sys/module/page_reporting`), memory freed for more than a moment is given back to
the host, and the next program that allocates it pays a host page fault per page. A run that
writes a few hundred MiB into the page cache then takes 3-7x longer when it lands on returned
memory than when it reuses memory freed just before it: the two "modes" the benchmarks here
saw (bench/README.md, "The page cache's two modes"). Which mode a run gets depends on how long
ago the previous run's memory was freed, not on the program: noise, for every comparison.

The hold itself is the package's (`iotune.freedmem`, also behind `iotune tune
--hold-freed-memory`): it raises the reporting's minimum free age (`min_free_ms`) for the
duration of a benchmark so that freed memory stays with the VM, and restores the old value
afterwards (also when the benchmark fails; shared with other holders running at the same
time). Where the parameter does not exist (bare metal, another kernel) or cannot be written
(not root), it changes nothing and says so in the returned record.

As a command, it runs another with freed memory held (e.g. `iotune defaults`):

    python bench/freed_memory/freed_memory.py -- .venv/bin/iotune defaults --out DIR
"""

from __future__ import annotations

import json
import subprocess
import sys

from iotune.freedmem import HOLD_MS, PARAM, hold, maybe_hold

__all__ = ["HOLD_MS", "PARAM", "hold", "maybe_hold", "main"]


def main(argv: list[str]) -> int:
    """Runs argv (after a leading --) with freed memory held; says what was held on stderr."""
    cmd = argv[1:] if argv[:1] == ["--"] else argv
    if not cmd:
        print("usage: freed_memory.py -- COMMAND [ARGS...]", file=sys.stderr)
        return 2
    with hold(PARAM, HOLD_MS) as held:
        print(f"freed_memory: {json.dumps(held)}", file=sys.stderr, flush=True)
        return subprocess.run(cmd).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
