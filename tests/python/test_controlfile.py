"""The registry, values, and the control file: shared vectors, edge cases, matching, writing."""

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from iotune import controlfile, params
from iotune.controlfile import Setting

VECTORS = Path(__file__).resolve().parents[2] / "tests" / "vectors"
CASES = sorted(p.stem for p in VECTORS.glob("*.xml"))


def same_reading(got, expected):
    """Equal as JSON: the same settings, and the same errors on the same lines."""
    assert got["fatal"] == expected["fatal"]
    assert got["settings"] == expected["settings"]
    assert got["errors"] == expected["errors"]
    assert got.get("overrides", []) == expected.get("overrides", [])


# ----------------------------------------------------------------------------- vectors


@pytest.mark.parametrize("case", CASES)
def test_vector(case):
    expected = json.loads((VECTORS / f"{case}.json").read_text(encoding="utf-8"))
    result = controlfile.parse_file(VECTORS / f"{case}.xml")
    same_reading(result.to_json(), expected)
    # the same through the JSON text (what `iotune check --json` prints)
    same_reading(json.loads(json.dumps(result.to_json())), expected)
    assert bool(expected["errors"]) == case.startswith("bad_")
    if expected["fatal"]:
        assert expected["settings"] == [] and len(expected["errors"]) == 1


@pytest.mark.parametrize("case", CASES)
def test_runtime_reads_the_vector_in_the_same_words(case, build_dir):
    """The C parser (both sides use expat): the same JSON, and each message word for word
    (iotune-parse prints them as Problem.format does)."""
    xml = str(VECTORS / f"{case}.xml")
    proc = subprocess.run(
        [build_dir / "runtime" / "iotune-parse", xml], capture_output=True, text=True, timeout=30
    )
    expected = json.loads((VECTORS / f"{case}.json").read_text(encoding="utf-8"))
    same_reading(json.loads(proc.stdout), expected)
    assert proc.stderr == "".join(f"{m}\n" for m in controlfile.parse_file(xml).messages())


@pytest.mark.parametrize("kind", ["missing", "directory", "fifo", "too-large", "empty", "binary"])
def test_runtime_refuses_an_unusable_file_in_the_same_words(kind, build_dir, tmp_path):
    path = tmp_path / "c.xml"
    if kind == "directory":
        path.mkdir()
    elif kind == "fifo":
        os.mkfifo(path)  # no writer: neither side may block on it
    elif kind == "too-large":
        path.write_text("<Parameters>" + " " * controlfile.MAX_BYTES + "</Parameters>")
    elif kind != "missing":
        path.write_bytes(b"" if kind == "empty" else b"<Parameters>\0\1\2")
    proc = subprocess.run(
        [build_dir / "runtime" / "iotune-parse", path], capture_output=True, text=True, timeout=30
    )
    result = controlfile.parse_file(path)
    assert result.fatal and json.loads(proc.stdout)["fatal"]
    assert proc.stderr == "".join(f"{m}\n" for m in result.messages())


@pytest.mark.skipif(not os.path.isfile("/proc/cpuinfo"), reason="no /proc/cpuinfo")
def test_a_file_whose_size_says_nothing_is_read_to_its_end(build_dir):
    """/proc/cpuinfo's st_size is 0 and it has text: the runtime read it as an empty file (an
    outside tester); now to its end, bounded as any file, and in Python's words."""
    path = "/proc/cpuinfo"
    proc = subprocess.run(
        [build_dir / "runtime" / "iotune-parse", path], capture_output=True, text=True, timeout=30
    )
    result = controlfile.parse_file(path)
    assert "does not start with a tag" in proc.stderr
    assert proc.stderr == "".join(f"{m}\n" for m in result.messages())


def test_an_open_mpi_parameter_is_named_so_on_both_sides(build_dir, tmp_path):
    """As a <hint> an Open MPI parameter is refused in words that say what it is (it was "an
    HDF5 setting"), on both sides; as an element it is a valid setting for `iotune run`, and
    the runtime's parser says it applies only through `iotune run` (it said "unknown")."""
    cfg = tmp_path / "c.xml"
    cfg.write_text(
        '<Parameters><Middleware_Layer>\n<hint key="fcoll" value="two_phase"/>\n'
        "<io_ompio_bytes_per_agg>1M</io_ompio_bytes_per_agg>\n</Middleware_Layer></Parameters>\n"
    )
    result = controlfile.parse_file(cfg)
    hint = f"{cfg}:2: <hint>: fcoll is an Open MPI parameter, not an MPI-IO hint: use <fcoll>"
    assert result.messages() == [hint]
    assert [s.name for s in result.settings] == ["io_ompio_bytes_per_agg"]
    proc = subprocess.run(
        [build_dir / "runtime" / "iotune-parse", cfg], capture_output=True, text=True, timeout=30
    )
    element = (
        f"{cfg}:3: <io_ompio_bytes_per_agg>: an Open MPI parameter, applied only by `iotune "
        "run` (or by OMPI_MCA_io_ompio_bytes_per_agg in the environment before MPI starts), not "
        "by the preloaded runtime"
    )
    assert proc.stderr.splitlines() == [hint, element]


