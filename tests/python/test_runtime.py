"""The preloaded runtime, end to end: real `mpiexec -n 2` runs of ordinary HDF5 and MPI-IO
programs (tests/c), with every setting read back from HDF5 and MPI-IO themselves."""

import csv
import json
import os
import re
import subprocess

import pytest
from conftest import REPO, VECTORS

from iotune import controlfile, outputs

DATA = REPO / "tests" / "data"
REGISTRY = REPO / "src" / "iotune" / "data" / "params.tsv"
# ROMIO's generic UFS driver (ext4, tmpfs) keeps none of these; the runtime must say so.
DROPPED_HERE = {
    "collective_buffering",
    "access_style",
    "romio_visibility_immediate",
    "striping_factor",
    "striping_object_size",
    "start_iodevice",
    "romio_lustre_co_ratio",
    "romio_lustre_ds_in_coll",
    "IBM_largeblock_io",
}


def registry():
    with open(REGISTRY, encoding="utf-8") as f:
        rows = [ln for ln in f if ln.strip() and not ln.startswith("#")]
    return {r["name"]: r for r in csv.DictReader(rows, delimiter="\t")}


def probe(mpirun, prog, tmp_path, name, nprocs=2, args=(), **kw):
    out = tmp_path / name
    proc = mpirun(nprocs, [prog, out, *args], cwd=tmp_path, **kw)
    return json.loads(proc.stdout), proc, out


@pytest.fixture(scope="module")
def baseline(tmp_path_factory, test_prog):
    from conftest import run_mpi

    tmp = tmp_path_factory.mktemp("baseline")
    data, proc, out = probe(run_mpi, test_prog("h5probe"), tmp, "default.h5")
    return data, out


@pytest.fixture(scope="module")
def tuned(tmp_path_factory, test_prog, libiotune):
    from conftest import run_mpi

    tmp = tmp_path_factory.mktemp("tuned")
    return probe(
        run_mpi,
        test_prog("h5probe"),
        tmp,
        "tuned.h5",
        preload=libiotune,
        config=DATA / "probe_all.xml",
        verbose=True,
    )


def test_preloaded_without_config_changes_nothing_and_prints_nothing(
    mpirun, test_prog, libiotune, tmp_path, baseline
):
    data, proc, out = probe(mpirun, test_prog("h5probe"), tmp_path, "plain.h5", preload=libiotune)
    assert proc.stderr == ""
    assert data["create"] == baseline[0]["create"]
    assert data["datasets"] == baseline[0]["datasets"]
    assert data["mismatches"] == 0


