"""Insights of real tiny kernel runs match each kernel's known I/O pattern (as SmartIO checked
its insights against IOR's configuration, Sec. 4.1)."""

import pytest
from kernel_profiles import profile_kernel

from iotune import controlfile, insights, storage_layout, trace_insights
from iotune import profile as prof


def _insights(tmp_path, kernel, libiotune, name, args, trace=True, layouts=None):
    path = profile_kernel(tmp_path, kernel(name), args, libiotune, trace=trace)
    traces = trace_insights.load_traces(path) if trace else []
    groups = insights.from_profile(prof.load(path), traces, layouts=layouts,
                                   search_dirs=[tmp_path])  # fmt: skip
    return [g for g in groups if g.get("interface")]


def _pick(group, keys):
    return {k: group.get(k) for k in keys}


KEYS = ("file_mode", "interface", "transfer_mode", "access_pattern", "io_mix", "layout",
        "fill_time", "fully_written")  # fmt: skip

# kernel, args, group pattern, expected insights
KNOWN = [
    ("vpicio", ["--particles", "1024"], "vpicio.h5",
     dict(file_mode="shared", interface="hdf5", transfer_mode="collective",
          access_pattern="sequential", io_mix="write", layout="contiguous", fill_time=None,
          fully_written="yes", noncontiguous_fraction=0.0, writes=16, transfer_size_max=4096)),
    ("vorpalio", ["--block", "8,8,4"], "vorpalio.h5",  # 2 ranks split along x: 32 runs each
     dict(file_mode="shared", interface="hdf5", transfer_mode="collective",
          access_pattern="strided", io_mix="write", layout="contiguous", fully_written="yes",
          noncontiguous_fraction=1.0, writes=6)),
    ("vorpalio", ["--block", "8,8,4", "--procs", "1,1,2"], "vorpalio.h5",  # split along z
     dict(access_pattern="sequential", noncontiguous_fraction=0.0)),
    ("gcrmio", ["--cells", "256", "--levels", "4", "--chunk-cells", "64"], "gcrmio.h5",
     dict(file_mode="shared", interface="hdf5", transfer_mode="collective",
          access_pattern="sequential", io_mix="write", layout="chunked", fill_time="ifset",
          filters="no", fully_written="yes", chunk_bytes_max=192 * 4 * 8, writes=10)),
    ("gcrmio", ["--cells", "256", "--levels", "4", "--chunk-cells", "0"], "gcrmio.h5",
     dict(layout="contiguous", fill_time=None, chunk_bytes_max=None)),
    ("gcrmio", ["--cells", "256", "--levels", "4", "--mode", "independent"], "gcrmio.h5",
     dict(transfer_mode="independent", layout="chunked")),
    # one call through a view of 9 pieces per rank, each between the other rank's: strided, as
    # the same pieces written one call each (mpiio-per-var); sequential before the view counted
    ("haccio", ["--particles", "1000", "--mode", "mpiio-one-call"], "haccio.dat",
     dict(file_mode="shared", interface="mpiio", transfer_mode="collective", writes=2,
          file_views=2, access_pattern="strided", noncontiguous_fraction=1.0, io_mix="write",
          layout=None)),
    ("haccio", ["--particles", "1000", "--mode", "mpiio-per-var"], "haccio.dat",
     dict(file_mode="shared", interface="mpiio", transfer_mode="collective", writes=19,
          file_views=0, access_pattern="strided", transfer_size_max=8000)),
    ("haccio", ["--particles", "1000", "--mode", "posix", "--layout", "fpp"], "haccio.r*.dat",
     dict(file_mode="per_process", interface="posix", transfer_mode="independent", files=2,
          writes=20, access_pattern="sequential")),
    ("iorio", ["--api", "mpiio", "--block", "64K", "--transfer", "4K", "--segments", "2"],
     "iorio.dat",
     dict(file_mode="shared", interface="mpiio", transfer_mode="independent", writes=64,
          access_pattern="sequential", transfer_size_median=4096, small_write_fraction=1.0,
          small_writes=64, backward_fraction=0.0)),
    ("iorio", ["--api", "mpiio", "--mode", "collective", "--block", "64K", "--transfer", "4K",
               "--segments", "2"], "iorio.dat",
     dict(transfer_mode="collective", access_pattern="sequential")),
    ("iorio", ["--api", "posix", "--layout", "fpp", "--block", "64K", "--transfer", "4K"],
     "iorio.r*.dat",
     dict(file_mode="per_process", interface="posix", transfer_mode="independent", files=2,
          access_pattern="sequential", gap_fraction=0.0)),
    ("iorio", ["--api", "hdf5", "--order", "random", "--block", "64K", "--transfer", "4K",
               "--segments", "2"], "iorio.h5",
     dict(file_mode="shared", interface="hdf5", transfer_mode="independent",
          access_pattern="random", layout="contiguous", fully_written="yes")),
    ("iorio", ["--api", "posix", "--steps", "3", "--block", "64K", "--transfer", "4K"],
     "iorio.*.dat",
     dict(file_mode="shared", files=3, interface="posix", access_pattern="sequential")),
]  # fmt: skip


