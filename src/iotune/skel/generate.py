"""C source, Makefile and job scripts of a skeleton, from a descriptor.

The generated `skeleton.c` says what is written, in the descriptor's order, with the
decomposition as C expressions; the fixed runtime (the package's `skel/c/`: `skel_rt.h` and
`skel_*.c`, copied beside it) does the I/O for the method chosen at run time and the timing.
The Makefile links HDF5 and MPI dynamically (pkg-config, never h5pcc) so that a preloaded
libiotune.so sees every call.
"""

from __future__ import annotations

import ast
import os
import shutil
import stat
from dataclasses import replace
from importlib import resources

from iotune.skel import attrs, expr
from iotune.skel.attrs import Attribute
from iotune.skel.descriptor import LIBVERS, Dataset, Descriptor, File, View, Write, has_placeholder

API_C = {"hdf5": "SKEL_HDF5", "mpiio": "SKEL_MPIIO", "posix": "SKEL_POSIX"}
# how a skeleton spends the time between calls inside a step (writes' gap_s): CPU work over
# the data just transferred, a sleep, or not at all (skel_gaps.c; --gaps at run time)
GAPS = ("busy", "sleep", "off")


def _c(tree: ast.expr) -> str:
    return expr.to_c(tree)


def _cstr(text: str) -> str:
    """A C string literal of text: printable ASCII as it is except \\ " and ? (escaped, so no
    trigraph can form), every other byte of its UTF-8 as a three-digit octal escape. Data from
    a descriptor reaches the C source only this way (never in a comment, never as a name)."""
    out = []
    for b in text.encode("utf-8", "surrogatepass"):
        ch = chr(b)
        if ch in '\\"?':
            out.append("\\" + ch)
        elif 0x20 <= b < 0x7F:
            out.append(ch)
        else:
            out.append(f"\\{b:03o}")
    return '"' + "".join(out) + '"'


def _array(name: str, values: list[str]) -> str:
    return f"long long {name}[{len(values)}] = {{{', '.join(values)}}};"


def _dataset_code(ds: Dataset, ind: str) -> list[str]:
    if ds.exists:  # made by an earlier entry of the same file: opened
        opened = f"{ind}  skel_dataset_open(f, {_cstr(ds.name)}, step, type);"
        return [f"{ind}{{ /* open a dataset */", *(f"{ind}  {x}" for x in _type_code(ds)),
                opened, f"{ind}}}"]  # fmt: skip
    nd = len(ds.dims)
    lines = [
        f"{ind}{{ /* create a dataset */",
        f"{ind}  {_array('dims', [_c(x) for x in ds.dims])}",
    ]
    maxdims = chunks = "NULL"
    if ds.maxdims is not None:
        lines.append(
            f"{ind}  " + _array("maxdims", ["-1" if x is None else _c(x) for x in ds.maxdims])
        )
        maxdims = "maxdims"
    if ds.chunks is not None:
        lines.append(f"{ind}  " + _array("chunks", [_c(x) for x in ds.chunks]))
        chunks = "chunks"
    lines.extend(f"{ind}  {x}" for x in _type_code(ds))
    filters = _cstr(",".join(ds.filters)) if ds.filters else "NULL"
    fill = f"H5D_FILL_TIME_{ds.fill_time.upper()}" if ds.fill_time else "-1"
    alloc = f"H5D_ALLOC_TIME_{ds.alloc_time.upper()}" if ds.alloc_time else "-1"
    value = _cstr(ds.fill_value) if ds.fill_value else "NULL"
    header = f"{0 if not ds.track_times else -1}, {_ORDER.get(ds.attr_order, -1)}"
    if ds.anonymous:  # H5Dcreate_anon, never linked
        lines.append(f"{ind}  skel_anonymous(f);")
    lines.append(
        f"{ind}  skel_dataset(f, {_cstr(ds.name)}, step, type, {nd}, dims, "
        f"{maxdims}, {chunks}, {filters}, {alloc}, {fill}, {value}, {header});"
    )
    lines.append(f"{ind}}}")
    return lines


