"""The parameter registry: every tunable setting, defined once in data/params.tsv.

This module reads that table and knows how to read, check and normalise a value of each type
(docs/control-file.md, "Values"). The C runtime follows the same table and the same rules; the
shared test vectors in tests/vectors hold both to one reading.
"""

from __future__ import annotations

import math
import re
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

LAYERS = ("hdf5", "mpiio", "fs")
SCOPES = ("file", "dataset")
TYPES = ("size", "int", "bool", "enum", "pair", "dims", "double", "string")
TARGETS = ("fapl", "fcpl", "dcpl", "dapl", "dxpl", "hint", "switch", "mca")
IO = ("write", "read", "rw")

MAX_DIMS = 32
MAX_STRING = 255

# White space as C's isspace() sees it: the runtime trims the same characters.
SPACE = " \t\n\r\v\f"

_TRUE = ("true", "yes", "on", "1")
_FALSE = ("false", "no", "off", "0")
_SHIFT = {"k": 10, "m": 20, "g": 30, "t": 40}
_SIZE_RE = re.compile(r"([0-9]+)(?:([kmgt])(?:b|ib)?)?", re.IGNORECASE | re.ASCII)
_INT_RE = re.compile(r"[+-]?[0-9]+", re.ASCII)
_WHOLE_RE = re.compile(r"[0-9]+", re.ASCII)
_DOUBLE_RE = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?", re.ASCII)


class ValueProblem(ValueError):
    """A value that the registry does not accept; str() is the message for the user."""


@dataclass(frozen=True)
class Param:
    """One row of the registry."""

    name: str
    layer: str  # hdf5 | mpiio | fs
    scope: str  # file | dataset
    type: str  # size | int | bool | enum | pair | dims | double | string
    min: int | float | None
    max: int | float | None
    choices: tuple[str, ...]
    target: str  # fapl | fcpl | dcpl | dapl | dxpl | hint | switch | mca
    io: str  # write | read | rw: the accesses the setting can change
    summary: str
    # why the adaptive mode never applies it by itself (offline advice only); "" when it may
    offline_why: str = ""
    # the code of the rule (rules.tsv) under whose condition alone the adaptive mode may apply
    # it ("guarded: IOT-1"): a knowledge base's value for it applies only where that rule holds
    # on the class's learning phase; "" when it is not guarded
    guard: str = ""

    @property
    def online(self) -> bool:
        """True when the adaptive mode may apply it by itself (a rule or a knowledge base)."""
        return not self.offline_why

    @property
    def is_mca(self) -> bool:
        """True for an Open MPI MCA parameter, set through the environment (OMPI_MCA_<name>)."""
        return self.target == "mca"

    @property
    def is_hint(self) -> bool:
        """True when the runtime passes this parameter as an MPI-IO hint."""
        return self.target == "hint"

    def normalise(self, text: str) -> str:
        """Checks a value given as text and returns its normalised form (ValueProblem if bad)."""
        return normalise_value(self, text)

    def to_python(self, text: str) -> Any:
        """The Python value of a text: int, bool, float, str, or a tuple of ints (pair, dims)."""
        return python_value(self, text)

    def format(self, value: Any) -> str:
        """The normalised text of a Python value (or of a text), checked like normalise()."""
        return format_value(self, value)

    def describe_range(self) -> str:
        """The legal values in a few words, for tables: "1 KiB..128 MiB", "a|b|c", ""."""
        if self.type == "enum":
            return ", ".join(self.choices)
        if self.type == "bool":
            return "true, false"
        if self.min is None and self.max is None:
            return ""
        show = format_size if self.type in ("size", "pair") else _plain_number
        low = "" if self.min is None else show(self.min)
        high = "" if self.max is None else show(self.max)
        text = f"{low}..{high}"
        return f"each {text}" if self.type in ("pair", "dims") else text


# ----------------------------------------------------------------------------- the table


def _bound(text: str) -> int | float | None:
    if text == "-":
        return None
    try:
        return int(text)
    except ValueError:
        return float(text)


def _offline_why(text: str) -> str:
    """The online column: "" for yes and guarded: RULE, the reason of "no: WHY", "?" for
    anything else."""
    if text == "yes" or _guard(text):
        return ""
    why = text[3:].strip() if text.startswith("no:") else ""
    return why or "?"


def _guard(text: str) -> str:
    """The online column's rule code of "guarded: RULE" (one word), else ""."""
    m = re.fullmatch(r"guarded: ([A-Za-z0-9-]+)", text)
    return m.group(1) if m else ""


