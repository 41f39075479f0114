"""Fuzzing the skeleton descriptor reader and the C generator (issue 23).

Whatever the descriptor, `descriptor.load`/`parse_text` either gives one DescriptorError
(file, line, field) or a descriptor whose generated skeleton.c holds the descriptor's names
only inside string literals (no comment, no identifier, no preprocessor line made of data)
and compiles. Inputs: the checked-in seed corpus (tests/data/fuzz/skel/, real and nasty
descriptors, replayed one by one), byte mutations of it, random text, and descriptors built
from hostile names and numbers. Every example is bounded in time; a few generated sources are
compiled with the MPI C compiler (syntax only).
"""

import os
import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from iotune.skel import cost
from iotune.skel import descriptor as dmod
from iotune.skel import generate as gen

CORPUS = Path(__file__).resolve().parents[1] / "data" / "fuzz" / "skel"
SEEDS = sorted(CORPUS.iterdir())
MARK = "QZX"  # every hostile name in the built descriptors holds it
MPICC = shutil.which("mpicc.mpich") or shutil.which("mpicc")
SLOW_S = 3.0  # no input may take longer than this to accept or refuse

_LITERAL = re.compile(r'"(?:[^"\\\n]|\\.)*"' + r"|'(?:[^'\\\n]|\\.)*'")
_COMMENT = re.compile(r"/\*.*?\*/", re.S)


def code_outside_literals(c_text: str) -> str:
    """The C text with string and character literals emptied and comments removed (in the
    order a C lexer meets them)."""
    out, i = [], 0
    while i < len(c_text):
        lit = _LITERAL.match(c_text, i)
        com = _COMMENT.match(c_text, i)
        if c_text.startswith("//", i):
            j = c_text.find("\n", i)
            i = len(c_text) if j < 0 else j
        elif com:
            i = com.end()
        elif lit:
            out.append('""')
            i = lit.end()
        else:
            out.append(c_text[i])
            i += 1
    return "".join(out)


def check(text: str, source: str = "fuzz.yaml") -> str | None:
    """parse_text must refuse with one DescriptorError or give a safe skeleton.c (returned)."""
    t0 = time.monotonic()
    try:
        d = dmod.parse_text(text, source)
    except dmod.DescriptorError as e:
        msg = str(e)
        assert msg.startswith(source) and "\n" not in msg.strip(), msg
        assert time.monotonic() - t0 < SLOW_S
        return None
    c_text = gen.skeleton_c(d, source)
    assert time.monotonic() - t0 < SLOW_S
    assert_safe(c_text)
    t0 = time.monotonic()
    try:  # what `skel run` judges before running it: a Cost, or one CostError line
        c = cost.estimate(d, d.ranks)
        assert c.wait_s >= 0 and c.total_bytes >= 0 and c.line()
    except cost.CostError as e:
        assert "\n" not in str(e), str(e)
    assert time.monotonic() - t0 < SLOW_S
    return c_text


def assert_safe(c_text: str) -> None:
    code = code_outside_literals(c_text)
    assert MARK not in code, "descriptor data outside a string literal"
    directives = [ln.strip() for ln in code.splitlines() if ln.strip().startswith("#")]
    assert all(d.startswith("#include") for d in directives), directives
    # a literal never spans lines: every line has balanced quotes once literals are emptied
    assert all(ln.count('"') % 2 == 0 for ln in code.splitlines())


def compiles(c_text: str, tmp: Path) -> None:
    for name in gen.runtime_files():
        shutil.copyfile(Path(gen.__file__).parent / "c" / name, tmp / name)
    (tmp / "skeleton.c").write_text(c_text, encoding="utf-8")
    flags = subprocess.run(["pkg-config", "--cflags", "hdf5-mpich"], capture_output=True,
                           text=True, check=True).stdout.split()  # fmt: skip
    proc = subprocess.run(
        [MPICC, "-fsyntax-only", "-std=c11", "-Wall", "-Wextra", "-Werror", *flags,
         str(tmp / "skeleton.c")],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]


# ----------------------------------------------------------------------------- the corpus


@pytest.mark.parametrize("seed", SEEDS, ids=[p.name for p in SEEDS])
def test_seed_corpus_is_refused_cleanly_or_safe(seed):
    t0 = time.monotonic()
    try:
        d = dmod.load(str(seed))
    except dmod.DescriptorError as e:
        assert str(e).startswith(str(seed)) and "\n" not in str(e).strip()
    else:
        assert_safe(gen.skeleton_c(d, seed.name))
    assert time.monotonic() - t0 < SLOW_S


needs_cc = pytest.mark.skipif(
    not MPICC or subprocess.run(["pkg-config", "--exists", "hdf5-mpich"]).returncode != 0,
    reason="mpicc.mpich and hdf5-mpich",
)


@needs_cc
@pytest.mark.parametrize(
    "seed",
    [
        "good.yaml",
        "injection.yaml",
        "reads_attributes.yaml",
        "direct_chunks.yaml",
        "view_runs_at.yaml",
        "sessions.yaml",
        "scales.yaml",
        "memory_set_size.yaml",
        "attribute_calls.yaml",
        "gaps.yaml",
        "dataset_order.yaml",
        "shared_pointer.yaml",
        "each_step.yaml",
        "tester_calls.yaml",
    ],
)
def test_seed_skeletons_compile(seed, tmp_path):
    compiles(gen.skeleton_c(dmod.load(str(CORPUS / seed)), seed), tmp_path)


