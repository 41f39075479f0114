"""`iotune advise` on tiny real kernel runs names the knob tuning found for each kernel (the
"what tuning can gain" table of the project's lab notes), and its control file does what it
says; on a Darshan log it gives what the log supports and says what it cannot tell."""

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import launcher, run_mpi
from kernel_profiles import profile_kernel
from test_rules import BASE, CHUNKED, LUSTRE, STRIDED_COLL

from iotune import cli, controlfile, insights, rules
from iotune import profile as prof
from iotune.advise import advise

GCRM = ["--cells", "256", "--levels", "4", "--chunk-cells", "64"]
# chunks of 70000 cells x 2 levels x 8 bytes = 1.07 MiB (x 3 for the edges' normal_wind:
# 3.2 MiB): larger than HDF5's 1 MiB chunk cache
GCRM_BIG_CHUNKS = ["--cells", "70000", "--levels", "2", "--chunk-cells", "70000"]


def _advise(capsys, *argv):
    status = cli.main(["advise", *map(str, argv)])
    out = capsys.readouterr()
    return status, out.out, out.err


def _advice(tmp_path, capsys, profile, *extra):
    control = tmp_path / "advice.xml"
    status, out, err = _advise(capsys, profile, "--json", "-o", control, *extra)
    assert status == 0, err
    return json.loads(out), control


def _settings(control: Path) -> dict[str, str]:
    parsed = controlfile.parse_file(control)
    assert parsed.ok, parsed.messages()
    return {s.name: s.value for s in parsed.settings}


def test_vorpal_names_cb_buffer_size_and_cb_read(tmp_path, capsys, kernel, libiotune):
    profile = profile_kernel(tmp_path, kernel("vorpalio"), ["--block", "8,8,4", "--read"],
                             libiotune)  # fmt: skip
    advice, control = _advice(tmp_path, capsys, profile)
    codes = {f["code"] for f in advice["findings"]}
    assert {"IOT-3", "IOT-4"} <= codes
    assert _settings(control) == {"cb_buffer_size": "1048576", "romio_cb_read": "disable"}
    iot3 = next(f for f in advice["findings"] if f["code"] == "IOT-3")
    assert iot3["evidence"].startswith("100 % of selections noncontiguous, collective")
    assert "VORPAL-IO 1.45x" in iot3["source"]


def test_gcrm_names_fill_time_never_and_it_halves_the_bytes(tmp_path, capsys, kernel, libiotune):
    profile = profile_kernel(tmp_path, kernel("gcrmio"), GCRM, libiotune)
    advice, control = _advice(tmp_path, capsys, profile)
    assert _settings(control) == {"fill_time": "never"}
    iot1 = next(f for f in advice["findings"] if f["code"] == "IOT-1")
    assert iot1["severity"] == "high" and iot1["in_control_file"]
    assert "fill time ifset, every element written" in iot1["evidence"]
    # applying the advice: same data, about half the bytes below HDF5
    default_bytes = prof.load(profile).layer("mpiio")["bytes_written"]
    shutil.move(tmp_path / "gcrmio.h5", tmp_path / "default.h5")
    tuned = tmp_path / "tuned.json"
    run_mpi(2, [kernel("gcrmio"), *GCRM], cwd=tmp_path, preload=libiotune, config=control,
            env={"IOTUNE_PROFILE": str(tuned), "IOTUNE_SESSION": "tuned"})  # fmt: skip
    assert prof.load(tuned).layer("mpiio")["bytes_written"] < 0.6 * default_bytes
    diff = subprocess.run(["h5diff", tmp_path / "default.h5", tmp_path / "gcrmio.h5"],
                          capture_output=True, text=True, check=False)  # fmt: skip
    assert diff.returncode == 0, diff.stdout + diff.stderr