@pytest.mark.parametrize("name, args, pattern, expected", KNOWN,
                         ids=[f"{k[0]}-{'-'.join(k[1])}" for k in KNOWN])  # fmt: skip
def test_kernel_insights_match_the_known_pattern(
    tmp_path, kernel, libiotune, name, args, pattern, expected
):
    groups = _insights(tmp_path, kernel, libiotune, name, args)
    assert [g.pattern for g in groups] == [pattern]
    assert _pick(groups[0], expected) == expected
    assert groups[0].get("ranks") == 2
    assert groups[0].get("fs")  # statfs of the test directory


def test_without_trace_the_pattern_is_unknown_and_said(tmp_path, kernel, libiotune):
    (g,) = _insights(tmp_path, kernel, libiotune, "vorpalio", ["--block", "8,8,4"], trace=False)
    assert g.get("access_pattern") is None
    assert g.get("fully_written") is None
    assert "no trace" in g.notes["access_pattern"]
    assert g.get("transfer_mode") == "collective"  # counters still tell this
    assert g.get("layout") == "contiguous"  # from the file itself


def test_without_the_file_the_layout_is_unknown_and_said(tmp_path, kernel, libiotune):
    args = ["--cells", "256", "--levels", "4", "--cleanup"]
    (g,) = _insights(tmp_path, kernel, libiotune, "gcrmio", args)
    # the trace's datasets still say chunked; the fill time needs the file, or bytes beyond the
    # data of 1 MiB or more (storage_layout.fill_shows): this file's datasets are smaller
    assert g.get("layout") == "chunked" and g.get("fill_time") is None
    assert g.get("filters") is None
    assert "trace's datasets" in g.notes["layout"] and "gcrmio.h5 is gone" in g.notes["layout"]
    assert g.get("write_amplification") > 1.5  # fill values: visible in the counters


class _NoDatasets(dict):
    """Layouts as h5dump gives them for a file of virtual datasets only: none."""

    def get(self, name, default=None):
        return {}


def test_a_file_with_no_readable_layout_is_said_so_not_blamed_on_the_trace(
    tmp_path, kernel, libiotune
):
    args = ["--block", "8,8,4"]
    (g,) = _insights(tmp_path, kernel, libiotune, "vorpalio", args, False, _NoDatasets())
    assert "not the file" in g.notes["layout"]  # the counters' guess, said as such
    assert "no dataset with a layout it could read" in g.notes["layout"]
    assert "none of the datasets" not in g.notes["layout"]


def test_read_and_write_mix(tmp_path, kernel, libiotune):
    (g,) = _insights(tmp_path, kernel, libiotune, "vpicio", ["--particles", "1024", "--read"])
    assert g.get("io_mix") == "mixed"
    assert g.get("reads") == 16 and g.get("writes") == 16
    assert g.get("write_fraction") == pytest.approx(0.5)


def test_every_insight_is_named_and_set():
    names = [i.name for i in insights.INSIGHTS]
    assert len(names) == len(set(names))
    for i in insights.INSIGHTS:
        assert i.kind in ("count", "size", "fraction", "ratio", "seconds", "word"), i.name
        assert i.meaning
    g = insights.from_profile({"ranks": 1, "files": [{"name": "a.dat", "posix": {"writes": 1,
                               "bytes_written": 10}}], "config": {}})[0]  # fmt: skip
    assert set(g.values) == set(names)


