"""The one way iotune writes an output file, and makes outside text printable.

write_output(path, data, what): a regular file (or a new one) is written atomically: a
temporary file in the same directory, renamed into place (a full disk leaves the previous
file, not half of it). A symbolic link is followed: the file it points to is written the same
way (the link stays). A stream is written in place, as `cat > path` would: `-` is standard
output; a name of one of the process's own descriptors (/dev/stdout, /dev/stderr, /dev/fd/N,
/proc/self/fd/N) is written through that descriptor (a pipe, a terminal, or a file redirected
to, appended to when opened so: a temporary file renamed over it would have replaced the file
the shell opened); a FIFO or character device (/dev/null, a terminal) is opened and written:
a FIFO is waited on for at most FIFO_WAIT_S seconds for its reader to open it (`iotune ... -o
fifo & cat fifo` may start the reader second), then refused. A directory or block device is
refused. Any failure is one OutputError naming the path. It returns True when a regular file
was written (a caller may then say so), False for a stream (saying so would mix into it).

printable(text): control characters, DEL and undecodable bytes (surrogate escapes) of text
from outside files shown as escapes (\\x1b, \\n, \\udcff) so a name cannot forge terminal lines
or send terminal commands. Only for human-readable output; JSON output stays exact.

shell_word(text) / shell_join(words): a name in a command printed for the user to paste:
shlex.quote, or, when printable() would escape something in it, bash's ANSI-C quoting ($'...'
with \\xHH for each such byte) so that the printed command is printable and names the very file.
"""

from __future__ import annotations

import errno
import os
import re
import shlex
import stat
import sys
import tempfile
import time
import unicodedata
from pathlib import Path


class OutputError(Exception):
    """An output file that cannot be written (one line, naming the file)."""


def write_output(path: str | os.PathLike, data: str | bytes, what: str = "output") -> bool:
    """Writes data (str as UTF-8) to path as described in the module docstring; True when a
    regular file was written, False for a stream."""
    raw = data.encode("utf-8", "surrogateescape") if isinstance(data, str) else data
    name = os.fspath(path)
    try:
        if name == "-":
            _write_stdout(raw)
            return False
        fd = own_descriptor(name)
        if fd is not None:
            _write_fd(fd, raw)
            return False
        try:
            st = os.stat(name)  # through symbolic links (and /proc's links to pipes)
        except FileNotFoundError:
            st = None
        if st is None or stat.S_ISREG(st.st_mode):
            _replace(os.path.realpath(name), raw, st)
            return True
        if not (stat.S_ISFIFO(st.st_mode) or stat.S_ISCHR(st.st_mode)):
            kinds = {stat.S_ISDIR: "a directory", stat.S_ISBLK: "a block device"}
            kind = next((k for is_kind, k in kinds.items() if is_kind(st.st_mode)),
                        "not a regular file, FIFO or character device")  # fmt: skip
            raise OutputError(f"{name}: cannot write the {what}: {kind} (write to standard "
                              "output, -o -, and redirect it instead)")  # fmt: skip
        _write_stream(name, raw)
        return False
    except OSError as e:
        if e.errno == errno.ENXIO:  # open() of a FIFO without a reader
            why = f"no process opened the FIFO for reading within {FIFO_WAIT_S:g} s"
            raise OutputError(f"{name}: cannot write the {what}: {why}") from None
        raise OutputError(f"{name}: cannot write the {what}: {e.strerror or e}") from None


def _replace(target: str, raw: bytes, st: os.stat_result | None) -> None:
    """A regular file written atomically (a temporary file renamed over it)."""
    tmp = None
    try:
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
    finally:
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)


_FD_DIR = re.compile(r"/proc/(\d+)(?:/task/\d+)?/fd")


def own_descriptor(name: str) -> int | None:
    """The descriptor N when name leads to one of this process's own (/dev/stdout,
    /dev/stderr, /dev/fd/N, /proc/self/fd/N, or a link to one), else None; followed link by
    link, as /proc's last link leads to the object (a pipe has no path) and not to a name."""
    path = os.path.abspath(name)
    for _ in range(40):  # as many links as the kernel follows
        folder, base = os.path.split(path)
        folder = os.path.realpath(folder)
        m = _FD_DIR.fullmatch(folder)
        if m and int(m[1]) == os.getpid() and base.isdigit() and base.isascii():
            return int(base)
        try:
            target = os.readlink(os.path.join(folder, base))
        except OSError:  # not a link (or not there): not a descriptor's name
            return None
        path = os.path.normpath(os.path.join(folder, target))
    return None


