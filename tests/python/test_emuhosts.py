"""Several emulated hosts on one machine (issue 28; scripts/emuhosts.sh): an MPICH job over 2
network + UTS namespaces, each rank on a host of its own name, so that what depends on hosts
meets more than one: the profile's host count, ROMIO's aggregators per node (cb_nodes,
cb_config_list, read back with MPI_File_get_info) and the knowledge base's scale fields.
Skipped, with the reason, where namespaces cannot be made (not root, no iproute2, a container
without the capability)."""

import json
import os
import subprocess

import pytest
from conftest import REPO, run_mpi

from iotune import trace
from iotune.kb import signature

EMU = REPO / "scripts" / "emuhosts.sh"
HOSTS = 2


@pytest.fixture(scope="module")
def emu():
    check = subprocess.run([EMU, "check"], capture_output=True, text=True, timeout=60)
    if check.returncode != 0:
        pytest.skip(f"no emulated hosts here: {check.stdout.strip() or check.stderr.strip()}")
    up = subprocess.run([EMU, "up", str(HOSTS)], capture_output=True, text=True, timeout=60)
    assert up.returncode == 0, up.stderr
    yield
    subprocess.run([EMU, "down", str(HOSTS)], capture_output=True, timeout=60)


def run_hosts(tmp_path, libiotune, argv, env, ranks=HOSTS):
    """mpiexec over h1, h2 (ranks in turn: one each by default); env passed to the ranks with
    -env."""
    cmd = [str(EMU), "run", str(HOSTS), "-n", str(ranks)]
    for k, v in {"LD_PRELOAD": str(libiotune), **env}.items():
        cmd += ["-env", k, str(v)]
    proc = subprocess.run(["timeout", "120", *cmd, *map(str, argv)], cwd=tmp_path,
                          capture_output=True, text=True, timeout=150)  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc


def config(tmp_path, **hints):
    path = tmp_path / "hints.xml"
    body = "".join(f"<{k}>{v}</{k}>" for k, v in hints.items())
    path.write_text(f"<?xml version='1.0'?>\n<Parameters><Middleware_Layer>{body}"
                    "</Middleware_Layer></Parameters>\n")  # fmt: skip
    return path


def probe_hints(proc):
    (line,) = [x for x in proc.stdout.splitlines() if x.startswith("{")]
    return json.loads(line)["hints"]


def test_the_profile_counts_two_hosts_and_the_kb_two_nodes(emu, tmp_path, libiotune, kernel):
    out = tmp_path / "p.json"
    run_hosts(tmp_path, libiotune, [kernel("vpicio"), "--particles", 1000, "--steps", 2],
              {"IOTUNE_PROFILE": out})  # fmt: skip
    p = json.loads(out.read_text())
    assert p["hosts"] == {"count": 2, "names": ["h1", "h2"]} and p["ranks"] == 2
    sig = signature.from_profile(out)
    assert sig.scale["nodes"] == 2 and sig.scale["ranks_per_node"] == 1


def test_cb_nodes_2_takes_effect_on_two_hosts_only(emu, tmp_path, libiotune, test_prog):
    """LAB-NOTES' trap: cb_config_list's default *:1 caps cb_nodes at one aggregator per host,
    so cb_nodes=2 alone is 1 on one host and 2 on two."""
    cfg = config(tmp_path, cb_nodes=2, romio_cb_write="enable")
    env = {"IOTUNE_CONFIG": cfg, "IOTUNE_PROFILE": tmp_path / "p.json"}
    two = probe_hints(run_hosts(tmp_path, libiotune, [test_prog("mpiio_probe"), "f.dat"], env))
    assert two["cb_nodes"] == "2" and two["romio_aggregator_list"].split() == ["0", "1"]
    one = run_mpi(2, [test_prog("mpiio_probe"), tmp_path / "g.dat"], cwd=tmp_path,
                  preload=libiotune, config=cfg)  # fmt: skip
    assert probe_hints(one)["cb_nodes"] == "1"
    (f,) = [f for f in json.loads((tmp_path / "p.json").read_text())["files"]
            if f["name"].endswith("f.dat")]  # fmt: skip
    assert f["hints"]["cb_nodes"] == "2" and f["hint_effect"]["cb_nodes"]["in_effect"] == "yes"


@pytest.mark.parametrize("host, rank", [("h2", 1), ("h1", 0)])
def test_cb_config_list_pins_the_aggregator(emu, tmp_path, libiotune, test_prog, host, rank):
    """cb_config_list=HOST:1 puts the one aggregator on HOST: ROMIO reads its rank back, and only
    that rank writes the file at the POSIX layer (the runtime's trace of every layer)."""
    out = tmp_path / "p.json"
    cfg = config(tmp_path, cb_config_list=f"{host}:1", romio_cb_write="enable")
    env = {"IOTUNE_CONFIG": cfg, "IOTUNE_PROFILE": out, "IOTUNE_TRACE": "all"}
    hints = probe_hints(run_hosts(tmp_path, libiotune, [test_prog("mpiio_probe"), "f.dat"], env))
    assert hints["cb_config_list"] == f"{host}:1" and hints["cb_nodes"] == "1"
    assert hints["romio_aggregator_list"].split() == [str(rank)]
    writers = set()
    assert sorted(p.name for p in (tmp_path / "p.json.trace").iterdir()) == [
        "host-0.json.gz", "host-1.json.gz"]  # one trace file per host  # fmt: skip
    for r, doc in enumerate(trace.load(out)):
        if any(s["layer"] == "posix" and s["func"] in ("pwrite", "write", "pwrite64")
               and s["file"].endswith("f.dat") for s in doc["signatures"]):  # fmt: skip
            writers.add(r)
    assert writers == {rank}


def test_one_trace_file_per_host(emu, tmp_path, libiotune, kernel):
    """4 ranks on 2 hosts (h1: ranks 0 and 2, h2: 1 and 3): one trace file each, written by the
    host's leader, holding its ranks; each rank's trace read from it equals the rank's own file
    of the same run (IOTUNE_TRACE_FILES=both)."""
    out = tmp_path / "p.json"
    env = {"IOTUNE_PROFILE": out, "IOTUNE_TRACE": "1", "IOTUNE_TRACE_FILES": "both"}
    run_hosts(tmp_path, libiotune, [kernel("vpicio"), "--particles", 500], env, ranks=4)
    d = tmp_path / "p.json.trace"
    assert sorted(p.name for p in d.glob("host-*")) == ["host-0.json.gz", "host-1.json.gz"]
    held = {p.name: [(t["host"], t["rank"]) for t in trace.read_all(p)] for p in d.glob("host-*")}
    assert held == {"host-0.json.gz": [("h1", 0), ("h1", 2)],
                    "host-1.json.gz": [("h2", 1), ("h2", 3)]}  # fmt: skip
    for r, t in enumerate(trace.load(out)):
        own = trace.read(d / f"rank-{r}.json.gz")
        drop = {"version", "host", "host_index"}
        assert {k: v for k, v in t.items() if k not in drop} == {
            k: v for k, v in own.items() if k != "version"}  # fmt: skip
    assert json.loads(out.read_text())["hosts"]["count"] == 2


def test_emuhosts_says_why_it_cannot_run_without_root(tmp_path):
    if os.getuid() != 0:
        pytest.skip("not root: the check's refusal is the case here already")
    as_nobody = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", str(EMU), "check"]
    nobody = subprocess.run(as_nobody, capture_output=True, text=True, timeout=60)
    assert nobody.returncode != 0 and "root" in nobody.stdout
