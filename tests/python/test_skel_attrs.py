"""Skeletons of files with attributes as applications make them (issue 22's corpus:
netcdf4-tst-parallel3 creates them with H5Acreate1 and deletes them): the runtime traces the
attribute calls (creations with H5Acreate1, H5Acreate2, H5Acreate_by_name; writes, reads, opens
by name and index, lookups, renames, deletions) on the object they are on, with their type and
extent; the skeleton makes the same calls in the same order, so `h5dump -H -p` of its file is the
original's (attributes included) and its bytes per layer are the original's. The file is made
as netCDF-4 makes its own (format bounds, no times, creation order tracked and indexed, an
H5Fflush in between): the skeleton makes it so (object headers of the same versions and
sizes) and flushes where the program did."""

import re
from pathlib import Path

import pytest
from test_skel import (
    _profiled,
    _skeleton,
    assert_same_bytes,
    build_hdf5_program,
    h5dump_structure,
    needs_cc,
    run_skeleton_traced,
)

from iotune import trace as iotrace
from iotune.skel import descriptor as dmod
from iotune.skel import from_profile as fp
from iotune.skel import generate as gen


@pytest.fixture(scope="module")
def attrs_program(tmp_path_factory) -> Path:
    return build_hdf5_program(tmp_path_factory, "skel_attrs")


def _calls(profile: Path) -> list[tuple]:
    """Rank 0's attribute calls: (func, object, name, new name)."""
    tr = iotrace.load(str(profile))[0]
    return [
        (s["func"], s["attribute"]["object"], s["attribute"]["name"],
         (s["renamed"] or {}).get("name"))
        for e in tr["events"]
        for s in [tr["signatures"][e[0]]]
        if s["attribute"] is not None
    ]  # fmt: skip


@needs_cc
def test_attributes_are_traced_and_made_again_by_the_skeleton(attrs_program, libiotune, tmp_path):
    orig, prof = _profiled(tmp_path, [attrs_program], libiotune)
    calls = _calls(prof)
    # H5Acreate1, H5Acreate2 and H5Acreate_by_name on the root, a group and a dataset; the
    # calls that failed (a NULL name, an invalid id, an existing name) are not in the trace
    assert [c for c in calls if c[0] == "H5Acreate"] == [
        ("H5Acreate", "/", "title", None), ("H5Acreate", "/", "version", None),
        ("H5Acreate", "/grp", "units", None), ("H5Acreate", "/grp", "scale", None),
        ("H5Acreate", "/grp", "empty", None), ("H5Acreate", "/grp/data", "valid_range", None),
        ("H5Acreate", "/grp/data", "old_name", None), ("H5Acreate", "/grp/data", "temp", None),
        ("H5Acreate", "/grp", "gone", None), ("H5Acreate", "/grp", "by_index", None),
    ]  # fmt: skip
    assert [c for c in calls if c[0] in ("H5Arename", "H5Adelete")] == [
        ("H5Arename", "/grp/data", "old_name", "new_name"),
        ("H5Adelete", "/grp/data", "temp", None), ("H5Adelete", "/grp", "gone", None),
        ("H5Adelete", "/grp", "by_index", None),  # H5Adelete_by_idx: its name asked before
        ("H5Arename", "/", "version", "format_version"),
    ]  # fmt: skip
    assert ("H5Aopen", "/grp/data", "valid_range", None) in calls  # by index: its name
    assert ("H5Aiterate", "/grp/data", None, None) in calls

    desc = fp.from_profile(str(prof))  # the trace alone: no --data-dir
    made, again = desc["files"]
    created = {w["name"]: w for w in made["writes"] if w.get("attribute") == "create"}
    assert created["title"]["type"] == {"string": 23, "pad": "nullterm", "cset": "ascii"}
    assert created["units"]["type"]["string"] == "variable"
    assert created["valid_range"] == {
        "attribute": "create",
        "object": "/grp/data",
        "name": "valid_range",
        "type": "float64be",
        "dims": [2],
    }
    assert created["empty"].get("empty") is True and created["old_name"]["dims"] == [2, 2]
    assert made["groups"] == ["/grp"]  # an object with attributes that is no dataset
    assert made["writes"][0] == {"dataset": "/grp/data", "create": True}  # before the root's
    assert [w for w in made["writes"] if w.get("name") == "units" and "size" in w] == [
        {"attribute": "write", "object": "/grp", "name": "units", "size": 17}
    ]
    # the format netCDF-4 asks for: version-2 object headers without times
    assert made["format"] == {"libver": ["v18", "v110"], "track_times": False,
                              "link_order": "indexed", "attr_order": "indexed"}  # fmt: skip
    assert made["datasets"][0]["track_times"] is False
    assert made["datasets"][0]["attr_order"] == "indexed"
    assert again["format"] == {"libver": ["v18", "v110"]}  # opened with the same bounds
    flush = made["writes"].index({"flush": True})  # in its place: after the last rename
    assert made["writes"][flush - 1]["attribute"] == "rename" and "sync" not in made
    assert again.get("open") == "existing" and not again.get("readwrite")
    assert {w["attribute"] for w in again["writes"] if "attribute" in w} == {
        "exists", "open", "read", "iterate"}  # fmt: skip
    assert not [n for n in desc["notes"] if "attribute" in n], desc["notes"]

    skeleton = _skeleton(desc, tmp_path)
    out = run_skeleton_traced(skeleton, tmp_path, libiotune)
    want = h5dump_structure(orig / "attrs.h5")
    assert "format_version" in "\n".join(want) and "H5T_IEEE_F64BE" in "\n".join(want)
    assert h5dump_structure(out / "attrs.h5") == want
    assert _calls(out / "p.json") == calls  # the same calls, in the same order
    assert_same_bytes(prof, out / "p.json", "attrs.h5")