def test_every_registry_parameter_takes_effect(tuned, baseline):
    data, proc, out = tuned
    checked = set()

    def check(name, got, want):
        assert got == want, f"{name}: read back {got!r}, wanted {want!r}"
        checked.add(name)

    for phase in ("create", "open"):  # H5Fcreate and H5Fopen both get the file settings
        f = data[phase]
        check("alignment", f["alignment"], [0, 65536])
        check("sieve_buf_size", f["sieve_buf_size"], 262144)
        check("meta_block_size", f["meta_block_size"], 1048576)
        check("small_data_block_size", f["small_data_block_size"], 32768)
        check("mdc_initial_size", f["mdc_initial_size"], 4 << 20)
        check("mdc_min_size", f["mdc_min_size"], 2 << 20)
        check("mdc_max_size", f["mdc_max_size"], 16 << 20)
        check("coll_metadata_read", f["coll_metadata_read"], True)
        check("coll_metadata_write", f["coll_metadata_write"], True)
        hints = f["hints"]
        for key, want in {
            "cb_buffer_size": "1048576",
            "cb_nodes": "2",  # only because cb_config_list lifts the one-per-host cap
            "cb_config_list": "*:*",
            "romio_cb_write": "enable",
            "romio_cb_read": "disable",
            "romio_ds_write": "disable",
            "romio_ds_read": "disable",
            "ind_wr_buffer_size": "1048576",
            "ind_rd_buffer_size": "2097152",
            "romio_no_indep_rw": "false",
            "romio_cb_alltoall": "disable",
            "romio_cb_pfr": "disable",
            "romio_cb_ds_threshold": "65536",
            "striping_unit": "1048576",  # echoed by ROMIO's UFS driver (without effect)
        }.items():
            check(key, hints.get(key), want)
        assert hints["romio_aggregator_list"].split() == ["0", "1"]

    grid, ids, small = (data["datasets"][k] for k in ("/grid", "/ids", "/g/small"))
    check("chunk", (grid["layout"], grid["chunk"]), ("chunked", [16, 50]))
    # chunk_size=4096 bytes of 4-byte ints: 1024 elements, clamped to the 128 rows per dataset
    check("chunk_size", (ids["layout"], ids["chunk"]), ("chunked", [128]))
    for d in (grid, ids, small):
        check("fill_time", d["fill_time"], "never")
    for d in (grid, ids):  # HDF5 reports a chunk cache for chunked datasets only
        check("chunk_cache_bytes", d["chunk_cache"][1], 4 << 20)
        check("chunk_cache_slots", d["chunk_cache"][0], 1009)
        check("chunk_cache_w0", d["chunk_cache"][2], 0.5)
    # the application wrote with its own independent transfer list: forced collective
    check(
        "transfer_mode",
        [d["io_mode"] for d in (grid, ids, small)],
        ["chunk-collective", "chunk-collective", "contiguous-collective"],
    )
    assert baseline[0]["datasets"]["/grid"]["io_mode"] == "independent"
    # alignment: the contiguous dataset starts on a 64 KiB boundary
    assert small["offset"] % 65536 == 0 and baseline[0]["datasets"]["/g/small"]["offset"] % 65536
    # parallel HDF5 always allocates early; alloc_time is read back in the serial test below
    checked.add("alloc_time")

    # the hints ROMIO drops here are reported as dropped, never claimed
    for key in DROPPED_HERE:
        if key in registry():
            assert re.search(rf"{key}=\S+ \((NOT in effect|echoed)", proc.stderr), key
            checked.add(key)
    # Open MPI's MCA parameters go through the environment, not the runtime: read back through
    # MPI_T in test_anympi.py
    # the serial opt-in switch: test_the_serial_opt_in_gives_sec2_files_the_hdf5_settings
    checked.add("serial_files")
    # the HDF5 parameters of issue 27, read back where a library takes them: paged files, page
    # buffer, format bounds, evict on close, cache image and partial chunks on the serial HDF5
    # 2.0 of pip's h5py and on 1.10.8 (test_h5py_wheel.py); the MPI-IO chunk and collective
    # options by their effect on the MPI-IO calls (test_h5_transfer_opts.py)
    checked |= {"file_space_strategy", "file_space_page_size", "page_buffer_size", "libver_low",
                "evict_on_close", "mdc_image", "filter_partial_chunks"}  # fmt: skip
    checked |= {
        "mpio_chunk_opt",
        "mpio_collective_opt",
        "mpio_chunk_opt_num",
        "mpio_chunk_opt_ratio",
    }
    runtime_params = {n for n, r in registry().items() if r["target"] != "mca"}
    assert checked >= runtime_params, f"untested parameters: {runtime_params - checked}"
    assert data["mismatches"] == 0