def test_a_huge_element_name_is_shown_cut_with_its_length(build_dir, tmp_path):
    """An element name of 500,000 characters was printed whole by `iotune check` (and by the
    runtime): it is shown by its first 40 characters, "..." and its length, on both sides."""
    name = "x" * 499_999 + "\u00e9"
    cfg = tmp_path / "c.xml"
    cfg.write_text(f"<Parameters><Middleware_Layer>\n<{name}>1</{name}>\n"
                   "</Middleware_Layer></Parameters>\n", encoding="utf-8")  # fmt: skip
    shown = f"<{'x' * 40}... (500000 characters)>"
    want = f"{cfg}:2: {shown}: unknown parameter (see `iotune check --list`)"
    assert controlfile.parse_file(cfg).messages() == [want]
    proc = subprocess.run(
        [build_dir / "runtime" / "iotune-parse", cfg], capture_output=True, text=True, timeout=30
    )
    assert proc.stderr == want + "\n"
    check = subprocess.run(
        [sys.executable, "-m", "iotune", "check", cfg], capture_output=True, text=True, timeout=60
    )
    assert want in check.stderr.splitlines() and len(check.stderr) < 1000, check.stderr[:300]


def test_vectors_cover_the_registry():
    good = [c for c in CASES if c.startswith("good_")]
    bad = [c for c in CASES if c.startswith("bad_")]
    assert len(good) >= 12 and len(bad) >= 24
    assert all((VECTORS / f"{c}.json").is_file() for c in CASES)
    assert {p.stem for p in VECTORS.glob("*.json")} == set(CASES) | {"match"}
    seen = set()
    for case in good:
        doc = json.loads((VECTORS / f"{case}.json").read_text(encoding="utf-8"))
        seen |= {s["name"] for s in doc["settings"]}
    # Open MPI's MCA parameters are not read by the runtime (iotune sets them in the
    # environment): the shared vectors do not hold them (test_anympi.py does)
    missing = {p.name for p in params.all_params() if not p.is_mca} - seen
    assert not missing, f"parameters without a good vector: {missing}"
    assert {p.type for p in params.all_params()} == set(params.TYPES)


def test_vectors_are_normalised():
    """Each expected value is already normal: normalising it again changes nothing."""
    for case in CASES:
        doc = json.loads((VECTORS / f"{case}.json").read_text(encoding="utf-8"))
        for s in doc["settings"]:
            assert params.normalise(s["name"], s["value"]) == s["value"]
            p = params.find(s["name"])
            assert s["layer"] == (p.layer if p else "mpiio")


# ----------------------------------------------------------------------------- registry


def test_registry_loads():
    ps = params.all_params()
    tsv = params.registry_path().read_text(encoding="utf-8").splitlines()
    rows = [ln for ln in tsv if ln.strip() and not ln.startswith("#")][1:]
    assert len(ps) == len(rows)
    cb = params.get("cb_nodes")
    assert (cb.layer, cb.scope, cb.type, cb.min, cb.max, cb.target) == (
        "mpiio",
        "file",
        "int",
        1,
        1048576,
        "hint",
    )
    assert params.get("romio_cb_pfr").choices == ("disable",)
    assert params.get("chunk_cache_w0").max == 1
    assert params.get("cb_config_list").min is None
    with pytest.raises(dataclasses.FrozenInstanceError):
        cb.name = "x"
    with pytest.raises(KeyError, match="unknown parameter"):
        params.get("cb_nodez")
    assert params.find("cb_nodez") is None
    assert [p.name for p in params.by_layer("fs")][0] == "striping_factor"


