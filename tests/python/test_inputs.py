"""iotune.inputs: the one reader of files from outside never blocks, crashes or accepts junk."""

import decimal
import json
import math
import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from iotune import inputs
from iotune.cli import main


def test_a_fifo_without_a_writer_is_refused_at_once(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(inputs.InputError, match="not a regular file"):
        inputs.read_bytes(fifo, "profile")


@pytest.mark.parametrize("path", ["/dev/zero", "/proc/self"])
def test_devices_and_directories_are_refused(path):
    with pytest.raises(inputs.InputError, match=path):
        inputs.read_bytes(path, "profile")


def test_a_file_over_the_bound_is_refused(tmp_path):
    big = tmp_path / "big.json"
    big.write_bytes(b" " * 101)
    with pytest.raises(inputs.InputError, match="too large"):
        inputs.read_bytes(big, "profile", max_bytes=100)


@pytest.mark.parametrize(
    "text, why",
    [
        ('{"a": NaN}', "not a number"),
        ('{"a": 1e999}', "not finite"),
        ("[" * 100000 + "]" * 100000, "nested"),
        ("[" * 70 + "]" * 70, "nested more than"),
        ('{"a": 1,\n"b": }', ":2: "),
        (b"\xff\xfe", "not UTF-8"),
    ],
)
def test_bad_json_is_one_input_error_naming_the_file(text, why):
    with pytest.raises(inputs.InputError, match=why) as e:
        inputs.parse_json(text, "x.json", "profile")
    assert str(e.value).startswith("x.json")


def test_the_cli_prints_an_input_error_as_one_line(tmp_path, capsys, monkeypatch):
    def boom(args):
        raise inputs.InputError("f.json:3: the profile is not valid JSON")

    import iotune.cli as cli

    parser = cli.build_parser()
    monkeypatch.setattr(cli, "build_parser", lambda: parser)
    args = parser.parse_args(["kernels"])
    monkeypatch.setattr(args, "func", boom, raising=False)
    monkeypatch.setattr(parser, "parse_args", lambda argv=None: args)
    assert main(["kernels"]) == 2
    err = capsys.readouterr().err
    assert err == "iotune: f.json:3: the profile is not valid JSON\n"


@pytest.mark.parametrize("number", ["1e999", "-1E+400", "9" * 400 + ".0", "1" + "0" * 309 + ".5"])
def test_numbers_that_overflow_are_refused_whatever_their_spelling(number):
    with pytest.raises(inputs.InputError, match="not finite|Exceeds|digits|not usable"):
        inputs.parse_json('{"a": [1.5, ' + number + "]}", "x.json", "profile")


def test_tiny_and_ordinary_numbers_are_taken_on_the_fast_path_and_the_hooked_one():
    assert inputs.parse_json('{"a": 1e-400, "b": 2.5}', "x", "p") == {"a": 0.0, "b": 2.5}
    assert inputs.parse_json('{"a": 0.001, "b": 25}', "x", "p") == {"a": 0.001, "b": 25}


def test_json_integer_of_too_many_digits_is_one_message():
    # Python's int() refuses more than 4300 digits with advice about sys.set_int_max_str_digits
    with pytest.raises(inputs.InputError) as e:
        inputs.parse_json('{"a": ' + "9" * 5000 + "}", "p.json", "profile")
    assert (
        str(e.value)
        == "p.json: the profile is not usable JSON: an integer has 5000 digits (at most 4000)"
    )
    assert inputs.parse_json('{"a": -' + "9" * 3999 + "}", "p.json", "profile")["a"] < 0


def test_a_number_of_many_digits_with_a_two_digit_exponent_is_refused():
    # 299 digits and e99 is 1e398: no 3-digit exponent, no 300 digits in a row, still infinite
    for number in ("9" * 299 + "e99", "-" + "9" * 250 + "E+60", "9" * 210 + ".5e99"):
        with pytest.raises(inputs.InputError, match="not finite"):
            inputs.parse_json("[1, " + number + "]", "x.json", "profile")


@pytest.mark.parametrize(
    "text",
    [
        "[18446744073709551616, -9223372036854775809, 18446744073709551615]",  # beyond 64 bits
        '{"n": ' + "1" * 40 + ', "f": 0.00030000000000000003, "g": 1.7976931348623157e308}',
        "12345678901234567890123",  # a bare number
        '{"a": 1, "a": 2, "b": [5e-324, -0, -0.0, 1E5, 2.2250738585072014e-308]}',
        '["\\u00e9\\ud83d\\ude00", "a\\u0000b", "\\\\\\"", "caf\u00e9"]',
    ],
)
def test_the_values_are_those_json_reads_to_the_type(text):
    # orjson (the fast path) makes a float of an integer beyond 64 bits: such text goes to json
    want = json.loads(text)
    got = inputs.parse_json(text.encode(), "x.json", "profile")
    assert got == want
    assert repr(got) == repr(want)  # the same types: 1 is not 1.0


@pytest.mark.parametrize("text", ['"\\ud800"', "[1] x", "", "[1,]", '{"a" 1}', "[1.]", "[01]"])
def test_what_the_fast_parser_refuses_is_read_or_refused_as_json_does(text):
    try:
        want = json.loads(text)
    except ValueError:
        with pytest.raises(inputs.InputError, match="x.json"):
            inputs.parse_json(text.encode("utf-8", "surrogatepass"), "x.json", "profile")
    else:
        got = inputs.parse_json(text.encode("utf-8", "surrogatepass"), "x.json", "profile")
        assert repr(got) == repr(want)


_JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=5)
    | st.dictionaries(st.text(max_size=8), inner, max_size=5),
    max_leaves=30,
)  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(_JSON_VALUES, st.booleans())
def test_any_json_value_is_read_as_json_reads_it(value, ascii_only):
    text = json.dumps(value, ensure_ascii=ascii_only)
    got = inputs.parse_json(text.encode("utf-8", "surrogatepass"), "x.json", "profile")
    assert repr(got) == repr(json.loads(text))