def test_gcrm_read_names_the_chunk_cache(tmp_path, capsys, kernel, libiotune):
    profile = profile_kernel(tmp_path, kernel("gcrmio"), [*GCRM_BIG_CHUNKS, "--read"],
                             libiotune)  # fmt: skip
    advice, control = _advice(tmp_path, capsys, profile)
    settings = _settings(control)
    assert settings["chunk_cache_bytes"] == str(4 << 20)  # the largest chunk, 3.2 MiB, in MiB
    assert settings["fill_time"] == "never"
    iot2 = next(f for f in advice["findings"] if f["code"] == "IOT-2")
    assert iot2["evidence"] == "chunks of up to 3.2 MiB, chunk cache 1 MiB"


def test_gcrm_write_only_does_not_propose_a_chunk_cache(tmp_path, capsys, kernel, libiotune):
    profile = profile_kernel(tmp_path, kernel("gcrmio"), GCRM_BIG_CHUNKS, libiotune)
    advice, control = _advice(tmp_path, capsys, profile)
    assert "chunk_cache_bytes" not in _settings(control)


def test_vpic_gets_no_control_file_only_low_suggestions(tmp_path, capsys, kernel, libiotune):
    # the lab notes: nothing beyond noise for VPIC-IO; the paper's rules 1 and 7 are low
    profile = profile_kernel(tmp_path, kernel("vpicio"), ["--particles", "1024"], libiotune)
    advice, control = _advice(tmp_path, capsys, profile)
    assert advice["control_file"] == [] and not control.exists()
    low = {f["code"] for f in advice["findings"] if f["severity"] == "low"}
    assert low == {"SIO-1", "SIO-7"}
    advice, control = _advice(tmp_path, capsys, profile, "--severity", "low")
    assert _settings(control) == {"transfer_mode": "independent", "romio_cb_write": "disable"}


def test_random_small_hdf5_writes(tmp_path, capsys, kernel, libiotune):
    args = ["--api", "hdf5", "--order", "random", "--block", "64K", "--transfer", "4K",
            "--segments", "2"]  # fmt: skip
    profile = profile_kernel(tmp_path, kernel("iorio"), args, libiotune)
    advice, control = _advice(tmp_path, capsys, profile)
    assert _settings(control) == {"transfer_mode": "collective"}  # SmartIO rule 2


def test_text_report_and_html(tmp_path, capsys, kernel, libiotune):
    profile = profile_kernel(tmp_path, kernel("gcrmio"), GCRM, libiotune)
    html = tmp_path / "advice.html"
    status, out, _ = _advise(capsys, profile, "-o", tmp_path / "c.xml", "--html", html)
    assert status == 0
    assert "[HIGH] IOT-1 (hdf5, gcrmio.h5): fill_time=never" in out
    assert "source:   measured here: GCRM-IO 1.9x" in out
    assert f"apply it: iotune run --config {tmp_path / 'c.xml'}" in out
    page = html.read_text()
    assert page.startswith("<!DOCTYPE html>") and "IOT-1" in page and "fill_time" in page


def test_without_trace_says_what_it_cannot_tell(tmp_path, capsys, kernel, libiotune):
    profile = profile_kernel(tmp_path, kernel("vorpalio"), ["--block", "8,8,4"], libiotune,
                             trace=False)  # fmt: skip
    advice, control = _advice(tmp_path, capsys, profile)
    assert advice["findings"] == [] and not control.exists()
    undecided = {u["code"]: u for u in advice["undecided"]}
    assert "access_pattern" in undecided["IOT-3"]["missing"]
    assert any("no trace" in x for x in advice["limits"])


def test_advise_profiles_a_command_first(tmp_path, capsys, kernel, monkeypatch):
    monkeypatch.chdir(tmp_path)
    status, out, err = _advise(capsys, "--profile-out", tmp_path / "p.json", "-o",
                               tmp_path / "c.xml", "--", *launcher(), "2",
                               kernel("vorpalio"), "--block", "8,8,4")  # fmt: skip
    assert status == 0, err
    assert (tmp_path / "p.json.trace" / "host-0.json.gz").exists()
    assert "IOT-3" in out and _settings(tmp_path / "c.xml") == {"cb_buffer_size": "1048576"}


