"""Resource bounds: every setting judged by what it costs (src/iotune/data/costs.tsv) against
the machine's memory and free disk space, by one definition on both sides.

- the shared vectors tests/vectors/costs/cases.json through iotune.costs and the runtime's bounds.c;
- the machine's budget from RLIMIT_DATA (and physical memory, the cgroup's limit);
- `iotune check` warns, `iotune tune`'s search spaces leave such values out;
- the runtime withdraws a setting that costs too much before the call: one message per setting
  for the whole run, the profile's `withdrawn` list, the application's data unchanged.
"""

import json
import os
import resource
import subprocess
import sys

import pytest
from conftest import REPO, VECTORS, run_mpi

from iotune import costs, params, space

CASES = json.loads((VECTORS / "costs" / "cases.json").read_text())["cases"]
SRC = REPO / "src"


def _budget(case) -> costs.Budget:
    return costs.Budget(case["memory"], "vectors", case["disk"], "vectors")


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c['name']}={c['value']}")
def test_python_costs_match_the_vectors(case):
    value = params.normalise(case["name"], case["value"])
    cost = costs.cost(case["name"], value, case["elem"])
    assert cost == case["cost"]
    said = costs.exceeds(case["name"], value, cost, _budget(case))
    assert (said is not None) == case["withdrawn"], said
    if said:
        assert said.startswith(f"{case['name']}={value} would cost ") and said.endswith(
            ": withdrawn"
        )


def test_runtime_costs_match_the_vectors(build_dir):
    lines = "".join(
        f"{c['name']}\t{c['value']}\t{c['elem']}\t{c['memory']}\t{c['disk']}\n" for c in CASES
    )
    out = subprocess.run([build_dir / "runtime" / "iotune-parse", "--costs"], input=lines,
                         capture_output=True, text=True, timeout=30, check=True)  # fmt: skip
    got = [ln.split("\t") for ln in out.stdout.splitlines()]
    assert len(got) == len(CASES)
    for case, (cost, withdrawn, message) in zip(CASES, got, strict=True):
        assert (float(cost), withdrawn == "1") == (case["cost"], case["withdrawn"]), case
        value = params.normalise(case["name"], case["value"])
        # the same words on both sides
        assert message == (costs.exceeds(case["name"], value, float(cost), _budget(case)) or "")


def test_the_vectors_cover_every_row_of_the_table():
    rows = costs.table()
    assert {c["name"] for c in CASES} >= {n for n, r in rows.items() if not params.get(n).is_mca}
    assert all(params.find(n) for n in rows)
    # both kinds of budget decide some case, and some case stays
    assert {c["withdrawn"] for c in CASES} == {True, False}


def test_the_message_says_what_it_costs_and_against_what():
    b = costs.Budget(2 << 30, "cgroup memory.max 4 GiB / 2 ranks on this host", -1, "")
    said = costs.judge("chunk_cache_slots", "1073741824", b)
    assert said == (
        "chunk_cache_slots=1073741824 would cost 8 GiB of memory per open dataset (HDF5 "
        "allocates one pointer per hash slot when it opens a chunked dataset), more than 1/16 "
        "of 2 GiB (cgroup memory.max 4 GiB / 2 ranks on this host): withdrawn"
    )
    assert costs.format_bytes(1.5 * 2**30) == "1.5 GiB" and costs.format_bytes(512) == "512 bytes"


def _with_data_limit(limit: int):
    def pre():
        resource.setrlimit(resource.RLIMIT_DATA, (limit, limit))

    return pre


def _python(code: str, limit: int, *args, cwd=None):
    env = dict(os.environ, PYTHONPATH=str(SRC))
    return subprocess.run([sys.executable, *(["-c", code] if code else []), *args], env=env,
                          cwd=cwd, capture_output=True, text=True, timeout=60,
                          preexec_fn=_with_data_limit(limit))  # fmt: skip


def test_the_budget_is_the_least_of_the_machines_limits(tmp_path):
    code = (
        "from iotune import costs; b = costs.machine_budget(2, '.'); "
        "print(b.memory, '|', b.memory_what, '|', b.disk > 0, '|', b.disk_what)"
    )
    out = _python(code, 3 << 30, cwd=tmp_path)
    memory, what, disk, disk_what = (x.strip() for x in out.stdout.split("|"))
    assert float(memory) == 3 << 30 and what == "RLIMIT_DATA 3 GiB", out
    assert disk == "True" and disk_what == "free on the file system of ."
    unlimited = costs.machine_budget(1, tmp_path)  # this process: physical memory or a cgroup
    assert unlimited.memory > 0 and unlimited.memory_what
    phys = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    assert costs.machine_budget(4, tmp_path).memory <= phys / 4