def read_registry(path: str | Path) -> tuple[Param, ...]:
    """Reads a registry table (tab-separated, '#' comments, a header line) and checks it."""
    with open(path, encoding="utf-8") as f:
        lines = [ln.rstrip("\n") for ln in f if ln.strip() and not ln.startswith("#")]
    if not lines:
        raise ValueError(f"{path}: empty parameter registry")
    header = lines[0].split("\t")
    expected = ["name", "layer", "scope", "type", "min", "max", "choices", "target", "io"]
    expected += ["online", "summary"]
    if header != expected:
        raise ValueError(f"{path}: the header must be {' '.join(expected)}")
    params = []
    seen = set()
    for number, line in enumerate(lines[1:], start=2):
        cells = line.split("\t")
        if len(cells) != len(expected):
            raise ValueError(f"{path}: row {number} has {len(cells)} columns, not {len(expected)}")
        row = dict(zip(expected, cells, strict=True))
        p = Param(
            name=row["name"],
            layer=row["layer"],
            scope=row["scope"],
            type=row["type"],
            min=_bound(row["min"]),
            max=_bound(row["max"]),
            choices=() if row["choices"] == "-" else tuple(row["choices"].split("|")),
            target=row["target"],
            io=row["io"],
            summary=row["summary"],
            offline_why=_offline_why(row["online"]),
            guard=_guard(row["online"]),
        )
        problems = [
            f"layer {p.layer}" if p.layer not in LAYERS else "",
            f"scope {p.scope}" if p.scope not in SCOPES else "",
            f"type {p.type}" if p.type not in TYPES else "",
            f"target {p.target}" if p.target not in TARGETS else "",
            f"io {p.io}" if p.io not in IO else "",
            f"online {row['online']!r} (yes, guarded: RULE, or no: WHY)"
            if p.offline_why == "?"
            else "",
            "an enum without choices" if p.type == "enum" and not p.choices else "",
            "a duplicate name" if p.name in seen else "",
        ]
        problems = [x for x in problems if x]
        if problems:
            raise ValueError(f"{path}: {p.name}: bad {', '.join(problems)}")
        seen.add(p.name)
        params.append(p)
    return tuple(params)


def registry_path() -> Path:
    """Where the packaged registry table is."""
    return Path(str(resources.files("iotune") / "data" / "params.tsv"))


@cache
def all_params() -> tuple[Param, ...]:
    """Every parameter of the registry, in the table's order."""
    return read_registry(registry_path())


@cache
def _by_name() -> dict[str, Param]:
    return {p.name: p for p in all_params()}


def find(name: str) -> Param | None:
    """The parameter called name (exact spelling), or None."""
    return _by_name().get(name)


def get(name: str) -> Param:
    """The parameter called name; KeyError with a helpful message when there is none."""
    p = find(name)
    if p is None:
        raise KeyError(f"unknown parameter {name!r} (see `iotune check --list`)")
    return p


def names() -> list[str]:
    """The names of all parameters, in the table's order."""
    return [p.name for p in all_params()]


def by_layer(layer: str) -> list[Param]:
    """The parameters of one layer (hdf5, mpiio, fs), in the table's order."""
    return [p for p in all_params() if p.layer == layer]


# ----------------------------------------------------------------------------- values


def trim(text: str) -> str:
    """Strips leading and trailing white space (the characters C's isspace() knows)."""
    return text.strip(SPACE)


def _plain_number(x: int | float) -> str:
    if isinstance(x, float) and x.is_integer() and abs(x) < 2**63:
        return str(int(x))
    return str(x)


