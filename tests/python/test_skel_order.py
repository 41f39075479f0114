"""Skeletons create and open datasets where the application did (issue 22's corpus: HDF5's
ph5example creates every dataset of a file and then writes them, and opens one dataset twice
when it reads the file back). The trace has each H5Dcreate and H5Dopen in its place among the
transfers; from-profile keeps those a skeleton would otherwise make elsewhere as
`{dataset, create: true}` and `{dataset, open: true}` entries, and the skeleton makes the same
calls in the same order, with `h5dump -H -p` of its file and its bytes per layer the
original's."""

from pathlib import Path

import pytest
from conftest import run_mpi
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

DATASET_CALLS = ("H5Dcreate", "H5Dopen", "H5Dwrite", "H5Dread")


@pytest.fixture(scope="module")
def order_program(tmp_path_factory) -> Path:
    return build_hdf5_program(tmp_path_factory, "skel_order")


def _dataset_calls(profile: Path) -> list[list[tuple[str, str]]]:
    """Each rank's dataset calls in order: (func, dataset path)."""
    _, traces = fp.load_traces(str(profile))
    return [
        [(c.func, tr.datasets[c.dataset]["name"]) for c in tr.calls
         if c.func in DATASET_CALLS and c.dataset is not None]
        for tr in traces
    ]  # fmt: skip


@needs_cc
def test_datasets_are_created_and_opened_where_the_application_did(
    order_program, libiotune, tmp_path
):
    orig, prof = _profiled(tmp_path, [order_program], libiotune)
    calls = _dataset_calls(prof)
    want = [("H5Dcreate", "/first"), ("H5Dcreate", "/second"), ("H5Dcreate", "/third"),
            ("H5Dwrite", "/first"), ("H5Dwrite", "/second"), ("H5Dwrite", "/third"),
            ("H5Dopen", "/first"), ("H5Dopen", "/first"), ("H5Dopen", "/second"),
            ("H5Dread", "/first"), ("H5Dread", "/first"), ("H5Dread", "/second")]  # fmt: skip
    assert [[(f, n.lstrip("/")) for f, n in rank] for rank in calls] == [
        [(f, n.lstrip("/")) for f, n in want]
    ] * 2, calls

    desc = fp.from_profile(str(prof), str(orig))
    made, again = desc["files"]
    assert [w for w in made["writes"] if "start" not in w] == [
        {"dataset": made["datasets"][i]["name"], "create": True} for i in range(3)
    ]
    assert all("start" in w for w in made["writes"][3:])
    opens = [w["dataset"] for w in again["writes"] if w.get("open")]
    assert [n.lstrip("/") for n in opens] == ["first", "first", "second"]
    assert again["writes"][:3] == [{"dataset": n, "open": True} for n in opens]
    assert again.get("readwrite") is True  # opened read-write to read: opens are no writes

    skeleton = _skeleton(desc, tmp_path)
    out = run_skeleton_traced(skeleton, tmp_path, libiotune)
    assert _dataset_calls(out / "p.json") == calls  # the same calls, in the same order
    assert h5dump_structure(out / "order.h5") == h5dump_structure(orig / "order.h5")
    assert_same_bytes(prof, out / "p.json", "order.h5")


DESC = """\
skel: 1
ranks: 2
files:
  - name: a.h5
    datasets:
      - {name: /x, type: float64, dims: [4]}
      - {name: /y, type: float64, dims: [4]}
    writes:
      - {dataset: /x, create: true}
      - {dataset: /y, create: true}
      - {dataset: /x, start: [rank * 2], count: [2]}
      - {dataset: /y, start: [rank * 2], count: [2]}
      - {dataset: /x, open: true}
  - name: a.h5
    open: existing
    datasets:
      - {name: /x, type: float64, dims: [4], exists: true}
      - {name: /y, type: float64, dims: [4], exists: true}
    writes:
      - {dataset: /y, open: true}
      - {dataset: /x, open: true}
      - {dataset: /x, open: true}
      - {dataset: /x, start: [rank * 2], count: [2], read: true}
      - {dataset: /y, start: [rank * 2], count: [2], read: true}
"""