def test_tuned_data_is_identical_to_default_data(tuned, baseline):
    proc = subprocess.run(
        ["h5diff", str(baseline[1]), str(tuned[2])], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_layout_and_fill_time_seen_by_h5dump(tuned):
    out = subprocess.run(
        ["h5dump", "-p", "-H", str(tuned[2])], capture_output=True, text=True, timeout=60
    ).stdout
    grid = out[out.index('DATASET "grid"') : out.index('DATASET "ids"')]
    assert "CHUNKED ( 16, 50 )" in grid
    assert "FILL_TIME H5D_FILL_TIME_NEVER" in grid


def test_verbose_report_names_each_setting_once_per_file(tuned):
    err = tuned[1].stderr
    lines = err.splitlines()
    creates = [i for i, ln in enumerate(lines) if ln.startswith("iotune: H5Fcreate")]
    assert len(creates) == 1, err  # rank 0 only
    assert lines[creates[0] + 1] == "iotune:   alignment=0,65536 [probe_all.xml:5]"
    opens = [ln for ln in lines if ln.startswith("iotune: MPI_File_open")]
    assert len(opens) == 2  # create and reopen
    assert re.match(r"iotune: MPI_File_open \S+tuned.h5 on \w+: mpi-io hints:", opens[0])
    assert err.count("iotune:   cb_nodes=2 (in effect) [probe_all.xml:25]") == 2
    assert "parallel HDF5 allocates space early" in err


def test_other_drivers_pass_through_without_any_setting(mpirun, test_prog, libiotune, tmp_path):
    """The issue: settings go to files opened with the MPI-IO driver; every other driver (here
    sec2, as serial programs and h5repack use) is passed through untouched."""
    serial = ["--sec2"]
    plain, _, plain_out = probe(mpirun, test_prog("h5probe"), tmp_path, "p.h5", 1, serial)
    data, proc, out = probe(
        mpirun,
        test_prog("h5probe"),
        tmp_path,
        "serial.h5",
        nprocs=1,
        args=serial,
        preload=libiotune,
        config=DATA / "probe_all.xml",
        verbose=True,
    )
    assert data["mismatches"] == 0
    for phase in ("create", "open", "datasets", "reopened"):  # file, dataset, transfer
        assert data[phase] == plain[phase], phase
    assert data["create"]["alignment"] != [0, 65536]
    assert data["datasets"]["/grid"]["layout"] == "contiguous"
    lines = [ln for ln in proc.stderr.splitlines() if "(sec2 driver): no settings" in ln]
    assert len(lines) == 2, proc.stderr  # one line per open (create, reopen)
    assert "no settings applied to this file, its datasets or transfers" in lines[0]
    assert "hdf5 dataset creation" not in proc.stderr
    diff = subprocess.run(["h5diff", str(plain_out), str(out)], capture_output=True, timeout=60)
    assert diff.returncode == 0
    # nothing about the file's layout changed either (object times differ between runs, so
    # compare the properties h5dump reports and the file size, not the bytes)
    assert _layout(out) == _layout(plain_out)
    assert out.stat().st_size == plain_out.stat().st_size


def test_the_serial_opt_in_gives_sec2_files_the_hdf5_settings(mpirun, test_prog, libiotune,
                                                              tmp_path):  # fmt: skip
    """serial_files=true: the same serial program gets the HDF5 settings that mean something
    for a sec2 file; those of parallel HDF5 are named once and left out; the data is the same."""
    serial = ["--sec2"]
    plain, _, plain_out = probe(mpirun, test_prog("h5probe"), tmp_path, "p.h5", 1, serial)
    config = tmp_path / "serial.xml"
    config.write_text(
        (DATA / "probe_all.xml")
        .read_text()
        .replace(
            "<High_Level_IO_Library>", "<High_Level_IO_Library><serial_files>true</serial_files>"
        )
    )
    data, proc, out = probe(mpirun, test_prog("h5probe"), tmp_path, "serial.h5", nprocs=1,
                            args=serial, preload=libiotune, config=config)  # fmt: skip
    assert data["mismatches"] == 0
    assert data["create"]["alignment"] == [0, 65536] != plain["create"]["alignment"]
    grid = data["datasets"]["/grid"]
    assert (grid["layout"], grid["chunk"]) == ("chunked", [16, 50])
    assert grid["chunk_cache"] == [1009, 4 << 20, 0.5]
    # serial HDF5 allocates chunks as they are written: fill_time=never is left out (an
    # unwritten chunk would read back as the reader's buffer held it: test_fill_guard.py)
    assert grid["fill_time"] == plain["datasets"]["/grid"]["fill_time"] != "never"
    assert plain["datasets"]["/grid"]["layout"] == "contiguous"
    said = [ln for ln in proc.stderr.splitlines() if "have no meaning here" in ln]
    assert len(said) == 1 and "coll_metadata_read, coll_metadata_write, transfer_mode" in said[0]
    assert "cb_buffer_size" in said[0]  # MPI-IO hints too
    diff = subprocess.run(["h5diff", str(plain_out), str(out)], capture_output=True, timeout=60)
    assert diff.returncode == 0


def _layout(path):
    dump = subprocess.run(
        ["h5dump", "-p", "-H", str(path)], capture_output=True, text=True, timeout=60, check=True
    ).stdout
    return dump.replace(str(path), "FILE")


def test_plain_mpiio_program_gets_hints_merged_with_its_own(mpirun, test_prog, libiotune, tmp_path):
    cfg = tmp_path / "hints.xml"
    cfg.write_text(
        "<Parameters><Middleware_Layer>\n"
        "<cb_buffer_size>4MiB</cb_buffer_size>\n"
        '<romio_cb_read FileName="other.dat">disable</romio_cb_read>\n'
        '<cb_nodes FileName="*.dat">2</cb_nodes><cb_config_list>*:*</cb_config_list>\n'
        "</Middleware_Layer></Parameters>\n"
    )
    proc = mpirun(
        2,
        [test_prog("mpiio_probe"), tmp_path / "out.dat"],
        preload=libiotune,
        config=cfg,
        verbose=True,
    )
    hints = json.loads(proc.stdout)["hints"]
    assert hints["cb_buffer_size"] == str(4 << 20)  # the control file wins over the app
    assert hints["romio_ds_write"] == "enable"  # the app's own hint is kept
    assert hints["cb_nodes"] == "2"
    assert hints["romio_cb_read"] == "automatic"  # FileName did not match
    assert "cb_buffer_size=4194304 overrides the application's 2097152" in proc.stderr


def bad_vectors():
    cases = []
    for xml in sorted(VECTORS.glob("*.xml")):
        if not xml.with_suffix(".json").exists():
            continue  # reported by test_c_parser_reads_every_vector...
        expected = json.loads(xml.with_suffix(".json").read_text())
        if expected["errors"]:
            cases.append(xml)
    return cases


def test_at_least_twenty_kinds_of_bad_control_file():
    assert len(bad_vectors()) >= 20


@pytest.mark.parametrize("vector", bad_vectors(), ids=lambda p: p.stem)
def test_bad_control_file_is_reported_and_the_application_runs_on(
    vector, mpirun, test_prog, libiotune, tmp_path, baseline
):
    expected = json.loads(vector.with_suffix(".json").read_text())
    data, proc, out = probe(
        mpirun, test_prog("h5probe"), tmp_path, "bad.h5", preload=libiotune, config=vector
    )
    assert data["mismatches"] == 0
    lines = proc.stderr.splitlines()
    # one message per problem (the first PROBLEMS_SHOWN, then one line counts the rest), from
    # rank 0 only, naming the file, the line and the element
    # the errors and the settings that replace an earlier one, in the document's order
    said = expected["errors"] + expected.get("overrides", [])
    errors = sorted(said, key=lambda e: e["line"] or 0)
    shown = controlfile.PROBLEMS_SHOWN
    if len(errors) > shown:
        more = f"{len(errors) - shown} more problems not shown ({len(errors)} in all)"
        assert (
            lines.pop() == f"iotune: {vector}: {more}; `iotune check --all {vector}` lists them all"
        )
    assert len(lines) == min(len(errors), shown), proc.stderr
    for line, err in zip(lines, errors[:shown], strict=True):
        assert line.startswith(f"iotune: {vector}"), line
        if err["line"] is not None:
            assert f"{vector}:{err['line']}:" in line
        if err["element"]:
            assert f"<{err['element']}>" in line
        if err["value"] and "already set" not in line:  # an override names the line instead
            assert outputs.printable(err["value"])[:20] in line
        assert line.endswith("ignored" if not expected["fatal"] else "are applied")
    diff = subprocess.run(["h5diff", str(baseline[1]), str(out)], capture_output=True, timeout=60)
    assert diff.returncode == 0


def unusable_config(kind, d):
    path = d / f"{kind}.xml"
    if kind == "directory":
        return d
    if kind == "empty":
        path.write_text("")
    elif kind == "binary":
        path.write_bytes(b"<Parameters>\0\1\2")
    elif kind == "binary-without-nul":
        path.write_bytes(bytes(range(1, 256)) * 4)
    elif kind == "fifo":
        os.mkfifo(path)  # no writer: a blocking open would hang the job
    elif kind == "too-large":
        path.write_text("<Parameters>" + " " * (2 << 20) + "</Parameters>")
    return path  # "missing": never written


@pytest.mark.parametrize(
    "kind", ["missing", "directory", "empty", "binary", "binary-without-nul", "too-large", "fifo"]
)
def test_unusable_control_file(kind, mpirun, test_prog, libiotune, tmp_path):
    cfgdir = tmp_path / "cfg"
    cfgdir.mkdir()
    cfg = unusable_config(kind, cfgdir)
    data, proc, out = probe(
        mpirun, test_prog("h5probe"), tmp_path, "u.h5", preload=libiotune, config=cfg, timeout=60
    )
    assert data["mismatches"] == 0
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"iotune: {cfg}"), proc.stderr
    assert "no settings from this file are applied" in lines[0]
    if kind == "binary-without-nul":
        assert lines[0].startswith(f"iotune: {cfg}:1: not an XML control file"), lines[0]
    if kind == "fifo":
        assert "not a regular file" in lines[0]