def test_bad_input(tmp_path, capsys):
    assert _advise(capsys)[0] == 2
    status, _, err = _advise(capsys, tmp_path / "none.json")
    assert status == 1 and "no such file" in err
    bad = tmp_path / "bad.json"
    bad.write_text('{"schema": "other"}')
    status, _, err = _advise(capsys, bad)
    assert status == 1 and "not an iotune profile" in err


# ----------------------------------------------------------------------------- Darshan


def _darshan_example(name):
    darshan = pytest.importorskip("darshan")
    path = Path(darshan.__file__).parent / "examples" / "example_logs" / name
    if not path.exists():
        pytest.skip(f"the darshan package does not ship {name}")
    return path


def test_darshan_log_gives_what_it_supports(tmp_path, capsys):
    # IOR through HDF5 on Lustre, 4 ranks, independent: a log shipped in PyDarshan
    log = _darshan_example("ior_hdf5_example.darshan")
    advice, control = _advice(tmp_path, capsys, log, "--severity", "low")
    (g,) = [g for g in advice["groups"] if g["insights"]["interface"]]
    v = g["insights"]
    assert (v["interface"], v["file_mode"], v["fs"], v["layout"], v["transfer_mode"]) == (
        "hdf5", "shared", "lustre", "contiguous", "independent")  # fmt: skip
    assert v["ranks"] == 4 and v["fill_time"] is None and v["access_pattern"] is None
    codes = {f["code"] for f in advice["findings"]}
    assert {"SIO-4a", "SIO-5a", "SIO-10a"} <= codes  # Lustre, transfers < 16 MiB, 4 MiB file
    assert _settings(control)["striping_factor"] == "1"
    assert any("fill time" in x for x in advice["limits"])
    undecided = {u["code"]: u for u in advice["undecided"]}
    assert "Darshan does not record hint values" in " ".join(undecided["SIO-8"]["notes"])
    assert "SIO-1" in undecided or "SIO-2" in undecided  # the pattern is not guessed


def test_darshan_log_text(tmp_path, capsys):
    log = _darshan_example("ior_hdf5_example.darshan")
    status, out, _ = _advise(capsys, log, "-o", "-")
    assert status == 0
    assert "(darshan log)" in out and "what this source cannot tell:" in out


def test_not_a_darshan_log(tmp_path, capsys):
    bad = tmp_path / "bad.darshan"
    bad.write_bytes(b"garbage\0\1")
    status, _, err = _advise(capsys, bad)
    assert status == 1 and "does not start with a Darshan log format version" in err


# ----------------------------------------------------------------------------- several groups


def _group(pattern, **values):
    g = insights.Group(pattern, [pattern.replace("*", "0")])
    g.values.update(BASE)
    g.values.update(values)
    return g


def test_groups_get_their_own_file_patterns():
    chunked = {"layout": "chunked", "fill_time": "ifset", "chunk_bytes_max": 3 << 20,
               "chunk_cache_needed": 3 << 20}  # fmt: skip
    strided = {"transfer_mode": "collective", "access_pattern": "strided"}
    a = advise([_group("chk_*.h5", **chunked), _group("plt_*.h5", **strided)], "test")
    got = {(s.file, s.name, s.value) for s in a.settings}
    assert got == {("chk_*.h5", "fill_time", "never"), ("plt_*.h5", "cb_buffer_size", "1048576")}
    # one group: settings for every file
    a = advise([_group("chk_*.h5", **chunked)], "test")
    assert [(s.file, s.name) for s in a.settings] == [(None, "fill_time")]


def test_conflicting_settings_keep_the_first_and_say_so():
    table = rules.read_table(rules.table_path())
    twin = next(r for r in table if r.code == "IOT-3")
    other = rules.Rule(**{**twin.__dict__, "code": "IOT-99", "settings": (("cb_buffer_size",
                       "2097152"),)})  # fmt: skip
    a = advise([_group("a.h5", transfer_mode="collective", access_pattern="strided")], "test",
               table=(twin, other))  # fmt: skip
    assert [(s.name, s.value) for s in a.settings] == [("cb_buffer_size", "1048576")]
    note = next(f.note for f in a.findings if f.code == "IOT-99")
    assert "conflicts with IOT-3" in note


