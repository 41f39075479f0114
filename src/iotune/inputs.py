"""Reading files that come from outside (profiles, traces, descriptors, KB exports, logs).

Every such file is hostile until parsed: it may be a FIFO with no writer, a device such as
/dev/zero, a directory, huge, binary, deeply nested, or hold NaN and infinities. The readers here
never block, read at most a bound, and turn every problem into one `InputError` whose text names
the file (and the line where there is one); `iotune.cli.main` prints it as one line, no traceback.
"""

from __future__ import annotations

import gc
import json
import math
import os
import re
import stat
from typing import Any

try:  # a JSON parser 1.7x faster than json's on a 10^6-file profile (a dependency; json without it)
    import orjson
except ImportError:  # pragma: no cover (installed with iotune)
    orjson = None

# A profile of 10^6 files is about 1 GB of JSON; nothing iotune reads is legitimately larger.
MAX_BYTES = 2 * 1024**3
MAX_DEPTH = 64  # nesting of JSON/YAML containers; iotune's own files use fewer than 10


class InputError(ValueError):
    """A file from outside cannot be used; str() is the one message for the user."""


def read_bytes(
    path: str | os.PathLike[str], what: str, max_bytes: int = MAX_BYTES, starts: bytes = b""
) -> bytes:
    """The bytes of a regular file, read without ever blocking (a FIFO, device or directory is
    refused at once) and refused when larger than max_bytes. starts (e.g. b"{[" for JSON): the
    bytes its first one after white space may be, checked on the first block read, so that a
    file of another kind is refused before gigabytes of it are read."""
    name = os.fspath(path)
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as e:
        raise InputError(f"{name}: cannot read the {what}: {e.strerror or e}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            kind = "a directory" if stat.S_ISDIR(st.st_mode) else "not a regular file"
            raise InputError(f"{name}: cannot read the {what}: {kind}")
        if st.st_size > max_bytes:
            raise InputError(
                f"{name}: the {what} is too large ({st.st_size} bytes, at most {max_bytes})"
            )
        chunks, size = [], 0
        while chunk := os.read(fd, min(1 << 24, max_bytes + 1 - size)):
            if starts and not chunks:
                _check_start(chunk, starts, name, what)
            chunks.append(chunk)
            size += len(chunk)
            if size > max_bytes:
                raise InputError(f"{name}: the {what} is too large (more than {max_bytes} bytes)")
        return b"".join(chunks)
    except OSError as e:
        raise InputError(f"{name}: cannot read the {what}: {e.strerror or e}") from None
    finally:
        os.close(fd)


def _check_start(head: bytes, starts: bytes, name: str, what: str) -> None:
    first = head.removeprefix(b"\xef\xbb\xbf").lstrip(b" \t\r\n")[:1]
    if first and first not in [starts[i : i + 1] for i in range(len(starts))]:
        line = head.count(b"\n", 0, len(head) - len(head.lstrip(b" \t\r\n"))) + 1
        if not 0x20 <= first[0] < 0x7F:
            raise InputError(f"{name}:{line}: the {what} is not UTF-8 text (binary?)")
        allowed = " or ".join(chr(c) for c in starts)
        raise InputError(f"{name}:{line}: the {what} is not JSON (it starts with byte "
                         f"0x{first[0]:02x}, not {allowed})")  # fmt: skip


def read_text(path: str | os.PathLike[str], what: str, max_bytes: int = MAX_BYTES) -> str:
    """read_bytes() decoded as UTF-8; binary content is refused with one message."""
    data = read_bytes(path, what, max_bytes)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        raise InputError(f"{os.fspath(path)}:{line}: the {what} is not UTF-8 text") from None


def _refuse_constant(token: str) -> float:
    raise ValueError(f"{token} is not a number iotune accepts")


def _depth(obj: Any, limit: int) -> int:
    """The nesting depth of a parsed JSON value, iteratively (no recursion to exhaust)."""
    deepest, stack = 0, [(obj, 1)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, (dict, list)):
            if depth > limit:
                return depth
            deepest = max(deepest, depth)
            children = value.values() if isinstance(value, dict) else value
            stack.extend((c, depth + 1) for c in children)
    return deepest


def check_finite(obj: Any, name: str, what: str) -> None:
    """Refuses a float that is NaN or infinite anywhere in a parsed value (1e999 parses to inf)."""
    stack = [obj]
    while stack:
        value = stack.pop()
        if isinstance(value, float) and not math.isfinite(value):
            raise InputError(f"{name}: the {what} holds a number that is not finite ({value})")
        if isinstance(value, dict):
            stack.extend(value.values())
        elif isinstance(value, list):
            stack.extend(value)


_BRACKETS = bytes.maketrans(b"{}", b"[]")  # one kind of bracket: each pass below removes one level
_NOT_STRUCTURE = bytes(c for c in range(256) if c not in b'"[]{}')
_STRING = re.compile(rb'"[^"]*"')


def _nesting_exceeds(data: bytes, limit: int) -> bool:
    """Whether JSON text nests containers more than limit levels deep, computed on the text at
    the speed of bytes.translate/replace (a walk of the parsed value took seconds per 10^5 files
    of a profile): escapes and strings are dropped, the brackets left, and each pass removes the
    innermost level of brackets (every "[]"; one kind of bracket: "{}" is made "[]" too)."""
    if b"\\" in data:  # an escaped backslash or quote must not end or start a string
        data = data.replace(b"\\\\", b"").replace(b'\\"', b"")
    skeleton = data.translate(_BRACKETS, _NOT_STRUCTURE)
    # strings: "" is an empty one, or a close and an open quote with no bracket between (the two
    # strings merge into one, whose brackets go with it): either way no structure is lost
    skeleton = _STRING.sub(b"", skeleton.replace(b'""', b""))
    for _ in range(limit):
        if not skeleton:
            return False
        reduced = skeleton.replace(b"[]", b"")
        if reduced == skeleton:  # brackets that never close (a file cut short): not depth;
            return False  # the parser names what is wrong and where
        skeleton = reduced
    return b"[]" in skeleton


# A JSON number parses to an infinity, or an integer passes int()'s digit limit, only with a
# 3-digit exponent or 200 digits in a row (199 digits and a 2-digit exponent: below 1e298): text
# without either is parsed by the C parser alone (a Python hook per float cost ~20 % of a
# 10^6-file profile's parse). Found at the speed of bytes.translate and a substring search:
# digits become "0", exponent letters "e", signs "+", points ".", everything else a space.
_NUMBER_SHAPE = bytes(
    ord("0") if chr(c).isdigit() and c < 128 else ord("e") if c in b"eE" else
    ord("+") if c in b"+-" else ord(".") if c == ord(".") else ord(" ")
    for c in range(256)
)  # fmt: skip


def _number_shape(raw: bytes) -> bytes:
    return raw.translate(_NUMBER_SHAPE)


def _maybe_huge(shape: bytes) -> bool:
    return b"e000" in shape or b"e+000" in shape or b"0" * 200 in shape


def _beyond_orjson(shape: bytes) -> bool:
    """Whether orjson could read a number otherwise than json: an integer beyond 64 bits (it
    makes a float of it: 19 digits or more after no point, as a float's fraction can have),
    or a number that could overflow."""
    run = b"0" * 19
    return (b" " + run in shape or b"+" + run in shape or shape.startswith(run)
            or _maybe_huge(shape))  # fmt: skip


def _finite_float(token: str) -> float:
    value = float(token)
    if not math.isfinite(value):  # 1e999 parses to inf
        raise ValueError(f"the number {token[:40]} is not finite")
    return value


MAX_INT_DIGITS = 4000  # below Python's int conversion limit (4300); 2**64 has 20 digits


def _bounded_int(token: str) -> int:
    if len(token) > MAX_INT_DIGITS:  # "-" counts too: the check is cheap and conservative
        raise ValueError(f"an integer has {len(token)} digits (at most {MAX_INT_DIGITS})")
    return int(token)


def parse_json(text: str | bytes, name: str, what: str, max_depth: int = MAX_DEPTH) -> Any:
    """JSON text to a value: NaN, Infinity and overflowing numbers refused, nesting bounded,
    every problem one InputError naming the file and line."""
    raw = text if isinstance(text, bytes) else text.encode("utf-8", "surrogatepass")
    if raw.startswith(b"\xef\xbb\xbf"):  # a byte-order mark (editors on Windows): as the
        raw = text = raw[3:]  # runtime's reader of the same files, read past it
    shape = _number_shape(raw)
    if orjson is not None and not _beyond_orjson(shape):
        # orjson reads strict JSON (no NaN, Infinity, BOM, lone surrogate, invalid UTF-8, nesting
        # beyond 1024) into the same values as json; whatever it refuses is parsed again by json
        # below, which accepts it as before or gives the message it gave before
        collecting = gc.isenabled()
        gc.disable()
        try:
            value = orjson.loads(raw)
        except orjson.JSONDecodeError:
            pass
        else:
            if _nesting_exceeds(raw, max_depth):
                raise InputError(f"{name}: the {what} is nested more than {max_depth} levels deep")
            return value
        finally:
            if collecting:
                gc.enable()
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError:
            raise InputError(f"{name}: the {what} is not UTF-8 text (binary?)") from None
    if _nesting_exceeds(raw, max_depth):
        raise InputError(f"{name}: the {what} is nested more than {max_depth} levels deep")
    try:
        collecting = gc.isenabled()  # parsed JSON has no cycles: the collector's passes over
        gc.disable()  # millions of new objects cost ~40 % of the parse (10^6-file profiles)
        try:
            # hooks only where a number could overflow or exceed int()'s digits (_maybe_huge)
            hooks = {"parse_float": _finite_float, "parse_int": _bounded_int}
            value = json.loads(
                text, parse_constant=_refuse_constant, **(hooks if _maybe_huge(shape) else {})
            )
        finally:
            if collecting:
                gc.enable()
    except json.JSONDecodeError as e:
        at = f"{e.msg.removesuffix(' at').removesuffix(' starting')} (column {e.colno})"
        if e.msg.startswith("Unterminated") or len(text.rstrip()) - e.pos <= 1:
            at += "; the file ends before it is complete: cut short?"
        raise InputError(f"{name}:{e.lineno}: the {what} is not valid JSON: {at}") from None
    except (ValueError, RecursionError) as e:
        why = "nested too deeply" if isinstance(e, RecursionError) else str(e)
        raise InputError(f"{name}: the {what} is not usable JSON: {why}") from None
    del raw, shape
    return value  # no NaN or infinity can be in it (parse_constant, parse_float)


def load_json(path: str | os.PathLike[str], what: str, max_bytes: int = MAX_BYTES) -> Any:
    """A JSON file from outside, read and parsed as read_bytes() and parse_json() say."""
    return parse_json(read_bytes(path, what, max_bytes, b"{["), os.fspath(path), what)


def expect(cond: bool, name: str, what: str, message: str) -> None:
    """Raises one InputError naming the file when a parsed value is not what was expected."""
    if not cond:
        raise InputError(f"{name}: the {what} {message}")