def test_registry_rejects_bad_tables(tmp_path):
    header = "name\tlayer\tscope\ttype\tmin\tmax\tchoices\ttarget\tio\tonline\tsummary\n"
    bad = tmp_path / "p.tsv"
    bad.write_text(header + "x\tdisk\tfile\tint\t-\t-\t-\thint\trw\tyes\ts\n")
    with pytest.raises(ValueError, match="layer disk"):
        params.read_registry(bad)
    bad.write_text(header + "x\tfs\tfile\tenum\t-\t-\t-\thint\trw\tyes\ts\n")
    with pytest.raises(ValueError, match="enum without choices"):
        params.read_registry(bad)
    bad.write_text(header + "x\tfs\tfile\tint\t-\t-\t-\thint\tsometimes\tyes\ts\n")
    with pytest.raises(ValueError, match="io sometimes"):
        params.read_registry(bad)
    bad.write_text(header + "x\tfs\tfile\tint\t-\t-\thint\trw\tyes\ts\n")
    with pytest.raises(ValueError, match="columns"):
        params.read_registry(bad)
    for online in ("no", "no:", "maybe"):  # offline advice only needs its reason
        bad.write_text(header + f"x\tfs\tfile\tint\t-\t-\t-\thint\trw\t{online}\ts\n")
        with pytest.raises(ValueError, match="online"):
            params.read_registry(bad)
    bad.write_text(header + "x\tfs\tfile\tint\t-\t-\t-\thint\trw\tno: it may hang\ts\n")
    (x,) = params.read_registry(bad)
    assert not x.online and x.offline_why == "it may hang"
    bad.write_text(header + "x\tfs\tfile\tint\t-\t-\t-\thint\trw\tguarded: IOT-1\ts\n")
    (x,) = params.read_registry(bad)
    assert x.online and x.guard == "IOT-1" and not x.offline_why
    for online in ("guarded:", "guarded: IOT-1 IOT-2", "guarded IOT-1"):  # one rule code
        bad.write_text(header + f"x\tfs\tfile\tint\t-\t-\t-\thint\trw\t{online}\ts\n")
        with pytest.raises(ValueError, match="online"):
            params.read_registry(bad)


# ----------------------------------------------------------------------------- values

GOOD_VALUES = [
    ("sieve_buf_size", "65536", "65536"),
    ("sieve_buf_size", " 64K ", "65536"),
    ("sieve_buf_size", "64kIb", "65536"),
    ("sieve_buf_size", "4mb", "4194304"),
    ("sieve_buf_size", "4GiB", "4294967296"),
    ("chunk_cache_bytes", "0T", "0"),
    ("chunk_cache_bytes", "64g", "68719476736"),
    ("cb_nodes", "+12", "12"),
    ("cb_nodes", "0012", "12"),
    ("start_iodevice", "-1", "-1"),
    ("start_iodevice", "-0", "0"),
    ("coll_metadata_read", "YES", "true"),
    ("coll_metadata_read", "off", "false"),
    ("coll_metadata_read", "1", "true"),
    ("fill_time", "NeVeR", "never"),
    ("romio_cb_write", "Automatic", "automatic"),
    ("alignment", "1M , 4k", "1048576,4096"),
    ("alignment", "0,1", "0,1"),
    ("chunk", "1", "1"),
    ("chunk", " 4 ,\n 8 ,16", "4,8,16"),
    ("chunk", ",".join(["3"] * 32), ",".join(["3"] * 32)),
    ("chunk_cache_w0", "0.75", "0.75"),
    ("chunk_cache_w0", ".5", "0.5"),
    ("chunk_cache_w0", "1.", "1"),
    ("chunk_cache_w0", "2e-1", "0.2"),
    ("chunk_cache_w0", "0.1234567", "0.123457"),
    ("chunk_cache_w0", "7E-8", "7e-08"),
    ("cb_config_list", "*:1", "*:1"),
    ("access_style", "  read_once , sequential ", "read_once , sequential"),
    ("access_style", "x" * 255, "x" * 255),
]


@pytest.mark.parametrize("name, text, normal", GOOD_VALUES)
def test_good_values(name, text, normal):
    assert params.get(name).normalise(text) == normal
    assert params.normalise(name, normal) == normal


