"""The control file: H5Tuner-style XML <-> settings (docs/control-file.md).

- parse_file() / parse_text(): read a control file into settings and errors, the way the
  runtime does (the shared vectors in tests/vectors hold the C parser to the same reading).
- render() / write(): settings -> a control file, each parameter in the section of its layer.
- effective(): which settings apply to a file (and a dataset), with the precedence rules.
"""

from __future__ import annotations

import fnmatch
import os
import re
import stat
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from xml.parsers import expat
from xml.sax.saxutils import escape, quoteattr

from iotune import params
from iotune.outputs import capped, printable

MAX_BYTES = 1024 * 1024
MAX_SETTINGS = 1024  # as the runtime's IOT_MAX_SETTINGS: bounds the work of every open
# Problems of one file shown each on its line (the runtime's IOT_PROBLEMS_SHOWN); one more line
# counts the rest. `iotune check --all` shows them all.
PROBLEMS_SHOWN = 10
ROOT = "Parameters"
SECTIONS = {
    "High_Level_IO_Library": "hdf5",
    "Middleware_Layer": "mpiio",
    "Parallel_File_System": "fs",
}
SECTION_OF_LAYER = {layer: section for section, layer in SECTIONS.items()}
HINT = "hint"
MAX_PATTERN = 255
_HINT_KEY_RE = re.compile(r"[A-Za-z0-9_.\-]{1,63}", re.ASCII)
_ROMIO_PREFIX_RE = re.compile(r"[^/:]{2,}:")
_ENCODING_RE = re.compile(rb"""<\?xml\s[^>]*?encoding\s*=\s*["']([^"']*)["']""")
_ENCODINGS = ("utf-8", "us-ascii")  # a control file is UTF-8 (US-ASCII is a subset)


@dataclass(frozen=True)
class Setting:
    """One valid setting. value is normalised; file/variable are patterns or None."""

    name: str
    layer: str
    value: str
    file: str | None = None
    variable: str | None = None
    line: int | None = None

    @property
    def param(self) -> params.Param | None:
        """The registry entry, or None for an MPI-IO hint the registry does not know."""
        return params.find(self.name)

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "layer": self.layer,
            "file": self.file,
            "variable": self.variable,
            "value": self.value,
        }


@dataclass(frozen=True)
class Problem:
    """One mistake in a control file: the setting (or the whole file, if fatal) is ignored.

    line: line of the element's start tag (None when unknown); element: the element's name
    (None when there is none); value: the element's trimmed text, or a hint's value (None when
    empty); message: what is wrong, for people.
    """

    line: int | None
    element: str | None
    value: str | None
    message: str

    def to_json(self) -> dict[str, Any]:
        return {"line": self.line, "element": self.element, "value": self.value}

    def format(self, path: str | os.PathLike[str] | None = None) -> str:
        """'FILE:LINE: <element>: message' (the parts that are unknown are left out), with
        what a terminal could act on escaped (outputs.printable)."""
        where = str(path) if path is not None else ""
        if self.line is not None:
            where = f"{where}:{self.line}" if where else f"line {self.line}"
        parts = [where] if where else []
        if self.element is not None:
            parts.append(f"<{capped(self.element)}>")
        parts.append(self.message)
        return printable(": ".join(parts))


@dataclass
class ControlFile:
    """What a control file means: its valid settings and its problems, in document order.

    fatal is True when nothing could be applied (missing file, not well-formed XML, ...).
    """

    settings: list[Setting] = field(default_factory=list)
    errors: list[Problem] = field(default_factory=list)
    # settings kept that replace an earlier one of the same name for the same files (the later
    # wins the tie in matching): said, as a likely mistake, not refused
    overrides: list[Problem] = field(default_factory=list)
    fatal: bool = False
    path: str | None = None

    @property
    def ok(self) -> bool:
        return not self.errors and not self.fatal

    def to_json(self) -> dict[str, Any]:
        """The normalised form shared with the C tool iotune-parse and the test vectors."""
        return {
            "settings": [s.to_json() for s in self.settings],
            "errors": [e.to_json() for e in self.errors],
            "overrides": [e.to_json() for e in self.overrides],
            "fatal": self.fatal,
        }

    def messages(self) -> list[str]:
        """The errors and the overrides, in document order (as the runtime says them)."""
        said = sorted(self.errors + self.overrides, key=lambda e: e.line or 0)
        return [e.format(self.path) for e in said]

    def effective(self, file: str, dataset: str | None = None) -> dict[str, Setting]:
        return effective(self.settings, file, dataset)


# ----------------------------------------------------------------------------- reading