def test_check_warns_about_a_setting_too_costly_for_this_machine(tmp_path):
    xml = tmp_path / "big.xml"
    xml.write_text(
        "<Parameters><High_Level_IO_Library>\n"
        "<chunk_cache_slots>1073741824</chunk_cache_slots>\n"
        "<chunk_cache_bytes>1MiB</chunk_cache_bytes>\n"
        "</High_Level_IO_Library></Parameters>\n"
    )
    out = _python("", 4 << 30, "-m", "iotune", "check", str(xml))
    assert out.returncode == 0, out.stderr  # valid: the runtime withdraws it, nothing fails
    warned = [ln for ln in out.stderr.splitlines() if "warning:" in ln]
    assert warned == [
        f"{xml}:2: <chunk_cache_slots>: warning: chunk_cache_slots=1073741824 would cost 8 GiB "
        "of memory per open dataset (HDF5 allocates one pointer per hash slot when it opens a "
        "chunked dataset), more than 1/16 of 4 GiB (RLIMIT_DATA 4 GiB): withdrawn by the "
        "runtime on this machine"
    ]


def test_tune_search_spaces_never_propose_a_value_too_costly():
    sp = space.load("local")
    budget = costs.Budget(512 << 20, "test", 1 << 40, "test")  # 32 MiB per setting
    bounded, dropped = costs.bounded_space(sp, budget)
    ladder = bounded.dim("chunk_cache_bytes").values
    assert "33554432" in ladder and "67108864" not in ladder
    assert bounded.dim("cb_buffer_size").default == "16777216"
    assert "16777216" in bounded.dim("cb_buffer_size").values
    assert "67108864" not in bounded.dim("cb_buffer_size").values
    assert any(line.startswith("chunk_cache_bytes=67108864 would cost 64 MiB") for line in dropped)
    assert all(line.endswith(": left out of the search space") for line in dropped)
    # a guess that needs a value left out is not tried either
    assert "no collective buffering on reads, large chunk cache" not in [
        g.name for g in bounded.guesses
    ]
    # the stack's defaults always stay (they are what runs without the setting), and a
    # machine with room keeps the whole space
    for d in bounded.dims:
        assert d.default in d.values
    assert costs.bounded_space(sp, costs.Budget(1 << 50, "", 1 << 50, ""))[0] is sp


CONFIG = """<?xml version="1.0"?>
<Parameters><High_Level_IO_Library>
<chunk_cache_slots>1073741824</chunk_cache_slots>
<chunk_cache_bytes>32MiB</chunk_cache_bytes>
<sieve_buf_size>1GiB</sieve_buf_size>
<alignment>4294967296,4294967296</alignment>
<mdc_max_size>64MiB</mdc_max_size>
</High_Level_IO_Library><Middleware_Layer>
<cb_buffer_size>512MiB</cb_buffer_size>
<ind_rd_buffer_size>1MiB</ind_rd_buffer_size>
</Middleware_Layer></Parameters>
"""
GCRM = ["--cells", "1024", "--levels", "4", "--chunk-cells", "256", "--iterations", "2"]