BAD_VALUES = [
    ("cb_nodes", "-3", '"-3" is below the minimum 1'),
    ("cb_nodes", "0", '"0" is below the minimum 1'),
    ("cb_nodes", "1048577", '"1048577" is above the maximum 1048576'),
    ("cb_nodes", "4.5", "not a whole number"),
    ("cb_nodes", "4K", "not a whole number"),
    ("cb_nodes", "", "empty value"),
    ("cb_nodes", "   ", "empty value"),
    ("cb_buffer_size", "-4096", "not a size"),
    ("cb_buffer_size", "4 K", "not a size"),
    ("cb_buffer_size", "4B", "not a size"),
    ("cb_buffer_size", "4KiBB", "not a size"),
    ("cb_buffer_size", "4P", "not a size"),
    ("cb_buffer_size", "٣", "not a size"),  # a non-ASCII digit
    ("cb_buffer_size", "2G", "above the maximum 2147483647"),
    ("striping_unit", "32K", "below the minimum 65536"),
    ("coll_metadata_read", "maybe", "not true or false"),
    ("coll_metadata_read", "t", "not true or false"),
    ("fill_time", "sometimes", "not one of ifset, alloc, never"),
    ("alignment", "4096", "not two sizes"),
    ("alignment", "1,2,3", "not two sizes"),
    ("alignment", "4096,", "not two sizes"),
    ("alignment", "4096,0", "boundary must be at least 1"),
    ("alignment", "8G,1", "above the maximum 4294967296"),
    ("chunk", "4,0", "below the minimum 1"),
    ("chunk", "0" * 5000 + "1,0", "below the minimum 1"),
    ("chunk", "4,,4", "not whole numbers"),
    ("chunk", "4K", "not whole numbers"),
    ("chunk", "-4", "not whole numbers"),
    ("chunk", ",".join(["3"] * 33), "at most 32"),
    ("chunk", "4294967296", "above the maximum 4294967295"),
    ("chunk_cache_w0", "nan", "not a number"),
    ("chunk_cache_w0", "inf", "not a number"),
    ("chunk_cache_w0", "1e400", "out of the range of a double"),
    ("chunk_cache_w0", "1e-400", "out of the range of a double"),
    ("chunk_cache_w0", "1_0", "not a number"),
    ("chunk_cache_w0", "0x1p-1", "not a number"),
    ("chunk_cache_w0", "1.01", "above the maximum 1"),
    ("chunk_cache_w0", "-0.5", "below the minimum 0"),
    ("cb_config_list", "a\nb", "line break"),
    ("cb_config_list", "a\rb", "line break"),
    ("access_style", "x" * 256, "longer than 255"),
    # more digits than Python converts (4300): the number is still compared with the bounds
    ("sieve_buf_size", "9" * 5000, "above the maximum 4294967296"),
    ("sieve_buf_size", "9" * 5000 + "K", "above the maximum 4294967296"),
    ("chunk", "4," + "9" * 5000, "above the maximum 4294967295"),
    ("alignment", "1," + "9" * 5000, "above the maximum 4294967296"),
    ("chunk_cache_slots", "-" + "9" * 5000, "below the minimum 1"),
    ("chunk_cache_slots", "9" * 5000, "above the maximum"),
]


@pytest.mark.parametrize("name, text, message", BAD_VALUES)
def test_bad_values(name, text, message):
    with pytest.raises(params.ValueProblem, match=message.replace("(", r"\(")) as e:
        params.get(name).normalise(text)
    assert isinstance(e.value, ValueError)


def test_unknown_names_are_string_hints():
    assert params.normalise("romio_vendor", "  On ") == "On"
    with pytest.raises(params.ValueProblem, match="empty"):
        params.normalise("romio_vendor", " ")


def test_python_values():
    assert params.get("cb_nodes").to_python("+4") == 4
    assert params.get("striping_unit").to_python("1M") == 1 << 20
    assert params.get("romio_no_indep_rw").to_python("yes") is True
    assert params.get("chunk_cache_w0").to_python("0.5") == 0.5
    assert params.get("alignment").to_python("1K,4K") == (1024, 4096)
    assert params.get("chunk").to_python("4,4,1") == (4, 4, 1)
    assert params.get("fill_time").to_python("NEVER") == "never"
    fmt = params.format_value
    assert fmt(params.get("romio_no_indep_rw"), False) == "false"
    assert fmt(params.get("cb_nodes"), 8) == "8"
    assert fmt(params.get("chunk_cache_w0"), 1 / 3) == "0.333333"
    assert fmt(params.get("alignment"), (0, 4096)) == "0,4096"
    assert fmt(params.get("chunk"), [64, 64]) == "64,64"
    assert fmt(params.get("striping_unit"), "4MiB") == "4194304"
    with pytest.raises(params.ValueProblem):
        fmt(params.get("cb_nodes"), True)
    with pytest.raises(params.ValueProblem):
        fmt(params.get("cb_nodes"), 2.5)


def test_describe_range():
    assert params.get("mdc_min_size").describe_range() == "1 KiB..128 MiB"
    assert params.get("start_iodevice").describe_range() == "-1..65535"
    assert params.get("chunk").describe_range() == "each 1..4294967295"
    assert params.get("romio_cb_pfr").describe_range() == "disable"
    assert params.get("cb_config_list").describe_range() == ""
    assert params.format_size(3 << 40) == "3 TiB"
    assert params.format_size(1000) == "1000"