def test_a_setting_equal_to_the_default_of_the_programs_hdf5_is_left_out():
    """8191 chunk cache slots are a change on HDF5 1.10 and HDF5 2.0's own default: its control
    file leaves them out, the finding says why; unless the program ran with a value of its own
    (then the setting overrides that, whatever the library's default)."""
    table = rules.read_table(rules.table_path())
    twin = next(r for r in table if r.code == "IOT-3")
    slots = rules.Rule(**{**twin.__dict__, "settings": (("chunk_cache_slots", "8191"),)})
    group = {"transfer_mode": "collective", "access_pattern": "strided"}
    old = advise([_group("g.h5", **group)], "test", table=(slots,), hdf5=(1, 10, 8))
    assert [(s.name, s.value) for s in old.settings] == [("chunk_cache_slots", "8191")]
    new = advise([_group("g.h5", **group)], "test", table=(slots,), hdf5=(2, 0, 0))
    assert new.settings == []
    assert "HDF5 2.0.0's own default" in new.findings[0].note
    own = advise([_group("g.h5", **group, chunk_cache_slots=521)], "test", table=(slots,),
                 hdf5=(2, 0, 0))  # fmt: skip
    assert [(s.name, s.value) for s in own.settings] == [("chunk_cache_slots", "8191")]


def test_a_profile_written_elsewhere_still_finds_the_applications_files(
    tmp_path, capsys, kernel, libiotune, monkeypatch
):
    """The profile records the application's directory (cwd): its files' relative names are
    found from there, wherever the profile was written and advise is run (it said "gone" for a
    file that exists, so the fill-time rule could not be decided)."""
    app_dir, elsewhere = tmp_path / "app", tmp_path / "profiles"
    app_dir.mkdir()
    elsewhere.mkdir()
    profile = elsewhere / "p.json"
    run_mpi(2, [kernel("gcrmio"), *GCRM], cwd=app_dir, preload=libiotune,
            env={"IOTUNE_PROFILE": str(profile), "IOTUNE_TRACE": "1"})  # fmt: skip
    assert json.loads(profile.read_text())["cwd"] == str(app_dir)
    monkeypatch.chdir(tmp_path)
    advice, control = _advice(tmp_path, capsys, profile)
    assert "gone" not in json.dumps(advice)
    assert _settings(control) == {"fill_time": "never"}


# ----------------------------------------------------------------------------- layers


def test_a_rule_about_a_layer_the_files_do_not_have_does_not_apply():
    """A serial HDF5 file (sec2 driver) has no MPI-IO layer: SIO-8 (romio_ds_write) was listed
    "not decided" for it, as any MPI-IO rule whose hints were unknown. Now every rule of the
    mpiio (hdf5) layer is left out, neither fired nor undecided, for files without that layer."""
    changed = {"hint_romio_ds_write": "disable", "hint_romio_ds_read": "enable",
               **STRIDED_COLL, **CHUNKED, **LUSTRE}  # fmt: skip
    for unknown in ((), ("hint_romio_ds_write", "hint_romio_ds_read", "fully_written")):
        g = _group("a.h5", **{**changed, **dict.fromkeys(unknown)})
        every = advise([g], "test")
        said = {f.code for f in every.findings} | {u.code for u in every.undecided}
        assert {"SIO-8", "IOT-1"} <= said
        by_code = {r.code: r for r in rules.all_rules()}
        for layers in (("hdf5", "posix"), ("mpiio", "posix"), ("posix",)):
            g.layers = layers
            a = advise([g], "test")
            left = {f.code for f in a.findings} | {u.code for u in a.undecided}
            assert left, layers
            for code in said:
                layer = by_code[code].layer
                kept = layer in ("fs", "app") or layer in layers
                assert (code in left) == kept, (code, layers)
