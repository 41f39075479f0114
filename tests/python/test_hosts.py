"""The hosts of a job in its profile (distinct host names, gathered once at MPI_Finalize) and the
node count in the motif signature. Two hosts are made real as far as a process can tell: each
rank runs in a UTS namespace of its own (unshare --uts) with the host name given."""

import json
import os
import shutil
import socket
import subprocess
from pathlib import Path

import pytest
from conftest import BUILD, launcher

from iotune import profile as prof
from iotune.kb import signature

GCRM = ["--cells", "4096", "--levels", "8", "--chunk-cells", "1024"]


def _need_unshare() -> None:
    if shutil.which("unshare") is None:
        pytest.skip("no unshare (util-linux) to give a rank another host name")
    probe = subprocess.run(["unshare", "--uts", "hostname", "x"], capture_output=True)
    if probe.returncode != 0:
        pytest.skip(f"unshare --uts is not allowed here: {probe.stderr.decode().strip()}")


def run_on_hosts(hosts: list[str], tmp_path: Path, libiotune: Path) -> Path:
    """GCRM-IO with one rank per entry of hosts (an MPMD job), each rank seeing that host name;
    the runtime is preloaded into the kernel alone. Returns the profile's path."""
    wrapper = tmp_path / "on-host.sh"
    wrapper.write_text(
        '#!/bin/sh\nh=$1; shift\nexec unshare --uts sh -c \'hostname "$0" && '
        f'LD_PRELOAD={libiotune} exec "$@"\' "$h" "$@"\n'
    )
    wrapper.chmod(0o755)
    kernel = str(BUILD / "kernels" / "gcrmio")
    cmd = launcher(BUILD)[:-1]
    for i, h in enumerate(hosts):
        cmd += [*([":"] if i else []), "-n", "1", str(wrapper), h, kernel, *GCRM]
    out = tmp_path / "profile.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith("IOTUNE_")}
    env |= {"IOTUNE_PROFILE": str(out), "IOTUNE_TRACE": "1"}
    env.pop("LD_PRELOAD", None)
    r = subprocess.run(cmd, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and out.is_file(), r.stdout + r.stderr
    return out


def test_a_job_on_one_host_has_one(tmp_path, libiotune, mpirun):
    out = tmp_path / "p.json"
    mpirun(2, [BUILD / "kernels" / "gcrmio", *GCRM], preload=libiotune, cwd=tmp_path,
           env={"IOTUNE_PROFILE": str(out)})  # fmt: skip
    data = json.loads(out.read_text())
    assert data["hosts"] == {"count": 1, "names": [socket.gethostname()[:63]]}
    assert prof.load(out).nodes == 1


@pytest.mark.parametrize(
    "hosts, names",
    [(["nodeA", "nodeA"], ["nodeA"]), (["nodeB", "nodeA"], ["nodeA", "nodeB"])],
)
def test_distinct_hosts_are_counted_and_named(hosts, names, tmp_path, libiotune):
    _need_unshare()
    p = prof.load(run_on_hosts(hosts, tmp_path, libiotune))
    assert p.ranks == 2
    assert p.data["hosts"] == {"count": len(names), "names": names}
    assert p.nodes == len(names)
    assert p.data["hostname"] == hosts[0]  # rank 0's, as before
    line = next(ln for ln in prof.summary(p).splitlines() if ln.startswith("ranks"))
    assert ("2 hosts (nodeA, nodeB)" in line) == (len(names) == 2), line


def test_nodes_are_in_the_signature_scale_not_its_key(tmp_path, libiotune):
    _need_unshare()
    sigs = {}
    for hosts in (["nodeA", "nodeA"], ["nodeA", "nodeB"]):
        d = tmp_path / "-".join(hosts)
        d.mkdir()
        sigs[len(set(hosts))] = signature.from_profile(run_on_hosts(hosts, d, libiotune))
    one, two = sigs[1], sigs[2]
    assert (one.scale["nodes"], two.scale["nodes"]) == (1, 2)
    assert (one.scale["ranks_per_node"], two.scale["ranks_per_node"]) == (2, 1)
    assert one.key == two.key  # the same motif on more nodes
    assert signature.distance(one, two) == pytest.approx(
        signature.distance(one, one) + signature.SCALE_WEIGHT
    )  # one doubling of the node count, and nothing else