def test_valid_settings_beside_bad_ones_still_apply(mpirun, test_prog, libiotune, tmp_path):
    cfg = tmp_path / "mixed.xml"
    cfg.write_text(
        "<Parameters>\n<High_Level_IO_Library>\n"
        "<sieve_buf_size>-5</sieve_buf_size>\n"
        "<alignment>0,4096</alignment>\n"
        "<no_such_thing>1</no_such_thing>\n"
        "</High_Level_IO_Library>\n<Middleware_Layer>\n"
        "<cb_nodes>many</cb_nodes>\n<cb_buffer_size>2MiB</cb_buffer_size>\n"
        "</Middleware_Layer>\n</Parameters>\n"
    )
    data, proc, out = probe(
        mpirun, test_prog("h5probe"), tmp_path, "m.h5", preload=libiotune, config=cfg
    )
    assert data["create"]["alignment"] == [0, 4096]
    assert data["create"]["hints"]["cb_buffer_size"] == str(2 << 20)
    assert data["create"]["sieve_buf_size"] == 65536  # the default
    assert [ln.split(":")[2] for ln in proc.stderr.splitlines()] == ["3", "5", "8"]


def test_c_parser_reads_every_vector_like_the_expected_json(build_dir):
    vectors = sorted(VECTORS.glob("*.xml"))
    assert len(vectors) >= 30
    for xml in vectors:
        expected = json.loads(xml.with_suffix(".json").read_text())
        got = json.loads(
            subprocess.run(
                [build_dir / "runtime" / "iotune-parse", xml],
                capture_output=True,
                text=True,
                timeout=30,
            ).stdout
        )
        assert got["settings"] == expected["settings"], xml.name
        assert got["fatal"] == expected["fatal"], xml.name
        assert len(got["errors"]) == len(expected["errors"]), xml.name
        for g, e in zip(got["errors"], expected["errors"], strict=True):
            if e["line"] is not None:
                assert g["line"] == e["line"], xml.name
            assert g["element"] == e["element"], xml.name
            assert g["value"] == e["value"], xml.name