def test_the_runtime_withdraws_a_setting_too_costly_before_the_call(tmp_path, kernel, libiotune):
    """RLIMIT_DATA of 4 GiB per rank: a setting may cost 256 MiB of memory; alignment is judged
    against the free space of the file system (4 GiB > 1/256 of it here)."""
    free = os.statvfs(tmp_path)
    if free.f_bavail * free.f_frsize > 256 * (4 << 30):
        pytest.skip("more than 1 TiB free: alignment of 4 GiB fits this file system")
    (tmp_path / "plain").mkdir()
    (tmp_path / "tuned").mkdir()
    xml = tmp_path / "run.xml"
    xml.write_text(CONFIG)
    limit = ["prlimit", f"--data={4 << 30}"]
    run_mpi(2, [*limit, kernel("gcrmio"), *GCRM], cwd=tmp_path / "plain")
    proc = run_mpi(2, [*limit, kernel("gcrmio"), *GCRM, "--read"], cwd=tmp_path / "tuned",
                   preload=libiotune, config=xml,
                   env={"IOTUNE_PROFILE": str(tmp_path / "p.json")})  # fmt: skip
    said = [ln for ln in proc.stderr.splitlines() if ln.startswith("iotune: ")]
    withdrawn = {"chunk_cache_slots": 3, "sieve_buf_size": 5, "alignment": 6, "cb_buffer_size": 9}
    # one line per setting for the whole run (2 ranks, 2 opens, 10 datasets), nothing else
    assert len(said) == len(withdrawn), proc.stderr
    for name, line in withdrawn.items():
        (one,) = [s for s in said if f": {name}=" in s]
        assert one.endswith(f": withdrawn [run.xml:{line}]"), one
        assert "RLIMIT_DATA 4 GiB" in one or "free on the file system" in one, one
    assert "gcrmio read" in proc.stdout and "verified" in proc.stdout
    (f,) = [f for f in json.loads((tmp_path / "p.json").read_text())["files"]
            if f["name"].endswith("gcrmio.h5")]  # fmt: skip
    assert {w["setting"] for w in f["withdrawn"]} == set(withdrawn)
    # what fits is applied and read back; what was withdrawn is not "NOT in effect" either
    assert f["applied"]["hdf5"]["chunk_cache_bytes"] == "33554432", f
    assert f["applied"]["hdf5"]["mdc_max_size"] == "67108864", f
    assert f["applied"]["mpiio"]["ind_rd_buffer_size"] == "1048576", f
    assert not [n for n in f.get("hdf5_notes", []) for w in withdrawn if f"{w}=" in n], f
    assert all(w["reason"].startswith("would cost ") for w in f["withdrawn"]), f
    diff = subprocess.run(["h5diff", tmp_path / "plain" / "gcrmio.h5",
                           tmp_path / "tuned" / "gcrmio.h5"],
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    assert diff.returncode == 0, diff.stdout


def test_open_mpi_parameters_set_by_iotune_run_are_bounded_too():
    from iotune import controlfile, launch

    parsed = controlfile.parse_text(
        b"<Parameters><Middleware_Layer>\n"
        b"<io_ompio_bytes_per_agg>1GiB</io_ompio_bytes_per_agg>\n"
        b"<io_ompio_cycle_buffer_size>1MiB</io_ompio_cycle_buffer_size>\n"
        b"</Middleware_Layer></Parameters>\n",
        "run.xml",
    )
    budget = costs.Budget(1 << 30, "RLIMIT_DATA 1 GiB", -1, "")
    env, problems = launch.mca_settings(parsed.settings, budget)
    assert env == {"OMPI_MCA_io_ompio_cycle_buffer_size": "1048576"}
    assert problems == [
        "line 2: io_ompio_bytes_per_agg=1073741824 would cost 1 GiB of memory per open file "
        "(each OMPIO aggregator allocates its collective buffer), more than 1/16 of 1 GiB "
        "(RLIMIT_DATA 1 GiB): withdrawn"
    ]
    assert launch.mca_settings(parsed.settings)[0]["OMPI_MCA_io_ompio_bytes_per_agg"]
    assert launch.ranks_of(["mpiexec.mpich", "-n", "4", "./app"]) == 4
    assert launch.ranks_of(["./app", "-x"]) == 1


def test_the_verbose_report_says_withdrawn_where_the_setting_would_go(tmp_path, kernel, libiotune):
    xml = tmp_path / "run.xml"
    xml.write_text(CONFIG)
    limit = ["prlimit", f"--data={4 << 30}"]
    argv = [*limit, kernel("gcrmio"), "--cells", "256", "--levels", "2", "--chunk-cells", "64"]
    proc = run_mpi(2, argv, cwd=tmp_path, preload=libiotune, config=xml, verbose=True)
    lines = proc.stderr.splitlines()
    slots = "chunk_cache_slots=1073741824 WITHDRAWN: too costly for this machine [run.xml:3]"
    assert sum(ln.strip().endswith(slots) for ln in lines) == 5  # each dataset's access list
    assert sum(": chunk_cache_slots=1073741824 would cost" in ln for ln in lines) == 1
    sieve = "sieve_buf_size=1073741824 WITHDRAWN: too costly for this machine [run.xml:5]"
    assert sum(ln.strip().endswith(sieve) for ln in lines) == 1  # the file access list


def test_iotune_tune_searches_the_bounded_space(tmp_path, monkeypatch, capsys):
    from iotune import tune_cli

    small = costs.Budget(768 << 20, "RLIMIT_DATA 768 MiB", 1 << 40, "free")
    seen = {}
    monkeypatch.setattr(costs, "machine_budget", lambda ranks, path=".": small)
    monkeypatch.setattr(tune_cli, "_run", lambda cfg, progress: seen.setdefault("cfg", cfg) and 0)
    monkeypatch.chdir(tmp_path)
    argv = ["--space", "local", "--launcher", "none", "--no-preload", "--trials", "1"]
    rc = tune_cli.main([*argv, "--out", str(tmp_path / "out"), "--", sys.executable, "-c", "0"])
    assert rc == 0
    sp = seen["cfg"].space
    assert "67108864" not in sp.dim("chunk_cache_bytes").values
    assert "33554432" in sp.dim("chunk_cache_bytes").values
    err = capsys.readouterr().err
    assert (
        "iotune tune: chunk_cache_bytes=67108864 would cost 64 MiB of memory per open dataset "
        "(the chunk cache of each open dataset fills up to this size), more than 1/16 of "
        "768 MiB (RLIMIT_DATA 768 MiB): left out of the search space"
    ) in err


TOTAL = """<?xml version="1.0"?>
<Parameters><High_Level_IO_Library>
<sieve_buf_size>245MiB</sieve_buf_size>
<mdc_max_size>64MiB</mdc_max_size>
</High_Level_IO_Library><Middleware_Layer>
<cb_buffer_size>240MiB</cb_buffer_size>
<ind_wr_buffer_size>250MiB</ind_wr_buffer_size>
<ind_rd_buffer_size>230MiB</ind_rd_buffer_size>
</Middleware_Layer></Parameters>
"""


def test_the_runtime_withdraws_the_costliest_buffer_when_a_files_total_is_too_much(
    tmp_path, kernel, libiotune
):
    """RLIMIT_DATA of 4 GiB per rank: each buffer fits its own 1/16 (256 MiB), together
    (1029 MiB, HDF5's and MPI-IO's) they exceed 1/4 (1 GiB): the costliest goes, once."""
    xml = tmp_path / "run.xml"
    xml.write_text(TOTAL)
    limit = ["prlimit", f"--data={4 << 30}"]
    proc = run_mpi(2, [*limit, kernel("gcrmio"), *GCRM, "--read"], cwd=tmp_path,
                   preload=libiotune, config=xml,
                   env={"IOTUNE_PROFILE": str(tmp_path / "p.json")})  # fmt: skip
    said = [ln for ln in proc.stderr.splitlines() if ln.startswith("iotune: ")]
    assert len(said) == 1, proc.stderr
    assert ": ind_wr_buffer_size=" in said[0] and "together per open file" in said[0], said
    assert "more than 1/4 of" in said[0] and said[0].endswith("[run.xml:7]"), said
    assert "gcrmio read" in proc.stdout and "verified" in proc.stdout
    (f,) = [f for f in json.loads((tmp_path / "p.json").read_text())["files"]
            if f["name"].endswith("gcrmio.h5")]  # fmt: skip
    assert [w["setting"] for w in f["withdrawn"]] == ["ind_wr_buffer_size"], f
    assert f["applied"]["mpiio"]["cb_buffer_size"] == str(240 << 20), f
    assert f["applied"]["hdf5"]["sieve_buf_size"] == str(245 << 20), f


def test_check_warns_about_a_files_buffers_too_costly_together(tmp_path):
    """The same total as the runtime's (the test above): the costliest, with the same words."""
    xml = tmp_path / "run.xml"
    xml.write_text(TOTAL)
    out = _python("", 4 << 30, "-m", "iotune", "check", str(xml))
    assert out.returncode == 0, out.stderr
    warned = [ln for ln in out.stderr.splitlines() if "warning:" in ln]
    assert warned == [
        f"{xml}:7: <ind_wr_buffer_size>: warning: ind_wr_buffer_size=262144000 (250 MiB) "
        "withdrawn: the file's buffers would cost 1.0 GiB of memory together per open file, "
        "more than 1/4 of 4 GiB (RLIMIT_DATA 4 GiB) by the runtime on this machine"
    ]
