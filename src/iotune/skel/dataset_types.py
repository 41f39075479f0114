"""A dataset's descriptor entry (type, dims, chunks, maximum dims) from the trace (schema 4) or,
for older traces, from the application's output file (h5dump); what cannot be known or
written is said in a note."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from iotune.skel import descriptor as dmod
from iotune.skel.ops import Op


def dataset_entry(
    file: str,
    op: Op,
    layout: dict[str, Any] | None,
    trace_version: int,
    note: Callable[[str], None],
    parallel: bool = True,
) -> dict[str, Any]:
    """The entry of the dataset op creates or writes (file: its file's pattern, for notes;
    parallel: written through MPI-IO, where HDF5 allocates every dataset early itself)."""
    info = op.dset_info
    real = info["name"]
    found = layout["datasets"].get(real) if layout else None
    d: dict[str, Any] = {"name": op.dataset, "type": None, "dims": list(info["dims"])}
    if "type_class" in info:  # trace schema 4: the dataset as the application made it
        d["type"] = type_of(real, info, found, note)
        if info.get("chunks"):
            d["chunks"] = list(info["chunks"])
        maxdims = info.get("maxdims")
        if maxdims and maxdims != info["dims"]:
            d["maxdims"] = ["unlimited" if v is None else v for v in maxdims]
    else:
        if found and found["type"]:
            cls = {"H5T_COMPOUND": "compound", "H5T_OPAQUE": "opaque"}.get(found["type"])
            typ = {v[2]: k for k, v in dmod.TYPES.items()}.get(found["type"])
            if typ is None and cls:
                info2 = dict(info, type_class=cls)
                typ = type_of(real, info2, found, note)
            elif typ is None:
                note(
                    f"{real}: type {found['type']} is not supported here: "
                    "the type is chosen by its size"
                )
            d["type"] = typ
            if found["chunks"]:
                d["chunks"] = found["chunks"]
            if found["maxdims"] and found["maxdims"] != found["dims"]:
                d["maxdims"] = ["unlimited" if v is None else v for v in found["maxdims"]]
        if d["type"] is None:
            size = int(info["type_size"])
            d["type"] = {4: "float32", 8: "float64", 1: "uint8", 2: "uint16"}.get(size)
            if d["type"] is None:
                d["type"] = {"opaque": size}
            if found is None:
                note(
                    f"{file}: the application's file was not found (give --data-dir) and the "
                    f"trace (schema {trace_version}) has no types or chunks: "
                    f"{real}: element size {size}, class assumed {d['type']}, contiguous"
                )
    _times(d, found, parallel)
    _fill(d, info)
    if info.get("track_times") is False:  # its header without times (netCDF-4's)
        d["track_times"] = False
    flags = info.get("attr_order")
    order = {1: "tracked", 3: "indexed"}.get(flags) if type(flags) is int else None
    if order:  # its attributes' creation order (netCDF-4's: indexed)
        d["attr_order"] = order
    if info.get("anonymous"):  # made by H5Dcreate_anon, never linked (trace_calls._named)
        d["anonymous"] = True
    if found and found.get("filters"):
        known = [f for f in found["filters"] if not f.startswith("other")]
        for f in found["filters"]:
            if f.startswith("other"):
                note(f"{real}: filter {f[7:]} is not reproduced (shuffle, deflate, fletcher32 are)")
        if known and d.get("chunks"):
            d["filters"] = known
    return d


def type_of(
    real: str, info: dict[str, Any], found: dict[str, Any] | None, note: Callable[[str], None]
) -> str | dict[str, Any]:
    """The descriptor's type of a traced dataset type (class, size, sign): a number type, a
    compound of the same members when the application's file shows them (found: its h5dump
    entry), else opaque bytes of the same size (said in a note): bytes per element match."""
    cls, size = info.get("type_class"), int(info["type_size"])
    if cls == "float" and size in (4, 8):
        typ = f"float{8 * size}"
    elif cls == "integer" and size in (1, 2, 4, 8):
        typ = f"{'int' if info.get('type_signed') else 'uint'}{8 * size}"
    else:
        if cls == "compound":
            compound = _compound(real, size, found, note)
            if compound is not None:
                return compound
        note(
            f"{real}: a {cls or 'unknown'} type of {size} bytes: written as opaque elements of "
            "the same size" + (" (members unknown: the application's file was not found)"
                               if cls == "compound" and found is None else "")
        )  # fmt: skip
        return {"opaque": size}
    if info.get("type_order") == "BE":  # stored big-endian, as the application's file
        typ += "be"
    return typ


def _compound(
    real: str, size: int, found: dict[str, Any] | None, note: Callable[[str], None]
) -> dict[str, Any] | None:
    """{compound: size, members: [[name, type, offset], ...]} from h5dump's members, when
    every member is a number type and they fit; offsets packed in order (h5dump -H does not
    show them; padding, if any, is at the end)."""
    members = (found or {}).get("members")
    if not members:
        return None
    by_h5 = {v[2]: k for k, v in dmod.TYPES.items()}
    out, offset = [], 0
    for h5type, name in members:
        typ = by_h5.get(h5type)
        if typ is None:
            return None
        out.append([name, typ, offset])
        offset += dmod.TYPES[typ][0]
    if offset > size:
        return None
    if offset < size:
        note(f"{real}: compound of {size} bytes, members {offset}: offsets assumed packed")
    return {"compound": size, "members": out}


def _fill(d: dict[str, Any], info: dict[str, Any]) -> None:
    """The fill value the application set (the trace's, at the dataset's creation or opening):
    with a fill value HDF5 writes it where it allocates (early under MPI-IO) at fill time ifset,
    its default; without, it writes nothing (netCDF-4 sets one for every variable: a third of
    its bytes below HDF5). Its bytes are in the application's type, as the skeleton's (a
    big-endian number's too: the skeleton stores it big-endian); an old descriptor's number
    type chosen little-endian for a big-endian one has them reversed. A compound's members are
    packed differently in the skeleton: its fill value is left out."""
    fill = info.get("fill")
    if not isinstance(fill, dict):
        return
    if fill.get("time") in ("alloc", "never"):
        d["fill_time"] = fill["time"]
    value = fill.get("value")
    if not isinstance(value, str) or len(value) != 2 * int(info.get("type_size") or 0):
        return
    typ = d["type"]
    if isinstance(typ, dict) and "compound" in typ:
        return
    if info.get("type_order") == "BE" and isinstance(typ, str) and not typ.endswith("be"):
        value = "".join(reversed([value[i : i + 2] for i in range(0, len(value), 2)]))
    d["fill_value"] = value


# HDF5's defaults: fill time ifset; allocation by layout (chunked incr, contiguous late)
def _times(d: dict[str, Any], found: dict[str, Any] | None, parallel: bool) -> None:
    """The fill time and allocation time of the application's file (h5dump -p), where they are
    not HDF5's defaults (and not the early allocation MPI-IO forces anyway)."""
    if not found:
        return
    if found.get("fill_time") in ("alloc", "never"):
        d["fill_time"] = found["fill_time"]
    alloc = found.get("alloc_time")
    default = "incr" if d.get("chunks") else "late"
    if (
        alloc in ("early", "late", "incr")
        and alloc != default
        and not (parallel and alloc == "early")
    ):
        d["alloc_time"] = alloc