# a creation order's H5P_CRT_ORDER_* flags (tracked 1, tracked and indexed 3)
_ORDER = {"tracked": 1, "indexed": 3}


def _format_code(f: File, ind: str) -> list[str]:
    """skel_file_format() before the file's skel_open: the format it is created or opened in
    (-1: HDF5's default)."""
    if not f.format:
        return []
    lo, hi = f.format.get("libver", [None, None])
    libver = [str(LIBVERS.index(v)) if v else "-1" for v in (lo, hi)]
    track = "0" if f.format.get("track_times") is False else "-1"
    orders = [str(_ORDER.get(f.format.get(k), -1)) for k in ("link_order", "attr_order")]
    return [f"{ind}skel_file_format(s, {', '.join([*libver, track, *orders])});"]


def _type_code(ds: Dataset) -> list[str]:
    """Declares `type`, the dataset's element type (skel_rt.h's skel_type_*)."""
    if ds.type == "opaque":
        return [f"hid_t type = skel_type_opaque({ds.type_size});"]
    if ds.type == "compound":
        ms = ds.members or []
        return [
            f"static const char *const names[{len(ms)}] = {{"
            + ", ".join(_cstr(m.name) for m in ms)
            + "};",
            f"static const char *const types[{len(ms)}] = {{"
            + ", ".join(_cstr(m.type) for m in ms)
            + "};",
            f"static const long long offsets[{len(ms)}] = {{"
            + ", ".join(f"{m.offset}LL" for m in ms)
            + "};",
            f"hid_t type = skel_type_compound({ds.type_size}, {len(ms)}, names, types, offsets);",
        ]
    return [f"hid_t type = skel_type_named({_cstr(ds.type)});"]


def _attribute_type(a: Attribute) -> str:
    """The C expression of an attribute's element type (skel_rt.h's skel_type_*)."""
    if a.type == "string":
        return f"skel_type_string({a.size}, {attrs.PADS[a.pad]}, {attrs.CSETS[a.cset]})"
    if a.type == "opaque":
        return f"skel_type_opaque({a.size})"
    return f"skel_type_named({_cstr(a.type)})"


def _attribute_code(a: Attribute, ind: str) -> list[str]:
    """An attribute on its object, of zeros (skel_attribute)."""
    typ = _attribute_type(a)
    dims = a.dims or []
    arr = _array("dims", [f"{v}LL" for v in dims]) if dims else "const long long *dims = NULL;"
    return [
        f"{ind}{{ /* an attribute */",
        f"{ind}  {arr}",
        f"{ind}  skel_attribute(f, {_cstr(a.on)}, step, {_cstr(a.name)}, {typ}, "
        f"{len(dims)}, dims);",
        f"{ind}}}",
    ]


def _attribute_call_code(w: Write, ind: str) -> list[str]:
    """An attribute call of the application's, in its place (skel_attr_create, _call)."""
    a = w.attr
    assert a is not None
    name = _cstr(a.name) if a.name is not None else "NULL"
    if a.call == "create" and a.attr is not None:
        dims = a.attr.dims or []
        nd = -1 if a.attr.empty else len(dims)
        arr = _array("dims", [f"{v}LL" for v in dims]) if dims else "const long long *dims = NULL;"
        return [f"{ind}{{ /* create an attribute */", f"{ind}  {arr}",
                f"{ind}  skel_attr_create(f, {_cstr(a.on)}, step, {name}, "
                f"{_attribute_type(a.attr)}, {nd}, dims);", f"{ind}}}"]  # fmt: skip
    when = _c(w.when) if w.when is not None else "1"
    to = _cstr(a.to) if a.to is not None else "NULL"
    size = a.size if a.size is not None else -1
    return [f"{ind}skel_attr_call(f, SKEL_ATTR_{a.call.upper()}, {_cstr(a.on)}, step, {name}, "
            f"{to}, {size}LL, {when});"]  # fmt: skip


