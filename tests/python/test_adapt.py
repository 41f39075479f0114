"""The runtime's adaptive mode (IOTUNE_MODE=adaptive): real 2-rank runs at tiny sizes. Phases
are found and matched by class, the online rules of the table fire on the learning phase and
their settings are applied to the later phases (read back with MPI_File_get_info), the guard
reverts a rule whose phase looked slower, a control file wins, and the data are identical to a
run without the runtime (h5diff)."""

import filecmp
import json
import shutil
import subprocess

import pytest
from conftest import launcher, run_mpi

ADAPT = {"IOTUNE_MODE": "adaptive"}
IORIO = ["--api", "hdf5", "--mode", "collective", "--block", "64K", "--transfer", "16K",
         "--segments", "2"]  # fmt: skip


def _run(tmp, argv, libiotune, env=None, config=None):
    tmp.mkdir(exist_ok=True)
    e = {"IOTUNE_PROFILE": str(tmp / "p.json"), **ADAPT, **(env or {})}
    run_mpi(2, argv, env=e, cwd=tmp, preload=libiotune, config=config, timeout=120)
    return json.loads((tmp / "p.json").read_text())


def _same_data(a, b, names):
    for n in names:
        if n.endswith(".h5"):
            assert shutil.which("h5diff"), "h5diff missing"
            r = subprocess.run(["h5diff", a / n, b / n], capture_output=True, text=True)
            assert r.returncode == 0, (n, r.stdout, r.stderr)
        else:
            assert filecmp.cmp(a / n, b / n, shallow=False), n


def _hints(profile):
    return {f["name"]: f.get("hints") or {} for f in profile["files"]}


def test_recurring_phases_learn_fire_apply_and_read_back(tmp_path, kernel, libiotune):
    argv = [kernel("iorio"), *IORIO, "--steps", "3"]
    base = tmp_path / "base"
    base.mkdir()
    run_mpi(2, argv, cwd=base, timeout=120)
    p = _run(tmp_path / "adapt", argv, libiotune)
    phases = p["adaptive"]["phases"]
    assert [x["file"] for x in phases] == ["iorio.0.h5", "iorio.1.h5", "iorio.2.h5"]
    assert {x["class"] for x in phases} == {"iorio.*.h5"}
    assert [x["role"] for x in phases] == ["learning", "optimised", "optimised"]
    learn = phases[0]["insights"]
    # the kernel's known pattern: one shared file, collective HDF5 writes, in order, 16 KiB
    assert learn["file_mode"] == "shared" and learn["interface"] == "hdf5"
    assert learn["transfer_mode"] == "collective" and learn["access_pattern"] == "sequential"
    assert learn["io_mix"] == "write" and learn["transfer_size_median"] == 16384
    assert learn["bytes_written"] == 2 * 2 * 64 * 1024 and learn["file_ranks"] == 2
    assert phases[0]["fired"] == ["SIO-7"]
    for x in phases[1:]:
        assert x["applied"] == [{"rule": "SIO-7", "name": "romio_cb_write", "value": "disable"}]
        assert x["guard"]["reverted"] == [] or x["guard"]["slow"]
    hints = _hints(p)
    assert hints["iorio.0.h5"]["romio_cb_write"] == "automatic"  # learning: defaults
    assert hints["iorio.1.h5"]["romio_cb_write"] == "disable"  # read back from MPI-IO
    _same_data(base, tmp_path / "adapt", ["iorio.0.h5", "iorio.1.h5", "iorio.2.h5"])
    # Sequitur over the rank's calls: from the third phase on the open predicts the whole phase
    pred = p["adaptive"]["prediction"]
    assert pred["calls"] > 0 and pred["grammar"]["full"] is False
    last = [x for x in pred["phases"] if x["file"] == "iorio.2.h5" and x["actual"] > 1][-1]
    assert last["predicted"] == last["actual"] == last["matched"] and last["accuracy"] == 1


def test_guard_reverts_a_rule_whose_phases_were_slower(tmp_path, kernel, libiotune):
    # test-only knob: phases that applied SIO-7 are measured 1000 times slower than they were;
    # the first slow phase is a strike, the second in a row reverts the rule
    argv = [kernel("iorio"), *IORIO, "--steps", "4"]
    p = _run(tmp_path, argv, libiotune, env={"IOTUNE_TEST_SLOW_RULE": "SIO-7:1000"})
    assert p["adaptive"]["guard_strikes"] == 2
    phases = p["adaptive"]["phases"]
    assert [x["role"] for x in phases] == ["learning", "optimised", "optimised", "default"]
    assert phases[1]["guard"]["slow"] is True and phases[1]["guard"]["reverted"] == []
    assert phases[2]["guard"]["reverted"] == ["SIO-7"] and phases[2]["guard"]["ratio"] < 0.9
    assert phases[3]["applied"] == []
    hints = _hints(p)
    assert hints["iorio.2.h5"]["romio_cb_write"] == "disable"
    assert hints["iorio.3.h5"]["romio_cb_write"] == "automatic"


def test_phases_that_read_are_not_judged_against_a_learning_phase_that_wrote(
    tmp_path, kernel, libiotune
):
    """The kernel writes its step files, then reads them back: one class. The read phases
    applied what the write phase fired, but their rate is not the writes' (an outside tester's
    read phase showed "39x the learning phase"): the guard leaves them out, neither a strike
    nor a pass, and the summary says they were not compared. Even phases 1000 times slower
    (the test knob) revert nothing."""
    from iotune.adapt import format_phases

    argv = [kernel("iorio"), *IORIO, "--steps", "2", "--read"]
    p = _run(tmp_path, argv, libiotune, env={"IOTUNE_TEST_SLOW_RULE": "SIO-7:1000"})
    phases = p["adaptive"]["phases"]
    assert [(x["role"], x["insights"]["io_mix"]) for x in phases] == [
        ("learning", "write"), ("optimised", "write"), ("optimised", "read"),
        ("optimised", "read")]  # fmt: skip
    assert phases[1]["guard"]["slow"] is True  # a strike: like with like
    for x in phases[2:]:
        assert x["guard"] == {"ratio": None, "slow": False, "reverted": [], "unlike": "read"}
    text = format_phases(p)
    assert text.count("not compared with the learning phase (this phase's I/O: read)") == 2, text