class _Full(Exception):
    """MAX_SETTINGS reached: the rest of the file is ignored."""


class _Refused(Exception):
    def __init__(self, line: int | None, message: str):
        super().__init__(message)
        self.line = line
        self.message = message


@dataclass
class _Node:
    name: str
    attrs: dict[str, str]
    line: int
    text: list[str] = field(default_factory=list)
    children: list[_Node] = field(default_factory=list)

    def trimmed_text(self) -> str | None:
        t = params.trim("".join(self.text))
        return t or None


def _check_start(data: bytes) -> None:
    """Refuses what is not XML at all, and encodings other than UTF-8, before expat."""
    text = data[3:] if data.startswith(b"\xef\xbb\xbf") else data
    blank = len(text) - len(text.lstrip(b" \t\r\n"))
    if blank < len(text) and text[blank : blank + 1] != b"<":
        line = text[:blank].count(b"\n") + 1
        raise _Refused(line, "not an XML control file: it does not start with a tag")
    m = _ENCODING_RE.match(text)
    if m and m.group(1).decode("ascii", "replace").lower() not in _ENCODINGS:
        # its first 40 bytes, each one not printable ASCII as U+FFFD (as the runtime's C)
        name = "".join(chr(b) if 0x20 <= b < 0x7F else "\ufffd" for b in m.group(1)[:40])
        raise _Refused(1, f'encoding "{name}" is not supported: a control file is UTF-8')


def _build_tree(data: bytes) -> _Node:
    """Parses with expat into a small tree; raises _Refused for anything structural."""
    _check_start(data)
    parser = expat.ParserCreate("UTF-8")  # whatever the declaration says, as the runtime does
    parser.ordered_attributes = False
    parser.SetParamEntityParsing(expat.XML_PARAM_ENTITY_PARSING_NEVER)
    stack: list[_Node] = []
    top: list[_Node] = []

    def refuse_dtd(*_args: Any) -> None:
        raise _Refused(
            parser.CurrentLineNumber,
            "document type declarations and entities are not allowed in a control file",
        )

    def start(name: str, attrs: dict[str, str]) -> None:
        node = _Node(name, dict(attrs), parser.CurrentLineNumber)
        (stack[-1].children if stack else top).append(node)
        stack.append(node)

    def end(_name: str) -> None:
        stack.pop()

    def text(data: str) -> None:
        if stack:
            stack[-1].text.append(data)

    parser.StartDoctypeDeclHandler = refuse_dtd
    parser.EntityDeclHandler = refuse_dtd
    parser.UnparsedEntityDeclHandler = refuse_dtd
    parser.NotationDeclHandler = refuse_dtd
    parser.ExternalEntityRefHandler = refuse_dtd
    parser.StartElementHandler = start
    parser.EndElementHandler = end
    parser.CharacterDataHandler = text
    try:
        parser.Parse(data, True)
    except expat.ExpatError as e:
        raise _Refused(e.lineno, f"not well-formed XML: {expat.ErrorString(e.code)}") from None
    if not top:
        raise _Refused(None, "not well-formed XML: no root element")
    return top[0]


def _error(result: ControlFile, node: _Node, message: str, value: str | None = None) -> None:
    result.errors.append(Problem(node.line, node.name, value, message))


def _hint_value(node: _Node) -> str | None:
    if "value" in node.attrs:
        return params.trim(node.attrs["value"]) or None
    return node.trimmed_text()


