"""The HDF5 layer of the runtime around failures and object lifetimes (tests/c/h5errors.c):

- a failed HDF5 call leaves the application exactly the error stack, return value and errno it
  has without the runtime (HDF5's own printing included);
- a setting HDF5 refuses at a call (fill time "never" for a variable-length string dataset) is
  withdrawn there: the call is made again with the application's own lists, the run goes on with
  the same data, and stderr (one line) and the profile say which settings and why;
- datasets opened with H5Oopen, H5Oopen_by_idx and H5Dopen1 get the dataset settings;
- 5,000 datasets released with H5Idec_ref (as h5py does) are counted exactly.
"""

import json
import os
import re
import subprocess

import pytest
from conftest import REPO, VECTORS, run_mpi

from iotune import outputs

PROBE_ALL = REPO / "tests" / "data" / "probe_all.xml"
CONFIGS = {
    "none": None,
    "probe_all": PROBE_ALL,
    "hdf5_all": VECTORS / "good_hdf5_all.xml",
    "full": VECTORS / "good_full.xml",
}
CACHE = re.compile(r"^(H5Oopen|H5Oopen_by_idx|H5Dopen1): chunk cache .*$", re.M)


def run(test_prog, where, args, lib=None, config=None, env=None):
    where.mkdir(parents=True, exist_ok=True)
    return run_mpi(1, [test_prog("h5errors"), ".", *args], cwd=where, preload=lib,
                   config=config, env=env)  # fmt: skip


def comparable(out: str) -> str:
    """The output without what differs between two runs of the same program: the open time
    HDF5 puts in its message, and the chunk cache (compared on its own)."""
    out = re.sub(r"time = [^\n]*\n", "time = T\n", out)
    return CACHE.sub("", out)


@pytest.fixture(scope="module")
def base(tmp_path_factory, test_prog):
    where = tmp_path_factory.mktemp("base")
    return where, run(test_prog, where, ["errors"])


def test_the_program_meets_the_failures(base):
    _, proc = base
    for case in ("H5Fopen of a missing file: failed errno=2",
                 "H5Fcreate exclusive of an existing file: failed errno=17",
                 "H5Dcreate2 of an existing name: failed", "H5Dopen2 of a missing name: failed",
                 "H5Oopen of a missing name: failed", "H5Dwrite to a read-only file: failed",
                 "H5Dread with an impossible conversion: failed",
                 "H5Dcreate2 of variable-length strings: ok", "data read back: same"):  # fmt: skip
        assert case in proc.stdout, case
    assert "  #000 " not in proc.stdout and "  #0 H5Dcreate2 " in proc.stdout  # stacks printed
    assert "HDF5-DIAG: Error detected" in proc.stderr  # the one case printed by HDF5 itself


@pytest.mark.parametrize("config", CONFIGS)
def test_failed_calls_leave_the_applications_error_stack(tmp_path, base, test_prog, libiotune,
                                                         config):  # fmt: skip
    _, plain = base
    tuned = run(test_prog, tmp_path, ["errors"], lib=libiotune, config=CONFIGS[config])
    assert comparable(tuned.stdout) == comparable(plain.stdout)
    own = [ln for ln in tuned.stderr.splitlines(True) if not ln.startswith("iotune: ")]
    assert "".join(own) == plain.stderr