def _write_code(w: Write, nd: int, ind: str) -> list[str]:
    coll = "1" if w.collective else "0"
    when = _c(w.when) if w.when is not None else "1"
    if w.attr is not None:
        return _attribute_call_code(w, ind)
    if w.create:  # the dataset is made just before (_file_body)
        return []
    if w.flush:  # H5Fflush where the application flushed
        return [f"{ind}skel_sync(f); /* H5Fflush */"]
    if w.delete is not None:  # H5Ldelete where the application deleted the link
        return [f"{ind}skel_delete(f, {_cstr(w.delete)}, step); /* H5Ldelete */"]
    if w.scale_call and w.scale_call.startswith("lookup:"):  # reads the dataset's scales
        kind = ("is_scale", "count", "iterate").index(w.scale_call[7:])
        return [f"{ind}skel_lookup_scales(f, {_cstr(w.dataset)}, step, {kind}, {w.dim}, {when});"]
    if w.scale_call == "set":  # dimension scales: every rank of the file, as in HDF5
        return [f"{ind}skel_set_scale(f, {_cstr(w.dataset)}, step, {w.scale_name});"]
    if w.scale_call is not None:
        attach = 1 if w.scale_call == "attach" else 0
        return [f"{ind}skel_attach_scale(f, {_cstr(w.dataset)}, {_cstr(w.scale)}, step, "
                f"{w.dim}, {attach});"]  # fmt: skip
    if w.extent is not None:  # H5Dset_extent: every rank of the file, as in HDF5
        dims = _array("extent", [_c(x) for x in w.extent])
        return [f"{ind}{{ /* extend a dataset */", f"{ind}  {dims}",
                f"{ind}  skel_extend(f, {_cstr(w.dataset)}, step, {nd}, extent, {when});",
                f"{ind}}}"]  # fmt: skip
    if w.set_size is not None:  # MPI_File_set_size (every rank of the file), ftruncate
        return [f"{ind}/* set the file's size */",
                f"{ind}skel_set_size(f, {_c(w.set_size)}, {when});"]  # fmt: skip
    if w.seek_shared is not None:  # MPI_File_seek_shared (every rank of the file)
        return [f"{ind}/* move the shared file pointer */",
                f"{ind}skel_seek_shared(f, {_c(w.seek_shared)});"]  # fmt: skip
    once = isinstance(w.repeat, ast.Constant) and w.repeat.value == 1
    lines = [f"{ind}{{" if once else f"{ind}for (long long i = 0; i < {_c(w.repeat)}; i++) {{"]
    inner = ind + "  "
    if w.memory is not None or w.memory_by_rank is not None:  # MPI-IO files only
        lines.extend(_memory_code(w, inner))
    if w.dataset is not None:
        what = "read" if w.read else "write"
        lines[0] = f"{ind}/* {what} a dataset's selection */\n" + lines[0]
        lines.append(f"{inner}long long start[{nd}], count[{nd}];")
        lines.append(f"{inner}int active = {when};")
        stride = [_c(x) for x in w.stride] if w.stride else ["0LL"] * nd
        step_of = (lambda k: "") if once else (lambda k: f" + i * {stride[k]}")
        if w.by_rank is None:
            for k in range(nd):
                lines.append(f"{inner}start[{k}] = {_c(w.start[k])}{step_of(k)};")
                lines.append(f"{inner}count[{k}] = {_c(w.count[k])};")
        else:
            lines.append(f"{inner}switch (rank) {{")
            for r, (st, ct) in sorted(w.by_rank.items()):
                sets = " ".join(
                    f"start[{k}] = {_c(st[k])}{step_of(k)}; count[{k}] = {_c(ct[k])};"
                    for k in range(nd)
                )
                lines.append(f"{inner}case {r}: {sets} break;")
            zero = " ".join(f"start[{k}] = 0; count[{k}] = 0;" for k in range(nd))
            lines.append(f"{inner}default: {zero} active = 0;")
            lines.append(f"{inner}}}")
        if w.direct:  # a chunk as stored: its offset and stored size
            lines[0] = lines[0].replace("a dataset's selection", "a chunk as stored (direct)")
            size = _c(w.size) if w.size is not None else "0LL"
            tail = "active);" if w.read else f"{w.filter_mask}u, active);"
            call = "skel_read_chunk" if w.read else "skel_write_chunk"
            lines.append(f"{inner}(void)count;")
            lines.append(f"{inner}{call}(f, {_cstr(w.dataset)}, step, {nd}, start, {size}, {tail}")
        else:
            call = "skel_read" if w.read else "skel_write"
            fresh = ("1, " if w.fresh else "0, ") if w.read else ""  # read into fresh memory
            lines.append(
                f"{inner}{call}(f, {_cstr(w.dataset)}, step, {nd}, start, count, {coll}, "
                f"{fresh}active);"
            )
    elif w.view is not None or w.view_by_rank is not None:
        lines[0] = f"{ind}/* write bytes through a file view */\n" + lines[0]
        stride = "" if once else f" + i * {_c(w.stride or expr.parse(0))}"
        lines.extend(_view_code(w, inner, stride))
        lines.append(
            f"{inner}skel_write_view(f, offset, nbytes, lb, extent, at, nblocks, view, {coll}, "
            "active);"
        )
    else:
        lines[0] = f"{ind}/* {'read' if w.read else 'write'} bytes */\n" + lines[0]
        stride = "" if once else f" + i * {_c(w.stride) if w.stride is not None else '0LL'}"
        # nbytes, not size: `size` is the job's size in the expressions
        lines.append(f"{inner}long long offset, nbytes;")
        lines.append(f"{inner}int active = {when};")
        if w.by_rank is None:
            lines.append(f"{inner}offset = {_c(w.offset)}{stride};")
            lines.append(f"{inner}nbytes = {_c(w.size)};")
        else:
            lines.append(f"{inner}switch (rank) {{")
            for r, (off, size) in sorted(w.by_rank.items()):
                lines.append(
                    f"{inner}case {r}: offset = {_c(off)}{stride}; nbytes = {_c(size)}; break;"
                )
            lines.append(f"{inner}default: offset = 0; nbytes = 0; active = 0;")
            lines.append(f"{inner}}}")
        if w.shared:  # through the shared file pointer (its offset is not used)
            call = "skel_read_shared" if w.read else "skel_write_shared"
            lines[0] = lines[0].replace(" bytes */", " bytes through the shared file pointer */")
            lines.append(f"{inner}(void)offset;")
            lines.append(f"{inner}{call}(f, nbytes, {coll}, active);")
        else:
            call = "skel_read_bytes" if w.read else "skel_write_bytes"
            lines.append(f"{inner}{call}(f, offset, nbytes, {coll}, active);")
    if w.gap_s > 0:  # the application's time before its next call (--gaps: how it is spent)
        lines.append(f"{inner}if (active) skel_gap(f, {w.gap_s!r});")
    lines.append(f"{ind}}}")
    return lines