def test_phases_of_nonblocking_transfers_are_not_judged(tmp_path, test_prog, libiotune):
    """MPI_File_iwrite_at_all then MPI_Wait: the runtime times the posting, not the wait, so
    a phase's rate said nothing of its writes, and the guard reverted a rule on it ("0.01x the
    learning phase", an outside tester). Such phases are left unjudged, like a read phase
    after a learning phase that wrote; even 1000 times slower (the test knob) reverts nothing."""
    from iotune.adapt import format_phases

    p = _run(tmp_path, [test_prog("posted_probe"), "4096"], libiotune,
             env={"IOTUNE_TEST_SLOW_RULE": "SIO-7:1000"})  # fmt: skip
    phases = p["adaptive"]["phases"]
    assert [x["role"] for x in phases] == ["learning", "optimised", "optimised"], phases
    for x in phases[1:]:
        assert x["guard"] == {"ratio": None, "slow": False, "reverted": [],
                              "unlike": "nonblocking"}, x["guard"]  # fmt: skip
    assert "nonblocking transfers: the time of their wait is not measured" in format_phases(p)


def test_control_file_wins_over_the_rules(tmp_path, kernel, libiotune):
    cfg = tmp_path / "c.xml"
    cfg.write_text("<Parameters><Middleware_Layer><romio_cb_write>enable</romio_cb_write>"
                   "</Middleware_Layer></Parameters>")  # fmt: skip
    argv = [kernel("iorio"), *IORIO, "--steps", "2"]
    p = _run(tmp_path / "run", argv, libiotune, config=cfg)
    phases = p["adaptive"]["phases"]
    assert phases[1]["applied"] == []
    assert all(h["romio_cb_write"] == "enable" for h in _hints(p).values())


def test_a_single_phase_only_learns(tmp_path, kernel, libiotune):
    p = _run(tmp_path, [kernel("iorio"), *IORIO], libiotune)
    phases = p["adaptive"]["phases"]
    assert len(phases) == 1 and phases[0]["role"] == "learning" and phases[0]["applied"] == []


def test_file_per_process_phases(tmp_path, kernel, libiotune):
    argv = [kernel("iorio"), "--api", "mpiio", "--layout", "fpp", "--block", "64K", "--transfer",
            "16K", "--segments", "2", "--steps", "3"]  # fmt: skip
    base = tmp_path / "base"
    base.mkdir()
    run_mpi(2, argv, cwd=base, timeout=120)
    p = _run(tmp_path / "adapt", argv, libiotune)
    phases = p["adaptive"]["phases"]
    assert len(phases) == 3 and {x["class"] for x in phases} == {"iorio.*.r*.dat"}
    assert all(x["ranks"] == 1 and x["insights"]["file_mode"] == "per_process" for x in phases)
    assert phases[0]["insights"]["interface"] == "mpiio"
    assert phases[0]["insights"]["transfer_mode"] == "independent"
    names = [f"iorio.{s}.r{r}.dat" for s in range(3) for r in range(2)]
    _same_data(base, tmp_path / "adapt", names)


def test_strided_collective_writes_fire_cb_buffer_size(tmp_path, kernel, libiotune):
    p = _run(tmp_path, [kernel("vorpalio"), "--block", "8,6,4"], libiotune)
    learn = p["adaptive"]["phases"][0]
    assert learn["insights"]["access_pattern"] == "strided"
    assert learn["insights"]["noncontiguous_fraction"] == 1
    assert "IOT-3" in learn["fired"]


@pytest.mark.parametrize("slow", [None, "SIO-7"])
def test_subcommunicators_per_rank_files_and_threads(tmp_path, test_prog, libiotune, slow):
    prog = test_prog("adapt_probe")
    base = tmp_path / "base"
    base.mkdir()
    run_mpi(2, [prog, "512"], cwd=base, timeout=120)
    # slow: SIO-7's phases look 1000x slower (the guard reverts it); else 1000x faster, so that
    # the guard never reverts it for a phase slowed by the machine's load (a CI run did)
    env = {"IOTUNE_TEST_SLOW_RULE": "SIO-7:" + ("1000" if slow else "0.001")}
    p = _run(tmp_path / "adapt", [prog, "512"], libiotune, env=env)
    files = sorted(f.name for f in base.iterdir())
    assert len(files) == 5 + 4 + 8
    _same_data(base, tmp_path / "adapt", files)
    by_file = {x["file"]: x for x in p["adaptive"]["phases"]}
    assert by_file["shared.0.h5"]["fired"] == ["SIO-7"]
    # rank 0's sub-communicator: fewer ranks than the class learned from, so the defaults
    assert by_file["shared.3.h5"]["ranks"] == 1 and by_file["shared.3.h5"]["fewer_ranks"]
    assert by_file["shared.3.h5"]["applied"] == [] and by_file["shared.3.h5"]["guard"] is None
    assert by_file["shared.4.h5"]["ranks"] == 2
    if not slow:  # the class's rules still reach the next phase on all ranks
        assert [a["rule"] for a in by_file["shared.4.h5"]["applied"]] == ["SIO-7"]