def _parse_setting(result: ControlFile, node: _Node) -> None:
    """One parameter element (or <hint>): add it as a setting, or report why not."""
    is_hint = node.name == HINT
    value = _hint_value(node) if is_hint else node.trimmed_text()

    def fail(message: str) -> None:
        _error(result, node, message, value)

    if node.children:
        fail("a parameter holds a value, not elements")
        return
    if is_hint:
        key = node.attrs.get("key")
        if not key:
            fail('<hint> needs a key="..." attribute')
            return
        if not _HINT_KEY_RE.fullmatch(key):
            fail(f'"{params.shown(key)}" is not a valid MPI-IO hint key')
            return
        if "value" in node.attrs and node.trimmed_text() is not None:
            fail("give the value once: in value= or as text")
            return
    else:
        key = node.name
    p = params.find(key)
    if p is None and not is_hint:
        fail("unknown parameter (see `iotune check --list`)")
        return
    if is_hint and p is not None and not p.is_hint:
        what = "an Open MPI parameter" if p.is_mca else "an HDF5 setting"
        fail(f"{key} is {what}, not an MPI-IO hint: use <{key}>")
        return
    allowed = {"FileName", "VariableName"} | ({"key", "value"} if is_hint else set())
    for attr in node.attrs:
        if attr not in allowed:
            more = " or VariableName=" if p is not None and p.scope == "dataset" else ""
            fail(f"unknown attribute {params.shown(attr)}= (expected FileName={more})")
            return
    file_pat = node.attrs.get("FileName") or None
    var_pat = node.attrs.get("VariableName") or None
    if var_pat is not None and (p is None or p.scope != "dataset"):
        fail(f"VariableName= is only for dataset settings; {key} is set per file")
        return
    if any(pat is not None and len(pat.encode()) > MAX_PATTERN for pat in (file_pat, var_pat)):
        fail(f"a pattern is longer than {MAX_PATTERN} bytes")
        return
    if value is None:
        fail("empty value")
        return
    try:
        normalised = params.normalise_value(p, value) if p else params.check_string(value)
    except params.ValueProblem as e:
        fail(str(e))
        return
    if len(result.settings) == MAX_SETTINGS:
        fail(
            f"more than {MAX_SETTINGS} settings in one control file: this one and all after "
            "it are ignored"
        )
        raise _Full
    layer = p.layer if p is not None else "mpiio"
    same = next((s for s in result.settings
                 if (s.name, s.file, s.variable) == (key, file_pat, var_pat)), None)  # fmt: skip
    result.settings.append(Setting(key, layer, normalised, file_pat, var_pat, node.line))
    if same is not None:
        what = "files and datasets" if var_pat is not None else "files"
        message = (f"{key} was already set for the same {what} at line {same.line}: that "
                   "earlier setting is ignored")  # fmt: skip
        result.overrides.append(Problem(node.line, node.name, value, message))


def _check_container(result: ControlFile, node: _Node) -> None:
    """The root or a section: no attributes, no text of its own."""
    if node.attrs:
        attr = params.shown(next(iter(node.attrs)))
        _error(result, node, f"unknown attribute {attr}=", node.trimmed_text())
    elif node.trimmed_text() is not None:
        _error(result, node, "text outside a parameter element", node.trimmed_text())


def _walk(result: ControlFile, root: _Node) -> None:
    _check_container(result, root)
    for section in root.children:
        if section.name not in SECTIONS:
            _error(
                result,
                section,
                "unknown section (expected High_Level_IO_Library, Middleware_Layer or "
                "Parallel_File_System)",
                section.trimmed_text(),
            )
            continue
        _check_container(result, section)
        for element in section.children:
            try:
                _parse_setting(result, element)
            except _Full:
                return


def parse_text(data: str | bytes, path: str | None = None) -> ControlFile:
    """Parses the text of a control file (str or bytes) into settings and problems."""
    result = ControlFile(path=path)
    if isinstance(data, str):
        data = data.encode("utf-8")
    if len(data) > MAX_BYTES:
        result.fatal = True
        result.errors.append(
            Problem(None, None, None, f"the control file is larger than {MAX_BYTES} bytes")
        )
        return result
    try:
        root = _build_tree(data)
    except _Refused as e:
        result.fatal = True
        result.errors.append(Problem(e.line, None, None, e.message))
        return result
    if root.name != ROOT:
        result.fatal = True
        message = f"the root element must be <{ROOT}>, not <{params.shown(root.name)}>"
        result.errors.append(Problem(root.line, root.name, root.trimmed_text(), message))
        return result
    _walk(result, root)
    return result


def parse_file(path: str | os.PathLike[str]) -> ControlFile:
    """Reads and parses a control file; a missing, unreadable or too large file is fatal."""
    name = str(path)
    try:
        # never blocks on a FIFO or a device: only a regular file is read, as in the runtime
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):  # a directory too, as in the runtime
                raise OSError(0, "not a regular file")
            data = b""
            while len(data) <= MAX_BYTES and (chunk := os.read(fd, MAX_BYTES + 1 - len(data))):
                data += chunk
        finally:
            os.close(fd)
    except OSError as e:
        result = ControlFile(path=name, fatal=True)
        reason = e.strerror or str(e)
        result.errors.append(Problem(None, None, None, f"cannot read the control file: {reason}"))
        return result
    return parse_text(data, name)


# ----------------------------------------------------------------------------- writing


def _as_settings(settings: Mapping[str, Any] | Iterable[Setting]) -> list[Setting]:
    if isinstance(settings, Mapping):
        out = []
        for name, value in settings.items():
            p = params.find(name)
            if p is not None:
                text = params.format_value(p, value)
            else:
                if not _HINT_KEY_RE.fullmatch(name):
                    raise params.ValueProblem(f'"{name}" is not a valid MPI-IO hint key')
                text = params.check_string(params.trim(str(value)))
            out.append(Setting(name, p.layer if p else "mpiio", text))
        return out
    return list(settings)