# ----------------------------------------------------------------------------- fuzzing

INSERTS = [b"*/", b"\n#define X 1\n", b"??=", b"\\", b'"', b"[", b"{", b"&a ", b"*a",
           b"99999999999999999999", b"-1", b"\x00", b"\xff", b"QZX", b": ", b"- "]  # fmt: skip
# IOTUNE_FUZZ_EXAMPLES=5000 for a longer local run; CI runs the default
EXAMPLES = int(os.environ.get("IOTUNE_FUZZ_EXAMPLES", "150"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))


@FUZZ
@given(st.sampled_from(SEEDS), st.data())
def test_mutated_corpus(seed, data):
    raw = bytearray(seed.read_bytes()[:20000])
    for _ in range(data.draw(st.integers(1, 8))):
        kind = data.draw(st.sampled_from(["flip", "insert", "delete", "dup"]))
        at = data.draw(st.integers(0, max(len(raw) - 1, 0)))
        if kind == "flip" and raw:
            raw[at] = data.draw(st.integers(0, 255))
        elif kind == "insert":
            raw[at:at] = data.draw(st.sampled_from(INSERTS))
        elif kind == "delete":
            del raw[at : at + data.draw(st.integers(1, 20))]
        else:
            raw[at:at] = raw[at : at + data.draw(st.integers(1, 200))]
    text = raw.decode("utf-8", "replace")
    check(text)


@settings(max_examples=60, deadline=None)
@given(st.text(max_size=400))
def test_random_text(text):
    check(text)


hostile = st.lists(
    st.sampled_from(list("ab/_.-*\n\"\\?=#{}%' \t") + ["??=", "*/", "/*", "é", "\x01"]),
    max_size=12,
).map(lambda parts: MARK + "".join(parts))
numbers = st.one_of(
    st.integers(-3, 70),
    st.sampled_from([2**31, 2**62, 2**63 - 1, 2**63, -(2**63), 10**30]),
)
expressions = st.one_of(
    numbers,
    st.sampled_from(
        [
            "rank * n",
            "n * size",
            "rank == 0",
            "n / 0",
            "min(n, 4)",
            "n * n * n * n * n",
            "-n",
            "size - rank - 1",
        ]
    ),  # fmt: skip
)


@st.composite
def descriptors(draw):
    """Hostile names always; numbers sane (a descriptor that should generate) or hostile."""
    sane = draw(st.booleans())
    e = st.just if sane else (lambda _v: expressions)
    n = draw(st.integers(1, 16) if sane else numbers)
    dset = "/" + draw(hostile) + "d"
    typ = draw(st.sampled_from([
        "float32", "int64", {"opaque": 12},
        {"compound": 16, "members": [[draw(hostile), "int32", 0], [draw(hostile), "float64", 8]]},
    ]))  # fmt: skip
    chunked = draw(st.booleans())
    files = [
        {
            "name": draw(hostile) + draw(st.sampled_from(["", "{step}", "{rank:04}", "{step:03}"])),
            "groups": ["/" + draw(hostile)],
            "datasets": [
                {
                    "name": dset,
                    "type": typ,
                    "dims": [draw(e("n * size"))],
                    **({"chunks": [1], "filters": ["shuffle", "deflate=4"]} if chunked else {}),
                }
            ],  # fmt: skip
            "writes": [
                {"dataset": dset, "start": [draw(e("rank * n"))], "count": [draw(e("n"))]},
                {"delete": "/" + draw(hostile) + draw(st.sampled_from(["", "{step}"]))},
            ],  # fmt: skip
            "sync": draw(st.booleans()),
        },
        {
            "name": draw(hostile),
            "api": draw(st.sampled_from(["posix", "mpiio"])),
            "writes": [
                {
                    "offset": draw(e("rank * n")),
                    "size": draw(e("n")),
                    "repeat": draw(st.sampled_from([1, 3, "n"])),
                    "stride": 8,
                    "gap_s": draw(st.sampled_from([0, 1e-5, 0.25]) if sane else numbers),
                }
            ],  # fmt: skip
        },
    ]
    ranks = st.integers(1, 3) if sane else st.sampled_from([1, 2, 5000, 10**9, 2**40])
    return {
        "skel": 1,
        "ranks": draw(ranks),
        "parameters": {"n": n},
        "steps": draw(st.integers(1, 3) if sane else st.one_of(expressions, st.just(2))),
        "files": files,
    }


@FUZZ
@given(descriptors())
def test_built_descriptors(desc):
    check(yaml.safe_dump(desc, allow_unicode=True))


@needs_cc
@settings(max_examples=4, deadline=None, suppress_health_check=list(HealthCheck))
@given(descriptors())
def test_built_skeletons_compile(tmp_path_factory, desc):
    c_text = check(yaml.safe_dump(desc, allow_unicode=True))
    if c_text is not None:
        compiles(c_text, tmp_path_factory.mktemp("cc"))