# ----------------------------------------------------------------------------- reading


def doc(body: str) -> str:
    return f'<?xml version="1.0"?>\n<Parameters>\n{body}\n</Parameters>\n'


def test_missing_file(tmp_path):
    result = controlfile.parse_file(tmp_path / "nope.xml")
    assert result.to_json() == {
        "settings": [],
        "errors": [{"line": None, "element": None, "value": None}],
        "overrides": [],
        "fatal": True,
    }
    assert "cannot read the control file" in result.messages()[0]
    assert result.messages()[0].startswith(str(tmp_path / "nope.xml") + ": ")


def test_directory_is_not_a_control_file(tmp_path):
    result = controlfile.parse_file(tmp_path)
    assert result.fatal and result.errors[0].line is None


def test_a_fifo_is_refused_without_blocking(tmp_path):
    fifo = tmp_path / "pipe.xml"
    os.mkfifo(fifo)  # no writer: a blocking open would hang here
    result = controlfile.parse_file(fifo)
    assert result.fatal and "not a regular file" in result.messages()[0]


def test_too_many_settings_stop_at_the_cap():
    body = "".join(f'<hint key="k{i}" value="v"/>\n' for i in range(controlfile.MAX_SETTINGS + 5))
    result = controlfile.parse_text(doc(f"<Middleware_Layer>\n{body}</Middleware_Layer>"))
    assert len(result.settings) == controlfile.MAX_SETTINGS and not result.fatal
    assert len(result.errors) == 1
    assert result.errors[0].line == 4 + controlfile.MAX_SETTINGS  # the 1025th hint
    assert "more than 1024 settings" in result.errors[0].message


def test_oversize_file(tmp_path):
    padding = "<!--" + "x" * (controlfile.MAX_BYTES) + "-->"
    big = tmp_path / "big.xml"
    big.write_text(doc("<Middleware_Layer><cb_nodes>4</cb_nodes></Middleware_Layer>" + padding))
    result = controlfile.parse_file(big)
    assert result.fatal and result.settings == []
    assert result.errors[0].to_json() == {"line": None, "element": None, "value": None}
    assert "larger than" in result.errors[0].message
    # just under the cap is fine
    small = tmp_path / "small.xml"
    text = doc("<Middleware_Layer><cb_nodes>4</cb_nodes></Middleware_Layer>")
    small.write_text(text + " " * (controlfile.MAX_BYTES - len(text)))
    assert controlfile.parse_file(small).ok