DESC = """\
skel: 1
ranks: 2
files:
  - name: a.h5
    format: {libver: [v18, v110], track_times: false, attr_order: tracked}
    groups: [/g]
    datasets:
      - {name: /g/v, type: float64, dims: [4], track_times: false, attr_order: indexed}
    writes:
      - {dataset: /g/v, create: true}
      - {attribute: create, object: /, name: title, type: {string: 12}}
      - {attribute: write, object: /, name: title}
      - {attribute: create, object: /g, name: s, type: {string: variable}, dims: [2]}
      - {attribute: write, object: /g, name: s, size: 9}
      - {attribute: create, object: /g/v, name: o, type: {opaque: 3}, empty: true}
      - {attribute: rename, object: /g/v, name: o, to: p}
      - {attribute: exists, object: /g, name: s, when: rank == 0}
      - {attribute: iterate, object: /g}
      - {attribute: delete, object: /g/v, name: p}
      - {flush: true}
      - {dataset: /g/v, start: [rank * 2], count: [2]}
"""


def test_descriptor_attribute_calls_are_read_and_generated(tmp_path):
    d = dmod.parse_text(DESC, "a.yaml")
    w = d.files[0].writes
    assert w[0].create and w[0].dataset == "/g/v"
    assert (w[1].attr.call, w[1].attr.on, w[1].attr.name, w[1].attr.attr.size) == (
        "create", "/", "title", 12)  # fmt: skip
    assert (w[4].attr.call, w[4].attr.size) == ("write", 9)
    assert w[5].attr.attr.empty and w[5].attr.attr.type == "opaque"
    assert (w[6].attr.call, w[6].attr.to) == ("rename", "p")
    assert w[7].when is not None and w[8].attr.name is None
    gen.generate(d, str(tmp_path / "src"), "a.yaml")
    src = (tmp_path / "src" / "skeleton.c").read_text()
    assert src.index('skel_dataset(f, "/g/v"') < src.index('skel_attr_create(f, "/", step')
    assert 'skel_attr_create(f, "/g/v", step, "o", skel_type_opaque(3), -1, dims);' in src
    assert 'skel_attr_call(f, SKEL_ATTR_RENAME, "/g/v", step, "o", "p", -1LL, 1);' in src
    assert 'skel_attr_call(f, SKEL_ATTR_WRITE, "/g", step, "s", NULL, 9LL, 1);' in src
    assert 'skel_attr_call(f, SKEL_ATTR_ITERATE, "/g", step, NULL, NULL, -1LL, 1);' in src
    assert "(rank == 0)" in src or "rank == 0" in src
    assert src.index("skel_file_format(s, 1, 2, 0, -1, 1);") < src.index("skel_open(s, ")
    assert ", NULL, 0, 3);" in src  # the dataset: no times, creation order indexed
    assert "skel_sync(f); /* H5Fflush */" in src


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ("{attribute: make, object: /, name: a}", "writes[0].attribute: expected one of"),
        ("{attribute: create, object: /, name: a}", "writes[0]: missing field 'type'"),
        ("{attribute: create, object: /, name: a, type: int32, dims: [1], empty: true}",
         "writes[0].empty"),
        ("{attribute: create, object: /nope, name: a, type: int32}", "no group or dataset"),
        ("{attribute: create, object: g, name: a, type: int32}", "writes[0].object: expected"),
        ("{attribute: write, object: /, name: a, when: rank == 0}", "unknown field"),
        ("{attribute: rename, object: /, name: a}", "missing field 'to'"),
        ("{attribute: iterate, object: /, name: a}", "unknown field"),
        ("{attribute: read, object: /, name: ''}", "writes[0].name: expected a name"),
        ("{attribute: write, object: /, name: a, size: -1}", "writes[0].size"),
        ("{attribute: create, object: /, name: a, type: {opaque: 0}}", "type.opaque"),
        ("{dataset: /g/v, create: false}", "writes[0].create"),
        ("{dataset: /nope, create: true}", "writes[0].create"),
        ("{flush: false}", "writes[0].flush"),
    ],
)  # fmt: skip
def test_bad_attribute_entries_give_one_message_with_line_and_field(entry, message):
    text = DESC.split("    writes:")[0] + f"    writes:\n      - {entry}\n"
    with pytest.raises(dmod.DescriptorError) as e:
        dmod.parse_text(text, "a.yaml")
    assert "a.yaml:" in str(e.value) and message in str(e.value), str(e.value)


@pytest.mark.parametrize(
    ("fmt", "message"),
    [("{libver: [v110, v18]}", "low <= high"), ("{libver: [v18]}", "expected [low, high]"),
     ("{track_times: 0}", "expected true or false"), ("{attr_order: yes}", "tracked or indexed"),
     ("{libver: [v18, v110], page: 1}", "unknown field")],
)  # fmt: skip
def test_bad_file_formats_are_refused(fmt, message):
    text = DESC.replace("{libver: [v18, v110], track_times: false, attr_order: tracked}", fmt)
    with pytest.raises(dmod.DescriptorError, match=re.escape(message)):
        dmod.parse_text(text, "a.yaml")


def test_an_attribute_call_on_a_raw_file_is_refused():
    text = "skel: 1\nranks: 1\nfiles:\n  - name: r.dat\n    api: posix\n    writes:\n" \
           "      - {attribute: exists, object: /, name: a}\n"  # fmt: skip
    with pytest.raises(dmod.DescriptorError, match="has no attributes"):
        dmod.parse_text(text, "r.yaml")