def test_every_hint_reaches_mpi_io_beyond_sixty_four(mpirun, test_prog, libiotune, tmp_path):
    """Hints used to be cut at 64 per open without a word; and merging is no longer quadratic:
    a control file at the settings cap (1024 hints, one key repeated) opens quickly."""
    unknown = "".join(f'<hint key="vendor_{i}" value="{i}"/>\n' for i in range(100))
    repeated = "".join("<cb_nodes>2</cb_nodes>\n" for _ in range(900))
    cfg = tmp_path / "many.xml"
    cfg.write_text(
        f"<Parameters><Middleware_Layer>\n{unknown}{repeated}"
        "<cb_buffer_size>4MiB</cb_buffer_size><cb_config_list>*:*</cb_config_list>\n"
        "</Middleware_Layer></Parameters>\n"
    )
    proc = mpirun(
        2,
        [test_prog("mpiio_probe"), tmp_path / "out.dat"],
        preload=libiotune,
        config=cfg,
        timeout=60,
    )
    hints = json.loads(proc.stdout)["hints"]
    assert hints["cb_buffer_size"] == str(4 << 20)  # the 101st distinct key
    assert hints["cb_nodes"] == "2"
    # each repeated cb_nodes replaces the first: said for the first few, then counted
    *said, more = proc.stderr.splitlines()
    assert len(said) == controlfile.PROBLEMS_SHOWN, proc.stderr
    assert all("cb_nodes was already set for the same files at line " in s for s in said), said
    assert "899 more problems not shown" in more or "889 more problems not shown" in more, more


