"""Skeletons of files as netCDF-4 writes them (issue 22's corpus: netcdf4-tst-parallel3):
numbers stored big-endian, and dimension scales (libhdf5_hl's H5DSset_scale, H5DSattach_scale,
H5DSdetach_scale, whose CLASS, NAME, DIMENSION_LIST and REFERENCE_LIST attributes hold object
references). The runtime traces the element type's byte order and the scale calls; the
skeleton stores the same types and makes the same scales, so `h5dump -H -p` of its file is the
original's and its bytes per layer are the original's."""

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

from iotune.skel import descriptor as dmod
from iotune.skel import from_profile as fp
from iotune.skel import generate as gen


@pytest.fixture(scope="module")
def scales_program(tmp_path_factory) -> Path:
    return build_hdf5_program(tmp_path_factory, "skel_scales", ("-lhdf5_hl",))


@needs_cc
def test_big_endian_types_and_dimension_scales_are_made_as_the_application_made_them(
    scales_program, libiotune, tmp_path
):
    orig, prof = _profiled(tmp_path, [scales_program], libiotune)
    desc = fp.from_profile(str(prof))  # the trace alone: no --data-dir
    f, again = desc["files"]
    types = {d["name"]: d["type"] for d in f["datasets"]}
    assert types == {"/x": "int32be", "/y": "float32be", "/field": "float64be",
                     "/counts": "int16be"}  # fmt: skip
    scales = [{k: v for k, v in w.items() if k != "transfer"} for w in f["writes"]
              if not {"start", "by_rank"} & set(w)]  # fmt: skip
    assert scales == [
        {"dataset": "/x", "set_scale": 5},  # "rows" and its NUL
        {"dataset": "/y", "set_scale": 0},  # no name
        {"dataset": "/field", "attach_scale": "/x", "dim": 0},
        {"dataset": "/field", "attach_scale": "/y", "dim": 1},
        {"dataset": "/counts", "attach_scale": "/y", "dim": 1},
        {"dataset": "/counts", "detach_scale": "/y", "dim": 1},
    ], f["writes"]
    assert not [n for n in desc["notes"] if "endian" in n]
    # the lookups of the read-back, on the datasets it opened (and read-only, as it opened)
    assert again.get("open") == "existing" and not again.get("readwrite")
    # opened from H5Literate's callback, as netCDF-4 opens its variables: still traced
    assert [(d["name"], d.get("exists")) for d in again["datasets"]] == [
        ("/field", True),
        ("/x", True),
    ]
    looked = [w for w in again["writes"] if "lookup_scales" in w]
    assert looked == [
        {"dataset": "/x", "lookup_scales": "is_scale"},
        {"dataset": "/field", "lookup_scales": "is_scale"},
        {"dataset": "/field", "lookup_scales": "count", "dim": 0},
        {"dataset": "/field", "lookup_scales": "iterate", "dim": 1},
    ], again["writes"]
    skeleton = _skeleton(desc, tmp_path)
    out = run_skeleton_traced(skeleton, tmp_path, libiotune)
    want = h5dump_structure(orig / "scales.h5")
    assert "H5T_IEEE_F64BE" in "\n".join(want) and "DIMENSION_LIST" in "\n".join(want)
    assert h5dump_structure(out / "scales.h5") == want
    assert_same_bytes(prof, out / "p.json", "scales.h5")


DESC = """\
skel: 1
ranks: 2
files:
  - name: s.h5
    datasets:
      - {name: /x, type: int32be, dims: [4]}
      - {name: /v, type: float64be, dims: [4, 3], fill_value: "3ff0000000000000"}
    writes:
      - {dataset: /x, set_scale: 2}
      - {dataset: /v, attach_scale: /x, dim: 0}
      - {dataset: /v, start: [rank * 2, 0], count: [2, 3]}
"""


def test_descriptor_scales_and_big_endian_types_are_read_and_generated(tmp_path):
    d = dmod.parse_text(DESC, "s.yaml")
    assert [d.type for d in d.files[0].datasets] == ["int32be", "float64be"]
    w = d.files[0].writes
    assert (w[0].scale_call, w[0].scale_name) == ("set", 2)
    assert (w[1].scale_call, w[1].scale, w[1].dim) == ("attach", "/x", 0)
    gen.generate(d, str(tmp_path / "src"), "s.yaml")
    src = (tmp_path / "src" / "skeleton.c").read_text()
    assert 'skel_set_scale(f, "/x", step, 2);' in src
    assert 'skel_attach_scale(f, "/v", "/x", step, 0, 1);' in src
    make = (tmp_path / "src" / "Makefile").read_text()
    assert "-lhdf5_hl" in make and "skel_scales.c" in make
    # without scales, neither the high-level library nor its part of the runtime
    plain = dmod.parse_text(DESC.split("    writes:")[0], "p.yaml")
    gen.generate(plain, str(tmp_path / "plain"), "p.yaml")
    make = (tmp_path / "plain" / "Makefile").read_text()
    assert "-lhdf5_hl" not in make and "skel_scales.c" not in make


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ("{dataset: /x, set_scale: -1}", "writes[0].set_scale: expected the bytes"),
        ("{dataset: /x, set_scale: 2000}", "writes[0].set_scale: expected the bytes"),
        ("{dataset: /v, attach_scale: /nope, dim: 0}", "expected another dataset"),
        ("{dataset: /v, attach_scale: /v, dim: 0}", "expected another dataset"),
        ("{dataset: /v, attach_scale: /x, dim: 2}", "writes[0].dim: expected a dimension"),
        ("{dataset: /v, detach_scale: /x}", "writes[0].dim: expected a dimension"),
        ("{dataset: /v, attach_scale: /x, dim: 0, start: [0]}", "start"),
        ("{dataset: /v, set_scale: 1, attach_scale: /x, dim: 0}", "unknown field"),
        ("{dataset: /nope, set_scale: 1}", "needs one dataset of this file"),
    ],
)
def test_bad_scale_entries_give_one_message_with_line_and_field(entry, message):
    text = DESC.split("    writes:")[0] + f"    writes:\n      - {entry}\n"
    with pytest.raises(dmod.DescriptorError) as e:
        dmod.parse_text(text, "s.yaml")
    assert "s.yaml:" in str(e.value) and message in str(e.value), str(e.value)