def render(settings: Mapping[str, Any] | Iterable[Setting]) -> str:
    """A control file (H5Tuner-compatible XML) holding the given settings.

    settings: {name: value} (values as text or Python values, checked and normalised through the
    registry; a name the registry does not know becomes an MPI-IO <hint>), or Setting objects
    (their FileName/VariableName patterns are kept). Each goes into the section of its layer.
    """
    by_section: dict[str, list[str]] = {section: [] for section in SECTIONS}
    for s in _as_settings(settings):
        p = params.find(s.name)
        attrs = ""
        if s.file is not None:
            attrs += f" FileName={quoteattr(s.file)}"
        if s.variable is not None:
            attrs += f" VariableName={quoteattr(s.variable)}"
        if p is None:
            line = f"<hint key={quoteattr(s.name)} value={quoteattr(s.value)}{attrs}/>"
            layer = "mpiio"
        else:
            line = f"<{p.name}{attrs}>{escape(s.value)}</{p.name}>"
            layer = p.layer
        by_section[SECTION_OF_LAYER[layer]].append(line)
    out = ['<?xml version="1.0"?>', f"<{ROOT}>"]
    for section, lines in by_section.items():
        if lines:
            out.append(f"    <{section}>")
            out += [f"        {line}" for line in lines]
            out.append(f"    </{section}>")
    out.append(f"</{ROOT}>")
    return "\n".join(out) + "\n"


def write(path: str | os.PathLike[str], settings: Mapping[str, Any] | Iterable[Setting]) -> Path:
    """Writes render(settings) to path (atomically: a temporary file renamed into place)."""
    path = Path(path)
    text = render(settings)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent or ".")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # as open() would have made it, not mkstemp's 0600
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


# ----------------------------------------------------------------------------- matching


def strip_romio_prefix(path: str) -> str:
    """'lustre:/scratch/x.h5' -> '/scratch/x.h5' (ROMIO's file system prefixes are ignored)."""
    m = _ROMIO_PREFIX_RE.match(path)
    return path[m.end() :] if m else path


def match_file(pattern: str | None, path: str) -> bool:
    """Does a FileName pattern match a file path as the application gave it?

    None matches every file. A pattern without '/' is matched against the base name, one with
    '/' against the whole path; shell globs; ROMIO prefixes (ufs:, lustre:) are ignored.
    """
    if pattern is None:
        return True
    pattern = strip_romio_prefix(pattern)
    path = strip_romio_prefix(path)
    subject = path if "/" in pattern else path.rsplit("/", 1)[-1]
    return fnmatch.fnmatchcase(subject, pattern)


def match_dataset(pattern: str | None, path: str | None) -> bool:
    """Does a VariableName pattern match a dataset? None matches every dataset.

    A pattern starting with '/' is matched against the full path (/Step#0/x); any other against
    as many trailing components of the path as it has (x -> the last one, g2/x -> the last
    two), so that a relative path matches as a suffix at a component boundary.
    """
    if pattern is None:
        return True
    if path is None:
        return False
    if pattern.startswith("/"):
        return fnmatch.fnmatchcase(path, pattern)
    # "g2/x" matches the path's last two components: a suffix at a component boundary
    n = pattern.count("/") + 1
    parts = path.split("/")
    if path.startswith("/"):
        parts = parts[1:]
    return len(parts) >= n and fnmatch.fnmatchcase("/".join(parts[-n:]), pattern)


def specificity(s: Setting) -> int:
    """How specific a setting is: dataset pattern (2) beats file pattern (1) beats none (0)."""
    return (2 if s.variable is not None else 0) + (1 if s.file is not None else 0)


def applies(s: Setting, file: str, dataset: str | None = None) -> bool:
    """Does s apply to file (and, if given, to that dataset in it)?

    With dataset None only settings without a VariableName pattern apply (file level).
    """
    if not match_file(s.file, file):
        return False
    return s.variable is None or match_dataset(s.variable, dataset)


def effective(
    settings: Iterable[Setting], file: str, dataset: str | None = None
) -> dict[str, Setting]:
    """The setting in force for each name, for a file (and a dataset in it).

    A setting for the dataset beats one for its file, which beats a global one; among settings
    equally specific the later one wins. A <hint key="K"> and a <K> element share the name K.
    """
    best: dict[str, Setting] = {}
    for s in settings:
        if not applies(s, file, dataset):
            continue
        old = best.get(s.name)
        if old is None or specificity(s) >= specificity(old):
            best[s.name] = s
    return best