def test_open_mpi_parameters_are_named_so_without_iotune_run(
    mpirun, test_prog, libiotune, tmp_path
):
    """Preloaded by hand (no `iotune run`, which sets them as OMPI_MCA_* before MPI starts),
    the runtime said every Open MPI parameter of a control file was unknown. It says what
    each is, from the one registry (params.tsv, target mca: the generated header's
    iot_params_mca), and applies the rest."""
    from iotune import params

    mca = [p.name for p in params.all_params() if p.is_mca]
    cfg = tmp_path / "ompio.xml"

    def valid(p):  # the first choice, or the smallest positive number the registry allows
        return p.choices[0] if p.choices else str(int(max(p.min or 1, 1)))

    body = "".join(f"<{n}>{valid(params.get(n))}</{n}>\n" for n in mca)
    cfg.write_text(
        f"<Parameters><Middleware_Layer>\n{body}<cb_buffer_size>4M</cb_buffer_size>\n"
        "</Middleware_Layer></Parameters>\n"
    )
    assert controlfile.parse_file(cfg).ok  # valid: `iotune run` applies them
    proc = mpirun(
        2, [test_prog("mpiio_probe"), tmp_path / "out.dat"], preload=libiotune, config=cfg
    )
    assert json.loads(proc.stdout)["hints"]["cb_buffer_size"] == str(4 << 20)
    lines = proc.stderr.splitlines()
    assert "unknown parameter" not in proc.stderr
    assert len(lines) == len(mca), proc.stderr
    for line, (i, name) in zip(lines, enumerate(mca, 2), strict=True):
        assert line.startswith(f"iotune: {cfg}:{i}: <{name}>: an Open MPI parameter, applied "
                               f"only by `iotune run` (or by OMPI_MCA_{name} in the "
                               "environment before MPI starts)"), line  # fmt: skip


EDGE_CONFIG = """<?xml version="1.0"?>
<Parameters>
  <High_Level_IO_Library>
    <chunk VariableName="virt">8</chunk>
    <chunk_size VariableName="ext">64K</chunk_size>
    <transfer_mode>independent</transfer_mode>
    <fill_time>never</fill_time>
    <chunk VariableName="g1/g2/deep">8</chunk>
  </High_Level_IO_Library>
</Parameters>
"""


