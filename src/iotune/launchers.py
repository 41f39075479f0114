"""The launchers at the head of a command: split_launcher() tells the launcher (mpirun, mpiexec
and their suffixed names such as mpirun.openmpi or mpiexec.hydra, srun, flux run, aprun, jsrun,
ibrun, with their options) from the application after it. Below iotune.mpifamily and
iotune.launch, which both use it (docs/architecture.md)."""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Sequence

_MPI_LAUNCHER = re.compile(r"(mpirun|mpiexec|orterun|prterun)([._-][\w.-]*)?")
_OTHER_LAUNCHERS = ("srun", "aprun", "jsrun", "ibrun")
# Options that take a value in the next word (`-n 4`); `--opt=value` and `-n4` are one word.
_VALUE_OPTIONS = {
    "mpi": """-n -np -c -N -H -host --host -hosts -f -hostfile --hostfile -machinefile
        --machinefile -ppn -wdir --wdir -path --path -genvlist -envlist -bind-to --bind-to
        -map-by --map-by -rank-by --rank-by -launcher -launcher-exec -iface -configfile -x
        --prefix -npernode --npernode -npersocket --npersocket -am --am -tune --tune
        -output-filename --output-filename -timeout --timeout -cpus-per-proc --cpus-per-proc
        -cpus-per-rank --cpus-per-rank -errfile-pattern -outfile-pattern -binding -topolib
        -demux -gpus-per-proc -rmk -bootstrap -bootstrap-exec -s --stdin --personality
        --pernode-ratio -rf --rankfile --report-bindings-file""",
    "srun": """-n -N -c -p -t -A -J -o -e -i -w -x -m -D -G -q -C -d -b -L -M -r -T
        --ntasks --nodes --cpus-per-task --partition --time --account --job-name --output
        --error --input --nodelist --exclude --distribution --chdir --gpus --qos --constraint
        --dependency --mpi --export --cpu-bind --mem --mem-per-cpu --ntasks-per-node --gres
        --reservation --gpus-per-task --cpus-per-gpu --threads-per-core --hint""",
    "aprun": "-n -N -d -cc -j -S -sl -sn -L -m -p -e -a -D -r -t -E -F -R -T",
    "jsrun": """-n -a -c -g -r -b -d -l -p -K -X -E -F -h -o -k -e -M -U -D --nrs
        --tasks_per_rs --cpu_per_rs --gpu_per_rs --rs_per_host --bind --launch_distribution
        --latency_priority --smpiargs --env --chdir --stdio_stdout --stdio_stderr""",
    "ibrun": "-n -o",
    "flux": """-n -N -c -g -t -o -q -u -B -S --ntasks --nodes --cores-per-task
        --gpus-per-task --time-limit --setopt --setattr --queue --urgency --bank --output
        --error --input --label-io --cwd --env-remove --env-file --job-name --dependency""",
}
_VALUE_OPTIONS = {k: frozenset(v.split()) for k, v in _VALUE_OPTIONS.items()}
_TWO_VALUE_OPTIONS = frozenset("-genv -env --mca -mca --gmca -gmca".split())
# Options known to stand alone, where the word after them could pass for a value.
_FLAGS = frozenset(
    """--oversubscribe -oversubscribe --nooversubscribe --allow-run-as-root --tag-output
    -tag-output --report-bindings -report-bindings --display-map -v --verbose -q --quiet
    -genvall -genvnone -envall -envnone -l -prepend-rank -print-rank-map --exclusive -u
    --unbuffered --label -K --use-hwthread-cpus --bind-to-core --bind-to-socket -exclusive
    --wait -W --overlap --noprefix -pernode --pernode -quiet""".split()
)


def _launcher_kind(argv: Sequence[str]) -> tuple[str, int] | None:
    """(kind, number of words naming it) when argv starts with a launcher, else None."""
    if not argv:
        return None
    name = os.path.basename(argv[0])
    if _MPI_LAUNCHER.fullmatch(name):
        return "mpi", 1
    if name in _OTHER_LAUNCHERS:
        return name, 1
    if name == "flux" and len(argv) > 1 and argv[1] == "run":
        return "flux", 2
    return None


def is_launcher(argv: Sequence[str]) -> bool:
    """True when the command starts with a launcher of its own (mpirun.openmpi -n 2 ./app)."""
    return _launcher_kind(argv) is not None


def _looks_like_program(word: str) -> bool:
    if "/" in word:
        return os.path.isfile(word)
    return shutil.which(word) is not None


def split_launcher(argv: Sequence[str]) -> tuple[list[str], list[str]]:
    """(launcher_argv, app_argv) of a command: `mpirun.openmpi --oversubscribe -n 2 ./app x`
    -> (["mpirun.openmpi", "--oversubscribe", "-n", "2"], ["./app", "x"]); a command without a
    launcher -> ([], argv). An option the tables do not know takes the next word as its value
    unless that word names a program (a path to a file, or a command on PATH)."""
    argv = list(argv)
    kind = _launcher_kind(argv)
    if kind is None:
        return [], argv
    kind_name, i = kind
    takes_value = _VALUE_OPTIONS[kind_name]
    while i < len(argv):
        word = argv[i]
        if word == "--":  # flux run ... -- app, and some wrappers
            return argv[: i + 1], argv[i + 1 :]
        if not word.startswith("-") or word == "-":
            break
        if "=" in word or word in _FLAGS:
            i += 1
        elif word in _TWO_VALUE_OPTIONS:
            i += 3
        elif word in takes_value:
            i += 2
        elif len(word) > 2 and not word.startswith("--") and word[:2] in takes_value:
            i += 1  # -n4
        elif i + 1 < len(argv) and not argv[i + 1].startswith("-"):
            i += 1 if _looks_like_program(argv[i + 1]) else 2
        else:
            i += 1
    return argv[:i], argv[i:]
