"""Reading files that come from outside (profiles, traces, descriptors, KB exports, logs).

Every such file is hostile until parsed: it may be a FIFO with no writer, a device such as
/dev/zero, a directory, huge, binary, deeply nested, or hold NaN and infinities. The readers here
never block, read at most a bound, and turn every problem into one `InputError` whose text names
the file (and the line where there is one); `iotune.cli.main` prints it as one line, no traceback.
Compressed input (a gzip-compressed trace, a Darshan log's zlib or bzip2 regions) goes through
one decompressor, inflate(): a stream, one chunk at a time, refused as soon as it expands past a
bound, so a small file cannot expand into gigabytes of memory.
"""

from __future__ import annotations

import bz2
import gc
import itertools
import json
import math
import os
import re
import stat
import zlib
from collections.abc import Iterable, Iterator
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


def _open_regular(name: str, what: str, max_bytes: int) -> int:
    """A descriptor of a regular file no larger than max_bytes, opened without ever blocking (a
    FIFO, device or directory is refused at once)."""
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
    except BaseException:
        os.close(fd)
        raise
    return fd


def _chunks(fd: int, name: str, what: str, max_bytes: int, size: int) -> Iterator[bytes]:
    """The bytes of fd in chunks of at most size bytes; InputError past max_bytes."""
    total = 0
    try:
        while chunk := os.read(fd, min(size, max_bytes + 1 - total)):
            total += len(chunk)
            if total > max_bytes:
                raise InputError(f"{name}: the {what} is too large (more than {max_bytes} bytes)")
            yield chunk
    except OSError as e:
        raise InputError(f"{name}: cannot read the {what}: {e.strerror or e}") from None


def read_bytes(
    path: str | os.PathLike[str], what: str, max_bytes: int = MAX_BYTES, starts: bytes = b""
) -> bytes:
    """The bytes of a regular file, read without ever blocking (a FIFO, device or directory is
    refused at once) and refused when larger than max_bytes. starts (e.g. b"{[" for JSON): the
    bytes its first one after white space may be, checked on the first block read, so that a
    file of another kind is refused before gigabytes of it are read."""
    name = os.fspath(path)
    fd = _open_regular(name, what, max_bytes)
    try:
        return _collect(_chunks(fd, name, what, max_bytes, 1 << 24), name, what, starts)
    finally:
        os.close(fd)


def _collect(pieces: Iterable[bytes], name: str, what: str, starts: bytes) -> bytes:
    out: list[bytes] = []
    for piece in pieces:
        if starts and not out:
            _check_start(piece, starts, name, what)
        out.append(piece)
    return b"".join(out)


def _collect_in_place(pieces: Iterable[bytes], name: str, what: str, starts: bytes) -> bytearray:
    """_collect() into one growing buffer: the pieces of decompressed data and their join
    held twice the data (a 1 GiB trace, 3 GB with the parse); this holds it once and a piece."""
    out = bytearray()
    for piece in pieces:
        if starts and not out:
            _check_start(piece, starts, name, what)
        out += piece
    return out


GZIP_MAGIC = b"\x1f\x8b"
CHUNK = 1 << 20  # bytes read, and decompressed, at a time from compressed input


def read_input(
    path: str | os.PathLike[str],
    what: str,
    max_bytes: int = MAX_BYTES,
    starts: bytes = b"",
    max_expanded: int | None = None,
) -> bytes | bytearray:
    """read_bytes(), or, for a gzip-compressed file (its first bytes 1f 8b), its data
    decompressed as a stream by inflate(): at most max_expanded bytes (default max_bytes) come
    out, the file is refused as soon as more would, and starts is checked on the first bytes
    that come out (a bomb of zeros is refused after one CHUNK). Memory: the bytes returned and
    one chunk, never more, whatever the data expand to."""
    name = os.fspath(path)
    fd = _open_regular(name, what, max_bytes)
    try:
        source = _chunks(fd, name, what, max_bytes, CHUNK)
        head = next(source, b"")
        while len(head) < len(GZIP_MAGIC) and (more := next(source, b"")):
            head += more
        rest = itertools.chain((head,), source)
        if not head.startswith(GZIP_MAGIC):
            return _collect(rest, name, what, starts)
        limit = max_bytes if max_expanded is None else max_expanded
        return _collect_in_place(inflate(rest, "gzip", limit, name, what), name, what, starts)
    finally:
        os.close(fd)


def _decompressor(kind: str) -> Any:
    if kind == "gzip":
        return zlib.decompressobj(16 + zlib.MAX_WBITS)
    if kind == "zlib":
        return zlib.decompressobj()
    if kind == "bzip2":
        return bz2.BZ2Decompressor()
    raise ValueError(f"unknown compression {kind!r}")


def inflate(
    source: Iterable[bytes], kind: str, limit: int, name: str, what: str
) -> Iterator[bytes]:
    """The one decompressor of input from outside: the data of source's chunks (kind "gzip",
    "zlib" or "bzip2"; concatenated members or streams are one), decompressed as a stream in
    pieces of at most CHUNK bytes. Memory: one chunk in and one piece out at a time, whatever
    the data expand to. One InputError naming the file as soon as more than limit bytes come
    out (a bomb is refused before it is expanded), and for damaged or truncated data."""
    total, d = 0, None
    try:
        for data in source:
            while True:
                if d is None:
                    if not data:
                        break
                    d = _decompressor(kind)
                piece = d.decompress(data, CHUNK)
                data = d.unconsumed_tail if kind != "bzip2" else b""
                total += len(piece)
                if total > limit:
                    raise InputError(f"{name}: the {what} expands to more than {limit} bytes")
                if piece:
                    yield piece
                if d.eof:  # the next member or stream starts in what is left: unused_data
                    # holds all of it (zlib's unconsumed_tail may repeat it: adding both doubled
                    # the rest at each stream that ended on a full piece, a bomb of its own)
                    data, d = d.unused_data, None
                elif len(piece) < CHUNK:  # all input used (more output would have filled it)
                    break
        if d is not None:
            raise InputError(f"{name}: the {what} is truncated: its {kind} data end too soon")
    except (zlib.error, OSError, EOFError) as e:
        raise InputError(f"{name}: the {what} is corrupt: damaged {kind} data ({e})") from None


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