def _memory_code(w: Write, ind: str) -> list[str]:
    """skel_memory(): the pieces of the application's memory datatype for the next write."""
    by_rank = w.memory_by_rank or {}
    if w.memory is not None:
        return [f"{ind}{{ static const long long mem[] = {{{', '.join(map(str, w.memory))}}};",
                f"{ind}  skel_memory(f, {len(w.memory)}, mem); }}"]  # fmt: skip
    lines = [f"{ind}switch (rank) {{"]
    for r, m in sorted(by_rank.items()):
        pieces = ", ".join(map(str, m))
        lines.append(f"{ind}case {r}: {{ static const long long mem[] = {{{pieces}}}; "
                     f"skel_memory(f, {len(m)}, mem); }} break;")  # fmt: skip
    lines.append(f"{ind}default: break;")
    lines.append(f"{ind}}}")
    return lines


def _view_code(w: Write, ind: str, stride: str) -> list[str]:
    """Declarations of offset, nbytes, lb, extent, at (-1: none), nblocks and view[] (offset,
    length, count, stride of each block or run) for this rank, and active (nbytes, not size:
    `size` is the job's size in the expressions)."""
    views = w.view_by_rank or {}
    most = max([len(v.blocks) for v in views.values()] + [len(w.view.blocks) if w.view else 0])
    lines = [
        f"{ind}long long offset = 0, nbytes = 0, lb = 0, extent = 0, at = -1, "
        f"view[{4 * max(most, 1)}];",
        f"{ind}int nblocks = 0, active = {_c(w.when) if w.when is not None else '1'};",
    ]

    def sets(off: ast.expr, size: ast.expr, v: View) -> str:
        out = [f"offset = {_c(off)}{stride};", f"nbytes = {_c(size)};", f"lb = {_c(v.lb)};",
               f"extent = {_c(v.extent)};", f"nblocks = {len(v.blocks)};"]  # fmt: skip
        if v.at is not None:
            out.append(f"at = {_c(v.at)};")
        for k, b in enumerate(v.blocks):
            count, step = (_c(b[2]), _c(b[3])) if len(b) == 4 else ("1", "0")
            out.append(f"view[{4 * k}] = {_c(b[0])}; view[{4 * k + 1}] = {_c(b[1])}; "
                       f"view[{4 * k + 2}] = {count}; view[{4 * k + 3}] = {step};")  # fmt: skip
        return " ".join(out)

    if w.view is not None and w.by_rank is None:
        lines.append(f"{ind}{sets(w.offset, w.size, w.view)}")
        return lines
    lines.append(f"{ind}switch (rank) {{")
    for r, (off, size) in sorted((w.by_rank or {}).items()):
        lines.append(f"{ind}case {r}: {sets(off, size, views[r])} break;")
    lines.append(f"{ind}default: active = 0;")
    lines.append(f"{ind}}}")
    return lines