@pytest.fixture(scope="module")
def edge(tmp_path_factory, test_prog, libiotune):
    """h5edge (tests/c/h5edge.c) without and with a control file that touches every case."""
    from conftest import run_mpi

    tmp = tmp_path_factory.mktemp("edge")
    cfg = tmp / "edge.xml"
    cfg.write_text(EDGE_CONFIG)
    plain, _, plain_out = probe(run_mpi, test_prog("h5edge"), tmp, "plain.h5")
    tuned, proc, tuned_out = probe(
        run_mpi, test_prog("h5edge"), tmp, "tuned.h5", preload=libiotune, config=cfg, verbose=True
    )
    diff = subprocess.run(
        ["h5diff", str(plain_out), str(tuned_out)], capture_output=True, text=True, timeout=60
    )
    return plain["datasets"], tuned, proc.stderr, diff


def test_edge_cases_keep_the_data_identical(edge):
    plain, tuned, err, diff = edge
    assert tuned["mismatches"] == 0, err
    assert diff.returncode == 0, diff.stdout + diff.stderr  # /virt included: h5diff reads it


def test_a_virtual_dataset_is_never_chunked(edge):
    plain, tuned, err, diff = edge
    assert tuned["datasets"]["/virt"]["layout"] == "virtual"
    assert "chunk NOT applied: the application asked for virtual storage" in err


def test_independent_is_not_forced_on_a_filtered_dataset(edge):
    plain, tuned, err, diff = edge
    assert tuned["datasets"]["/z"]["write_rc"] == 0
    assert err.count("transfer_mode=independent NOT applied to filtered datasets") == 1, err
    # the unfiltered datasets are still written independently
    assert "/src: hdf5 transfer: transfer_mode=independent" in err


def test_chunk_size_of_an_extendible_dataset_reaches_the_target(edge):
    plain, tuned, err, diff = edge
    assert plain["/ext"]["chunk"] == 16
    # created with 0 elements and no limit: 64 KiB of 4-byte ints, not 1 element
    assert tuned["datasets"]["/ext"]["chunk"] == 16384


def test_fill_time_never_keeps_the_applications_fill_value(edge):
    plain, tuned, err, diff = edge
    # h5edge checks that the unwritten half of /fv reads -7 (mismatches above)
    assert "fill_time=never NOT applied: the application defined a fill value" in err
    assert "fill_time=never [edge.xml:7]" in err  # still applied where there is none


def test_relative_variable_name_matches_a_path_suffix(edge):
    plain, tuned, err, diff = edge
    assert plain["/g1/g2/deep"]["layout"] == "contiguous"
    assert (
        tuned["datasets"]["/g1/g2/deep"]["layout"],
        tuned["datasets"]["/g1/g2/deep"]["chunk"],
    ) == (
        "chunked",
        8,
    )


def test_a_profile_problem_is_said_once_under_a_preloaded_time(test_prog, libiotune, tmp_path):
    """`LD_PRELOAD=libiotune.so /usr/bin/time ./app`: the runtime is in both processes, which
    each said that the profile cannot be written. Said once per run now."""
    if not os.path.exists("/usr/bin/time"):
        pytest.skip("no /usr/bin/time")
    prof = tmp_path / "missing" / "p.json"
    env = {**os.environ, "LD_PRELOAD": str(libiotune), "IOTUNE_PROFILE": str(prof)}
    env.pop("IOTUNE_SESSION", None)
    cmd = ["/usr/bin/time", "-f", "%e s", test_prog("posix_probe"), tmp_path / "o.dat", "4", "4096"]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=60)
    said = [ln for ln in proc.stderr.splitlines() if ln.startswith("iotune:")]
    assert said == [f"iotune: IOTUNE_PROFILE={prof}: cannot write the profile: No such file or "
                    "directory"], proc.stderr  # fmt: skip
