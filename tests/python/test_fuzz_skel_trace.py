"""Fuzzing `iotune skel from-profile` on traces (issue 22: direct chunk transfers and extents
are now read from the trace): the checked-in seeds tests/data/fuzz/skel_trace/ (real one-rank
traces: h5py's direct chunk writes, zero_extend.c's H5Dset_extent appends, a GCRM-IO rank)
replayed, then Hypothesis mutations of them (tests/python/fuzzing.py) as the trace of a
one-rank profile. The only outcomes allowed: a descriptor that the descriptor reader accepts
or refuses with one DescriptorError, or one FromProfileError; never another exception."""

import gzip
import json
import tempfile
from pathlib import Path

import pytest
from fuzzing import EXAMPLES, load_seed, mutated, seeds
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from iotune.skel import descriptor as dmod
from iotune.skel import from_profile as fp

SEEDS = seeds("skel_trace", "ok_")
GOOD = [load_seed(p) for p in SEEDS]
PROFILE = {"schema": "iotune-profile", "ranks": 1, "program": "app", "files": []}


def _outcome(trace_doc) -> str:
    """from-profile on a profile whose rank 0 trace is trace_doc, and the descriptor read back."""
    with tempfile.TemporaryDirectory() as d:
        prof = Path(d) / "p.json"
        prof.write_text(json.dumps(PROFILE))
        (Path(d) / "p.json.trace").mkdir()
        with gzip.open(Path(d) / "p.json.trace" / "rank-0.json.gz", "wt") as fh:
            json.dump(trace_doc, fh)
        try:
            desc = fp.from_profile(str(prof), d)
        except fp.FromProfileError as e:
            assert str(e) and "\n" not in str(e).strip()
            return "refused"
        try:
            dmod.parse_text(fp.to_yaml(desc, "p.json"), "skel.yaml")
        except dmod.DescriptorError as e:
            assert str(e).startswith("skel.yaml")
            return "descriptor refused"
        return "descriptor"


def test_the_seeds_give_descriptors_with_direct_writes_and_extents():
    assert len(GOOD) >= 3
    for p, doc in zip(SEEDS, GOOD, strict=True):
        assert _outcome(doc) == "descriptor", p.name
    texts = {p.name: json.dumps(doc) for p, doc in zip(SEEDS, GOOD, strict=True)}
    assert any("H5Dwrite_chunk" in t for t in texts.values())
    assert any("H5Dset_extent" in t for t in texts.values())
    assert any("H5DSattach_scale" in t and "H5DSiterate_scales" in t for t in texts.values())
    assert any("MPI_File_set_size" in t for t in texts.values())
    assert any("MPI_File_write_ordered" in t and "MPI_File_read_shared" in t
               for t in texts.values())  # fmt: skip
    assert any("H5Acreate" in t and "H5Arename" in t and '"attributes"' in t
               for t in texts.values())  # fmt: skip


@pytest.mark.parametrize("func", ["H5Acreate", "H5Aopen", "H5Awrite", "H5Aread", "H5Aexists",
                                  "H5Aiterate", "H5Arename", "H5Adelete"])  # fmt: skip
def test_odd_attribute_calls_and_entries(func):
    """An attribute call whose attribute index is out of range or names an entry without its
    name, object, dataspace or type, or with a box of another rank (a rename's new name): a
    descriptor or a clean refusal."""
    (doc,) = [d for p, d in zip(SEEDS, GOOD, strict=True) if "attributes" in p.name]
    odd_entries = [{}, {"object": 3}, {"object": "rel", "name": "a"}, {"object": "/", "name": 5},
                   {"object": "/", "name": "a", "space": "simple", "dims": None},
                   {"object": "/", "name": "a", "space": "simple", "dims": [-1], "type_size": 4},
                   {"object": "/", "name": "a", "space": "scalar", "type_size": 2**70},
                   {"object": "/", "name": None, "space": "null", "type_size": 1,
                    "type_class": "string", "string": {"pad": "?", "cset": None}}]  # fmt: skip
    for entry in odd_entries:
        odd = len(doc.get("attributes", []))  # the entry's index once appended
        for index, dims in ((0, None), (10**6, [1]), (-5, [2**40]), (odd, [0, 1]), (odd, [odd])):
            doc2 = json.loads(json.dumps(doc))
            doc2["attributes"] = doc2.get("attributes", []) + [entry]
            sigs = doc2["signatures"]
            for k, f in enumerate(sigs["func"]):
                if f.startswith("H5A"):
                    sigs["func"][k], sigs["dataset"][k], sigs["dims"][k] = func, index, dims
            assert _outcome(doc2) in ("descriptor", "refused", "descriptor refused")


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.sampled_from(range(len(GOOD))), st.data())
def test_mutated_traces(i, data):
    doc = data.draw(mutated(GOOD[i]))
    event(_outcome(doc))


