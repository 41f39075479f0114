"""The one way iotune writes an output file, and makes outside text printable.

write_output(path, data, what): a regular file (or a new one) is written atomically: a
temporary file in the same directory, renamed into place (a full disk leaves the previous
file, not half of it). A symbolic link is followed: the file it points to is written the same
way (the link stays). An existing target that is not a regular file (a device such as
/dev/full, a FIFO, a directory) is refused, never replaced and never waited on: write to
standard output (`-o -`) and redirect instead. Any failure is one OutputError naming the path.

printable(text): control characters, DEL and undecodable bytes (surrogate escapes) of text
from outside files shown as escapes (\\x1b, \\n, \\udcff) so a name cannot forge terminal lines
or send terminal commands. Only for human-readable output; JSON output stays exact.
"""

from __future__ import annotations

import os
import stat
import tempfile
import unicodedata
from pathlib import Path


class OutputError(Exception):
    """An output file that cannot be written (one line, naming the file)."""


def write_output(path: str | os.PathLike, data: str | bytes, what: str = "output") -> None:
    """Writes data (str as UTF-8) to path as described in the module docstring."""
    raw = data.encode("utf-8", "surrogateescape") if isinstance(data, str) else data
    name = os.fspath(path)
    target = os.path.realpath(name)  # through symbolic links, as open() would
    tmp = None
    try:
        try:
            st = os.stat(target)
        except FileNotFoundError:
            st = None
        if st is not None and not stat.S_ISREG(st.st_mode):
            kind = "a directory" if stat.S_ISDIR(st.st_mode) else "not a regular file"
            raise OutputError(
                f"{name}: cannot write the {what}: {kind} (write to standard output, -o -, "
                "and redirect it instead)"
            )
        fd, tmp = tempfile.mkstemp(prefix=f".{Path(target).name}.", dir=os.path.dirname(target))
        with os.fdopen(fd, "wb") as f:
            f.write(raw)
        if st is not None:
            os.chmod(tmp, stat.S_IMODE(st.st_mode))
        else:
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, target)
        tmp = None
    except OSError as e:
        raise OutputError(f"{name}: cannot write the {what}: {e.strerror or e}") from None
    finally:
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)


_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(ch: str) -> str:
    code = ord(ch)
    if ch in _NAMED:
        return _NAMED[ch]
    if 0xDC80 <= code <= 0xDCFF:  # an undecodable byte (surrogateescape)
        return f"\\x{code - 0xDC00:02x}"
    cat = unicodedata.category(ch)
    if (
        cat in ("Cc", "Cs")
        or cat in ("Zl", "Zp")
        or code in (0x200E, 0x200F)
        or (0x202A <= code <= 0x202E or 0x2066 <= code <= 0x2069)
    ):
        return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"
    return ch


def printable(text: object) -> str:
    """str(text) with control characters escaped (see the module docstring)."""
    s = str(text)
    if s.isprintable():
        return s
    return "".join(_escape(c) for c in s)


class GuardedStdout:
    """Standard output that remembers a failed write (failed is then True) and re-raises it:
    iotune.cli.main says one line for it instead of a traceback. Everything else is passed on."""

    def __init__(self, stream):
        self._stream = stream
        self.failed = False

    def write(self, text):
        try:
            return self._stream.write(text)
        except OSError:
            self.failed = True
            raise

    def flush(self):
        try:
            return self._stream.flush()
        except OSError:
            self.failed = True
            raise

    def __getattr__(self, name):
        return getattr(self._stream, name)


def silence_stdout(stream) -> None:
    """Points the file descriptor of stream at /dev/null (the exit flush cannot fail again)."""
    try:
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, stream.fileno())
        os.close(null)
    except (OSError, ValueError, AttributeError):
        pass


def printable_lines(text: str) -> str:
    """printable() of each line of text (its own line breaks are kept)."""
    return "\n".join(printable(line) for line in text.split("\n"))