def _once(w: Write, lines: list[str]) -> list[str]:
    """An entry's code, at the first step only when it is `once` (a call the application made
    once, before its steps)."""
    if not w.once:
        return lines
    return ["  if (step == 0) {", *(f"  {x}" for x in lines), "  }"]


def _file_body(f: File, index: int) -> list[str]:
    out = [
        f"/* files[{index}] ({f.api}): the calls of one step */",
        f"static void file_{index}(skel_file_t *f, long long step, long long rank, "
        "long long size) {",
        "  (void)f; (void)rank; (void)size; (void)step;",
    ]
    for g in f.groups:
        out.append(f"  skel_group(f, {_cstr(g)}, step);")
    by_name = {d.name: d for d in f.datasets}
    order = [d.name for d in f.datasets]  # the order the application created them in
    # datasets with `open: true` entries are opened there (each entry once), not at first use
    existing = {d.name for d in f.datasets if d.exists}
    pinned = {w.dataset for w in f.writes if w.open} & existing
    created: set[str] = set()
    for w in f.writes:
        if w.open and w.dataset in created | existing:  # H5Dopen here, another handle
            out.extend(_once(w, _dataset_code(replace(by_name[w.dataset or ""], exists=True),
                                              "  ")))  # fmt: skip
            created.add(w.dataset or "")
            continue
        named = [x for x in (w.dataset, w.scale, w.attr and w.attr.on) if x and x in by_name]
        made = []  # the datasets made for this entry (at the first step only with a `once`)
        if any(x not in created for x in named):  # they, and those listed before them
            for name in order[: max(order.index(x) for x in named) + 1]:
                if name not in created and (name in named or name not in pinned):
                    made.extend(_dataset_code(by_name[name], "  "))
                    created.add(name)
        if w.open:  # a dataset created just before, opened again here
            out.extend(_once(w, made + _dataset_code(replace(by_name[w.dataset or ""],
                                                             exists=True), "  ")))  # fmt: skip
            continue
        nd = len(by_name[w.dataset].dims) if w.dataset else 0
        out.extend(_once(w, made + _write_code(w, nd, "  ")))
    for name in order:  # datasets created after the last write, never written
        if name not in created:
            out.extend(_dataset_code(by_name[name], "  "))
            created.add(name)
    for a in f.attributes:
        out.extend(_attribute_code(a, "  "))
    if f.sync:
        out.append("  skel_sync(f); /* the application flushed the file to storage */")
    out.append("}")
    return out