def _calls_in(c_source: str, fn: int) -> list[str]:
    """file_<fn>()'s dataset calls in the generated C: skel_dataset, _open, skel_write, _read."""
    body = c_source.split(f"static void file_{fn}(")[1].split("\n}\n")[0]
    out = []
    for line in body.splitlines():
        for call in ("skel_dataset_open(", "skel_dataset(", "skel_write(", "skel_read("):
            if call in line:
                out.append(call[:-1] + " " + line.split('"')[1])
                break
    return out


def test_descriptor_create_and_open_entries_are_read_and_generated():
    d = dmod.parse_text(DESC, "a.yaml")
    made, again = d.files
    assert [(w.create, w.open) for w in made.writes] == [
        (True, False), (True, False), (False, False), (False, False), (False, True)]  # fmt: skip
    assert [w.open for w in again.writes] == [True, True, True, False, False]
    c = gen.skeleton_c(d, "a.yaml")
    assert _calls_in(c, 0) == [
        "skel_dataset /x", "skel_dataset /y", "skel_write /x", "skel_write /y",
        "skel_dataset_open /x"]  # fmt: skip
    # /x is listed first but opened where its entries are; opened twice
    assert _calls_in(c, 1) == [
        "skel_dataset_open /y", "skel_dataset_open /x", "skel_dataset_open /x",
        "skel_read /x", "skel_read /y"]  # fmt: skip
    assert "SKEL_OPEN_READONLY" in c  # opens only: the file is opened to read


def test_descriptor_without_open_entries_opens_at_first_use():
    """Older descriptors (no create or open entries): datasets made at their first use."""
    kept = [x for x in DESC.splitlines() if "create: true}" not in x and "open: true}" not in x]
    text = "\n".join(kept) + "\n"
    c = gen.skeleton_c(dmod.parse_text(text, "a.yaml"), "a.yaml")
    assert _calls_in(c, 0) == [
        "skel_dataset /x", "skel_write /x", "skel_dataset /y", "skel_write /y"]  # fmt: skip
    assert _calls_in(c, 1) == [
        "skel_dataset_open /x", "skel_read /x", "skel_dataset_open /y", "skel_read /y"]  # fmt: skip


@pytest.mark.parametrize(
    "entry, message",
    [
        ("{dataset: /z, open: true}", "expected open: true and a dataset of this file"),
        ("{dataset: /x, open: false}", "expected open: true"),
        ("{dataset: /x, open: true, when: rank == 0}", "when"),
        ("{dataset: /x, create: true}", "exists already"),
    ],
)
def test_descriptor_refuses_bad_open_entries(entry, message):
    text = DESC.replace("      - {dataset: /y, open: true}\n", f"      - {entry}\n")
    with pytest.raises(dmod.DescriptorError, match=message):
        dmod.parse_text(text, "a.yaml")


def test_descriptor_refuses_too_many_opens():
    many = "".join("      - {dataset: /x, open: true}\n" for _ in range(dmod.MAX_OPENS + 1))
    text = DESC.replace("      - {dataset: /y, open: true}\n", many)
    with pytest.raises(dmod.DescriptorError, match="at most"):
        dmod.parse_text(text, "a.yaml")


@needs_cc
def test_a_skeleton_whose_handles_fill_its_table_closes_earlier_ones(tmp_path):
    """A file open across steps whose datasets are opened again and again (each open a handle
    held until the file's close): past the runtime's 4096 handles it closes an earlier handle
    of the same dataset instead of giving up."""
    opens = [{"dataset": "/s{step}", "open": True}] * dmod.MAX_OPENS
    desc = {"skel": 1, "name": "opens", "ranks": 2, "steps": 5,
            "files": [{"name": "o.h5", "api": "hdf5",
                       "datasets": [{"name": "/s{step}", "type": "int32", "dims": [4]}],
                       "writes": [{"dataset": "/s{step}", "start": ["rank * 2"], "count": [2]},
                                  *opens]}]}  # fmt: skip
    skeleton = _skeleton(desc, tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    run_mpi(2, [skeleton, "--dir", out, "--timing", tmp_path / "t.json"], timeout=300)
    assert [line.strip() for line in h5dump_structure(out / "o.h5") if "DATASET" in line] == [
        f'DATASET "s{i}" {{' for i in range(5)
    ]