def format_size(n: int | float) -> str:
    """A byte count for people: 4294967296 -> "4 GiB", 1000 -> "1000"."""
    n = int(n)
    for unit, shift in (("TiB", 40), ("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n and n % (1 << shift) == 0:
            return f"{n >> shift} {unit}"
    return str(n)


def shown(text: str) -> str:
    """How a message quotes a value (or a name): whole up to 80 characters, else its first 40
    and "..." (the runtime's iot_value_shown)."""
    return text if len(text) <= 80 else f"{text[:40]}..."


def _whole(text: str) -> int:
    """int() of decimal digits (with an optional sign) of any length. Python refuses to convert
    more than 4300 digits; so long a number is only ever compared with a bound, and 10**digits
    (computed, not converted) lies on the same side of every bound."""
    sign = -1 if text.startswith("-") else 1
    digits = text.lstrip("+-").lstrip("0")
    if len(digits) > 4000:
        return sign * 10 ** len(digits)
    return sign * int(digits or "0")


def parse_size(text: str) -> int:
    """A whole number of bytes with an optional binary suffix: 65536, 64K, 4MiB, 1gb."""
    m = _SIZE_RE.fullmatch(text)
    if not m:
        raise ValueProblem(f'"{shown(text)}" is not a size in bytes (e.g. 65536, 64K, 4MiB)')
    return _whole(m.group(1)) << _SHIFT.get((m.group(2) or "").lower(), 0)


def _parse_int(text: str) -> int:
    if not _INT_RE.fullmatch(text):
        raise ValueProblem(f'"{shown(text)}" is not a whole number')
    return _whole(text)


def _parse_list(text: str) -> list[str]:
    return [trim(part) for part in text.split(",")]


def _check_bounds(p: Param, text: str, numbers: Sequence[int | float]) -> None:
    for x in numbers:
        if p.min is not None and x < p.min:
            raise ValueProblem(f'"{shown(text)}" is below the minimum {_plain_number(p.min)}')
        if p.max is not None and x > p.max:
            raise ValueProblem(f'"{shown(text)}" is above the maximum {_plain_number(p.max)}')


def check_string(text: str) -> str:
    """A string value: non-empty, no line break, at most 255 bytes of UTF-8 (what the runtime
    holds). Returns it."""
    if text == "":
        raise ValueProblem("empty value")
    if "\n" in text or "\r" in text:
        raise ValueProblem(f'"{shown(text)}" has a line break')
    if len(text.encode("utf-8", "surrogatepass")) > MAX_STRING:
        raise ValueProblem(f'"{text[:40]}..." is longer than {MAX_STRING} bytes')
    return text


def _numbers(p: Param, text: str) -> list[int] | float | bool | str:
    """Reads text (already trimmed, not empty) as a value of p, checked against the bounds.

    Returns the numbers of a size/int/pair/dims, the float of a double, the bool of a bool, the
    listed spelling of an enum choice or the text of a string.
    """
    t = p.type
    if t == "size":
        numbers = [parse_size(text)]
    elif t == "int":
        numbers = [_parse_int(text)]
    elif t == "bool":
        word = text.lower()
        if word in _TRUE:
            return True
        if word in _FALSE:
            return False
        raise ValueProblem(f'"{shown(text)}" is not true or false (or yes/no, on/off, 1/0)')
    elif t == "enum":
        for choice in p.choices:
            if text.lower() == choice.lower():
                return choice
        raise ValueProblem(f'"{shown(text)}" is not one of {", ".join(p.choices)}')
    elif t == "pair":
        parts = _parse_list(text)
        try:
            numbers = [parse_size(x) for x in parts]
        except ValueProblem:
            numbers = []
        if len(numbers) != 2:
            raise ValueProblem(f'"{shown(text)}" is not two sizes "threshold, boundary"')
        if numbers[1] < 1:
            raise ValueProblem(f'"{shown(text)}": the boundary must be at least 1')
    elif t == "dims":
        parts = _parse_list(text)
        if len(parts) > MAX_DIMS:
            raise ValueProblem(f'"{shown(text)}" has {len(parts)} dimensions, at most {MAX_DIMS}')
        if not all(_WHOLE_RE.fullmatch(x) for x in parts):
            raise ValueProblem(f'"{shown(text)}" is not whole numbers separated by commas')
        numbers = [_whole(x) for x in parts]
    elif t == "double":
        if not _DOUBLE_RE.fullmatch(text):
            raise ValueProblem(f'"{shown(text)}" is not a number')
        x = float(text)
        mantissa = re.split("[eE]", text)[0]
        underflow = abs(x) < sys.float_info.min and mantissa.strip("+-.0") != ""
        if not math.isfinite(x) or underflow:
            raise ValueProblem(f'"{shown(text)}" is out of the range of a double')
        _check_bounds(p, text, [x])
        return x
    else:  # string
        return check_string(text)
    _check_bounds(p, text, numbers)
    return numbers


def normalise_value(p: Param, text: str) -> str:
    """Checks the text of a value of p (trimmed first) and returns its normalised form.

    Raises ValueProblem with a message such as '"-3" is below the minimum 1'.
    """
    return exact_value(p, trim(text))


def exact_value(p: Param, text: str) -> str:
    """normalise_value() of the text as it stands, not trimmed: the runtime's iot_value_parse
    (runtime/src/config/values.c), which reads a stored setting of a knowledge base so
    (" 1048576" is not a size there). A control file's text is trimmed before (XML)."""
    if text == "":
        raise ValueProblem("empty value")
    v = _numbers(p, text)
    if p.type == "bool":
        return "true" if v else "false"
    if p.type == "double":
        return format(v, ".6g")
    if isinstance(v, list):
        return ",".join(str(x) for x in v)
    return v


def normalise(name: str, text: str) -> str:
    """normalise_value() for a parameter given by name; any other name is an MPI-IO hint whose
    value is a string."""
    p = find(name)
    if p is None:
        return check_string(trim(text))
    return normalise_value(p, text)


def python_value(p: Param, text: str) -> Any:
    """The Python value of a (not necessarily normalised) text: see Param.to_python()."""
    text = normalise_value(p, text)
    if p.type in ("size", "int"):
        return int(text)
    if p.type == "bool":
        return text == "true"
    if p.type == "double":
        return float(text)
    if p.type in ("pair", "dims"):
        return tuple(int(x) for x in text.split(","))
    return text


def format_value(p: Param, value: Any) -> str:
    """The normalised text of a Python value: bool for bools, int, float, a sequence of ints for
    pairs and dims, or a text. Raises ValueProblem when the value is not legal for p."""
    if isinstance(value, str):
        return normalise_value(p, value)
    if isinstance(value, bool):
        if p.type != "bool":
            raise ValueProblem(f"{p.name} takes a {p.type}, not {value}")
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        text = ",".join(str(x) for x in value)
    elif isinstance(value, float):
        text = repr(value)
    else:
        text = str(value)
    return normalise_value(p, text)


def iter_table() -> Iterator[tuple[str, str, str, str, str, str]]:
    """Rows of `iotune check --list`: name, layer, scope, type, range or choices, summary."""
    for p in all_params():
        yield p.name, p.layer, p.scope, p.type, p.describe_range(), p.summary