def test_entities_are_never_expanded_or_fetched(tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("TOPSECRET")
    for decl in (
        f'<!DOCTYPE Parameters [<!ENTITY x SYSTEM "file://{secret}">]>',
        f'<!DOCTYPE Parameters SYSTEM "file://{secret}">',
        '<!DOCTYPE Parameters [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;">]>',
        '<!DOCTYPE Parameters [<!ENTITY % p "x">]>',
        "<!DOCTYPE Parameters>",
    ):
        text = f'<?xml version="1.0"?>\n{decl}\n<Parameters><Middleware_Layer>'
        text += "<cb_config_list>&x;</cb_config_list><cb_nodes>4</cb_nodes>"
        text += "</Middleware_Layer></Parameters>"
        result = controlfile.parse_text(text)
        assert result.fatal and result.settings == []
        assert result.errors[0].to_json() == {"line": 2, "element": None, "value": None}
        assert "TOPSECRET" not in json.dumps(result.to_json()) + result.errors[0].message


def test_undefined_entity_is_fatal():
    result = controlfile.parse_text(doc("<Middleware_Layer><cb_config_list>&x;</cb_config_list>"))
    assert result.fatal and "not well-formed" in result.errors[0].message


def test_character_references_and_cdata():
    result = controlfile.parse_text(
        doc(
            "<Middleware_Layer><cb_nodes>&#52;</cb_nodes>"
            "<access_style><![CDATA[a<b]]></access_style></Middleware_Layer>"
        )
    )
    assert [(s.name, s.value) for s in result.settings] == [
        ("cb_nodes", "4"),
        ("access_style", "a<b"),
    ]


def test_hint_forms():
    result = controlfile.parse_text(
        doc(
            "<Middleware_Layer>\n"
            '<hint key="romio_cb_read" value="ENABLE"/>\n'
            '<hint key="vendor_x">some text</hint>\n'
            '<hint key="alignment" value="1,1"/>\n'
            '<hint key="bad key" value="1"/>\n'
            '<hint key="vendor_y" value="1">2</hint>\n'
            '<hint key="chunk_size" value="1" VariableName="v"/>\n'
            "</Middleware_Layer>"
        )
    )
    assert [s.to_json() for s in result.settings] == [
        {
            "name": "romio_cb_read",
            "layer": "mpiio",
            "file": None,
            "variable": None,
            "value": "enable",
        },
        {
            "name": "vendor_x",
            "layer": "mpiio",
            "file": None,
            "variable": None,
            "value": "some text",
        },
    ]
    assert [(e.line, e.element) for e in result.errors] == [
        (6, "hint"),
        (7, "hint"),
        (8, "hint"),
        (9, "hint"),
    ]
    assert "not an MPI-IO hint" in result.errors[0].message


def test_error_messages_name_file_line_element():
    result = controlfile.parse_text(
        doc("<Middleware_Layer>\n<cb_nodes> -3 </cb_nodes>\n</Middleware_Layer>"), path="run.xml"
    )
    assert result.messages() == ['run.xml:4: <cb_nodes>: "-3" is below the minimum 1']
    assert not result.ok and not result.fatal
    assert controlfile.Problem(None, None, None, "m").format() == "m"
    assert controlfile.Problem(3, None, None, "m").format() == "line 3: m"


def test_unknown_attribute_on_a_section_still_applies_its_settings():
    result = controlfile.parse_text(
        doc('<Middleware_Layer id="1">\n<cb_nodes>4</cb_nodes>\n</Middleware_Layer>')
    )
    assert [e.element for e in result.errors] == ["Middleware_Layer"]
    assert [s.name for s in result.settings] == ["cb_nodes"]


def test_settings_keep_their_line():
    result = controlfile.parse_file(VECTORS / "good_full.xml")
    assert result.settings[0].line == 5
    assert result.settings[0].param is params.get("alignment")


# ----------------------------------------------------------------------------- matching


def test_match_file():
    m = controlfile.match_file
    assert m(None, "/any/where.h5")
    assert m("out.h5", "/scratch/run/out.h5")
    assert m("out.h5", "out.h5")
    assert not m("out.h5", "/scratch/run/out.h5.bak")
    assert m("checkpoint_*.h5", "./checkpoint_0001.h5")
    assert m("out_?.h5", "out_7.h5") and not m("out_?.h5", "out_17.h5")
    assert m("run[0-9].h5", "run3.h5") and not m("run[0-9].h5", "runx.h5")
    assert m("/scratch/*/out.h5", "/scratch/run1/out.h5")
    assert not m("/scratch/*/out.h5", "out.h5")
    assert m("out.h5", "ufs:/scratch/out.h5")
    assert m("/scratch/out.h5", "lustre:/scratch/out.h5")
    assert m("lustre:/scratch/out.h5", "/scratch/out.h5")
    assert not m("OUT.h5", "out.h5")


def test_match_dataset():
    m = controlfile.match_dataset
    assert m(None, None) and m(None, "/x")
    assert not m("x", None)
    assert m("temperature", "/fields/temperature")
    assert m("temperature", "temperature")
    assert not m("temperature", "/temperature/other")
    assert m("/Step#0/*", "/Step#0/x")
    assert not m("/Step#0/*", "/Step#1/x")
    assert not m("/x", "/group/x")
    # a relative path matches as a suffix at a component boundary
    assert m("g1/g2/deep", "/g1/g2/deep")
    assert m("g2/deep", "/g1/g2/deep")
    assert m("g2/*", "/g1/g2/deep")
    assert not m("g2/deep", "/g1/xg2/deep")
    assert not m("g1/g2/deep", "/g2/deep")
    assert not m("g2/deep", "/g2/deep/x")


MATCH = json.loads((VECTORS / "match.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize("case", MATCH["file"], ids=str)
def test_match_file_vector(case):
    pattern, path, expected = case
    assert controlfile.match_file(pattern, path) is expected


@pytest.mark.parametrize("case", MATCH["dataset"], ids=str)
def test_match_dataset_vector(case):
    pattern, path, expected = case
    assert controlfile.match_dataset(pattern, path) is expected


def precedence_cases() -> list:
    return [(g["settings"], case) for g in MATCH["precedence"] for case in g["cases"]]


def precedence_doc(settings: list[str]) -> str:
    """One section holds them all: a parameter is accepted in any section."""
    return doc("<Middleware_Layer>\n" + "\n".join(settings) + "\n</Middleware_Layer>")


@pytest.mark.parametrize("settings, case", precedence_cases())
def test_precedence_vector(settings, case):
    result = controlfile.parse_text(precedence_doc(settings))
    assert result.ok, result.messages()
    got = result.effective(case["file"], case["dataset"])
    assert {name: s.value for name, s in got.items()} == case["expect"]


def test_runtime_matches_like_the_vectors(build_dir):
    """The runtime's iot_match_file / iot_match_dataset on every case of match.json."""
    cases = [("file", *c) for c in MATCH["file"]] + [("dataset", *c) for c in MATCH["dataset"]]
    lines = "".join(
        "\t".join([kind, pattern or ""] + ([] if path is None else [path])) + "\n"
        for kind, pattern, path, _ in cases
    )
    proc = subprocess.run(
        [build_dir / "runtime" / "iotune-parse", "--match"],
        input=lines,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert proc.returncode == 0, proc.stderr
    got = [ln == "1" for ln in proc.stdout.splitlines()]
    wrong = [c for c, g in zip(cases, got, strict=True) if g != c[3]]
    assert not wrong, f"the runtime disagrees with match.json on {wrong}"


def test_runtime_precedence_like_the_vectors(build_dir, tmp_path):
    """The runtime's iot_settings_find and iot_settings_each_hint on every precedence case."""
    wrong = []
    for i, (settings, case) in enumerate(precedence_cases()):
        cfg = tmp_path / f"p{i}.xml"
        cfg.write_text(precedence_doc(settings))
        args = [build_dir / "runtime" / "iotune-parse", "--effective", cfg, case["file"]]
        proc = subprocess.run(
            args + ([case["dataset"]] if case["dataset"] else []),
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert proc.returncode == 0 and not proc.stderr, proc.stderr
        if json.loads(proc.stdout) != case["expect"]:
            wrong.append((case, proc.stdout.strip()))
    assert not wrong, f"the runtime disagrees with match.json on {wrong}"


def S(name, value, file=None, variable=None):
    p = params.find(name)
    return Setting(name, p.layer if p else "mpiio", value, file, variable)


def test_precedence():
    settings = [
        S("chunk", "1", variable="temperature"),
        S("chunk", "2"),
        S("chunk", "3", file="a.h5"),
        S("chunk", "4"),
        S("chunk", "5", file="a.h5", variable="/t/*"),
        S("cb_nodes", "1", file="a.h5"),
        S("cb_nodes", "2"),
        S("cb_nodes", "3", file="a*.h5"),
        S("romio_vendor", "x"),
    ]
    eff = controlfile.effective
    # globals: the later one wins
    assert eff(settings, "b.h5")["chunk"].value == "4"
    assert eff(settings, "b.h5")["cb_nodes"].value == "2"
    # a file setting beats a global one, even an earlier one; the later equal one wins
    assert eff(settings, "a.h5")["chunk"].value == "3"
    assert eff(settings, "a.h5")["cb_nodes"].value == "3"
    assert eff(settings, "b.h5")["romio_vendor"].value == "x"
    # a dataset setting beats a file setting; file and dataset together beat both
    assert eff(settings, "b.h5", "/g/temperature")["chunk"].value == "1"
    assert eff(settings, "a.h5", "/g/temperature")["chunk"].value == "1"
    assert eff(settings, "a.h5", "/t/temperature")["chunk"].value == "5"
    assert eff(settings, "b.h5", "/t/temperature")["chunk"].value == "1"
    assert eff(settings, "b.h5", "/t/pressure")["chunk"].value == "4"
    # file level: settings for datasets do not apply
    assert eff(settings, "a.h5")["chunk"].value == "3"
    assert set(eff(settings, "b.h5")) == {"chunk", "cb_nodes", "romio_vendor"}


def test_hint_and_element_share_a_name():
    result = controlfile.parse_text(
        doc(
            "<Middleware_Layer><cb_nodes>4</cb_nodes>"
            '<hint key="cb_nodes" value="8"/></Middleware_Layer>'
        )
    )
    assert result.effective("x.h5")["cb_nodes"].value == "8"


# ----------------------------------------------------------------------------- writing


def every_param_value():
    return {
        "alignment": (4096, 1 << 20),
        "sieve_buf_size": "256K",
        "meta_block_size": 2 << 20,
        "small_data_block_size": 65536,
        "mdc_initial_size": "4MiB",
        "mdc_min_size": 1 << 20,
        "mdc_max_size": 32 << 20,
        "coll_metadata_read": True,
        "coll_metadata_write": False,
        "chunk_cache_bytes": 64 << 20,
        "chunk_cache_slots": 12421,
        "chunk_cache_w0": 0.75,
        "chunk": [64, 64, 16],
        "chunk_size": "4M",
        "fill_time": "NEVER",
        "alloc_time": "late",
        "transfer_mode": "collective",
        "serial_files": True,
        "file_space_strategy": "page",
        "file_space_page_size": "64K",
        "page_buffer_size": 1 << 20,
        "libver_low": "latest",
        "evict_on_close": True,
        "mdc_image": "yes",
        "filter_partial_chunks": False,
        "mpio_chunk_opt": "multi_io",
        "mpio_chunk_opt_num": 8,
        "mpio_chunk_opt_ratio": 30,
        "mpio_collective_opt": "individual_io",
        "cb_buffer_size": 4 << 20,
        "cb_nodes": 2,
        "cb_config_list": "*:*",
        "romio_cb_write": "enable",
        "romio_cb_read": "disable",
        "romio_ds_write": "automatic",
        "romio_ds_read": "disable",
        "ind_wr_buffer_size": 1 << 20,
        "ind_rd_buffer_size": "2M",
        "romio_no_indep_rw": "yes",
        "romio_cb_alltoall": "automatic",
        "romio_cb_pfr": "disable",
        "romio_cb_ds_threshold": 0,
        "collective_buffering": True,
        "access_style": "write_once,sequential",
        "striping_factor": 16,
        "striping_unit": "1MiB",
        "striping_object_size": "4MiB",
        "start_iodevice": -1,
        "romio_lustre_co_ratio": 2,
        "romio_lustre_ds_in_coll": "enable",
        "IBM_largeblock_io": False,
        "io": "romio321",
        "fcoll": "two_phase",
        "io_ompio_num_aggregators": -1,
        "io_ompio_bytes_per_agg": "8M",
        "io_ompio_grouping_option": 7,
        "io_ompio_cycle_buffer_size": 1 << 20,
        "romio_visibility_immediate": "false",
        "x.vendor": 'a <b> & "c"',
    }


def test_write_then_parse_round_trip(tmp_path):
    values = every_param_value()
    assert set(params.names()) <= set(values)
    path = controlfile.write(tmp_path / "trial.xml", values)
    result = controlfile.parse_file(path)
    assert result.ok, result.messages()
    got = {s.name: s.value for s in result.settings}
    assert got == {name: params.normalise(name, _text(v)) for name, v in values.items()}
    assert got["alignment"] == "4096,1048576" and got["x.vendor"] == 'a <b> & "c"'
    # each parameter lands in the section of its layer
    text = path.read_text()
    hdf5 = text[text.index("<High_Level_IO_Library>") : text.index("</High_Level_IO_Library>")]
    mpiio = text[text.index("<Middleware_Layer>") : text.index("</Middleware_Layer>")]
    fs = text[text.index("<Parallel_File_System>") : text.index("</Parallel_File_System>")]
    for p in params.all_params():
        section = {"hdf5": hdf5, "mpiio": mpiio, "fs": fs}[p.layer]
        assert f"<{p.name}>" in section
    assert '<hint key="x.vendor"' in mpiio
    assert text.startswith('<?xml version="1.0"?>\n<Parameters>')
    assert list(tmp_path.iterdir()) == [path]  # no temporary file left behind


def _text(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (list, tuple)):
        return ",".join(map(str, v))
    return str(v)


def test_write_settings_with_patterns(tmp_path):
    settings = [
        S("chunk", "64,64", file="ckpt_*.h5", variable="/fields/*"),
        S("romio_vendor", "1", file="x.h5"),
        S("striping_factor", "4", file='we"ird&.h5'),
    ]
    result = controlfile.parse_text(controlfile.render(settings))
    assert result.ok
    assert [s.to_json() for s in result.settings] == [s.to_json() for s in settings]


def test_write_refuses_bad_values(tmp_path):
    with pytest.raises(params.ValueProblem, match="below the minimum"):
        controlfile.render({"cb_nodes": 0})
    with pytest.raises(params.ValueProblem, match="hint key"):
        controlfile.render({"bad key": 1})
    with pytest.raises(params.ValueProblem, match="line break"):
        controlfile.render({"vendor": "a\nb"})
    assert not (tmp_path / "x.xml").exists()


def test_empty_settings_write_a_valid_file(tmp_path):
    result = controlfile.parse_file(controlfile.write(tmp_path / "e.xml", {}))
    assert result.ok and result.settings == []