def _open_flags(f: File) -> str:
    flags = ["SKEL_OPEN_EXISTING"] if f.existing else []
    if f.serial:
        flags.append("SKEL_OPEN_SERIAL")
    if any(w.read for w in f.writes):
        flags.append("SKEL_OPEN_READS")
    only_reads = all(
        w.read
        or (w.scale_call or "").startswith("lookup:")
        or (w.attr is not None and w.attr.call in attrs.LOOKS)
        or w.open
        for w in f.writes
    )
    only_reads = only_reads and all(d.exists for d in f.datasets)
    if f.existing and only_reads and not f.attributes and not f.groups and not f.sync:
        if not f.readwrite:
            flags.append("SKEL_OPEN_READONLY")  # as the application opened it to read
    if f.when is not None:
        flags.append("SKEL_OPEN_SUBSET")
    return " | ".join(flags) or "0"


def _member(f: File) -> str:
    """skel_open's member argument: the entry's `when` (1: every rank)."""
    return _c(f.when) if f.when is not None else "1"


def _steps_code(d: Descriptor, timed: bool) -> list[str]:
    """The step loop of main(): files opened once around it, per-step files inside, and so
    are the entries of a file opened more than once (written, closed, opened again to read):
    each is opened and closed around its calls, in the descriptor's order."""
    var = "f" if timed else "p"
    lines = []
    names = [f.name for f in d.files]
    inside = [f.per_step or f.each_step or f.once or names.count(f.name) > 1 for f in d.files]
    once = [i for i, f in enumerate(d.files) if not inside[i] and not f.input]
    for i in once:
        lines.extend(_format_code(d.files[i], "  "))
        lines.append(
            f"  skel_file_t *{var}{i} = skel_open(s, {_cstr(d.files[i].name)}, "
            f"{API_C[d.files[i].api]}, 0, {_open_flags(d.files[i])}, {_member(d.files[i])});"
        )
    lines.append("  for (long long step = 0; step < steps; step++) {")
    lines.append("    skel_step(s, step);")
    if d.compute_s > 0 and timed:
        lines.append(f"    if (step > 0) skel_compute(s, {d.compute_s!r}); /* between steps */")
    for i, f in enumerate(d.files):
        if f.input:  # made before the steps (_inputs_code)
            continue
        if f.once:  # opened and closed before the application's steps
            lines.append("    if (step == 0) {")
        if inside[i]:
            lines.extend(_format_code(f, "    "))
            flags = _open_flags(f)
            # a raw file made at the first step (an HDF5 file created at every step is made
            # anew, as H5Fcreate does)
            if f.each_step and not f.existing and not f.remove and f.api != "hdf5":
                flags = f"(step > 0 ? SKEL_OPEN_EXISTING : 0) | {flags}"
            lines.append(
                f"    skel_file_t *{var}{i} = skel_open(s, {_cstr(f.name)}, {API_C[f.api]}, step, "
                f"{flags}, {_member(f)});"
            )
        if f.when is not None:  # the ranks that opened it make its calls
            lines.append(f"    if (skel_member({var}{i})) file_{i}({var}{i}, step, rank, size);")
        else:
            lines.append(f"    file_{i}({var}{i}, step, rank, size);")
        if inside[i]:
            lines.append(f"    skel_close({var}{i});")
            if f.remove:  # the application removed it there
                lines.append(f"    skel_remove(s, {_cstr(f.name)}, step);")
        if f.once:
            lines.append("    }")
    lines.append("  }")
    for i in once:
        lines.append(f"  skel_close({var}{i});")
        if d.files[i].remove:
            lines.append(f"  skel_remove(s, {_cstr(d.files[i].name)}, 0);")
    return lines