def test_imbalance_and_what_it_costs_come_from_the_worst_file():
    def f(name, mx, mean):
        t = {"max": mx, "min": 0.0, "mean": mean, "imbalance": mx / mean}
        return {"name": name, "ranks": 2, "posix": {"writes": 2, "bytes_written": 20}, "time_s": t}

    files = [f("out.1.dat", 3.0, 2.0), f("out.2.dat", 0.004, 0.002)]
    (g,) = insights.from_profile({"ranks": 2, "files": files, "config": {}})
    assert g.get("imbalance") == pytest.approx(2.0)  # the small file's ratio
    assert g.get("imbalance_wait_s") == pytest.approx(1.0)  # the large file's wait


@pytest.mark.parametrize(
    "name, group",
    [("chk_0001.h5", "chk_*.h5"), ("iorio.r1.dat", "iorio.r*.dat"), ("vpicio.h5", "vpicio.h5"),
     ("/scratch/run/plt00010", "plt*"), ("data.0001", "data.*")],
)  # fmt: skip
def test_file_groups(name, group):
    assert insights.group_pattern(name) == group


def test_a_pattern_names_a_group_only_when_several_files_share_it():
    """out_0001.h5 alone was shown as the pattern out_*.h5 (an outside tester's finding): a
    group of one file is named by its own name, made a glob that matches only itself; a
    pattern's own text (not its digits) matches only itself too."""
    import fnmatch

    groups, _ = insights.group_files(["/run/out_0001.h5"])
    assert groups == {"out_0001.h5": ["/run/out_0001.h5"]}
    groups, _ = insights.group_files(["/run/out_0001.h5", "/run/out_0002.h5", "/run/a.h5"])
    assert groups == {"out_*.h5": ["/run/out_0001.h5", "/run/out_0002.h5"], "a.h5": ["/run/a.h5"]}
    groups, _ = insights.group_files(["/a/out_1.h5", "/b/out_1.h5"])  # two files, one name
    assert list(groups) == ["out_*.h5"]
    odd = "x*?[7].h5"  # glob characters in a name
    groups, _ = insights.group_files([odd, "/y/ckpt[1].2"])
    assert set(groups) == {"x[*][?][[]7].h5", "ckpt[[]1].2"}
    for name, pattern in ((odd, "x[*][?][[]7].h5"), ("ckpt[1].2", "ckpt[[]1].2")):
        assert fnmatch.fnmatchcase(name, pattern) and not fnmatch.fnmatchcase("x1.h5", pattern)
        assert controlfile.match_file(pattern, f"/z/{name}")
    assert insights.group_pattern("/r/x*_01.h5") == "x[*]_*.h5"
    # what advise shows: the group of one file by its name, with no FileName (one group)
    t = {"max": 1.0, "min": 0.0, "mean": 0.5, "imbalance": 2.0}
    one = {"name": "/data/out_0001.h5", "ranks": 2, "posix": {"writes": 2, "bytes_written": 20},
           "time_s": t}  # fmt: skip
    (g,) = insights.from_profile({"ranks": 2, "config": {}, "files": [one]})
    assert g.pattern == "out_0001.h5" and g.files == ["/data/out_0001.h5"]
    from iotune.advise import advise, render

    assert "files out_0001.h5 (1): " in render.text(advise([g], "p.json"))
    # beyond LONE_NAMES_MAX lone names, one alone under its extension is itself too
    words = ["".join(chr(97 + (i // 26**k) % 26) for k in range(3)) for i in range(1200)]
    groups, took = insights.group_files([f"/r/{w}.dat" for w in words] + ["/r/z.bin"])
    assert set(groups) == {"*.dat", "z.bin"} and took == {"*.dat": 1200}


def test_beyond_a_thousand_lone_names_files_are_grouped_by_extension():
    """10^6 files whose names share no pattern made 10^6 one-file groups (107 s, 1.4 GB of
    advice nobody reads): beyond LONE_NAMES_MAX such names they are grouped by extension, and
    the group says so; groups of a shared pattern stay as they were."""
    words = ["".join(chr(97 + (i // 26**k) % 26) for k in range(3)) for i in range(1500)]
    series = [f"/run/chk_{i:04d}.h5" for i in range(5)]
    at_most = [f"/run/{w}.dat" for w in words[: insights.LONE_NAMES_MAX]]
    groups, took = insights.group_files([*at_most, *series])
    assert len(groups) == insights.LONE_NAMES_MAX + 1 and not took
    names = [f"/run/{w}.dat" for w in words[:1200]] + ["/a/notes", "/b/notes"] + series
    groups, took = insights.group_files(names)
    assert set(groups) == {"*.dat", "notes", "chk_*.h5"}
    assert len(groups["*.dat"]) == 1200 and took == {"*.dat": 1200}
    assert groups["chk_*.h5"] == series

    import many_files

    (g,) = insights.from_profile(many_files.many_files(1200, "distinct"))
    assert g.notes["files"].startswith("1200 files whose names share no pattern")


H5DUMP = """HDF5 "x.h5" {
GROUP "/" {
   GROUP "g" {
      DATASET "a" {
         DATATYPE  H5T_IEEE_F64LE
         DATASPACE  SIMPLE { ( 100, 4 ) / ( 100, 4 ) }
         STORAGE_LAYOUT {
            CHUNKED ( 10, 4 )
            SIZE 3200
         }
         FILTERS {
            COMPRESSION DEFLATE { LEVEL 4 }
         }
         FILLVALUE {
            FILL_TIME H5D_FILL_TIME_NEVER
            VALUE  H5D_FILL_VALUE_DEFAULT
         }
         ALLOCATION_TIME {
            H5D_ALLOC_TIME_EARLY
         }
      }
   }
   DATASET "b" {
      DATATYPE  H5T_STD_I32LE
      DATASPACE  SIMPLE { ( 8 ) / ( 8 ) }
      STORAGE_LAYOUT {
         CONTIGUOUS
         SIZE 32
         OFFSET 2048
      }
      FILTERS {
         NONE
      }
      FILLVALUE {
         FILL_TIME H5D_FILL_TIME_IFSET
         VALUE  H5D_FILL_VALUE_DEFAULT
      }
      ALLOCATION_TIME {
         H5D_ALLOC_TIME_LATE
      }
   }
}
}
"""


def test_parse_h5dump():
    lays = storage_layout.parse_h5dump(H5DUMP)
    assert lays["/g/a"] == storage_layout.Layout("chunked", (10, 4), True, "never", 8, "default")
    assert lays["/b"] == storage_layout.Layout("contiguous", (), False, "ifset", 4, "default")
    assert lays["/g/a"].chunk_bytes() == 320
    v = storage_layout.layout_insights(list(lays.values()))
    assert v == {"layout": "mixed", "filters": "yes", "fill_time": "never",
                 "fill_value": "default", "chunk_bytes_max": 320,
                 "chunk_cache_needed": 1 << 20}  # fmt: skip
    # a fill value the application set (h5dump shows it, not H5D_FILL_VALUE_DEFAULT)
    own = storage_layout.parse_h5dump(H5DUMP.replace("VALUE  H5D_FILL_VALUE_DEFAULT",
                                                     "VALUE  -1", 1))  # fmt: skip
    assert own["/g/a"].fill_value == "own"
    assert storage_layout.layout_insights(list(own.values()))["fill_value"] == "own"


def test_contiguous_box():
    assert trace_insights.contiguous_box((4, 8, 16), (4, 8, 16))
    assert trace_insights.contiguous_box((2, 8, 16), (4, 8, 16))
    assert trace_insights.contiguous_box((1, 1, 5), (4, 8, 16))
    assert not trace_insights.contiguous_box((4, 8, 8), (4, 8, 16))
    assert not trace_insights.contiguous_box((2, 4, 16), (4, 8, 16))


def test_insight_table_is_checked(tmp_path):
    path = tmp_path / "insights.tsv"
    path.write_text("# INSIGHTS_VERSION 3\nname\tkind\twords\tmeaning\nx\tcount\t-\tan x\n")
    assert insights.read_insights(path) == (3, (insights.Insight("x", "count", "an x"),))
    path.write_text("# INSIGHTS_VERSION 3\nname\tkind\twords\tmeaning\nx\tbytes\t-\tan x\n")
    with pytest.raises(ValueError, match="insights.tsv:3: a row is"):
        insights.read_insights(path)
    path.write_text("name\tkind\twords\tmeaning\n")
    with pytest.raises(ValueError, match="INSIGHTS_VERSION"):
        insights.read_insights(path)


def _trace(rank, writes, extent=(4, 4), type_size=8):
    """A rank's trace of H5Dwrite calls, each (step, box, size) on one dataset."""
    sigs = [{"layer": "hdf5", "func": "H5Dwrite", "file": "a.h5", "dataset": 0, "dims": list(box),
             "size": size, "step": step, "mode": 1} for step, box, size in writes]  # fmt: skip
    return {"schema": "iotune-trace", "version": 2, "rank": rank, "ranks": 2,
            "datasets": [{"file": "a.h5", "name": "/d", "dims": list(extent),
                          "type_size": type_size}],
            "signatures": sigs,
            "events": [[i, 1, 0.0, 0.0, 0.0] for i in range(len(sigs))]}  # fmt: skip


def _covered(*traces):
    calls = [c for t in traces for c in trace_insights.trace_calls(t)]
    return trace_insights.fully_written(calls)


def test_fully_written_is_the_union_of_the_boxes():
    # rows 0-1 by rank 0, rows 2-3 by rank 1: everything
    assert _covered(_trace(0, [(0, (2, 4), 64)]), _trace(1, [(64, (2, 4), 64)])) == "yes"
    # rank 1 writes rows 0-1 again: as many elements, but rows 2-3 keep their fill values
    assert _covered(_trace(0, [(0, (2, 4), 64)]), _trace(1, [(0, (2, 4), 64)])) == "no"
    # one rank writes rows 0-1 twice and rows 2-3 once, in pieces
    t = _trace(0, [(0, (2, 4), 64), (0, (2, 4), 64), (64, (1, 4), 32), (32, (1, 4), 32)])
    assert _covered(t) == "yes"
    # a selection smaller than its bounding box (every other row): cannot be known
    assert _covered(_trace(0, [(0, (4, 4), 64)])) is None


def test_union_volume():
    assert trace_insights._union_volume([((0, 0), (2, 2)), ((1, 1), (2, 2))]) == 7
    assert trace_insights._union_volume([((0,), (4,)), ((2,), (4,)), ((10,), (1,))]) == 7
    assert trace_insights._union_volume([((0, 0, 0), (2, 2, 2)), ((0, 0, 0), (1, 1, 1))]) == 8


# h5dump -p -H of a checkpoint file as tests/data/real/checkpoint.c writes it (attributes on the
# group and on the dataset, a string type, a compound dataset, a hard link)
H5DUMP_ATTRS = """HDF5 "chk_0000.h5" {
GROUP "/" {
   GROUP "fields" {
      ATTRIBUTE "code" {
         DATATYPE  H5T_STRING {
            STRSIZE 16;
            STRPAD H5T_STR_NULLTERM;
            CSET H5T_CSET_ASCII;
            CTYPE H5T_C_S1;
         }
         DATASPACE  SCALAR
      }
      ATTRIBUTE "time" {
         DATATYPE  H5T_IEEE_F64LE
         DATASPACE  SCALAR
      }
      DATASET "field0" {
         DATATYPE  H5T_IEEE_F64LE
         DATASPACE  SIMPLE { ( 512, 512 ) / ( 512, 512 ) }
         STORAGE_LAYOUT {
            CHUNKED ( 64, 512 )
            SIZE 2097152
         }
         FILTERS {
            NONE
         }
         FILLVALUE {
            FILL_TIME H5D_FILL_TIME_IFSET
            VALUE  H5D_FILL_VALUE_DEFAULT
         }
         ALLOCATION_TIME {
            H5D_ALLOC_TIME_EARLY
         }
         ATTRIBUTE "units" {
            DATATYPE  H5T_STD_I8LE
            DATASPACE  SCALAR
         }
      }
      DATASET "same" {
         HARDLINK "/fields/field0"
      }
   }
   DATASET "particles" {
      DATATYPE  H5T_COMPOUND {
         H5T_IEEE_F32LE "x";
         H5T_STD_I64LE "id";
      }
      DATASPACE  SIMPLE { ( 8 ) / ( 8 ) }
      STORAGE_LAYOUT {
         CONTIGUOUS
         SIZE 96
         OFFSET 4096
      }
      FILTERS {
         NONE
      }
      FILLVALUE {
         FILL_TIME H5D_FILL_TIME_IFSET
         VALUE  H5D_FILL_VALUE_DEFAULT
      }
      ALLOCATION_TIME {
         H5D_ALLOC_TIME_EARLY
      }
   }
}
}
"""


def test_parse_h5dump_with_attributes_compounds_and_links():
    # before: the group's ATTRIBUTE block closed /fields, so field0 became /field0 (and the
    # dataset's own attribute gave it a 1-byte type)
    lays = storage_layout.parse_h5dump(H5DUMP_ATTRS)
    assert set(lays) == {"/fields/field0", "/fields/same", "/particles"}
    assert lays["/fields/field0"] == storage_layout.Layout(
        "chunked", (64, 512), False, "ifset", 8, "default"
    )
    assert lays["/fields/same"] == lays["/fields/field0"]
    assert lays["/particles"] == storage_layout.Layout(
        "contiguous", (), False, "ifset", None, "default"
    )


def test_parse_h5dump_reads_what_the_skeletons_reader_reads():
    """One reader of h5dump's output (iotune.skel.h5layout.parse): advise's layouts are its
    datasets, with their chunks; a dataset whose layout was not shown or whose block the
    output cut short is left out rather than guessed; an array type's size is not its
    element's; a quote in a name (h5dump does not escape it) stays in the path."""
    from iotune.skel import h5layout

    for text in (H5DUMP, H5DUMP_ATTRS):
        lays, read = storage_layout.parse_h5dump(text), h5layout.parse(text)["datasets"]
        assert set(lays) <= set(read)
        for path, lay in lays.items():  # a hard link: its target's
            target = read[read[path]["hardlink"]] if read[path].get("hardlink") else read[path]
            assert list(lay.chunk) == (target["chunks"] or [])
    cut = H5DUMP_ATTRS[: H5DUMP_ATTRS.index("CHUNKED ( 64, 512 )")]
    assert "/fields/field0" not in storage_layout.parse_h5dump(cut)
    shown = """GROUP "/" {
   DATASET "a" {
      DATATYPE  H5T_ARRAY { [3] H5T_IEEE_F32LE }
      STORAGE_LAYOUT {
         CHUNKED ( 8 )
      }
      FILTERS {
"""
    assert storage_layout.parse_h5dump(shown) == {}  # its filters cut short: unknown
    whole = shown + '         NONE\n      }\n   }\n   GROUP "g"x" {\n' + shown.split("\n", 1)[1]
    assert storage_layout.parse_h5dump(whole) == {
        "/a": storage_layout.Layout("chunked", (8,), False, None, None)
    }
    assert storage_layout.parse_h5dump(whole + "      }\n   }\n}\n}\n")['/g"x/a'].chunk == (8,)
    assert storage_layout.parse_h5dump('GROUP "/" {\n   DATASET "x" {\n   }\n}\n') == {}


def test_an_out_of_range_integer_of_a_trace_is_said_so():
    """A whole number beyond its range was "an integer expected": it is one, out of range."""
    from iotune.trace_insights import _trace_problem

    sig = {"layer": "posix", "func": "write", "file": None}
    big = _trace_problem({"signatures": [{**sig, "size": 2**64}]})
    assert big == f"signatures[0].size: out of range (0..{2**63 - 1})"
    low = _trace_problem({"signatures": [{**sig, "step": -(2**63) - 1}]})
    assert low == f"signatures[0].step: out of range ({-(2**63)}..{2**63 - 1})"
    assert _trace_problem({"signatures": [{**sig, "size": "8"}]}) == (
        "signatures[0].size: an integer expected"
    )
    ds = _trace_problem({"datasets": [{"type_size": -1}]})
    assert ds == f"datasets[0].type_size: out of range (0..{2**63 - 1})"