def _number_shape(raw: bytes | bytearray) -> bytes:
    """What _maybe_huge and _beyond_orjson look for in raw's number shape, without a copy of
    all of raw: the shape of each CHUNK (with the 256 bytes before it, so that no run of digits
    or exponent is cut), only the telling parts kept. (The whole shape held another copy of
    the text, 1 GiB for a trace of 1 GiB.)"""
    if len(raw) <= CHUNK:
        return raw.translate(_NUMBER_SHAPE)
    run = b"0" * 19
    found = bytearray()
    for at in range(0, len(raw), CHUNK):
        part = bytes(raw[max(0, at - 256) : at + CHUNK]).translate(_NUMBER_SHAPE)
        if at == 0 and part.startswith(run):
            found += run + b" "
        for telling in (b" " + run, b"+" + run, b"e000", b"e+000", b"0" * 200):
            if telling in part:
                found += b" " + telling + b" "
    return bytes(found)


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


def parse_json(
    text: str | bytes | bytearray, name: str, what: str, max_depth: int = MAX_DEPTH
) -> Any:
    """JSON text to a value: NaN, Infinity and overflowing numbers refused, nesting bounded,
    every problem one InputError naming the file and line."""
    raw = text if isinstance(text, bytes | bytearray) else text.encode("utf-8", "surrogatepass")
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
    if isinstance(text, bytes | bytearray):
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


def load_json(
    path: str | os.PathLike[str], what: str, max_bytes: int = MAX_BYTES, strict: bool = False
) -> Any:
    """A JSON file from outside, read and parsed as read_bytes() and parse_json() say; strict:
    also refused as refuse_ambiguous() says (a file the runtime reads too, whose reader refuses
    the same)."""
    raw = read_bytes(path, what, max_bytes, b"{[")
    value = parse_json(raw, os.fspath(path), what)
    if strict:
        refuse_ambiguous(raw, os.fspath(path), what)
    return value


_NUL_ESCAPE = re.compile(rb"(?<!\\)(?:\\\\)*\\u0000")  # \u0000 after an even number of \


class _Twice(Exception):
    pass


def _unique_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    seen: set[str] = set()
    for k, _ in pairs:
        if k in seen:
            raise _Twice(k)
        seen.add(k)
    return dict(pairs)


def _line_of_twice(text: str) -> tuple[int, str]:
    """The line and name of the first name given twice in one object (in the order objects
    close, as json and the runtime's reader find it), by a scan that knows where each name is:
    json's own scanner with an object parser that keeps the places (slow: only once a name was
    found twice)."""
    decoder = json.JSONDecoder()
    found: list[tuple[int, str]] = []

    def parse_object(s_and_end: tuple[str, int], strict: bool, scan_once: Any, *_: Any) -> Any:
        s, end = s_and_end
        ws = json.decoder.WHITESPACE.match
        seen: set[str] = set()
        mine: list[tuple[int, str]] = []  # this object's first name given twice
        end = ws(s, end).end()
        while s[end] != "}":
            at = end
            key, end = json.decoder.scanstring(s, end + 1, strict)
            if key in seen and not mine:
                mine.append((s.count("\n", 0, at) + 1, key))
            seen.add(key)
            end = ws(s, end).end() + 1  # past ':'
            _, end = scan_once(s, ws(s, end).end())
            end = ws(s, end).end()
            if s[end] == ",":
                end = ws(s, end + 1).end()
        if mine and not found:  # objects close inner first: the order json's hook sees them
            found.extend(mine)
        return {}, end + 1

    decoder.parse_object = parse_object  # type: ignore[assignment]
    decoder.scan_once = json.scanner.py_make_scanner(decoder)  # type: ignore[attr-defined]
    decoder.raw_decode(text)
    return found[0] if found else (0, "")


def refuse_ambiguous(raw: bytes | bytearray, name: str, what: str) -> None:
    """Refuses, with one InputError naming the file, line and name, JSON (already parsed) that
    readers take otherwise: an object with a name twice (json and orjson keep the last, the
    runtime's reader kept the first) and a string with \\u0000 (C strings end there). The
    runtime's reader refuses the same (runtime/src/base/jsonread.c; shared vectors
    tests/vectors/kb/import.json)."""
    if raw.startswith(b"\xef\xbb\xbf"):
        raw = raw[3:]
    nul = _NUL_ESCAPE.search(raw)
    if nul:
        line = raw.count(b"\n", 0, nul.end()) + 1
        raise InputError(f"{name}:{line}: the {what} has a NUL character (\\u0000) in a string")
    text = bytes(raw).decode("utf-8", "surrogatepass")
    try:
        json.loads(text, object_pairs_hook=_unique_pairs)
    except _Twice:
        line, key = _line_of_twice(text)
        raise InputError(
            f"{name}:{line}: the {what} has the name {json.dumps(key[:60])} twice in one object"
        ) from None


def expect(cond: bool, name: str, what: str, message: str) -> None:
    """Raises one InputError naming the file when a parsed value is not what was expected."""
    if not cond:
        raise InputError(f"{name}: the {what} {message}")