def _inputs_code(d: Descriptor, timed: bool) -> list[str]:
    """The application's inputs (`input: true`), made before the steps: created, written and
    closed by every rank (one per step for a name with {step}; a file of datasets with {step}
    in their names gets every step's calls); then, in the timed pass, skel_inputs_made waits
    for every rank and forgets their time and bytes."""
    var = "f" if timed else "p"
    lines = []
    for i, f in enumerate(d.files):
        if not f.input:
            continue
        lines.append(f"  /* files[{i}]: the application's input, made before its I/O */")
        stepped = any(has_placeholder(x.name, "step") for x in f.datasets)
        opening = [
            *_format_code(f, "    "),
            f"    skel_file_t *{var}{i} = skel_open(s, {_cstr(f.name)}, {API_C[f.api]}, step, "
            f"{_open_flags(f)}, 1);",
        ]
        last = "steps" if f.per_step or stepped else "1"
        if not f.per_step:  # one file: opened once around its steps' calls
            lines.append("  {")
            lines.append("    long long step = 0;")
            lines.extend(opening)
            lines.append(f"    for (step = 0; step < {last}; step++) {{")
        else:
            lines.append(f"  for (long long step = 0; step < {last}; step++) {{")
            lines.extend(opening)
        lines.append("    skel_step(s, step);")
        lines.append(f"    file_{i}({var}{i}, step, rank, size);")
        if not f.per_step:
            lines.append("    }")
        lines.append(f"    skel_close({var}{i});")
        lines.append("  }")
    if lines and timed:
        lines.append("  skel_inputs_made(s); /* their time and bytes are no step's */")
    return lines


def skeleton_c(d: Descriptor, origin: str, gaps: str = "busy") -> str:
    """gaps: how the time between calls (writes' gap_s) is spent by default, one of GAPS."""
    if gaps not in GAPS:
        raise ValueError(f"gaps: {gaps!r}, expected one of {', '.join(GAPS)}")
    lines = [
        "/* A skeleton generated by `iotune skel generate` from the descriptor named below.",
        " * It repeats the application's writes (docs/skel.md); the I/O method is chosen at",
        " * run time (--method). Regenerate rather than edit. Names from the descriptor appear",
        " * only in string literals. */",
        "#include <stdio.h>",
        "",
        '#include "skel_rt.h"',
        "",
        f"static const char skel_descriptor[] = {_cstr(origin)};",
        "",
        "/* parameters: --set NAME=VALUE at run time */",
    ]
    for name, value in d.parameters.items():
        lines.append(f"static long long P_{name} = {value}LL;")
    lines.append("")
    lines.append("static long long default_steps(void) {")
    lines.append("  const long long size = skel_size;")
    lines.append("  (void)size;")
    lines.append(f"  return {_c(d.steps)};")
    lines.append("}")
    lines.append("")
    for i, f in enumerate(d.files):
        lines.extend(_file_body(f, i))
        lines.append("")
    params = ", ".join(f"{{{_cstr(n)}, &P_{n}}}" for n in d.parameters) or '{"", NULL}'
    lines += [
        "int main(int argc, char **argv) {",
        "  (void)skel_descriptor;",
        f"  skel_param params[] = {{{params}}};",
        "  long long steps = 0;",
        f"  skel_t *s = skel_init(&argc, &argv, {_cstr(d.name)}, {_cstr(d.method['name'])}, "
        f"params, {len(d.parameters)}, &steps, default_steps);",
        f"  skel_gaps_default(s, SKEL_GAPS_{gaps.upper()}); /* --gaps at run time overrides */",
        "  int rank_i, size_i;",
        "  MPI_Comm_rank(MPI_COMM_WORLD, &rank_i);",
        "  MPI_Comm_size(MPI_COMM_WORLD, &size_i);",
        "  const long long rank = rank_i, size = size_i;",
    ]
    lines.append("  /* untimed: the steps' calls count the memory their writes read; it is made")
    lines.append("   * before the I/O, as an application's arrays are */")
    lines.append("  skel_prepare_begin(s);")
    lines.extend(_inputs_code(d, timed=False))
    lines.extend(_steps_code(d, timed=False))
    lines.append("  skel_prepare_end(s);")
    lines.extend(_inputs_code(d, timed=True))
    lines.extend(_steps_code(d, timed=True))
    lines.append("  return skel_finish(s);")
    lines.append("}")
    return "\n".join(lines) + "\n"