def _write_all(fd: int, raw: bytes) -> None:
    view = memoryview(raw)
    while view:
        view = view[os.write(fd, view) :]


def _write_stdout(raw: bytes) -> None:
    """Standard output (`-`), through sys.stdout (its buffer) so that what was printed before
    stays before."""
    out = sys.stdout
    out.flush()
    buffer = getattr(out, "buffer", None)
    if buffer is not None:
        buffer.write(raw)
        buffer.flush()
    else:
        out.write(raw.decode("utf-8", "surrogateescape"))
        out.flush()


def _write_fd(fd: int, raw: bytes) -> None:
    """One of the process's own descriptors, in place (at its offset, appending when it was
    opened so); what sys.stdout or sys.stderr hold for it is written first."""
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None and stream.fileno() == fd:
                stream.flush()
        except (OSError, ValueError, AttributeError):
            pass  # a stream without a descriptor (a test's capture): nothing of it is there
    _write_all(fd, raw)


FIFO_WAIT_S = 10.0  # how long a FIFO may have no reader before it is refused


def _write_stream(name: str, raw: bytes) -> None:
    """A FIFO or character device: opened without blocking (a FIFO without a reader is ENXIO:
    tried again for FIFO_WAIT_S seconds, a reader starting second), then written waiting for a
    slow reader as `cat` would."""
    deadline = time.monotonic() + FIFO_WAIT_S
    while True:
        try:
            fd = os.open(name, os.O_WRONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
            break
        except OSError as e:
            if e.errno != errno.ENXIO or time.monotonic() >= deadline:
                raise
            time.sleep(0.05)
    try:
        os.set_blocking(fd, True)
        _write_all(fd, raw)
    finally:
        os.close(fd)


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


NAME_SHOWN = 80  # a name from outside longer than this is shown cut (the runtime's IOT_SHOWN_CHARS)


def capped(text: object, limit: int = NAME_SHOWN) -> str:
    """str(text) whole up to `limit` characters, else its first half, "..." and its length: a
    name from outside (an element of a control file) as a message shows it, so that a name of
    500,000 characters is not printed whole (the runtime's iot_name_shown, word for word)."""
    s = str(text)
    return s if len(s) <= limit else f"{s[: limit // 2]}... ({len(s)} characters)"


def shell_word(text: object) -> str:
    """str(text) as one word of a command line to paste into bash (see the module docstring):
    shlex.quote when it is printable, else $'...' where every character printable() escapes is
    given as the \\xHH of its bytes (UTF-8; an undecodable byte as itself) and \\ and ' are
    escaped, so that the word is printable and bash reads back exactly the name."""
    s = str(text)
    if printable(s) == s:
        return shlex.quote(s)
    out = []
    for ch in s:
        if ch in "\\'":
            out.append("\\" + ch)
        elif _escape(ch) != ch:
            try:
                raw = ch.encode("utf-8", "surrogateescape")
            except UnicodeEncodeError:  # a lone surrogate outside the escaped bytes' range
                raw = ch.encode("utf-8", "surrogatepass")
            out.append("".join(f"\\x{b:02x}" for b in raw))
        else:
            out.append(ch)
    return "$'" + "".join(out) + "'"


def shell_join(words) -> str:
    """The words as a command line to paste (shell_word of each, space-separated)."""
    return " ".join(shell_word(w) for w in words)


class ClosedStdout:
    """What sys.stdout is when the process was started with it closed (`>&-`: Python leaves
    None): every write fails as writing to a closed descriptor would (EBADF), so that
    GuardedStdout turns it into one line, not an AttributeError's traceback."""

    def _closed(self, *args, **kwargs):
        raise OSError(errno.EBADF, "standard output is closed")

    write = flush = fileno = _closed


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
