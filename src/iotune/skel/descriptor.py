"""The skeleton descriptor (YAML, docs/skel.md): loading, checking, writing.

A descriptor says what a skeleton does: its files, the HDF5 datasets in them (type, global
dimensions, chunking), and for each rank the writes of one step in call order, with the
decomposition given as integer expressions of `rank`, `size`, `step` and named parameters. A
mistake gives one message naming the file, line and field (`DescriptorError`).
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from typing import Any

import yaml

from iotune.skel import attrs, expr

FORMAT = 1
APIS = ("hdf5", "mpiio", "posix")
METHODS = ("native", "hdf5", "mpiio", "posix", "aggregate")
TRANSFERS = ("collective", "independent")
# descriptor type name -> (bytes, HDF5 native type, h5dump's name of the little-endian file type)
TYPES = {
    "float32": (4, "H5T_NATIVE_FLOAT", "H5T_IEEE_F32LE"),
    "float64": (8, "H5T_NATIVE_DOUBLE", "H5T_IEEE_F64LE"),
    "int8": (1, "H5T_NATIVE_INT8", "H5T_STD_I8LE"),
    "int16": (2, "H5T_NATIVE_INT16", "H5T_STD_I16LE"),
    "int32": (4, "H5T_NATIVE_INT32", "H5T_STD_I32LE"),
    "int64": (8, "H5T_NATIVE_INT64", "H5T_STD_I64LE"),
    "uint8": (1, "H5T_NATIVE_UINT8", "H5T_STD_U8LE"),
    "uint16": (2, "H5T_NATIVE_UINT16", "H5T_STD_U16LE"),
    "uint32": (4, "H5T_NATIVE_UINT32", "H5T_STD_U32LE"),
    "uint64": (8, "H5T_NATIVE_UINT64", "H5T_STD_U64LE"),
}
# the same numbers stored big-endian (netCDF-4's variables): written from the machine's own
# order, HDF5 converting, as the application's are
TYPES.update(
    {
        f"{name}be": (size, native, h5[:-2] + "BE")
        for name, (size, native, h5) in list(TYPES.items())
    }
)
FILTERS = ("shuffle", "fletcher32")  # and deflate=LEVEL (0-9)
# HDF5's file format bounds (H5F_libver_t, in its order) and creation order (tracked, indexed)
LIBVERS = ("earliest", "v18", "v110", "v112", "v114", "v200")
ORDERS = ("tracked", "indexed")
MAX_FILL_VALUE = 256  # bytes of a dataset's fill value (one element)
FILL_TIMES = ("alloc", "never", "ifset")  # a dataset's fill time (H5Pset_fill_time)
ALLOC_TIMES = ("early", "late", "incr")  # its allocation time (H5Pset_alloc_time)
_DEFLATE = re.compile(r"deflate=([0-9])\Z")
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
# Bounds of what a descriptor may say (each a limit of the C runtime or of MPI): more is an
# error when the descriptor is read, not a crash or an overflow in the job.
MAX_RANKS = 2**31 - 1  # an MPI int
MAX_DIMS = 32  # H5S_MAX_RANK
SCALE_CALLS = ("set_scale", "attach_scale", "detach_scale", "lookup_scales")  # scale entries
SCALE_LOOKUPS = ("is_scale", "count", "iterate")  # H5DSis_scale, _get_num_scales, _iterate_scales
MAX_SCALE_NAME = 1024  # bytes of a dimension scale's name (the skeleton's buffer)
MAX_NAME = 880  # bytes of a dataset or group path (the runtime's buffers: 1024 - 128 spare)
MAX_FILE_NAME = 3960  # bytes of a file name (4096 - 128)
MAX_MEMBERS = 1024  # members of a compound type
MAX_OPENS = 1024  # `open: true` entries of one file (handles held until the file's close)
MAX_TYPE_SIZE = 2**31 - 1
MAX_COMPUTE_S = 86400.0  # seconds between two steps
MAX_STEPS = (2**31 - 1) // 5  # the runtime gathers 5 times per step per rank (an int count)
CHECKED_RANKS = 4096  # selections are checked at every rank up to this, beyond at a sample
MAX_VIEW_BLOCKS = 1 << 24  # blocks of one view, runs expanded (the C int of an hindexed type)
MAX_NODES = 1_000_000  # YAML nodes of one descriptor
MAX_BYTES = 64 * 1024 * 1024
_PLACEHOLDER = re.compile(r"\{([^{}]*)\}")
# {rank} {step}, or zero-padded to a width: {step:04} (step 3 -> 0003), as names were written
_KNOWN_PLACEHOLDER = re.compile(r"(rank|step)(:0([1-9][0-9]?))?\Z")


def has_placeholder(name: str, which: str) -> bool:
    return any(
        (m2 := _KNOWN_PLACEHOLDER.match(m.group(1))) and m2.group(1) == which
        for m in _PLACEHOLDER.finditer(name)
    )


def format_name(name: str, rank: int = 0, step: int = 0) -> str:
    """A name pattern with its placeholders replaced (as the skeleton's runtime does)."""

    def one(m: re.Match) -> str:
        m2 = _KNOWN_PLACEHOLDER.match(m.group(1))
        if not m2:
            return m.group(0)
        value = rank if m2.group(1) == "rank" else step
        return f"{value:0{int(m2.group(3))}d}" if m2.group(3) else str(value)

    return _PLACEHOLDER.sub(one, name)


def _one_line(text: str) -> str:
    """text with every unprintable character escaped (a message stays one line)."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in str(text))


class DescriptorError(ValueError):
    """One problem of a descriptor: where it is (file, line, field) and what is wrong."""

    def __init__(self, source: str, line: int | None, where: str, message: str):
        self.source, self.line, self.where = source, line, where
        where, message = _one_line(where), _one_line(message)  # they may quote the file's text
        loc = f"{source}:{line}" if line else source
        super().__init__(f"{loc}: {where}: {message}" if where else f"{loc}: {message}")


# ----------------------------------------------------------------------------- the model


@dataclass
class Member:
    """A member of a compound element type: its name, a type of TYPES, its byte offset."""

    name: str
    type: str
    offset: int


@dataclass
class Dataset:
    name: str
    type: str  # a TYPES name, "opaque" or "compound" (then size, and members for compound)
    dims: list[ast.expr]
    maxdims: list[ast.expr | None] | None = None  # None entry: unlimited
    chunks: list[ast.expr] | None = None
    line: int = 0
    type_size: int = 0  # opaque and compound: bytes of one element
    members: list[Member] | None = None
    filters: list[str] = field(default_factory=list)  # shuffle, fletcher32, deflate=N
    exists: bool = False  # in a file opened `existing`: opened (it was made before), not created
    fill_time: str | None = None  # alloc, never, ifset (None: HDF5's default)
    alloc_time: str | None = None  # early, late, incr (None: HDF5's default)
    fill_value: str | None = None  # one element's bytes in hex, as the type stores them
    track_times: bool = True  # its object header records times (H5Pset_obj_track_times)
    attr_order: str | None = None  # its attributes' creation order: tracked, indexed
    # made without a name (H5Dcreate_anon) and never linked: not in the file's structure, its
    # name the descriptor's own
    anonymous: bool = False

    @property
    def element_size(self) -> int:
        return self.type_size if self.type in ("opaque", "compound") else TYPES[self.type][0]


@dataclass
class View:
    """An MPI-IO file view's filetype, of bytes: blocks (offset, length) from the displacement,
    or runs (offset, length, count, stride) of count blocks stride apart, resized to lb and
    extent (what the filetype tiles by when a write is longer than it); `at`: the write starts
    there in the view's bytes (MPI_File_write_at), None: at the view's start (write_all)."""

    lb: ast.expr
    extent: ast.expr
    blocks: list[tuple[ast.expr, ...]]
    at: ast.expr | None = None


@dataclass
class Write:
    """One write (or `repeat` writes) of each rank that takes part (`when`). A raw write with a
    `view` sets that file view (displacement: `offset`) and writes `size` bytes through it."""

    dataset: str | None  # HDF5: the dataset written; None: raw bytes (MPI-IO, POSIX)
    start: list[ast.expr] | None = None  # dataset: selection start and count
    count: list[ast.expr] | None = None
    offset: ast.expr | None = None  # raw: byte offset and size
    size: ast.expr | None = None
    by_rank: dict[int, tuple[Any, Any]] | None = None  # rank -> (start, count) / (offset, size)
    collective: bool = True
    repeat: ast.expr = field(default_factory=lambda: expr.parse(1))
    stride: list[ast.expr] | ast.expr | None = None
    when: ast.expr | None = None
    line: int = 0
    view: View | None = None
    view_by_rank: dict[int, View] | None = None
    memory: list[int] | None = None  # the pieces of a noncontiguous memory datatype (MPI-IO)
    memory_by_rank: dict[int, list[int]] | None = None
    read: bool = False  # a read of the same selection (the file's own data, written before)
    # a direct chunk transfer (H5Dwrite_chunk / H5Dread_chunk) of the chunk at `start`: `size`
    # stored bytes, filters skipped by the mask's bits (count: the chunk, clipped to the extent)
    direct: bool = False
    filter_mask: int = 0
    # not a write: H5Dset_extent of the dataset to these dimensions (collective on a shared file)
    extent: list[ast.expr] | None = None
    # not a write: a dimension scale call on the dataset (collective on a shared file): "set"
    # (H5DSset_scale, a name of scale_name bytes with its NUL, 0 none), "attach" or "detach"
    # (H5DSattach_scale / H5DSdetach_scale of dataset `scale` to dimension `dim`)
    scale_call: str | None = None
    scale: str | None = None
    scale_name: int = 0
    dim: int = 0
    # not a write: a raw file's size set to this (MPI_File_set_size, collective; ftruncate)
    set_size: ast.expr | None = None
    # not a write: the shared file pointer moved to this byte offset (MPI_File_seek_shared,
    # collective: every rank of the file, the same offset)
    seek_shared: ast.expr | None = None
    fresh: bool = False  # a read into memory mapped for it (the application's was untouched)
    # not a write: an attribute call (`attribute: CALL`, attrs.py) on an object of the file
    attr: attrs.Call | None = None
    flush: bool = False  # not a write: H5Fflush in its place (every rank of the file)
    # not a write: the link of this path ({step}, {rank} filled in) deleted (H5Ldelete, every
    # rank of the file)
    delete: str | None = None
    # not a write: the dataset created here (`create: true`), where the application created
    # it (before attribute calls that precede its first use; else at its first use)
    create: bool = False
    # a data write or read's: seconds the application spent after each of its calls before
    # its next call in the file's step (computation between calls; 0: back to back)
    gap_s: float = 0.0
    # not a write: the dataset opened here (`open: true`, H5Dopen by every rank of the file);
    # a dataset with such entries is opened at each of them (handles closed with the file)
    open: bool = False
    # made at the first step only (`once: true`): a call the application made once before
    # its steps (a root attribute, a dataset written once) in a file open over the steps
    once: bool = False
    # an MPI-IO file's write or read through the shared file pointer (`shared: true`, no
    # offset): MPI_File_write_shared, collective MPI_File_write_ordered (the read ones)
    shared: bool = False


@dataclass
class File:
    name: str
    api: str
    datasets: list[Dataset]
    groups: list[str]
    writes: list[Write]
    line: int = 0
    sync: bool = False  # flushed to storage after each step's writes (fsync, H5Fflush)
    attributes: list[attrs.Attribute] = field(default_factory=list)  # HDF5 files
    existing: bool = False  # opened, not created: an earlier entry of the skeleton wrote it
    serial: bool = False  # HDF5 through the serial (sec2) driver, by one rank (as the application)
    # opened by the ranks where it is non-zero only, on a communicator of theirs (None: all)
    when: ast.expr | None = None
    readwrite: bool = False  # `open: existing` opened read-write even when it only reads
    remove: bool = False  # removed after the entry's close (the application deleted the file)
    # a raw file without {step} opened and closed at every step (as the application's log),
    # not once around the steps
    each_step: bool = False
    # opened (and its calls made) at the first step only: the application opened and closed it
    # before its steps (created it, to open it again at every step)
    once: bool = False
    # the application's input (a file it read and did not write): made before the first step,
    # untimed, its datasets or bytes written with the skeleton's deterministic data, so that
    # the entries after it (`open: existing`) have a file to read
    input: bool = False
    # a created HDF5 file's format: libver [low, high] (LIBVERS), track_times, link_order and
    # attr_order (ORDERS) of its root group; empty: HDF5's defaults
    format: dict[str, Any] = field(default_factory=dict)

    @property
    def per_rank(self) -> bool:
        return has_placeholder(self.name, "rank")

    @property
    def per_step(self) -> bool:
        return has_placeholder(self.name, "step")


@dataclass
class Descriptor:
    name: str
    ranks: int
    parameters: dict[str, int]
    steps: ast.expr
    compute_s: float
    method: dict[str, Any]
    files: list[File]
    notes: list[str]
    source: dict[str, Any]
    path: str = "<descriptor>"
    steps_line: int | None = None

    def env(self, rank: int = 0, size: int | None = None, step: int = 0) -> dict[str, int]:
        return dict(self.parameters, rank=rank, size=size or self.ranks, step=step)


# ----------------------------------------------------------------------------- YAML with lines


class _Map(dict):
    line = 0
    lines: dict


class _Seq(list):
    line = 0
    lines: list


# libyaml's parser where PyYAML has it: the pure-Python scanner reads ~1 MB/s (a 50 MB line
# took more than a minute to refuse), libyaml's ~50x faster; the same safe constructors
class _Loader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
    pass


def _construct_map(loader: yaml.SafeLoader, node: yaml.MappingNode) -> _Map:
    loader.flatten_mapping(node)
    out = _Map()
    out.line = node.start_mark.line + 1
    out.lines = {}
    for k, v in node.value:
        key = loader.construct_object(k, deep=True)
        if not isinstance(key, str | int | float | bool | None):
            raise yaml.constructor.ConstructorError(
                None, None, "a key must be a name or a number", k.start_mark
            )
        out[key] = loader.construct_object(v, deep=True)
        out.lines[key] = k.start_mark.line + 1
    return out


def _construct_seq(loader: yaml.SafeLoader, node: yaml.SequenceNode) -> _Seq:
    out = _Seq(loader.construct_object(v, deep=True) for v in node.value)
    out.line = node.start_mark.line + 1
    out.lines = [v.start_mark.line + 1 for v in node.value]
    return out


def _construct_int(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> int:
    # Python's int() refuses more than 4300 digits (with advice meant for programmers)
    if len(node.value) > MAX_INT_CHARS:
        raise yaml.constructor.ConstructorError(
            None,
            None,
            f"a whole number of {len(node.value)} characters (at most {MAX_INT_CHARS})",
            node.start_mark,
        )
    return loader.construct_yaml_int(node)


MAX_INT_CHARS = 4000  # 2**63 has 19 digits; Python converts at most 4300
_Loader.add_constructor("tag:yaml.org,2002:int", _construct_int)
_Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_map)
_Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_SEQUENCE_TAG, _construct_seq)


class _Checker:
    """Reads a loaded YAML tree into the model; the first problem raises DescriptorError."""

    def __init__(self, source: str):
        self.source = source

    def fail(self, line: int | None, where: str, message: str) -> None:
        raise DescriptorError(self.source, line, where, message)

    def mapping(self, value: Any, line: int, where: str, allowed: set[str]) -> _Map:
        if not isinstance(value, _Map):
            self.fail(line, where, "expected a mapping (key: value)")
        for key in value:
            if key not in allowed:
                self.fail(
                    value.lines[key],
                    f"{where}.{key}" if where else str(key),
                    "unknown field (allowed: " + ", ".join(sorted(allowed)) + ")",
                )
        return value

    def line_of(self, m: _Map, key: str) -> int:
        return m.lines.get(key, m.line)

    def require(self, m: _Map, key: str, where: str) -> Any:
        if key not in m:
            self.fail(m.line, where, f"missing field {key!r}")
        return m[key]

    def expression(self, value: Any, line: int, where: str, known: set[str]) -> ast.expr:
        try:
            tree = expr.parse(value)
        except expr.ExprError as e:
            self.fail(line, where, str(e))
        unknown = expr.names(tree) - known
        if unknown:
            name = sorted(unknown)[0]
            if name == "rank":  # known elsewhere, left out where every rank gives one value
                why = "every rank gives the same value (a file size, an extent: set by all ranks)"
                self.fail(line, where, f"{name!r} cannot be used here: {why}")
            self.fail(
                line,
                where,
                f"unknown name {name!r} (parameters and rank, size, step are known)",
            )
        return tree

    def expressions(
        self, value: Any, line: int, where: str, known: set[str], rank: int | None = None
    ) -> list[ast.expr]:
        if not isinstance(value, list) or not value:
            self.fail(line, where, "expected a list of expressions, e.g. [rank * n, 16]")
        if rank is not None and len(value) != rank:
            self.fail(line, where, f"expected {rank} entries (the dataset has {rank} dimensions)")
        lines = getattr(value, "lines", [line] * len(value))
        return [
            self.expression(v, ln, f"{where}[{i}]", known)
            for i, (v, ln) in enumerate(zip(value, lines, strict=True))
        ]

    def names_in(self, text: str, line: int, where: str, limit: int = 0) -> None:
        """Checks the placeholders of a name, and that it fits the runtime's buffer (limit
        bytes) with every placeholder at its widest (20 characters or its padding)."""
        widest = len(text.encode("utf-8", "surrogatepass"))
        for m in _PLACEHOLDER.finditer(text):
            m2 = _KNOWN_PLACEHOLDER.match(m.group(1))
            if m2:
                widest += max(int(m2.group(3) or 0), 20) - len(m.group(0))
        if limit and widest > limit:
            self.fail(line, where, f"longer than {limit} bytes with its placeholders filled in")
        for m in _PLACEHOLDER.finditer(text):
            if not _KNOWN_PLACEHOLDER.match(m.group(1)):
                self.fail(
                    line,
                    where,
                    f"unknown placeholder {{{m.group(1)[:40]}}} (use {{rank}}, {{step}}, or "
                    "zero-padded {step:04})",
                )


def _top_fields() -> set[str]:
    return {
        "skel",
        "name",
        "ranks",
        "parameters",
        "steps",
        "compute_s",
        "method",
        "files",
        "notes",
        "source",
    }


def _bounded_tree(text: str, c: _Checker) -> yaml.Node | None:
    """The YAML node graph of text, refused when nested deeper than inputs.MAX_DEPTH or larger
    than MAX_NODES. An alias is the anchor's node again (the loaded values share it), so
    nothing here or in the checks grows faster than the text."""
    from iotune import inputs

    check_nesting(text, c)
    loader = _Loader(text)
    try:
        node = loader.get_single_node()
    finally:
        loader.dispose()
    if node is None:
        return None
    return _count_nodes(node, c, inputs.MAX_DEPTH)


def check_nesting(text: str, c: _Checker) -> None:
    """Refuses YAML nested deeper than inputs.MAX_DEPTH before PyYAML reads it (its scanner is
    quadratic in nesting): flow brackets, and indentation or `- - -` for block nesting."""
    from iotune import inputs

    depth, line = 0, 1
    for ch in text:
        if ch in "[{":
            depth += 1
            if depth > inputs.MAX_DEPTH:
                c.fail(line, "", f"nested more than {inputs.MAX_DEPTH} levels deep")
        elif ch in "]}":
            depth = max(depth - 1, 0)
        elif ch == "\n":
            line += 1
    for i, row in enumerate(text.split("\n"), 1):  # block nesting: indentation and "- - -"
        if len(row) - len(row.lstrip(" -?:\t")) > 4 * inputs.MAX_DEPTH:
            c.fail(i, "", f"nested more than {inputs.MAX_DEPTH} levels deep (indentation)")


def _count_nodes(node: yaml.Node, c: _Checker, max_depth: int) -> yaml.Node:
    count, stack, seen = 0, [(node, 1)], set()
    while stack:
        n, depth = stack.pop()
        if id(n) in seen:  # an alias: its node was counted where the anchor is
            continue
        seen.add(id(n))
        count += 1
        if depth > max_depth:
            c.fail(n.start_mark.line + 1, "", f"nested more than {max_depth} levels deep")
        if count > MAX_NODES:
            c.fail(n.start_mark.line + 1, "", f"more than {MAX_NODES} values")
        if isinstance(n, yaml.MappingNode):
            stack.extend((x, depth + 1) for kv in n.value for x in kv)
        elif isinstance(n, yaml.SequenceNode):
            stack.extend((x, depth + 1) for x in n.value)
    return node


def parse_text(text: str, source: str = "<descriptor>") -> Descriptor:
    c = _Checker(source)
    if "\0" in text:
        c.fail(text.count("\n", 0, text.index("\0")) + 1, "", "not text (a NUL byte): binary?")
    try:
        node = _bounded_tree(text, c)
        root = None if node is None else _Loader(text).construct_document(node)
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        c.fail(mark.line + 1 if mark else None, "", f"not valid YAML: {e.problem}")
    except yaml.reader.ReaderError as e:  # a character YAML does not allow
        line = text.count("\n", 0, e.position) + 1
        c.fail(line, "", f"not valid YAML: character {e.character!r} is not allowed")
    except yaml.YAMLError as e:
        c.fail(None, "", "not valid YAML: " + " ".join(str(e).split())[:200])
    except (RecursionError, MemoryError):
        c.fail(None, "", "not usable YAML: nested too deeply")
    root = c.mapping(root, 1, "", _top_fields())
    version = c.require(root, "skel", "")
    if version != FORMAT:
        c.fail(
            c.line_of(root, "skel"), "skel", f"unsupported format {version!r} (this is {FORMAT})"
        )
    name = str(root.get("name", "skeleton"))
    if not _IDENT.match(name.replace("-", "_")):
        c.fail(c.line_of(root, "name"), "name", "use letters, digits, _ and -")
    ranks = root.get("ranks", 1)
    if type(ranks) is not int or not 1 <= ranks <= MAX_RANKS:
        c.fail(c.line_of(root, "ranks"), "ranks", f"expected an integer from 1 to {MAX_RANKS}")
    params = root.get("parameters") or _Map()
    params = c.mapping(params, c.line_of(root, "parameters"), "parameters", set(params))
    for key, value in params.items():
        if not isinstance(key, str) or not _IDENT.match(key) or key in expr.BUILTIN_NAMES:
            c.fail(params.lines[key], f"parameters.{key}", "not a valid parameter name")
        if type(value) is not int or not expr.INT_MIN <= value <= expr.INT_MAX:
            c.fail(params.lines[key], f"parameters.{key}", "expected a 64-bit integer")
    known = set(params) | set(expr.BUILTIN_NAMES)
    steps = c.expression(
        root.get("steps", 1), c.line_of(root, "steps"), "steps", known - {"rank", "step"}
    )
    compute = root.get("compute_s", 0.0)
    if (
        not isinstance(compute, int | float)
        or isinstance(compute, bool)
        or not 0 <= compute <= MAX_COMPUTE_S  # NaN fails this too
    ):
        c.fail(
            c.line_of(root, "compute_s"),
            "compute_s",
            f"expected seconds (a number from 0 to {MAX_COMPUTE_S:g})",
        )
    method = _method(c, root.get("method") or _Map(), c.line_of(root, "method"))
    files_raw = c.require(root, "files", "")
    if not isinstance(files_raw, list) or not files_raw:
        c.fail(c.line_of(root, "files"), "files", "expected a list of files")
    files = [
        _file(c, f, ln, f"files[{i}]", known)
        for i, (f, ln) in enumerate(zip(files_raw, files_raw.lines, strict=True))
    ]
    notes = root.get("notes") or []
    if not isinstance(notes, list) or not all(isinstance(n, str) for n in notes):
        c.fail(c.line_of(root, "notes"), "notes", "expected a list of strings")
    source = root.get("source") or {}
    if not isinstance(source, dict):
        c.fail(c.line_of(root, "source"), "source", "expected a mapping (key: value)")
    d = Descriptor(
        name,
        ranks,
        dict(params),
        steps,
        float(compute),
        method,
        files,
        list(notes),
        dict(source),
        c.source,
        c.line_of(root, "steps"),
    )
    _check_values(c, d)
    return d


def _method(c: _Checker, m: Any, line: int) -> dict[str, Any]:
    m = c.mapping(m, line, "method", {"name", "transfer", "stripe", "aggregators"})
    out = {
        "name": m.get("name", "native"),
        "transfer": m.get("transfer"),
        "stripe": m.get("stripe", 1 << 20),
        "aggregators": m.get("aggregators", 1),
    }
    if out["name"] not in METHODS:
        c.fail(c.line_of(m, "name"), "method.name", "expected one of " + ", ".join(METHODS))
    if out["transfer"] is not None and out["transfer"] not in TRANSFERS:
        c.fail(c.line_of(m, "transfer"), "method.transfer", "expected collective or independent")
    for key, top in (("stripe", expr.INT_MAX), ("aggregators", MAX_RANKS)):
        if type(out[key]) is not int or not 1 <= out[key] <= top:
            c.fail(c.line_of(m, key), f"method.{key}", f"expected an integer from 1 to {top}")
    return out


def _file(c: _Checker, f: Any, line: int, where: str, known: set[str]) -> File:
    f = c.mapping(
        f,
        line,
        where,
        {"name", "api", "datasets", "groups", "writes", "sync", "attributes", "open", "serial",
         "when", "readwrite", "remove", "format", "each_step", "once", "input"},
    )  # fmt: skip
    serial = f.get("serial", False)
    if type(serial) is not bool:
        c.fail(c.line_of(f, "serial"), f"{where}.serial", "expected true or false")
    opening = f.get("open", "create")
    if opening not in ("create", "existing"):
        c.fail(c.line_of(f, "open"), f"{where}.open", "expected create or existing")
    sync = f.get("sync", False)
    if type(sync) is not bool:
        c.fail(c.line_of(f, "sync"), f"{where}.sync", "expected true or false")
    name = c.require(f, "name", where)
    if not isinstance(name, str) or not name or "\0" in name or len(name) > MAX_FILE_NAME:
        c.fail(c.line_of(f, "name"), f"{where}.name",
               f"expected a file name (no NUL, at most {MAX_FILE_NAME} characters)")  # fmt: skip
    c.names_in(name, c.line_of(f, "name"), f"{where}.name", MAX_FILE_NAME)
    api = f.get("api", "hdf5")
    if api not in APIS:
        c.fail(c.line_of(f, "api"), f"{where}.api", "expected one of " + ", ".join(APIS))
    each_step = f.get("each_step", False)
    if type(each_step) is not bool:
        c.fail(c.line_of(f, "each_step"), f"{where}.each_step", "expected true or false")
    once = f.get("once", False)
    if type(once) is not bool or (once and each_step):
        c.fail(c.line_of(f, "once"), f"{where}.once",
               "expected true or false; not with each_step")  # fmt: skip
    datasets: list[Dataset] = []
    raw = f.get("datasets") or []
    if raw and api != "hdf5":
        c.fail(c.line_of(f, "datasets"), f"{where}.datasets", f"an {api} file has no datasets")
    for i, (d, ln) in enumerate(zip(raw, getattr(raw, "lines", []), strict=False)):
        datasets.append(_dataset(c, d, ln, f"{where}.datasets[{i}]", known))
    names = [d.name for d in datasets]
    groups = f.get("groups") or []
    if not isinstance(groups, list) or not all(
        isinstance(g, str) and g.startswith("/") and "\0" not in g and len(g) <= MAX_NAME
        for g in groups
    ):
        msg = f"expected a list of paths (/a/b; no NUL, at most {MAX_NAME} characters)"
        c.fail(c.line_of(f, "groups"), f"{where}.groups", msg)
    for g in groups:
        c.names_in(g, c.line_of(f, "groups"), f"{where}.groups", MAX_NAME)
    writes_raw = f.get("writes") or []
    if not isinstance(writes_raw, list):
        c.fail(c.line_of(f, "writes"), f"{where}.writes", "expected a list of writes")
    writes = []
    by_name = {d.name: d for d in datasets}
    for i, (w, ln) in enumerate(zip(writes_raw, getattr(writes_raw, "lines", []), strict=False)):
        writes.append(_write(c, w, ln, f"{where}.writes[{i}]", known, api, by_name))
    if sum(w.open for w in writes) > MAX_OPENS:
        msg = f"at most {MAX_OPENS} dataset opens (open: true) in one file entry"
        c.fail(c.line_of(f, "writes"), f"{where}.writes", msg)
    del names
    attributes = attrs.parse(
        c, f.get("attributes"), c.line_of(f, "attributes"), f"{where}.attributes", TYPES, MAX_NAME
    )
    if attributes and api != "hdf5":
        c.fail(c.line_of(f, "attributes"), f"{where}.attributes", f"an {api} file has none")
    objects = _objects_of(datasets, list(groups))
    for i, w in enumerate(writes):  # a created file: on its root, a group or a dataset of it
        if w.attr is not None and opening != "existing" and w.attr.on not in objects:
            msg = f"no group or dataset {w.attr.on!r} in this file (groups, datasets, /)"
            c.fail(w.line, f"{where}.writes[{i}].object", msg)
    if any(d.exists for d in datasets) and opening != "existing":
        c.fail(c.line_of(f, "datasets"), f"{where}.datasets", "exists: true needs open: existing")
    if serial and api != "hdf5":
        c.fail(c.line_of(f, "serial"), f"{where}.serial", "an HDF5 file's (its driver)")
    out = File(
        name, api, datasets, list(groups), writes, line, sync, attributes, opening == "existing"
    )
    out.serial = serial
    readwrite = f.get("readwrite", False)
    if type(readwrite) is not bool:
        c.fail(c.line_of(f, "readwrite"), f"{where}.readwrite", "expected true or false")
    if readwrite and opening != "existing":
        c.fail(c.line_of(f, "readwrite"), f"{where}.readwrite", "readwrite needs open: existing")
    out.readwrite = readwrite
    remove = f.get("remove", False)
    if type(remove) is not bool:
        c.fail(c.line_of(f, "remove"), f"{where}.remove", "expected true or false")
    out.remove = remove
    out.each_step = each_step
    out.once = once
    made_first = f.get("input", False)
    if type(made_first) is not bool:
        c.fail(c.line_of(f, "input"), f"{where}.input", "expected true or false")
    if made_first and (
        opening == "existing"
        or each_step
        or once
        or remove
        or f.get("when") is not None
        or any(w.read for w in writes)
    ):
        c.fail(c.line_of(f, "input"), f"{where}.input",
               "an input is created, written and closed before the steps by every rank: not "
               "with open: existing, each_step, once, remove, when or reads")  # fmt: skip
    out.input = made_first
    if f.get("format") is not None:
        if api != "hdf5":
            c.fail(c.line_of(f, "format"), f"{where}.format", "an HDF5 file's")
        out.format = _format(c, f["format"], c.line_of(f, "format"), f"{where}.format")
        if opening == "existing" and set(out.format) - {"libver"}:
            msg = "a file opened existing takes libver only (its objects were made before)"
            c.fail(c.line_of(f, "format"), f"{where}.format", msg)
    if f.get("when") is not None:
        out.when = c.expression(f["when"], c.line_of(f, "when"), f"{where}.when", known)
        if "step" in expr.names(out.when):
            c.fail(c.line_of(f, "when"), f"{where}.when",
                   "the ranks that open a file cannot depend on the step")  # fmt: skip
    return out


def _format(c: _Checker, f: Any, line: int, where: str) -> dict[str, Any]:
    """{libver: [low, high], track_times: false, link_order|attr_order: tracked|indexed}."""
    f = c.mapping(f, line, where, {"libver", "track_times", "link_order", "attr_order"})
    libver = f.get("libver")
    if libver is not None and not (
        isinstance(libver, list) and len(libver) == 2 and all(v in LIBVERS for v in libver)
        and LIBVERS.index(libver[0]) <= LIBVERS.index(libver[1])
    ):  # fmt: skip
        c.fail(c.line_of(f, "libver"), f"{where}.libver",
               "expected [low, high] of " + ", ".join(LIBVERS) + ", low <= high")  # fmt: skip
    if type(f.get("track_times", True)) is not bool:
        c.fail(c.line_of(f, "track_times"), f"{where}.track_times", "expected true or false")
    for key in ("link_order", "attr_order"):
        if f.get(key) is not None and f[key] not in ORDERS:
            c.fail(c.line_of(f, key), f"{where}.{key}", "expected tracked or indexed")
    return dict(f)


def _dataset(c: _Checker, d: Any, line: int, where: str, known: set[str]) -> Dataset:
    d = c.mapping(
        d,
        line,
        where,
        {"name", "type", "dims", "maxdims", "chunks", "filters", "exists", "fill_time",
         "alloc_time", "fill_value", "track_times", "attr_order", "anonymous"},
    )  # fmt: skip
    times = {}
    for key, allowed in (("fill_time", FILL_TIMES), ("alloc_time", ALLOC_TIMES)):
        if d.get(key) is not None and d[key] not in allowed:
            c.fail(c.line_of(d, key), f"{where}.{key}", "expected one of " + ", ".join(allowed))
        times[key] = d.get(key)
    exists = d.get("exists", False)
    if type(exists) is not bool:
        c.fail(c.line_of(d, "exists"), f"{where}.exists", "expected true or false")
    name = c.require(d, "name", where)
    if (
        not isinstance(name, str)
        or not name.startswith("/")
        or name.endswith("/")
        or "\0" in name
        or len(name) > MAX_NAME
    ):
        msg = f"expected an absolute path (/group/name; at most {MAX_NAME} characters)"
        c.fail(c.line_of(d, "name"), f"{where}.name", msg)
    c.names_in(name, c.line_of(d, "name"), f"{where}.name", MAX_NAME)
    typ, size, members = _type(c, c.require(d, "type", where), c.line_of(d, "type"), where)
    no_rank = known - {"rank"}  # every rank must create the same dataset
    dims = c.expressions(
        c.require(d, "dims", where), c.line_of(d, "dims"), f"{where}.dims", no_rank
    )
    if len(dims) > MAX_DIMS:
        c.fail(c.line_of(d, "dims"), f"{where}.dims", f"more than {MAX_DIMS} dimensions")
    maxdims = None
    if d.get("maxdims") is not None:
        raw = d["maxdims"]
        if not isinstance(raw, list) or len(raw) != len(dims):
            c.fail(
                c.line_of(d, "maxdims"),
                f"{where}.maxdims",
                f"expected {len(dims)} entries (expressions or unlimited)",
            )
        maxdims = [
            None
            if v == "unlimited"
            else c.expression(v, c.line_of(d, "maxdims"), f"{where}.maxdims[{i}]", no_rank)
            for i, v in enumerate(raw)
        ]
    chunks = None
    if d.get("chunks") is not None:
        chunks = c.expressions(
            d["chunks"], c.line_of(d, "chunks"), f"{where}.chunks", no_rank, len(dims)
        )
    elif maxdims and None in maxdims:
        c.fail(c.line_of(d, "maxdims"), f"{where}.chunks", "an unlimited dataset needs chunks")
    filters = d.get("filters") or []
    if not isinstance(filters, list) or not all(
        isinstance(x, str) and (x in FILTERS or _DEFLATE.match(x)) for x in filters
    ):
        c.fail(c.line_of(d, "filters"), f"{where}.filters",
               "expected a list of shuffle, fletcher32, deflate=LEVEL (0-9)")  # fmt: skip
    if filters and chunks is None:
        c.fail(c.line_of(d, "filters"), f"{where}.filters", "filters need chunks")
    fill = d.get("fill_value")
    if fill is not None and (
        not isinstance(fill, str)
        or len(fill) != 2 * size
        or not re.fullmatch(r"[0-9a-f]*", fill)
        or size > MAX_FILL_VALUE
    ):
        msg = f"expected the {size} bytes of one element in hex (at most {MAX_FILL_VALUE})"
        c.fail(c.line_of(d, "fill_value"), f"{where}.fill_value", msg)
    track = d.get("track_times", True)
    if type(track) is not bool:
        c.fail(c.line_of(d, "track_times"), f"{where}.track_times", "expected true or false")
    order = d.get("attr_order")
    if order is not None and order not in ORDERS:
        c.fail(c.line_of(d, "attr_order"), f"{where}.attr_order", "expected tracked or indexed")
    anonymous = d.get("anonymous", False)
    if type(anonymous) is not bool or (anonymous and exists):
        c.fail(c.line_of(d, "anonymous"), f"{where}.anonymous",
               "expected true or false; a dataset without a name cannot exist before")  # fmt: skip
    return Dataset(name, typ, dims, maxdims, chunks, line, size, members, list(filters), exists,
                   **times, fill_value=fill, track_times=track, attr_order=order,
                   anonymous=anonymous)  # fmt: skip


def _type(c: _Checker, t: Any, line: int, where: str) -> tuple[str, int, list[Member] | None]:
    """(type, bytes, members): a TYPES name, {opaque: BYTES}, or {compound: BYTES, members:
    [[name, type, offset], ...]} (members of TYPES, inside the size, not overlapping)."""
    at = f"{where}.type"
    if isinstance(t, str) and t in TYPES:
        return t, TYPES[t][0], None
    if not isinstance(t, _Map):
        c.fail(line, at, "expected one of " + ", ".join(TYPES) + ", {opaque: BYTES} or "
               "{compound: BYTES, members: [[name, type, offset], ...]}")  # fmt: skip
    kind = "compound" if "compound" in t else "opaque"
    t = c.mapping(t, line, at, {"compound", "members"} if kind == "compound" else {"opaque"})
    size = t.get(kind)
    if type(size) is not int or not 1 <= size <= MAX_TYPE_SIZE:
        c.fail(line, f"{at}.{kind}", f"expected the element's bytes (1 to {MAX_TYPE_SIZE})")
    if kind == "opaque":
        return kind, size, None
    raw = c.require(t, "members", at)
    if not isinstance(raw, list) or not 1 <= len(raw) <= MAX_MEMBERS:
        c.fail(c.line_of(t, "members"), f"{at}.members",
               f"expected 1 to {MAX_MEMBERS} [name, type, offset] entries")  # fmt: skip
    members, end, names = [], 0, set()
    for i, m in enumerate(raw):
        ok = (
            isinstance(m, list)
            and len(m) == 3
            and isinstance(m[0], str)
            and 0 < len(m[0]) <= MAX_NAME
            and "\0" not in m[0]
            and m[0] not in names
            and isinstance(m[1], str)
            and m[1] in TYPES
            and type(m[2]) is int
            and m[2] >= end
            and m[2] + TYPES[m[1]][0] <= size
        )
        if not ok:
            c.fail(c.line_of(t, "members"), f"{at}.members[{i}]",
                   "expected [name, type, offset]: a new name, a type of " + ", ".join(TYPES)
                   + ", offsets increasing, inside the size")  # fmt: skip
        names.add(m[0])
        members.append(Member(m[0], m[1], m[2]))
        end = m[2] + TYPES[m[1]][0]
    return kind, size, members


def _write(
    c: _Checker, w: Any, line: int, where: str, known: set[str], api: str, datasets: dict
) -> Write:
    """A writes entry of any kind, with `once: true` (made at the first step only) or not."""
    once = False
    if isinstance(w, _Map) and "once" in w:
        once = w["once"]
        if type(once) is not bool:
            c.fail(c.line_of(w, "once"), f"{where}.once", "expected true or false")
        rest = _Map((k, v) for k, v in w.items() if k != "once")
        rest.line, rest.lines = w.line, w.lines
        w = rest
    out = _write_entry(c, w, line, where, known, api, datasets)
    out.once = once
    return out


def _write_entry(
    c: _Checker, w: Any, line: int, where: str, known: set[str], api: str, datasets: dict
) -> Write:
    fields = {
        "dataset",
        "start",
        "count",
        "offset",
        "size",
        "by_rank",
        "transfer",
        "repeat",
        "stride",
        "when",
        "view",
        "memory",
        "read",
        "direct",
        "filter_mask",
        "extent",
        *SCALE_CALLS,
        "dim",
        "set_size",
        "seek_shared",
        "fresh",
        "gap_s",
        "shared",
    }
    if isinstance(w, dict) and "attribute" in w:
        return _attribute(c, w, line, where, known, api)
    if isinstance(w, dict) and ("create" in w or "open" in w):
        return _create(c, w, line, where, datasets)
    if isinstance(w, dict) and "flush" in w:
        w = c.mapping(w, line, where, {"flush"})
        if w["flush"] is not True or api != "hdf5":
            c.fail(c.line_of(w, "flush"), f"{where}.flush", "expected true, in an HDF5 file")
        return Write(dataset=None, line=line, collective=True, flush=True)
    if isinstance(w, dict) and "delete" in w:
        w = c.mapping(w, line, where, {"delete"})
        on = w["delete"]
        if (
            api != "hdf5"
            or not isinstance(on, str)
            or not on.startswith("/")
            or on.strip("/") == ""
            or "\0" in on
            or len(on) > MAX_NAME
        ):
            c.fail(c.line_of(w, "delete"), f"{where}.delete",
                   f"expected the absolute path of a link (/a/b; at most {MAX_NAME} bytes), "
                   "in an HDF5 file")  # fmt: skip
        c.names_in(on, c.line_of(w, "delete"), f"{where}.delete", MAX_NAME)
        return Write(dataset=None, line=line, collective=True, delete=on)
    w = c.mapping(w, line, where, fields)
    if any(k in w for k in SCALE_CALLS):
        return _scale(c, w, line, where, known, api, datasets)
    if "extent" in w:
        return _extent(c, w, line, where, known, api, datasets)
    if "set_size" in w:
        return _set_size(c, w, line, where, known, api)
    if "seek_shared" in w:
        return _seek_shared(c, w, line, where, known, api)
    is_read = w.get("read", False)
    if type(is_read) is not bool:
        c.fail(c.line_of(w, "read"), f"{where}.read", "expected true or false")
    fresh = w.get("fresh", False)
    if type(fresh) is not bool:
        c.fail(c.line_of(w, "fresh"), f"{where}.fresh", "expected true or false")
    if fresh and (not is_read or api != "hdf5" or w.get("direct")):
        c.fail(c.line_of(w, "fresh"), f"{where}.fresh",
               "only a read of an HDF5 dataset's selection (read: true) reads into "
               "fresh memory")  # fmt: skip
    if is_read and "view" in w:
        c.fail(c.line_of(w, "view"), f"{where}.view", "reads go without a file view")
    view_ok = api == "mpiio"
    for key in ("view", "memory"):
        if key in w and not view_ok:
            c.fail(c.line_of(w, key), f"{where}.{key}", f"{key} is an mpiio file's")
    transfer = w.get("transfer", "collective")
    if not isinstance(transfer, str) or transfer not in TRANSFERS:
        c.fail(c.line_of(w, "transfer"), f"{where}.transfer", "expected collective or independent")
    out = Write(dataset=None, collective=transfer == "collective", line=line, read=is_read)
    out.fresh = fresh
    out.shared = _shared(c, w, where, api)
    out.gap_s = _gap(c, w, where)
    _direct(c, w, where, known, api, datasets, out)
    out.repeat = c.expression(w.get("repeat", 1), c.line_of(w, "repeat"), f"{where}.repeat", known)
    if w.get("when") is not None:
        out.when = c.expression(w["when"], c.line_of(w, "when"), f"{where}.when", known)
    if api == "hdf5":
        name = c.require(w, "dataset", where)
        if not isinstance(name, str) or name not in datasets:
            c.fail(
                c.line_of(w, "dataset"),
                f"{where}.dataset",
                f"no dataset {name!r} in this file's datasets",
            )
        out.dataset = name
        rank = len(datasets[name].dims)
        keys, lists = ("start", "count"), True
    else:
        if "dataset" in w:
            c.fail(
                c.line_of(w, "dataset"),
                f"{where}.dataset",
                f"an {api} file writes bytes (offset, size), not datasets",
            )
        rank, keys, lists = None, ("offset", "size"), False

    def read(m: _Map, key: str, at: str) -> Any:
        if out.shared and key == "offset":  # the shared file pointer's: none given
            return expr.parse(0)
        value = c.require(m, key, at)
        if lists:
            return c.expressions(value, c.line_of(m, key), f"{at}.{key}", known, rank)
        return c.expression(value, c.line_of(m, key), f"{at}.{key}", known)

    if "by_rank" in w:
        table = w["by_rank"]
        if not isinstance(table, _Map) or not table:
            c.fail(c.line_of(w, "by_rank"), f"{where}.by_rank", "expected rank: {...} entries")
        out.by_rank = {}
        for r, entry in table.items():
            at = f"{where}.by_rank.{r}"
            if type(r) is not int or not 0 <= r < MAX_RANKS:
                c.fail(table.lines[r], at, "keys are rank numbers")
            allowed = set(keys) | ({"view", "memory"} if view_ok else set())
            allowed -= {"offset", "view"} if out.shared else set()
            entry = c.mapping(entry, table.lines[r], at, allowed)
            out.by_rank[r] = (read(entry, keys[0], at), read(entry, keys[1], at))
            if "view" in entry:
                out.view_by_rank = out.view_by_rank or {}
                out.view_by_rank[r] = _view(c, entry["view"], c.line_of(entry, "view"),
                                            f"{at}.view", known)  # fmt: skip
            if "memory" in entry:
                out.memory_by_rank = out.memory_by_rank or {}
                out.memory_by_rank[r] = _pieces(c, entry["memory"], c.line_of(entry, "memory"),
                                                f"{at}.memory")  # fmt: skip
        if out.view_by_rank and is_read:
            c.fail(c.line_of(w, "by_rank"), f"{where}.by_rank", "reads go without a file view")
        if out.view_by_rank and set(out.view_by_rank) != set(out.by_rank):
            c.fail(c.line_of(w, "by_rank"), f"{where}.by_rank", "a view for every rank or none")
    else:
        first, second = read(w, keys[0], where), read(w, keys[1], where)
        if lists:
            out.start, out.count = first, second
        else:
            out.offset, out.size = first, second
        if "view" in w:
            out.view = _view(c, w["view"], c.line_of(w, "view"), f"{where}.view", known)
        if "memory" in w:
            out.memory = _pieces(c, w["memory"], c.line_of(w, "memory"), f"{where}.memory")
    if w.get("stride") is not None:
        if lists:
            out.stride = c.expressions(
                w["stride"], c.line_of(w, "stride"), f"{where}.stride", known, rank
            )
        else:
            out.stride = c.expression(w["stride"], c.line_of(w, "stride"), f"{where}.stride", known)
    return out


def _shared(c: _Checker, w: _Map, where: str, api: str) -> bool:
    """shared: true, a transfer through the shared file pointer: an MPI-IO file's, without an
    offset, view or stride (the pointer says where, and each call moves it)."""
    shared = w.get("shared", False)
    if type(shared) is not bool or (shared and api != "mpiio"):
        c.fail(c.line_of(w, "shared"), f"{where}.shared",
               "expected true or false; true only in an mpiio file")  # fmt: skip
    for key in ("offset", "view", "stride"):
        if shared and key in w:
            c.fail(c.line_of(w, key), f"{where}.{key}",
                   f"a transfer through the shared file pointer has no {key}")  # fmt: skip
    return shared


def _gap(c: _Checker, w: _Map, where: str) -> float:
    """gap_s: seconds from 0 to MAX_COMPUTE_S after each call of the entry (absent: 0)."""
    gap = w.get("gap_s", 0.0)
    if isinstance(gap, bool) or not isinstance(gap, int | float) or not 0 <= gap <= MAX_COMPUTE_S:
        c.fail(c.line_of(w, "gap_s"), f"{where}.gap_s",
               f"expected seconds (a number from 0 to {MAX_COMPUTE_S:g})")  # fmt: skip
    return float(gap)


def _attribute(c: _Checker, w: Any, line: int, where: str, known: set[str], api: str) -> Write:
    """{attribute: CALL, object: PATH, name, ...}: an attribute call (attrs.py)."""
    if api != "hdf5":
        c.fail(c.line_of(w, "attribute"), f"{where}.attribute", f"an {api} file has no attributes")
    out = Write(dataset=None, line=line, collective=True)
    out.attr = attrs.parse_call(c, w, line, where, TYPES, MAX_NAME)
    if w.get("when") is not None:
        out.when = c.expression(w["when"], c.line_of(w, "when"), f"{where}.when", known)
    return out


def _create(c: _Checker, w: Any, line: int, where: str, datasets: dict) -> Write:
    """{dataset, create: true}: the dataset created here (by every rank of the file);
    {dataset, open: true}: the dataset opened here (H5Dopen, by every rank of the file)."""
    key = "create" if "create" in w else "open"
    w = c.mapping(w, line, where, {"dataset", key})
    name = w.get("dataset")
    if w[key] is not True or not isinstance(name, str) or name not in datasets:
        c.fail(c.line_of(w, key), f"{where}.{key}",
               f"expected {key}: true and a dataset of this file")  # fmt: skip
    if key == "create" and datasets[name].exists:
        c.fail(c.line_of(w, "create"), f"{where}.create", f"dataset {name!r} exists already")
    return Write(dataset=name, line=line, collective=True, create=key == "create",
                 open=key == "open")  # fmt: skip


def _objects_of(datasets: list[Dataset], groups: list[str]) -> set[str]:
    """The paths of the objects a created file has: its root, groups and datasets and the
    groups that hold them."""
    out = {"/"}
    for path in [d.name for d in datasets] + list(groups):
        parts = path.strip("/").split("/")
        out.update("/" + "/".join(parts[:k]) for k in range(1, len(parts) + 1))
    return out


def _set_size(c: _Checker, w: _Map, line: int, where: str, known: set[str], api: str) -> Write:
    """{set_size: EXPR, when}: a raw file's size set (MPI_File_set_size, collective: the same
    size on every rank, so no `rank` in it; ftruncate on a POSIX file)."""
    c.mapping(w, line, where, {"set_size", "when"})
    if api == "hdf5":
        c.fail(c.line_of(w, "set_size"), f"{where}.set_size",
               "an mpiio or posix file's (HDF5 sets its files' sizes itself)")  # fmt: skip
    out = Write(dataset=None, line=line, collective=True)
    out.set_size = c.expression(
        w["set_size"], c.line_of(w, "set_size"), f"{where}.set_size", known - {"rank"}
    )
    if w.get("when") is not None:
        out.when = c.expression(w["when"], c.line_of(w, "when"), f"{where}.when", known)
    return out


def _seek_shared(c: _Checker, w: _Map, line: int, where: str, known: set[str], api: str) -> Write:
    """{seek_shared: EXPR}: the shared file pointer moved to that byte offset
    (MPI_File_seek_shared, collective: the same offset on every rank, so no `rank` in it)."""
    c.mapping(w, line, where, {"seek_shared"})
    if api != "mpiio":
        c.fail(c.line_of(w, "seek_shared"), f"{where}.seek_shared",
               "an mpiio file's (the shared file pointer is MPI-IO's)")  # fmt: skip
    out = Write(dataset=None, line=line, collective=True)
    out.seek_shared = c.expression(
        w["seek_shared"], c.line_of(w, "seek_shared"), f"{where}.seek_shared", known - {"rank"}
    )
    return out


def _extent(
    c: _Checker, w: _Map, line: int, where: str, known: set[str], api: str, datasets: dict
) -> Write:
    """{dataset, extent: [...], when}: the dataset extended (or shrunk) to extent, by every
    rank (H5Dset_extent is collective on a shared file)."""
    c.mapping(w, line, where, {"dataset", "extent", "when"})
    name = w.get("dataset")
    if api != "hdf5" or not isinstance(name, str) or name not in datasets:
        c.fail(c.line_of(w, "extent"), f"{where}.extent", "an extent needs a dataset of this file")
    ds = datasets[name]
    if ds.maxdims is None:
        c.fail(c.line_of(w, "extent"), f"{where}.extent",
               f"dataset {name!r} has no maxdims: its extent cannot change")  # fmt: skip
    no_rank = known - {"rank"}  # every rank sets the same extent
    out = Write(dataset=name, line=line, collective=True)
    out.extent = c.expressions(
        w["extent"], c.line_of(w, "extent"), f"{where}.extent", no_rank, len(ds.dims)
    )
    if w.get("when") is not None:
        out.when = c.expression(w["when"], c.line_of(w, "when"), f"{where}.when", known)
    return out


def _scale(
    c: _Checker, w: _Map, line: int, where: str, known: set[str], api: str, datasets: dict
) -> Write:
    """{dataset, set_scale: NAME_BYTES} or {dataset, attach_scale|detach_scale: SCALE, dim: N}:
    a dimension scale made (H5DSset_scale) on the dataset, or the dataset SCALE attached to (or
    detached from) its dimension N, by every rank of the file; {dataset, lookup_scales:
    is_scale | count | iterate, dim: N, when}: H5DSis_scale, H5DSget_num_scales or
    H5DSiterate_scales on the dataset (dimension N), a lookup that reads its scales."""
    calls = [k for k in SCALE_CALLS if k in w]
    key = calls[0]
    dims = key != "set_scale" and not (key == "lookup_scales" and w[key] == "is_scale")
    c.mapping(w, line, where, {"dataset", key, "when"} | ({"dim"} if dims else set()))
    name = w.get("dataset")
    if len(calls) > 1 or api != "hdf5" or not isinstance(name, str) or name not in datasets:
        c.fail(c.line_of(w, key), f"{where}.{key}",
               "a dimension scale call needs one dataset of this file (and one call)")  # fmt: skip
    out = Write(dataset=name, line=line, collective=True, scale_call=key.split("_")[0])
    value = w[key]
    if w.get("when") is not None:  # lookups: the ranks that made them (they change nothing)
        if key != "lookup_scales":
            c.fail(c.line_of(w, "when"), f"{where}.when", "scales are made by every rank")
        out.when = c.expression(w["when"], c.line_of(w, "when"), f"{where}.when", known)
    if key == "lookup_scales":
        if value not in SCALE_LOOKUPS:
            c.fail(c.line_of(w, key), f"{where}.{key}",
                   "expected one of " + ", ".join(SCALE_LOOKUPS))  # fmt: skip
        out.scale_call = f"lookup:{value}"
        if value == "is_scale":
            return out
    if key == "set_scale":
        if type(value) is not int or not 0 <= value <= MAX_SCALE_NAME:
            c.fail(c.line_of(w, key), f"{where}.{key}",
                   f"expected the bytes of the scale's name, 0 to {MAX_SCALE_NAME}")  # fmt: skip
        out.scale_name = value
        return out
    if key == "lookup_scales":
        pass
    elif not isinstance(value, str) or value not in datasets or value == name:
        c.fail(c.line_of(w, key), f"{where}.{key}",
               f"expected another dataset of this file, not {value!r}")  # fmt: skip
    dim = w.get("dim")
    if type(dim) is not int or not 0 <= dim < len(datasets[name].dims):
        last = len(datasets[name].dims) - 1
        c.fail(
            c.line_of(w, "dim"), f"{where}.dim", f"expected a dimension of {name!r}, 0 to {last}"
        )
    out.scale, out.dim = (None if key == "lookup_scales" else value), dim
    return out


def _direct(
    c: _Checker, w: _Map, where: str, known: set[str], api: str, datasets: dict, out: Write
) -> None:
    """`direct: true` (a direct chunk transfer of `size` stored bytes) and `filter_mask`."""
    direct = w.get("direct", False)
    if type(direct) is not bool:
        c.fail(c.line_of(w, "direct"), f"{where}.direct", "expected true or false")
    mask = w.get("filter_mask", 0)
    if type(mask) is not int or not 0 <= mask < 2**31:
        c.fail(c.line_of(w, "filter_mask"), f"{where}.filter_mask",
               "expected the filters skipped, as bits (0 to 2^31-1)")  # fmt: skip
    if "filter_mask" in w and not direct:
        c.fail(c.line_of(w, "filter_mask"), f"{where}.filter_mask", "needs direct: true")
    if not direct:
        return
    name = w.get("dataset")
    if api != "hdf5" or not isinstance(name, str) or name not in datasets:
        c.fail(c.line_of(w, "direct"), f"{where}.direct", "a direct chunk transfer needs a "
               "dataset of this file")  # fmt: skip
    if datasets[name].chunks is None:
        c.fail(c.line_of(w, "direct"), f"{where}.direct", f"dataset {name!r} is not chunked")
    if "view" in w or "memory" in w:
        c.fail(c.line_of(w, "direct"), f"{where}.direct", "a chunk goes without view or memory")
    size = c.require(w, "size", where)
    out.direct, out.filter_mask = True, mask
    out.size = c.expression(size, c.line_of(w, "size"), f"{where}.size", known)


def _view(c: _Checker, v: Any, line: int, where: str, known: set[str]) -> View:
    v = c.mapping(v, line, where, {"lb", "extent", "blocks", "at"})
    blocks = c.require(v, "blocks", where)
    expect = "expected a list of [offset, length] or [offset, length, count, stride]"
    if not isinstance(blocks, list):
        c.fail(c.line_of(v, "blocks"), f"{where}.blocks", expect)
    pairs = []
    for i, (b, ln) in enumerate(zip(blocks, getattr(blocks, "lines", []), strict=False)):
        if not isinstance(b, list) or len(b) not in (2, 4):
            c.fail(ln, f"{where}.blocks[{i}]", expect)
        pairs.append(tuple(c.expressions(b, ln, f"{where}.blocks[{i}]", known)))
    lb = c.expression(v.get("lb", 0), c.line_of(v, "lb"), f"{where}.lb", known)
    extent = c.expression(c.require(v, "extent", where), c.line_of(v, "extent"),
                          f"{where}.extent", known)  # fmt: skip
    at = None
    if "at" in v:
        at = c.expression(v["at"], c.line_of(v, "at"), f"{where}.at", known)
    return View(lb, extent, pairs, at)


def _pieces(c: _Checker, v: Any, line: int, where: str) -> list[int]:
    if (
        not isinstance(v, list)
        or not v
        or len(v) > 1_000_000
        or any(type(x) is not int or not 1 <= x <= 2**31 - 1 for x in v)
    ):
        c.fail(line, where, "expected the lengths of the memory pieces: [32, 400, ...]")
    return list(v)


def _check_values(c: _Checker, d: Descriptor) -> None:
    """Evaluates the expressions at every rank of the default size: negative sizes, selections
    outside a dataset, chunks larger than fixed dimensions are found here, not in a job."""
    env0 = d.env()
    try:
        steps = expr.evaluate(d.steps, env0)
    except expr.ExprError as e:
        c.fail(d.steps_line, "steps", str(e))
    if not 1 <= steps <= MAX_STEPS:
        c.fail(d.steps_line, "steps", f"is {steps}; expected 1 to {MAX_STEPS}")
    for fi, f in enumerate(d.files):
        dsets = {ds.name: ds for ds in f.datasets}
        for di, ds in enumerate(f.datasets):
            where = f"files[{fi}].datasets[{di}]"
            try:
                dims = [expr.evaluate(x, env0) for x in ds.dims]
                if any(v < 0 for v in dims):
                    c.fail(ds.line, f"{where}.dims", f"negative dimension: {dims}")
                if ds.chunks:
                    chunks = [expr.evaluate(x, env0) for x in ds.chunks]
                    if any(v < 1 for v in chunks):
                        c.fail(
                            ds.line, f"{where}.chunks", f"chunk dimensions must be >= 1: {chunks}"
                        )
                    fixed = ds.maxdims is None
                    if fixed and any(ch > n for ch, n in zip(chunks, dims, strict=True)):
                        c.fail(
                            ds.line,
                            f"{where}.chunks",
                            f"chunk {chunks} larger than the fixed dimensions {dims}",
                        )
            except expr.ExprError as e:
                c.fail(ds.line, where, str(e))
        for wi, w in enumerate(f.writes):
            where = f"files[{fi}].writes[{wi}]"
            for r in checked_ranks(d.ranks):
                try:
                    if f.when is not None and not expr.evaluate(f.when, d.env(rank=r)):
                        continue  # the rank does not open the file
                    _check_write(d, w, dsets, d.env(rank=r))
                except expr.ExprError as e:
                    c.fail(w.line, where, f"at rank {r} of {d.ranks}: {e}")


def checked_ranks(ranks: int) -> list[int]:
    """The ranks whose selections are checked: all up to CHECKED_RANKS, beyond the first and
    last 1024 and 2048 spread between (the check stays fast at any job size)."""
    if ranks <= CHECKED_RANKS:
        return list(range(ranks))
    edge = CHECKED_RANKS // 4
    spread = range(edge, ranks - edge, max((ranks - 2 * edge) // (CHECKED_RANKS // 2), 1))
    return sorted(set(range(edge)) | set(spread) | set(range(ranks - edge, ranks)))


def _check_write(d: Descriptor, w: Write, dsets: dict[str, Dataset], env: dict[str, int]) -> None:
    if w.scale_call is not None or w.attr is not None or w.create or w.open or w.flush:
        return
    if w.delete is not None:
        return  # a dimension scale or attribute call, a creation, an open: checked when read
    if w.when is not None and not expr.evaluate(w.when, env):
        return
    if w.set_size is not None:
        if expr.evaluate(w.set_size, env) < 0:
            raise expr.ExprError(f"file size {expr.evaluate(w.set_size, env)} negative")
        return
    if w.seek_shared is not None:
        if expr.evaluate(w.seek_shared, env) < 0:
            raise expr.ExprError(f"offset {expr.evaluate(w.seek_shared, env)} negative")
        return
    if w.by_rank is not None:
        if env["rank"] not in w.by_rank:
            raise expr.ExprError("by_rank has no entry for this rank")
        first, second = w.by_rank[env["rank"]]
    else:
        first, second = (w.start, w.count) if w.dataset else (w.offset, w.size)
    repeat = expr.evaluate(w.repeat, env)
    if repeat < 0:
        raise expr.ExprError(f"repeat is {repeat}")
    if w.dataset is None:
        off, size = expr.evaluate(first, env), expr.evaluate(second, env)
        if off < 0 or size < 0:
            raise expr.ExprError(f"offset {off} / size {size} negative")
        view = (w.view_by_rank or {}).get(env["rank"], w.view)
        if view is not None:
            blocks = [[expr.evaluate(x, env) for x in b] for b in view.blocks]
            if expr.evaluate(view.extent, env) < 0 or any(x < 0 for b in blocks for x in b):
                raise expr.ExprError(f"view blocks {blocks} or extent negative")
            if sum(b[2] if len(b) == 4 else 1 for b in blocks) > MAX_VIEW_BLOCKS:
                raise expr.ExprError(f"view of more than {MAX_VIEW_BLOCKS} blocks")
            if view.at is not None and expr.evaluate(view.at, env) < 0:
                raise expr.ExprError(f"view at {expr.evaluate(view.at, env)} negative")
        return
    ds = dsets[w.dataset]
    if w.extent is not None:
        extent = [expr.evaluate(x, env) for x in w.extent]
        maxdims = [None if x is None else expr.evaluate(x, env) for x in ds.maxdims or []]
        if any(v < 0 or (m is not None and v > m) for v, m in zip(extent, maxdims, strict=True)):
            raise expr.ExprError(f"extent {extent} negative or beyond maxdims {maxdims}")
        return
    if w.direct and w.size is not None and expr.evaluate(w.size, env) < 0:
        raise expr.ExprError(f"chunk size {expr.evaluate(w.size, env)} negative")
    dims = [expr.evaluate(x, env) for x in ds.dims]
    start = [expr.evaluate(x, env) for x in first]
    count = [expr.evaluate(x, env) for x in second]
    stride = [expr.evaluate(x, env) for x in w.stride] if w.stride else [0] * len(dims)
    last = [s + st * max(repeat - 1, 0) for s, st in zip(start, stride, strict=True)]
    unlimited = ds.maxdims is not None and None in ds.maxdims
    for s, n, e, dim in zip(start, count, last, dims, strict=True):
        if s < 0 or n < 0 or (not unlimited and (e + n > dim)):
            raise expr.ExprError(
                f"selection start {start} count {count} (repeat {repeat}, "
                f"stride {stride}) outside the dataset's dims {dims}"
            )


def load(path: str) -> Descriptor:
    """The descriptor in a file, read without blocking (a FIFO, a device, a directory or a
    file over MAX_BYTES is refused at once) and checked; every problem one DescriptorError."""
    from iotune import inputs

    try:
        text = inputs.read_text(path, "descriptor", MAX_BYTES)
    except inputs.InputError as e:
        err = DescriptorError(path, None, "", str(e))
        err.args = (str(e),)  # the reader's message names the file (and line) already
        raise err from None
    d = parse_text(text, path)
    d.path = path
    return d


def with_parameters(d: Descriptor, values: dict[str, int], ranks: int | None = None) -> Descriptor:
    """The descriptor with parameters (and the rank count) changed, checked again."""
    unknown = set(values) - set(d.parameters) - {"steps"}
    if unknown:
        raise DescriptorError(
            d.path, None, "parameters", f"unknown parameter {sorted(unknown)[0]!r}"
        )
    import copy

    out = copy.copy(d)
    out.parameters = dict(d.parameters, **{k: v for k, v in values.items() if k in d.parameters})
    if "steps" in values and "steps" not in d.parameters:
        out.steps = expr.parse(values["steps"])
    if ranks:
        out.ranks = ranks
    _check_values(_Checker(d.path), out)
    return out