MAKEFILE = """\
# Generated by `iotune skel generate`. HDF5 and MPI are linked dynamically (pkg-config), so
# that libiotune.so, preloaded, sees every call: a program built with h5pcc links HDF5
# statically and cannot be intercepted. Override: make CC=mpicc.openmpi HDF5_PC=hdf5-openmpi
CC = {cc}
HDF5_PC = {pc}
CFLAGS = -O2 -std=c11 -Wall -Wextra
CPPFLAGS = $(shell pkg-config --cflags $(HDF5_PC))
LDLIBS = $(shell pkg-config --libs $(HDF5_PC)){hl}

RT_SRC = {rt_src}
RT_HDR = {rt_hdr}

skeleton: skeleton.c $(RT_SRC) $(RT_HDR)
\t$(CC) $(CFLAGS) $(CPPFLAGS) -o $@ skeleton.c $(RT_SRC) $(LDLIBS)

clean:
\trm -f skeleton

.PHONY: clean
"""

RUN_LOCAL = """\
#!/bin/sh
# Run the skeleton {name} here: sh run-local.sh [skeleton options, e.g. --method posix]
# Under iotune: iotune profile -- sh run-local.sh   or   iotune tune -- sh run-local.sh
cd "$(dirname "$0")" || exit 1
exec {mpiexec} -n "${{RANKS:-{ranks}}}" ./skeleton "$@"
"""

RUN_SLURM = """\
#!/bin/bash
#SBATCH --job-name=skel-{name}
#SBATCH --ntasks={ranks}
#SBATCH --time=00:30:00
# Submit: sbatch run-slurm.sbatch [skeleton options]. To tune or profile, preload the runtime:
#   export LD_PRELOAD=$(iotune lib) IOTUNE_CONFIG=$PWD/tune.xml IOTUNE_PROFILE=$PWD/profile.json
cd "$SLURM_SUBMIT_DIR" || exit 1
srun ./skeleton "$@"
"""


SCALES_SOURCE = "skel_scales.c"  # the runtime's part that needs libhdf5_hl


def runtime_files() -> list[str]:
    """The names of the fixed runtime's sources and headers (the package's skel/c/)."""
    folder = resources.files("iotune.skel").joinpath("c")
    return sorted(p.name for p in folder.iterdir() if p.name.endswith((".c", ".h")))


def generate(
    d: Descriptor,
    out_dir: str,
    origin: str,
    cc: str = "mpicc",
    pkg: str = "hdf5-mpich",
    mpiexec: str = "mpiexec",
    gaps: str = "busy",
) -> list[str]:
    """Writes the skeleton's files into out_dir; returns their paths. gaps: the default of
    the skeleton's --gaps (GAPS)."""
    os.makedirs(out_dir, exist_ok=True)
    written = []

    def put(name: str, text: str, executable: bool = False) -> None:
        path = os.path.join(out_dir, name)
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(text)
        if executable:
            os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
        written.append(path)

    put("skeleton.c", skeleton_c(d, origin, gaps))
    runtime = runtime_files()
    for name in runtime:
        src = resources.files("iotune.skel").joinpath("c", name)
        with resources.as_file(src) as p:
            shutil.copyfile(p, os.path.join(out_dir, name))
        written.append(os.path.join(out_dir, name))
    # dimension scales need HDF5's high-level library: built and linked only when made
    scales = any(w.scale_call for f in d.files for w in f.writes)
    sources = " ".join(n for n in runtime if n.endswith(".c") and (scales or n != SCALES_SOURCE))
    headers = " ".join(n for n in runtime if n.endswith(".h"))
    put("Makefile", MAKEFILE.format(cc=cc, pc=pkg, rt_src=sources, rt_hdr=headers,
                                    hl=" -lhdf5_hl" if scales else ""))  # fmt: skip
    put("run-local.sh", RUN_LOCAL.format(name=d.name, ranks=d.ranks, mpiexec=mpiexec), True)
    put("run-slurm.sbatch", RUN_SLURM.format(name=d.name, ranks=d.ranks), True)
    return written