def test_a_class_learns_again_from_a_phase_on_more_ranks(tmp_path, test_prog, libiotune):
    """HDF5's parallel example creates a file of its class on rank 0 alone (a communicator of
    one rank) before both ranks write the class's files: rank 0's class learned from that
    per-process phase, where no shared-file rule can hold, rank 1's from the first shared one,
    and the ranks then disagreed at every open: nothing was applied. A phase on more ranks than
    the class's learning phase now runs with the defaults and the class learns again from it
    (on every rank alike); a phase on fewer ranks runs with the defaults and is neither learned
    from nor judged. The data equal a run without the runtime (h5diff)."""
    from iotune.adapt import applied_per_file

    argv = [test_prog("ranks_probe"), "3", "512"]
    base = tmp_path / "base"
    base.mkdir()
    run_mpi(2, argv, cwd=base, timeout=120)
    p = _run(tmp_path / "adapt", argv, libiotune)
    phases = p["adaptive"]["phases"]
    assert [x["file"] for x in phases] == [f"step.{s}.h5" for s in range(6)]
    # (the guard may revert after two slow phases at this size: the last phase is then default)
    reverted = any(x["guard"] and x["guard"]["reverted"] for x in phases)
    assert [(x["ranks"], x["role"]) for x in phases] == [
        (1, "learning"), (2, "learning"), (2, "optimised"), (2, "optimised"), (1, "default"),
        (2, "default" if reverted else "optimised")]  # fmt: skip
    assert phases[0]["insights"]["file_mode"] == "per_process" and phases[0]["fired"] == []
    assert phases[1]["insights"]["file_mode"] == "shared" and phases[1]["fired"] == ["SIO-7"]
    assert phases[1]["relearned_from_ranks"] == 1
    sio7 = [{"rule": "SIO-7", "name": "romio_cb_write", "value": "disable"}]
    assert all(phases[i]["applied"] == sio7 for i in ((2, 3) if reverted else (2, 3, 5)))
    assert phases[4]["fewer_ranks"] and phases[4]["applied"] == [] and phases[4]["guard"] is None
    hints = _hints(p)
    assert hints["step.1.h5"]["romio_cb_write"] == "automatic"  # the new learning phase
    assert hints["step.2.h5"]["romio_cb_write"] == "disable"
    assert hints["step.4.h5"]["romio_cb_write"] == "automatic"
    # every shared phase moved data and is offline-advice SIO-1's pattern: said with the reason
    line = applied_per_file(phases)
    assert "step.*.h5 learned again from step.1.h5 on 2 ranks (its earlier learning phase had " \
        "1 rank" in line, line  # fmt: skip
    assert "1 phase of step.*.h5 on fewer ranks than its learning phase ran with the defaults " \
        "(step.4.h5)" in line, line  # fmt: skip
    assert "not applied: SIO-1 transfer_mode=independent (offline advice, held on 4 of 6 " \
        "phases" in line, line  # fmt: skip
    # the replaced per-process learning phase gives no reasons ("needs file_mode == shared")
    assert "per_process" not in line, line
    assert "could reach at most 3 of its 6 writes" in line, line
    _same_data(base, tmp_path / "adapt", [f"step.{s}.h5" for s in range(6)])


def test_the_agreement_at_an_open_counts_as_the_open_s_time(tmp_path, test_prog, libiotune):
    """The last rank reaches each shared H5Fcreate 300 ms late (after the communicator's
    duplication in H5Pset_fapl_mpio): without the mode the other rank waits for it inside
    H5Fcreate, and that wait is I/O time. The mode's agreement on the file's settings, made
    before the real call, took that wait out of the call's time: the mode's I/O time was
    biased low (0.09 s against 0.70 s here; ph5example's 1.7-1.9x "gain" with nothing
    applied). Counted as the call's time, the two agree."""
    argv = [test_prog("ranks_probe"), "1", "512", "300"]  # 2 shared phases, 0.3 s late each
    p = _run(tmp_path / "adapt", argv, libiotune)
    assert p["io"]["time_s"] >= 0.5, p["io"]
    assert p["layers"]["hdf5"]["meta_time_s"] >= 0.5, p["layers"]["hdf5"]


def test_adaptive_mode_off_writes_no_section(tmp_path, kernel, libiotune):
    tmp_path.mkdir(exist_ok=True)
    run_mpi(2, [kernel("iorio"), *IORIO], env={"IOTUNE_PROFILE": str(tmp_path / "p.json")},
            cwd=tmp_path, preload=libiotune, timeout=120)  # fmt: skip
    assert "adaptive" not in json.loads((tmp_path / "p.json").read_text())