def test_a_refused_setting_is_withdrawn_at_the_call(tmp_path, base, test_prog, libiotune):
    base_dir, _ = base
    tuned = run(test_prog, tmp_path, ["errors"], lib=libiotune, config=PROBE_ALL,
                env={"IOTUNE_PROFILE": str(tmp_path / "p.json")})  # fmt: skip
    said = [ln for ln in tuned.stderr.splitlines() if ln.startswith("iotune: ")]
    assert len(said) == 1, tuned.stderr
    assert re.search(r"H5Dcreate \S*errors\.h5:/strings: .*fill_time=never .*VL datatype.*"
                     r"withdrawn", said[0]), said[0]  # fmt: skip
    diff = subprocess.run(["h5diff", base_dir / "errors.h5", tmp_path / "errors.h5"],
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    assert diff.returncode == 0, diff.stdout
    (f,) = json.loads((tmp_path / "p.json").read_text())["files"]
    # the call was made again with the application's own lists: every setting of the control
    # file for that call is withdrawn, each a record of its own (as MPI-IO hints are)
    withdrawn = {w["setting"]: w for w in f["withdrawn"]}
    assert withdrawn["fill_time"]["value"] == "never", withdrawn
    assert all("H5Dcreate /strings" in w["reason"] for w in withdrawn.values()), withdrawn
    assert "VL datatype" in withdrawn["fill_time"]["reason"]


def test_every_way_to_open_a_dataset_gets_its_settings(tmp_path, base, test_prog, libiotune):
    _, plain = base
    assert CACHE.findall(plain.stdout) == ["H5Oopen", "H5Oopen_by_idx", "H5Dopen1"]
    tuned = run(test_prog, tmp_path, ["errors"], lib=libiotune, config=PROBE_ALL)
    caches = [m.group(0).split(": ", 1)[1] for m in CACHE.finditer(tuned.stdout)]
    assert caches == ["chunk cache 1009 slots, 4194304 bytes, w0 0.50"] * 3


MANY = 5000


def test_datasets_released_by_reference_count_are_counted_exactly(tmp_path, test_prog,
                                                                  libiotune):  # fmt: skip
    # dataset settings only: probe_all's alignment would grow the file to 700 MiB (and say so)
    config = tmp_path / "datasets.xml"
    config.write_text("<Parameters><High_Level_IO_Library><chunk_cache_bytes>4MiB"
                      "</chunk_cache_bytes><transfer_mode>independent</transfer_mode>"
                      "</High_Level_IO_Library></Parameters>")  # fmt: skip
    proc = run(test_prog, tmp_path, ["many", MANY], lib=libiotune, config=config,
               env={"IOTUNE_PROFILE": str(tmp_path / "p.json")})  # fmt: skip
    assert proc.stdout == f"many: {MANY} datasets\n" and proc.stderr == ""
    (f,) = json.loads((tmp_path / "p.json").read_text())["files"]
    h = f["hdf5"]
    assert (h["dataset_creates"], h["writes"], h["bytes_written"]) == (MANY, MANY, MANY * 128)
    assert (h["file_creates"], h["file_closes"]) == (1, 1)
    assert f["applied"]["hdf5"] == {"transfer_mode": "independent"}
    notes = f["hdf5_notes"]  # the first datasets' notes, then a mark: the list is bounded
    contiguous = "chunk cache settings without effect: the dataset is contiguous"
    assert notes[:3] == [f"/d{i:05d}: {contiguous}" for i in range(3)]
    assert notes[-1] == "(more left out)"


# ----------------------------------------------------------------------------- applied


def profile_of(tmp_path, test_prog, libiotune, args, config):
    proc = run(test_prog, tmp_path, args, lib=libiotune, config=config,
               env={"IOTUNE_PROFILE": str(tmp_path / "p.json")})  # fmt: skip
    (f,) = json.loads((tmp_path / "p.json").read_text())["files"]
    return proc, f


def test_applied_lists_what_hdf5_reports_in_effect(tmp_path, test_prog, libiotune):
    _, f = profile_of(tmp_path, test_prog, libiotune, ["errors"], PROBE_ALL)
    hdf5 = f["applied"]["hdf5"]
    # read back from the file's access list and the datasets' creation and access lists
    assert hdf5["alignment"] == "0,65536" and hdf5["mdc_max_size"] == "16777216"
    assert hdf5["fill_time"] == "never" and hdf5["chunk_cache_bytes"] == "4194304"
    assert "chunk" not in hdf5 and "alloc_time" not in hdf5  # no dataset matched their rules
    assert (
        "/strings: chunk cache settings without effect: the dataset is contiguous"
        in (f["hdf5_notes"])
    )


def test_an_override_of_the_applications_own_setting_is_said(tmp_path, test_prog, libiotune):
    proc, f = profile_of(tmp_path, test_prog, libiotune, ["own"], PROBE_ALL)
    assert "own: alignment in effect 0, 65536" in proc.stdout  # the control file wins
    note = "alignment=0,65536 [probe_all.xml:5] overrides the application's own alignment=0,4096"
    said = [ln for ln in proc.stderr.splitlines() if ln.startswith("iotune: ")]
    assert len(said) == 1 and note in said[0], proc.stderr
    assert f["hdf5_notes"] == [note]  # sieve_buf_size: the application set HDF5's default


def test_a_file_grown_by_alignment_gets_one_warning(tmp_path, test_prog, libiotune):
    config = tmp_path / "big.xml"
    config.write_text("<Parameters><High_Level_IO_Library><alignment>0, 64MiB</alignment>"
                      "</High_Level_IO_Library></Parameters>")  # fmt: skip
    proc, f = profile_of(tmp_path, test_prog, libiotune, ["errors"], config)
    said = [ln for ln in proc.stderr.splitlines() if ln.startswith("iotune: ")]
    assert len(said) == 1 and "written through HDF5: alignment=0,67108864 grows it" in said[0]
    assert any("alignment=0,67108864 grows it" in n for n in f["hdf5_notes"])


def test_overrides_of_the_applications_own_fill_and_allocation_times_are_said_once(
    tmp_path, test_prog, libiotune
):
    """Three datasets whose creation lists set their own fill time (alloc) and allocation time
    (early), on two ranks: the control file's replace them, said once per setting (not per
    dataset or rank; an outside tester's finding: only chunks were said); a dataset whose list
    sets HDF5's defaults gets no word."""
    config = tmp_path / "times.xml"
    config.write_text("<Parameters><High_Level_IO_Library>\n<fill_time>never</fill_time>\n"
                      "<alloc_time>late</alloc_time>\n"
                      "</High_Level_IO_Library></Parameters>\n")  # fmt: skip
    proc = run_mpi(2, [test_prog("h5errors"), ".", "owndset"], cwd=tmp_path, preload=libiotune,
                   config=config, env={"IOTUNE_PROFILE": str(tmp_path / "p.json")})  # fmt: skip
    assert "owndset: own2 fill time 1," in proc.stdout  # H5D_FILL_TIME_NEVER: the control file's
    fill = "fill_time=never [times.xml:2] overrides the application's own fill_time=alloc"
    alloc = "alloc_time=late [times.xml:3] overrides the application's own alloc_time=early"
    said = [ln for ln in proc.stderr.splitlines() if ln.startswith("iotune: ")]
    wins = " (the control file wins; docs/control-file.md)"
    assert said == [f"iotune: ./owndset.h5: {fill}{wins}", f"iotune: ./owndset.h5: {alloc}{wins}"]
    files = json.loads((tmp_path / "p.json").read_text())["files"]
    (f,) = [f for f in files if f["name"] == "./owndset.h5"]  # Open MPI's own files aside
    assert f["hdf5_notes"].count(fill) == 1 and f["hdf5_notes"].count(alloc) == 1


def test_a_control_file_of_thousands_of_problems_says_ten_and_counts_the_rest(
    tmp_path, test_prog, libiotune
):
    """3000 unknown or malformed elements (an outside tester's file printed 3000 lines into the
    application's stderr): the first IOT_PROBLEMS_SHOWN, then one line counting the rest and
    naming `iotune check --all`; the valid setting after them still applies."""
    config = tmp_path / "many.xml"
    body = "".join("<nosuch>1</nosuch>\n" if i % 2 else "<cb_nodes>lots</cb_nodes>\n"
                   for i in range(3000))  # fmt: skip
    config.write_text(f"<Parameters><Middleware_Layer>\n{body}<alignment>0, 65536</alignment>\n"
                      "</Middleware_Layer></Parameters>\n")  # fmt: skip
    proc = run_mpi(2, [test_prog("h5errors"), tmp_path, "own"], preload=libiotune, config=config)
    assert "own: alignment in effect 0, 65536" in proc.stdout
    said = [ln for ln in proc.stderr.splitlines() if ln.startswith("iotune: ")]
    problems = [ln for ln in said if re.match(rf"iotune: {re.escape(str(config))}:\d", ln)]
    assert len(problems) == 10, proc.stderr[-2000:]
    assert problems[0] == f'iotune: {config}:2: <cb_nodes>: "lots" is not a whole number; ignored'
    assert problems[9].startswith(f"iotune: {config}:11: <nosuch>: unknown parameter")
    more = f"iotune: {config}: 2990 more problems not shown (3000 in all); "
    assert said[10] == f"{more}`iotune check --all {config}` lists them all"
    assert len(said) == 12 and "overrides the application's own alignment" in said[11]


def test_check_all_of_a_control_file_with_terminal_controls_in_its_name_pastes(
    tmp_path, test_prog, libiotune
):
    """The runtime's `iotune check --all PATH` showed a name's controls escaped inside its
    quotes, a command naming another file when pasted: bash's $'...' now, as iotune's own
    messages give it (outputs.shell_word), printable and read back as the very name."""
    config = tmp_path / "ctl\x1b]0;t\x07\udcff 'q'\u202e\x9b\\é.xml"
    body = "<nosuch>1</nosuch>\n" * 12
    config.write_bytes(f"<Parameters><Middleware_Layer>\n{body}</Middleware_Layer></Parameters>\n"
                       .encode("utf-8", "surrogateescape"))  # fmt: skip
    proc = run_mpi(2, [test_prog("h5errors"), tmp_path, "own"], preload=libiotune, config=config)
    (line,) = [ln for ln in proc.stderr.splitlines() if "more problems not shown" in ln]
    word = outputs.shell_word(str(config))
    assert word == f"$'{tmp_path}/ctl\\x1b]0;t\\x07\\xff \\'q\\'\\xe2\\x80\\xae\\xc2\\x9b\\\\é.xml'"
    assert line.endswith(f"`iotune check --all {word}` lists them all"), line
    r = subprocess.run(["bash", "-c", f"printf %s {word}"], capture_output=True)
    assert r.stdout == os.fsencode(config)


def test_terminal_controls_in_names_and_values_are_escaped(tmp_path, test_prog, libiotune):
    """A control file's name and values, and the application's file names, can hold what a
    terminal acts on (ESC sequences, BEL, CR, the C1 control CSI, bytes that are not UTF-8):
    every message shows them escaped, never raw."""
    where = tmp_path / "out\x1b[2J"
    where.mkdir()
    config = tmp_path / "ctl\x1b]0;t\x07\udcff.xml"
    config.write_bytes("<Parameters><High_Level_IO_Library>\n<alignment>0, 65536</alignment>\n"
                       "<cb_nodes>1&#13;\x9b2J</cb_nodes>\n"
                       "</High_Level_IO_Library></Parameters>\n".encode())  # fmt: skip
    proc = run_mpi(2, [test_prog("h5errors"), where, "own"], preload=libiotune, config=config)
    err = proc.stderr
    for raw in ("\x1b", "\x07", "\r", "\x9b", "\udcff", "\ufffd"):
        assert raw not in err, repr(err)
    shown = f"{tmp_path}/ctl\\x1b]0;t\\x07\\xff.xml"
    said = [ln for ln in err.splitlines() if ln.startswith("iotune: ")]
    assert said == [
        f'iotune: {shown}:3: <cb_nodes>: "1\\r\\x9b2J" is not a whole number; ignored',
        f"iotune: {tmp_path}/out\\x1b[2J/own.h5: alignment=0,65536 [ctl\\x1b]0;t\\x07\\xff.xml:2] "
        "overrides the application's own alignment=0,4096 (the control file wins; "
        "docs/control-file.md)",
    ], repr(err)
