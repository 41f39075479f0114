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
) -> dict[str, Any]:
    """The entry of the dataset op writes (file: its file's pattern, for notes)."""
    info = op.dset_info
    real = info["name"]
    d: dict[str, Any] = {"name": op.dataset, "type": None, "dims": list(info["dims"])}
    if "type_class" in info:  # trace schema 4: the dataset as the application made it
        d["type"] = type_of(real, info, note)
        if info.get("chunks"):
            d["chunks"] = list(info["chunks"])
        maxdims = info.get("maxdims")
        if maxdims and maxdims != info["dims"]:
            d["maxdims"] = ["unlimited" if v is None else v for v in maxdims]
        return d
    found = layout["datasets"].get(real) if layout else None
    if found and found["type"]:
        typ = {v[2]: k for k, v in dmod.TYPES.items()}.get(found["type"])
        if typ is None:
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
        d["type"] = {4: "float32", 8: "float64", 1: "uint8", 2: "uint16"}.get(size, "uint8")
        if found is None:
            note(
                f"{file}: the application's file was not found (give --data-dir) and the "
                f"trace (schema {trace_version}) has no types or chunks: "
                f"{real}: element size {size}, class assumed {d['type']}, contiguous"
            )
    return d


def type_of(real: str, info: dict[str, Any], note: Callable[[str], None]) -> str:
    """The descriptor's type of a traced dataset type (class, size, sign); a type skeletons
    cannot write becomes an unsigned integer of its size, said in a note."""
    cls, size = info.get("type_class"), int(info["type_size"])
    if cls == "float" and size in (4, 8):
        typ = f"float{8 * size}"
    elif cls == "integer" and size in (1, 2, 4, 8):
        typ = f"{'int' if info.get('type_signed') else 'uint'}{8 * size}"
    else:
        typ = {1: "uint8", 2: "uint16", 4: "uint32", 8: "uint64"}.get(size, "uint8")
        note(
            f"{real}: a {cls or 'unknown'} type of {size} bytes: skeletons write numbers, "
            f"written as {typ}" + ("" if size in (1, 2, 4, 8) else " (another size)")
        )
        return typ
    if info.get("type_order") == "BE":
        note(f"{real}: big-endian {typ} in the application: written little-endian")
    return typ