def test_cli_adapt_and_show_print_the_phases(tmp_path, kernel, build_dir):
    import sys

    cmd = [sys.executable, "-m", "iotune", "adapt", "--out", str(tmp_path / "a.json"), "--",
           *launcher(build_dir), "2", str(kernel("iorio")), *IORIO, "--steps", "2"]  # fmt: skip
    r = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "iorio.0.h5  [iorio.*.h5 #0, learning, 2 rank(s)]" in r.stdout
    assert "rules fired: SIO-7" in r.stdout
    assert "applied: romio_cb_write=disable (SIO-7)" in r.stdout
    show = subprocess.run([sys.executable, "-m", "iotune", "show", str(tmp_path / "a.json")],
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    assert "iorio.1.h5  [iorio.*.h5 #1, optimised, 2 rank(s)]" in show.stdout


def _cli_adapt(tmp_path, build_dir, argv):
    import sys

    cmd = [sys.executable, "-m", "iotune", "adapt", "--out", str(tmp_path / "a.json"), "--",
           *launcher(build_dir), "2", *map(str, argv)]  # fmt: skip
    r = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return r, json.loads((tmp_path / "a.json").read_text())


def test_cli_adapt_says_per_file_what_it_applied_and_mpi_ends_clean(tmp_path, kernel, build_dir):
    # MPICH's yaksa reports every datatype or operation left at MPI_Finalize: the runtime's own
    # (the statistics' reduction) are freed before the real call
    r, p = _cli_adapt(tmp_path, build_dir, [kernel("iorio"), *IORIO, "--steps", "2"])
    assert "leaked" not in r.stderr and "yaksa" not in r.stderr, r.stderr
    # the profile's record of each file says what its open got: the learning phase nothing, the
    # optimised one the rule's hint; the summary's table and the phases say the same
    applied = {f["name"]: f["applied"]["mpiio"] for f in p["files"]}
    assert applied == {"iorio.0.h5": {}, "iorio.1.h5": {"romio_cb_write": "disable"}}, applied
    assert "config    none (adaptive mode" in r.stdout
    table = [ln for ln in r.stdout.splitlines() if "hdf5,mpiio" in ln]
    rows = {ln.split()[0]: ln for ln in table}
    assert rows["iorio.1.h5"].rstrip().endswith("1 settings"), rows
    assert rows["iorio.0.h5"].rstrip().endswith("-"), rows
    assert "applied per file: iorio.1.h5 (1 of 1 phases): romio_cb_write=disable" in r.stdout
    # what tune finds for this pattern (transfer_mode=independent, SIO-1) is advice only: the
    # mode says it held and was not applied, rather than leaving it out silently
    assert p["adaptive"]["phases"][0]["offline"] == ["SIO-1"]
    assert "held, not applied (offline advice" in r.stdout
    assert "SIO-1 transfer_mode=independent" in r.stdout


def test_cli_adapt_says_nothing_was_applied_when_no_phase_recurred(tmp_path, kernel, build_dir):
    r, p = _cli_adapt(tmp_path, build_dir, [kernel("iorio"), *IORIO])
    assert [x["role"] for x in p["adaptive"]["phases"]] == ["learning"]
    assert "nothing applied: no phase recurred" in r.stdout
    assert "yaksa" not in r.stderr, r.stderr


def test_verbose_report_names_the_adaptive_mode(tmp_path, kernel, libiotune):
    env = {"IOTUNE_PROFILE": str(tmp_path / "p.json"), **ADAPT}
    r = run_mpi(2, [kernel("iorio"), *IORIO, "--steps", "2"], env=env, cwd=tmp_path,
                preload=libiotune, verbose=True, timeout=120)  # fmt: skip
    assert "romio_cb_write=disable (in effect) [adaptive mode]" in r.stderr


# ------------------------------------------------------------------ layout insights (IOT-1/2)

FILL = ["3", "100000"]  # 3 phases; chunks of 2 x 100000 doubles (1.6 MB, above the 1 MiB cache)


def _learning(p):
    return p["adaptive"]["phases"][0]


def test_fill_time_never_fires_online_on_fully_written_chunked_datasets(tmp_path, test_prog,
                                                                        libiotune):  # fmt: skip
    """IOT-1 online: the learning phase's layout insights (read back from the dataset creation
    list, the writes' boxes agreed over the ranks) fire it, the next phase creates its dataset
    with fill time never (read back from the file), and the data equal a run without the
    runtime (h5diff)."""
    from iotune import storage_layout

    prog = test_prog("fill_probe")
    base = tmp_path / "base"
    base.mkdir()
    run_mpi(2, [prog, "full", *FILL], cwd=base, timeout=120)
    p = _run(tmp_path / "adapt", [prog, "full", *FILL], libiotune)
    learn = _learning(p)
    i = learn["insights"]
    assert (i["layout"], i["fill_time"], i["fully_written"], i["filters"]) == (
        "chunked", "ifset", "yes", "no")  # fmt: skip
    assert i["chunk_bytes_max"] == 1_600_000 and i["chunk_cache_needed"] == 2 * 2**20
    assert i["write_amplification"] > 1.9  # the fill values written first
    assert "IOT-1" in learn["fired"]
    # the same insights offline, from the file itself (iotune.insights through h5dump)
    layouts = storage_layout.read_layouts(base / "chunked.0.h5")
    offline = storage_layout.layout_insights(list(layouts.values()))
    # fill_value is offline only: online, the fill guard reads the application's fill value
    # itself (apply/fill_guard.c) and withdraws fill_time=never there
    assert i.get("fill_value") is None and offline.pop("fill_value") == "default"
    assert {k: i[k] for k in offline} == offline
    nxt = p["adaptive"]["phases"][1]
    assert {"rule": "IOT-1", "name": "fill_time", "value": "never"} in nxt["applied"]
    assert nxt["insights"]["fill_time"] == "never"
    assert nxt["insights"]["write_amplification"] < 1.1
    lays = storage_layout.read_layouts(tmp_path / "adapt" / "chunked.1.h5")
    assert lays["/data"].fill_time == "never"
    _same_data(base, tmp_path / "adapt", [f"chunked.{s}.h5" for s in range(3)])


@pytest.mark.parametrize("mode", ["late_reused", "late_partial"])
def test_fill_time_never_from_the_learning_phase_keeps_a_later_partial_phases_data(
    tmp_path, test_prog, libiotune, mode
):
    """IOT-1 is judged on the learning phase alone (every element written), and its
    fill_time=never then reaches later phases that write half of each dataset. In a new file
    (late_partial) parallel HDF5 allocates the chunks in space never written: it stays applied
    and the unwritten half reads back zeros. After the phase deleted another dataset
    (late_reused) its chunks take that dataset's space: applied, the unwritten half read back
    the old values (h5diff: 200,000 differences per file); now the runtime withdraws it there,
    saying why (the file's hdf5_notes)."""
    from iotune import storage_layout

    prog = test_prog("fill_probe")
    base = tmp_path / "base"
    base.mkdir()
    run_mpi(2, [prog, mode, *FILL], cwd=base, timeout=120)
    p = _run(tmp_path / "adapt", [prog, mode, *FILL], libiotune)
    phases = p["adaptive"]["phases"]
    assert phases[0]["insights"]["fully_written"] == "yes" and "IOT-1" in phases[0]["fired"]
    notes = {f["name"]: " ".join(f.get("hdf5_notes") or []) for f in p["files"]}
    why = (
        "space may have been freed in the file (an object deleted, a dataset shrunk, a "
        "filtered dataset made)"
    )
    for s in (1, 2):
        assert {"rule": "IOT-1", "name": "fill_time", "value": "never"} in phases[s]["applied"]
        lays = storage_layout.read_layouts(tmp_path / "adapt" / f"chunked.{s}.h5")
        if mode == "late_reused":
            assert lays["/data"].fill_time != "never"
            assert f"fill_time=never NOT applied: {why}" in notes[f"chunked.{s}.h5"], notes
        else:
            assert lays["/data"].fill_time == "never"
            assert "fill_time" not in notes[f"chunked.{s}.h5"], notes
    _same_data(base, tmp_path / "adapt", [f"chunked.{s}.h5" for s in range(3)])


def test_a_dataset_written_piece_after_piece_is_proven_fully_written(tmp_path, test_prog,
                                                                    libiotune):  # fmt: skip
    """Each rank writes its share in 16 adjacent pieces (h5perf writes 32 MiB per rank in 1 MiB
    transfers): more pieces than the boxes kept per rank left fully_written unknown and IOT-1
    silent at every realistic size; adjacent boxes are now joined, so the share is one box."""
    prog = test_prog("fill_probe")
    base = tmp_path / "base"
    base.mkdir()
    run_mpi(2, [prog, "pieces", *FILL], cwd=base, timeout=120)
    p = _run(tmp_path / "adapt", [prog, "pieces", *FILL], libiotune)
    learn = _learning(p)
    assert learn["insights"]["fully_written"] == "yes", learn["insights"]
    assert "IOT-1" in learn["fired"]
    nxt = p["adaptive"]["phases"][1]
    assert {"rule": "IOT-1", "name": "fill_time", "value": "never"} in nxt["applied"]
    _same_data(base, tmp_path / "adapt", [f"chunked.{s}.h5" for s in range(3)])


def test_writes_boxes_are_exchanged_only_in_the_learning_phase(tmp_path, test_prog, libiotune):
    """Proving fully_written takes three collectives over the file's ranks; the rules are decided
    in the class's learning phase alone, so the optimised phases skip that exchange (their
    fully_written is not computed) while their other insights are still agreed, and the rule
    the learning phase fired stays applied."""
    prog = test_prog("fill_probe")
    p = _run(tmp_path, [prog, "full", *FILL], libiotune)
    phases = p["adaptive"]["phases"]
    assert phases[0]["insights"]["fully_written"] == "yes"
    for ph in phases[1:]:
        assert ph["insights"]["fully_written"] is None
        assert ph["insights"]["layout"] == "chunked" and ph["insights"]["fill_time"] == "never"
        assert {"rule": "IOT-1", "name": "fill_time", "value": "never"} in ph["applied"]


@pytest.mark.parametrize("mode,fully", [("partial", "no"), ("overlap", None)])
def test_fill_time_quiet_unless_every_element_is_proven_written(tmp_path, test_prog, libiotune,
                                                                mode, fully):  # fmt: skip
    """Half the dataset written: "no". As many elements written as the extent holds, but the
    ranks' boxes overlap (half the dataset never written): not proven, so unknown, never yes."""
    prog = test_prog("fill_probe")
    base = tmp_path / "base"
    base.mkdir()
    run_mpi(2, [prog, mode, *FILL], cwd=base, timeout=120)
    p = _run(tmp_path / "adapt", [prog, mode, *FILL], libiotune)
    for phase in p["adaptive"]["phases"]:
        assert phase["insights"]["fully_written"] == fully
        assert "IOT-1" not in phase["fired"]
        assert all(a["rule"] != "IOT-1" for a in phase["applied"])
    _same_data(base, tmp_path / "adapt", [f"chunked.{s}.h5" for s in range(3)])


@pytest.mark.parametrize(
    "mode,why",
    [
        ("scattered", "undecided: fully_written unknown: a rank wrote a dataset in more than 8 "
                      "separate boxes"),
        ("overlap", "undecided: fully_written unknown: the boxes the ranks wrote overlap"),
        ("partial", "needs fully_written == yes, was no"),
    ],
)  # fmt: skip
def test_the_summary_says_why_a_rule_considered_was_not_applied(tmp_path, test_prog, libiotune,
                                                                mode, why):  # fmt: skip
    """A rule the learning phase left undecided or missed by one condition is named in the
    summary line with its reason (before, the line said only what was applied: a gain a search
    found and the mode did not reach was unexplained). The reason an insight is unknown comes
    from the runtime (the profile's unknown_why, agreed over the file's ranks): here why
    fully_written, on which IOT-1 (fill_time=never) relies, was not proven."""
    from iotune.adapt import applied_per_file

    prog = test_prog("fill_probe")
    r = run_mpi(2, [prog, mode, *FILL], env={"IOTUNE_PROFILE": str(tmp_path / "p.json"), **ADAPT},
                cwd=tmp_path, preload=libiotune, timeout=120)  # fmt: skip
    assert "leaked" not in r.stderr and "WARNING" not in r.stderr, r.stderr
    p = json.loads((tmp_path / "p.json").read_text())
    phases = p["adaptive"]["phases"]
    learn = _learning(p)
    assert learn["role"] == "learning" and "IOT-1" not in learn["fired"]
    if why.startswith("undecided"):
        assert learn["insights"]["fully_written"] is None
        assert learn["unknown_why"]["fully_written"] == why.split("unknown: ", 1)[1]
    else:
        assert "fully_written" not in learn["unknown_why"]
    line = applied_per_file(phases)
    assert f"not applied: IOT-1 fill_time=never ({why})" in line, line
    assert all(a["rule"] != "IOT-1" for ph in phases for a in ph["applied"])


def test_a_rule_that_fired_and_reached_no_phase_says_why():
    """A rule that fired on the learning phase but whose setting reached no later phase (the
    ranks did not agree at the opens, or a control file set the parameter) says so; one the
    guard reverted is left to the guard's own clause."""
    from iotune.adapt import applied_per_file

    ins = {
        "interface": "hdf5",
        "file_mode": "shared",
        "access_pattern": "sequential",
        "transfer_mode": "collective",
        "io_mix": "write",
        "hint_romio_cb_write": "automatic",
    }
    learn = {"file": "a.0.h5", "class": "a.*.h5", "index": 0, "role": "learning",
             "insights": ins, "fired": ["SIO-7"], "applied": []}  # fmt: skip
    later = dict(learn, file="a.1.h5", index=1, role="default", fired=["SIO-7"])
    line = applied_per_file([learn, later])
    assert "not applied: SIO-7 romio_cb_write=disable (fired; the ranks of the file did not " \
        "agree" in line, line  # fmt: skip
    other = {"rule": "KB", "name": "cb_buffer_size", "value": "1048576"}
    line = applied_per_file([learn, dict(later, role="optimised", applied=[other])])
    assert "not applied: SIO-7 romio_cb_write=disable (fired; its setting reached no later " \
        "phase: the control file" in line, line  # fmt: skip
    guard = {"ratio": 0.5, "slow": True, "reverted": ["SIO-7"]}
    line = applied_per_file([learn, dict(later, role="optimised", applied=[other], guard=guard)])
    assert "not applied: SIO-7" not in line and "the guard reverted SIO-7" in line, line


def test_chunk_cache_fires_online_for_partial_reads_of_big_chunks(tmp_path, test_prog, libiotune):
    """IOT-2 online: a read phase of chunks larger than the chunk cache in force (read back from
    the dataset access list) gives the next phases a cache that holds a chunk, in effect."""
    prog = test_prog("fill_probe")
    run_mpi(2, [prog, "full", *FILL], cwd=tmp_path, timeout=120)
    p = _run(tmp_path, [prog, "read", *FILL], libiotune)
    learn = _learning(p)
    assert learn["insights"]["chunk_cache_bytes"] == 2**20 and learn["insights"]["reads"] > 0
    assert "IOT-2" in learn["fired"]
    for phase in p["adaptive"]["phases"][1:2]:
        want = {"rule": "IOT-2", "name": "chunk_cache_bytes", "value": str(2 * 2**20)}
        assert want in phase["applied"]
        assert phase["insights"]["chunk_cache_bytes"] == 2 * 2**20  # read back: in effect


def test_chunk_cache_quiet_when_chunks_fit(tmp_path, test_prog, libiotune):
    prog = test_prog("fill_probe")
    small = ["3", "1000"]  # chunks of 16 KB
    run_mpi(2, [prog, "full", *small], cwd=tmp_path, timeout=120)
    p = _run(tmp_path, [prog, "read", *small], libiotune)
    assert _learning(p)["insights"]["chunk_bytes_max"] == 16_000
    assert all("IOT-2" not in x["fired"] for x in p["adaptive"]["phases"])


@pytest.mark.parametrize("create", [True, False])
def test_phases_without_data_are_neither_learned_from_nor_judged(tmp_path, test_prog, libiotune,
                                                                 create):  # fmt: skip
    # each step: (create: an open that only creates the file), the collective write, then two
    # opens on rank 0 alone that only ask the size (IOR's pattern): the class learns from its
    # first write, applies SIO-7 to the later writes, and the empty phases strike nothing
    argv = [test_prog("nodata_probe"), "4", "4096"] + ([] if create else ["nocreate"])
    p = _run(tmp_path, argv, libiotune)
    phases = p["adaptive"]["phases"]
    data = [x for x in phases if x["bytes"] > 0]
    idle = [x for x in phases if x["bytes"] == 0]
    assert len(data) == 4 and len(idle) == (12 if create else 8)
    assert all(x["role"] == "no data" and x["guard"] is None for x in idle)
    assert [x["role"] for x in data] == ["learning", "optimised", "optimised", "optimised"]
    assert data[0]["fired"] == ["SIO-7"]
    assert all(x["guard"]["reverted"] == [] for x in data[1:]), data
    assert _hints(p)["chk.3.dat"]["romio_cb_write"] == "disable"


def test_a_rank_alone_reverting_a_class_does_not_hang_its_next_hdf5_file(tmp_path, test_prog,
                                                                        libiotune):  # fmt: skip
    # rank 0 alone opens the file on MPI_COMM_SELF between the shared steps and reads a value
    # (IOR's pattern). Its guard judged these phases (small ones often look slow; the test
    # knob makes it sure) and reverted SIO-7 where rank 1's never saw them; parallel HDF5 and
    # the runtime's calls around H5Fcreate are collective, so the next step's H5Fcreate hung
    # until the ranks agreed on the file's settings first. Now a phase on fewer ranks than
    # its class's learning phase runs with the defaults and is not judged: the guard judges
    # the shared steps alone, alike on both ranks, and the file's settings still agree
    argv = [test_prog("selfopen_probe"), "4"]
    base = tmp_path / "base"
    base.mkdir()
    run_mpi(2, argv, cwd=base, timeout=60)
    slow = {"IOTUNE_TEST_SLOW_RULE": "SIO-7:1000"}
    p = _run(tmp_path / "adapt", argv, libiotune, env=slow)  # a hang fails at the timeout
    phases = p["adaptive"]["phases"]
    alone = [x for x in phases if x["ranks"] == 1]
    shared = [x for x in phases if x["ranks"] == 2]
    assert alone and all(x["role"] == "default" and x["fewer_ranks"] for x in alone), alone
    assert all(x["applied"] == [] and x["guard"] is None for x in alone), alone
    assert [x["role"] for x in shared] == ["learning", "optimised", "optimised", "default"]
    assert shared[2]["guard"]["reverted"] == ["SIO-7"], shared
    _same_data(base, tmp_path / "adapt", ["self.h5"])


def test_summary_line_names_each_file_once_and_what_the_mode_could_not_use():
    """The summary's last line (applied_per_file, pure): a file reopened phase after phase is
    named once with its settings and the phases they reached; a rule held but offline only is
    named with its setting; a write setting that reached only reading phases (h5perf writes
    and reads one file: its one write phase is the learning phase) is said to have had nothing
    to act on."""
    from iotune.adapt import applied_per_file

    def phase(index, mix, applied=(), fired=(), offline=()):
        return {"file": "#pio_tmp_1.h5", "class": "#pio_tmp_*.h5", "index": index,
                "role": "learning" if index == 0 else "optimised", "insights": {"io_mix": mix},
                "fired": list(fired), "offline": list(offline),
                "applied": [{"rule": r, "name": n, "value": v} for r, n, v in applied]}  # fmt: skip

    both = [("SIO-7", "romio_cb_write", "disable"), ("IOT-1", "fill_time", "never")]
    learn = phase(0, "write", fired=["SIO-7", "IOT-1"], offline=["SIO-1"])
    line = applied_per_file([learn, phase(1, "read", both)])
    assert line.startswith("applied per file: #pio_tmp_1.h5 (1 of 2 phases): "
                           "romio_cb_write=disable, fill_time=never; "), line  # fmt: skip
    assert (
        "not applied: SIO-1 transfer_mode=independent (offline advice, held on 1 of 2 phases, "
        "proposed by iotune advise and iotune tune: HDF5 may need collective transfers the "
        "application relies on)" in line
    ), line
    assert "fill_time=never, romio_cb_write=disable reached no phase that wrote" in line
    # four iterations: the later writes got the settings, the file is named once
    line = applied_per_file([learn] + [phase(i, ("read", "write")[i % 2 == 0], both)
                                       for i in range(1, 8)])  # fmt: skip
    assert line.count("#pio_tmp_1.h5") == 1 and "(7 of 8 phases)" in line, line
    assert "reached no phase" not in line
    # why a search's gain is out of reach: the learning phase, one of four writes, had none
    assert (
        "learned from its first phase, which ran with the defaults: #pio_tmp_*.h5 (1 of 8 "
        "phases, 4 writing)" in line
    )
    # nothing applied: the reason first, then the rule held offline
    line = applied_per_file([phase(0, "write", offline=["SIO-1"])])
    assert line.startswith("nothing applied: no phase recurred"), line
    assert "SIO-1 transfer_mode=independent" in line
    # no phase at all (a serial h5py file: no MPI-IO open): not "no phase recurred" (an outside
    # tester read "0 phase(s)" and then that), but why there was none
    line = applied_per_file([])
    assert line.startswith("nothing applied: rank 0 opened no file through MPI-IO"), line
    assert "recurred" not in line


def test_summary_line_says_when_the_guard_reverted_and_what_the_learning_phase_cost():
    """A guard revert showed only as fewer phases ("3 of 16 phases", h5perf under load): the
    line now names the rules reverted, the slow phases with their rate against the learning
    phase, and how many later phases ran without them; and a class that learned from a write
    says how many of its writes a write setting could reach."""
    from iotune.adapt import applied_per_file

    both = [{"rule": "SIO-7", "name": "romio_cb_write", "value": "disable"},
            {"rule": "IOT-1", "name": "fill_time", "value": "never"}]  # fmt: skip

    def phase(index, guard=None):
        return {"file": "#pio_tmp_1.h5", "class": "#pio_tmp_*.h5", "index": index,
                "role": "learning" if index == 0 else ("optimised" if index < 4 else "default"),
                "insights": {"io_mix": ("write", "read")[index % 2]},
                "applied": both if 0 < index < 4 else [], "guard": guard}  # fmt: skip

    guards = {1: {"ratio": 34.8, "slow": False, "reverted": []},
              2: {"ratio": 0.7721, "slow": True, "reverted": []},
              3: {"ratio": 0.563, "slow": True, "reverted": ["SIO-7", "IOT-1"]}}  # fmt: skip
    line = applied_per_file([phase(i, guards.get(i)) for i in range(16)])
    assert "(3 of 16 phases)" in line, line
    assert (
        "the guard reverted SIO-7, IOT-1 for #pio_tmp_*.h5 after phase 2, phase 3 ran slower "
        "than its learning phase (0.77x, 0.56x of its rate): its 12 later phases ran without "
        "them" in line
    ), line
    assert "(1 of 16 phases, 8 writing), so a write setting could reach at most 7 of its 8 " \
        "writes" in line, line  # fmt: skip
    # no revert, no such words; a class that learned from a read loses no write
    line = applied_per_file([phase(i) for i in range(4)])
    assert "guard" not in line, line
    reads_first = [dict(phase(i), insights={"io_mix": ("read", "write")[i % 2]}) for i in range(4)]
    assert "could reach at most" not in applied_per_file(reads_first)


def test_a_setting_the_file_did_not_take_is_not_reported_as_applied():
    """The mode gave fill_time=never (a knowledge base's) to phases whose datasets had a fill
    value of the application's: the runtime left it out (hdf5_notes) and HDF5's lists read
    back lack it, yet `iotune adapt` said applied (an outside tester). The MPI-IO hint, in
    effect, stays applied."""
    from iotune.adapt import format_phases

    given = [{"rule": "SIO-7", "name": "romio_cb_write", "value": "disable"},
             {"rule": "KB", "name": "fill_time", "value": "never"}]  # fmt: skip
    phase = {"class": "ck_*.h5", "index": 1, "role": "optimised", "ranks": 2,
             "bytes_per_s": 1e6, "applied": given, "insights": {}}  # fmt: skip
    data = {
        "adaptive": {"guard_ratio": 0.9, "phases": [
            dict(phase, file="ck_0.h5", index=0, role="learning", applied=[]),
            dict(phase, file="ck_1.h5"), dict(phase, file="ck_2.h5")]},
        "files": [
            {"name": "ck_1.h5", "applied": {"hdf5": {}, "mpiio": {"romio_cb_write": "disable"}},
             "hdf5_notes": ["fill_time=never NOT applied: the application defined a fill value "
                            "[adaptive mode]"]},
            {"name": "ck_2.h5", "applied": {"hdf5": {}, "mpiio": {"romio_cb_write": "disable"}}},
        ],
    }  # fmt: skip
    text = format_phases(data)
    assert "fill_time=never (KB) NOT in effect: the application defined a fill value" in text
    assert "fill_time=never (KB) NOT in effect: not in the file's HDF5 lists read back" in text
    assert "ck_1.h5 (1 of 1 phases): romio_cb_write=disable;" in text, text
    assert "not in effect: fill_time=never on ck_1.h5 (the application defined a fill value)" \
        in text, text  # fmt: skip


def test_a_dataset_setting_that_reached_some_datasets_of_a_file_says_which_not():
    """fill_time=never reached /a of ck_1.h5 and was left out of /b (space freed before it):
    the file's `applied` lists it, and `iotune adapt` said it applied to the file. The
    runtime's counts (dataset_settings) and the note naming /b make it say 1 of 2."""
    from iotune.adapt import format_phases

    given = [{"rule": "KB", "name": "fill_time", "value": "never"}]
    phase = {"class": "ck_*.h5", "index": 1, "role": "optimised", "ranks": 2,
             "bytes_per_s": 1e6, "applied": given, "insights": {}}  # fmt: skip
    why = "space may have been freed in the file; it applies only in a new file"
    data = {
        "adaptive": {"guard_ratio": 0.9, "phases": [
            dict(phase, file="ck_0.h5", index=0, role="learning", applied=[]),
            dict(phase, file="ck_1.h5"), dict(phase, file="ck_2.h5")]},
        "files": [
            {"name": "ck_1.h5", "applied": {"hdf5": {"fill_time": "never"}, "mpiio": {}},
             "dataset_settings": {"fill_time": {"reached": 1, "of": 2}},
             "hdf5_notes": [f"ck_1.h5:/b: fill_time=never NOT applied: {why} [adaptive mode]"]},
            {"name": "ck_2.h5", "applied": {"hdf5": {"fill_time": "never"}, "mpiio": {}},
             "dataset_settings": {"fill_time": {"reached": 2, "of": 2}}},
        ],
    }  # fmt: skip
    text = format_phases(data)
    some = f"applied to 1 of 2 datasets; not to /b ({why})"
    assert f"fill_time=never (KB) {some}" in text, text
    assert f"ck_1.h5 (1 of 1 phases): fill_time=never ({some});" in text, text
    assert "ck_2.h5 (1 of 1 phases): fill_time=never" in text and "2 of 2" not in text, text


def test_a_hint_the_runtime_withdrew_is_not_reported_as_applied():
    """A knowledge base's cb_buffer_size=2147483647 was withdrawn by the runtime (it would
    cost 2 GiB per aggregator) and cb_nodes was capped by MPI-IO, yet `iotune adapt` listed
    both as applied (an outside tester); a hint MPI-IO kept stays applied."""
    from iotune.adapt import format_phases

    given = [{"rule": "KB", "name": "cb_buffer_size", "value": "2147483647"},
             {"rule": "KB", "name": "cb_nodes", "value": "8"},
             {"rule": "SIO-7", "name": "romio_cb_write", "value": "disable"}]  # fmt: skip
    phase = {"class": "ck_*.h5", "index": 1, "role": "optimised", "ranks": 2,
             "bytes_per_s": 1e6, "applied": given, "insights": {}}  # fmt: skip
    data = {
        "adaptive": {"guard_ratio": 0.9, "phases": [
            dict(phase, file="ck_0.h5", index=0, role="learning", applied=[]),
            dict(phase, file="ck_1.h5")]},
        "files": [
            {"name": "ck_1.h5", "applied": {"hdf5": {}, "mpiio": {"romio_cb_write": "disable"}},
             "withdrawn": [{"setting": "cb_buffer_size", "value": "2147483647",
                            "reason": "would cost 2.0 GiB per aggregator"}],
             "hint_effect": {"cb_nodes": {"requested": "8", "read_back": "1", "in_effect": "no",
                                          "reason": "capped by cb_config_list=*:1"},
                             "romio_cb_write": {"requested": "disable",
                                                "read_back": "disable", "in_effect": "yes"}}},
        ],
    }  # fmt: skip
    text = format_phases(data)
    assert "cb_buffer_size=2147483647 (KB) NOT in effect: withdrawn: would cost 2.0 GiB" in text
    assert "cb_nodes=8 (KB) NOT in effect: capped by cb_config_list=*:1" in text, text
    assert "ck_1.h5 (1 of 1 phases): romio_cb_write=disable;" in text, text


def test_a_knowledge_base_name_with_terminal_controls_is_shown_escaped():
    """A stored setting's name holding a line break and an escape sequence was printed raw by
    `iotune adapt` (an outside tester): a broken line and a red terminal."""
    from iotune.adapt import _kb_left_out

    shown = _kb_left_out({"name": "x\n\x1b[31m", "value": "1", "why": "not a parameter"})
    assert "\x1b" not in shown and "\n" not in shown and shown.startswith("x\\n\\x1b[31m=1")