@settings(max_examples=300, deadline=None)
@given(st.floats(min_value=1e-300, max_value=1e300), st.integers(0, 2))
def test_numbers_of_many_digits_round_as_json_rounds_them(x, which):
    # the fast path takes a fraction of under 200 digits: halfway between two floats (cut at 61
    # digits: a parser that reads 17 or 19 rounds it wrong), a float's value to 61 or 25 digits
    exact = decimal.Decimal(x)
    if which == 0:
        with decimal.localcontext(prec=2000):  # exact: the default context keeps 28 digits
            text = format((exact + decimal.Decimal(math.nextafter(x, math.inf))) / 2, ".60e")
    else:
        text = format(exact, ".60e" if which == 1 else ".24e")
    got = inputs.parse_json(f"[{text}]".encode(), "x.json", "profile")
    assert repr(got) == repr(json.loads(f"[{text}]"))


def test_json_cut_short_is_said_so_not_called_too_deep():
    """A file cut short (a killed run, a full disk) leaves brackets open: that is not nesting
    (it was reported as "nested more than 64 levels deep" at every cut length)."""
    text = json.dumps(
        {"files": [{"name": f"f{i}", "io": {"bytes": [i, i + 1]}} for i in range(50)]}
    )
    for cut in (1, 10, 100, len(text) // 2, len(text) - 1):
        with pytest.raises(inputs.InputError) as e:
            inputs.parse_json(text[:cut], "p.json", "profile")
        assert "nested" not in str(e.value) and "not valid JSON" in str(e.value), str(e.value)
        assert "cut short?" in str(e.value), str(e.value)
    with pytest.raises(inputs.InputError, match="nested more than 64 levels deep"):
        inputs.parse_json("[" * 65 + "]" * 65, "d.json", "profile")
    assert inputs.parse_json("[" * 64 + "]" * 64, "d.json", "profile") is not None
    for deep in ("[" * 100 + "]" * 50, "[" * 100_000):  # deep and cut short: one message
        with pytest.raises(inputs.InputError, match="d.json"):
            inputs.parse_json(deep, "d.json", "profile")


def test_a_byte_order_mark_is_read_past_as_the_runtime_does(tmp_path):
    """The runtime's reader of exported knowledge bases accepts a UTF-8 byte-order mark (an
    editor's on Windows); the CLI refused the same file: both read past it now."""
    assert inputs.parse_json("\ufeff[1]".encode(), "x.json", "profile") == [1]
    p = tmp_path / "k.json"
    p.write_bytes(b'\xef\xbb\xbf  {"a": 2}')
    assert inputs.load_json(p, "export") == {"a": 2}


def test_a_file_that_cannot_be_json_is_refused_before_it_is_read(tmp_path):
    """A 2 GB file of zeros (a sparse file) was read whole, 6 GB of memory, before the parser
    refused it: its first byte decides now."""
    p = tmp_path / "sparse.json"
    with open(p, "wb") as f:
        f.truncate(1 << 30)
    with pytest.raises(inputs.InputError, match=r"sparse.json:1: the profile is not UTF-8"):
        inputs.load_json(p, "profile")
    p.write_text("hello")
    with pytest.raises(inputs.InputError, match=r"is not JSON \(it starts with byte 0x68"):
        inputs.load_json(p, "profile")


# ----------------------------------------------------------------------------- compressed input

_PEAK = """
import resource, sys
from iotune import inputs, trace
trace.MAX_EXPANDED = int(sys.argv[2])
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
try:
    trace.read_all(sys.argv[1])
    print("read")
except inputs.InputError as e:
    print(str(e).replace("\\n", " "))
print((resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) * 1024)
"""


def _gzip_of(path, head: bytes, fill: bytes, total: int) -> None:
    """A gzip file of head then fill repeated to total bytes, compressed as a stream (the test
    never holds the expanded data)."""
    import zlib

    z = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    block = fill * ((1 << 20) // len(fill))
    with open(path, "wb") as f:
        f.write(z.compress(head))
        for _ in range(total // len(block)):
            f.write(z.compress(block))
        f.write(z.flush())


def _peak(path, bound: int) -> tuple[str, int]:
    """The message of trace.read_all(path) and the growth of peak RSS it caused (bytes), in a
    fresh process with the expansion bound given."""
    import subprocess
    import sys

    r = subprocess.run([sys.executable, "-c", _PEAK, str(path), str(bound)], capture_output=True,
                       text=True, timeout=300, env=dict(os.environ, PYTHONPATH=SRC))  # fmt: skip
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr
    message, grown = r.stdout.splitlines()
    return message, int(grown)


SRC = os.path.join(os.path.dirname(__file__), "..", "..", "src")


def test_a_gzip_bomb_is_refused_as_a_stream_in_little_memory(tmp_path):
    """An outside tester's 13 MB trace of gzip-compressed zeros (3 GB) peaked at 4.2 GB of
    memory before it was refused: the data were expanded whole, up to the 2 GiB bound, then
    copied. Now they are decompressed as a stream, 1 MiB at a time: zeros are refused on the
    first MiB (a trace is JSON), blanks as soon as the bound is passed, the memory never more
    than the bound and a chunk."""
    zeros = tmp_path / "rank-0.json.gz"
    _gzip_of(zeros, b"", b"\0", 400 << 20)
    message, grown = _peak(zeros, 2 << 30)
    assert message == f"{zeros}:1: the trace is not UTF-8 text (binary?)"
    assert grown < 64 << 20, grown  # was 800 MB (the 400 MB expanded, then copied)
    blanks = tmp_path / "host-0.json.gz"
    _gzip_of(blanks, b"{", b" ", 400 << 20)
    bound = 128 << 20
    message, grown = _peak(blanks, bound)
    assert message == f"{blanks}: the trace expands to more than {bound} bytes"
    assert grown < bound + (48 << 20), grown  # was twice the bound


def test_inflate_streams_members_and_kinds_and_refuses_in_one_message():
    import bz2
    import gzip
    import zlib

    data = os.urandom(3 << 20) + b"\0" * (5 << 20)
    for kind, packed in [("gzip", gzip.compress(data[:100]) + gzip.compress(data[100:])),
                         ("zlib", zlib.compress(data)),
                         ("bzip2", bz2.compress(data[:7]) + bz2.compress(data[7:]))]:  # fmt: skip
        chunks = [packed[i : i + 4096] for i in range(0, len(packed), 4096)]
        pieces = list(inputs.inflate(chunks, kind, len(data), "f", "log"))
        assert b"".join(pieces) == data, kind
        assert max(map(len, pieces)) <= inputs.CHUNK
        with pytest.raises(
            inputs.InputError, match=f"^f: the log expands to more than {len(data) - 1} bytes$"
        ):
            list(inputs.inflate(chunks, kind, len(data) - 1, "f", "log"))
        with pytest.raises(inputs.InputError, match=f"^f: the log is truncated: its {kind} data"):
            list(inputs.inflate([packed[:-9]], kind, len(data), "f", "log"))
        with pytest.raises(inputs.InputError, match=f"^f: the log is corrupt: damaged {kind} data"):
            list(
                inputs.inflate(
                    [packed[:40] + b"\xff" * 64 + packed[104:]], kind, len(data), "f", "log"
                )
            )


def test_inflate_reads_concatenated_streams_once_each():
    """A stream that ends on a full piece (CHUNK bytes out) with more input after it: zlib
    kept the rest both in unused_data and in unconsumed_tail, and inflate() took both, doubling
    the rest at each stream: 2 streams of 2 MiB never ended (a 1 MiB Darshan region of 16
    such streams ran 15 minutes)."""
    import bz2
    import gzip
    import zlib

    data = b"\0" * (2 * inputs.CHUNK)
    for kind, one in (("zlib", zlib.compress(data)), ("gzip", gzip.compress(data)),
                      ("bzip2", bz2.compress(data))):  # fmt: skip
        got = sum(map(len, inputs.inflate([one * 3], kind, 3 * len(data), "f", "log")))
        assert got == 3 * len(data), kind


def test_read_input_reads_plain_and_gzip_alike(tmp_path):
    import gzip

    p = tmp_path / "t.json"
    p.write_bytes(b'{"a": 1}')
    assert inputs.read_input(p, "trace", starts=b"{[") == b'{"a": 1}'
    p.write_bytes(gzip.compress(b'  {"a": 1}'))
    assert inputs.read_input(p, "trace", starts=b"{[") == b'  {"a": 1}'
    p.write_bytes(b"\x1f")
    with pytest.raises(inputs.InputError, match="not UTF-8"):
        inputs.read_input(p, "trace", starts=b"{[")
    p.write_bytes(gzip.compress(b"x" * 100))
    with pytest.raises(
        inputs.InputError, match=r"t.json: the trace is too large \(24 bytes, at most 10\)"
    ):
        inputs.read_input(p, "trace", max_bytes=10)
    with pytest.raises(inputs.InputError, match="t.json: the trace expands to more than 50 bytes"):
        inputs.read_input(p, "trace", max_expanded=50)


_PACKED = {}


def _packed(kind: str) -> bytes:
    import bz2
    import gzip
    import zlib

    if kind not in _PACKED:
        data = b'{"a": [1, 2, 3]}' * 5000
        pack = {"gzip": gzip.compress, "zlib": zlib.compress, "bzip2": bz2.compress}[kind]
        _PACKED[kind] = pack(data) + pack(b"x")
    return _PACKED[kind]


@settings(max_examples=200, deadline=None)
@given(
    kind=st.sampled_from(["gzip", "zlib", "bzip2"]),
    flips=st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 7)), max_size=4),
    cut=st.integers(0, 10**6),
    chunk=st.integers(1, 5000),
    junk=st.binary(max_size=40),
)
def test_inflate_of_damaged_data_yields_or_is_one_input_error(kind, flips, cut, chunk, junk):
    """Fuzzing the one decompressor: a valid stream of two members bit-flipped, cut short,
    followed by junk, fed in chunks of any size: pieces no larger than CHUNK whose total is
    within the bound, or one InputError naming the file; never another exception."""
    data = bytearray(_packed(kind))
    for at, bit in flips:
        data[at % len(data)] ^= 1 << bit
    data = bytes(data[: max(1, cut % (len(data) + 1))]) + junk
    chunks = [data[i : i + chunk] for i in range(0, len(data), chunk)]
    total = 0
    try:
        for piece in inputs.inflate(chunks, kind, 100_000, "f.gz", "trace"):
            assert 0 < len(piece) <= inputs.CHUNK
            total += len(piece)
    except inputs.InputError as e:
        assert str(e).startswith("f.gz: the trace ") and "\n" not in str(e)
    assert total <= 100_000


def test_a_gzip_trace_expanding_far_is_held_once_while_read_and_parsed(tmp_path):
    """An outside tester's 1 MB trace inflating to 1 GiB (valid JSON, then spaces) took 3 GB
    and a MemoryError: the pieces and their join, then the text's number shape, each a copy.
    Now the text is held once while read and checked; orjson's parse copies it once more."""
    size = 256 << 20
    path = tmp_path / "host-0.json.gz"
    _gzip_of(path, b'{"a": [1, 2.5, "x"]}', b" " * 64, size)
    message, grown = _peak(path, 1 << 30)
    assert grown < size * 2.2, (message, grown / size)  # 2.9 before