@pytest.mark.parametrize(
    "func",
    ["H5Dwrite_chunk", "H5Dread_chunk", "H5Dset_extent", "H5DSset_scale", "H5DSattach_scale",
     "H5DSdetach_scale", "H5DSiterate_scales", "H5DSget_num_scales", "H5DSis_scale"],
)  # fmt: skip
def test_odd_modes_and_boxes_of_the_new_calls(func):
    """The new calls' signatures with a filter mask out of range, no box, a box of another
    rank: a descriptor or a clean refusal."""
    for mode, dims in ((-1, None), (2**40, [1]), (1, [1, 2, 3, 4]), (0, [])):
        doc = json.loads(json.dumps(GOOD[0]))
        sigs = doc["signatures"]
        for k, f in enumerate(sigs["func"]):
            if f in ("H5Dwrite_chunk", "H5Dread", "H5Dwrite"):
                sigs["func"][k], sigs["mode"][k], sigs["dims"][k] = func, mode, dims
        assert _outcome(doc) in ("descriptor", "refused", "descriptor refused")


@pytest.mark.parametrize("func", ["H5Dread", "MPI_File_set_size"])
def test_odd_fresh_modes_and_file_sizes(func):
    """H5Dread's mode (bit 2: its memory untouched before the call) and MPI_File_set_size's
    size (the new size) out of range or of another type: a descriptor or a clean refusal."""
    (doc,) = [d for p, d in zip(SEEDS, GOOD, strict=True) if "fresh_read" in p.name]
    for mode, size in ((2, -1), (3, 2**70), (6, None), (-2, 1.5), (2**40, "8"), (7, 0)):
        doc = json.loads(json.dumps(doc))
        sigs = doc["signatures"]
        for k, f in enumerate(sigs["func"]):
            if f == "H5Dread":
                sigs["func"][k], sigs["mode"][k], sigs["size"][k] = func, mode, size
        assert _outcome(doc) in ("descriptor", "refused", "descriptor refused")


@pytest.mark.parametrize("path", seeds("skel_trace", "bad_"), ids=lambda p: p.name)
def test_what_the_fuzzer_found_is_refused_cleanly_or_read(path):
    """Crashes the fuzzer found, fixed and kept: a box of another rank than its dataset, a
    rank's trace without its rank, a dataset without path or element size, datasets null, an
    unknown layer."""
    assert _outcome(load_seed(path)) in ("descriptor", "refused", "descriptor refused")


@pytest.mark.parametrize(
    "fmt", [None, [], [1, 2], [1, 2, 0, 3, 3], [-1, 2, 0, 3, 3], [9, 99, 7, 2**40, 5], [1.5, "v18",
            None, True, [3]]]
)  # fmt: skip
def test_odd_file_formats_and_dataset_headers(fmt):
    """H5Fcreate's and H5Fopen's dims (the file's format) and a dataset's track_times and
    attr_order of any shape: a descriptor or a clean refusal."""
    (doc,) = [d for p, d in zip(SEEDS, GOOD, strict=True) if "attributes" in p.name]
    doc = json.loads(json.dumps(doc))
    sigs = doc["signatures"]
    for k, f in enumerate(sigs["func"]):
        if f in ("H5Fcreate", "H5Fopen"):
            sigs["dims"][k] = fmt
    for d in doc["datasets"]:
        d["track_times"], d["attr_order"] = (fmt[0] if fmt else fmt), fmt
    assert _outcome(doc) in ("descriptor", "refused", "descriptor refused")
