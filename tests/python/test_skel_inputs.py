"""Hostile descriptors and sizes (issue 23): names never become code, sizes never overflow
silently (in the reader nor in the generated C), runs that would exceed the machine are refused
with one message before anything runs, and bad files give one message naming file and line."""

import os
import re
import shutil
import threading
import time
from pathlib import Path

import pytest
from conftest import BUILD, mpi_info, run_mpi
from test_fuzz_skel import CORPUS, assert_safe, code_outside_literals

from iotune.skel import cost, expr
from iotune.skel import descriptor as dmod
from iotune.skel import generate as gen
from iotune.skel import run as runmod

MPICC = mpi_info(BUILD).get("mpicc") or shutil.which("mpicc.mpich") or "mpicc"
needs_cc = pytest.mark.skipif(
    not shutil.which(MPICC) or not shutil.which("make"), reason="an MPI C compiler and make"
)

SMALL = """\
skel: 1
name: small
ranks: 2
parameters: {n: 4}
files:
  - name: "QZX*\\n#define QZX_LIVE 1\\n??=\\"\\\\.dat"
    api: posix
    writes:
      - {offset: rank * n * 4, size: 4}
"""


def _build(text: str, tmp: Path) -> Path:
    d = dmod.parse_text(text, "small.yaml")
    gen.generate(d, str(tmp / "src"), "small.yaml", cc=MPICC)
    return Path(runmod.build(str(tmp / "src")))


def test_a_name_with_comment_end_and_newlines_stays_in_a_string_literal():
    d = dmod.load(str(CORPUS / "injection.yaml"))
    c_text = gen.skeleton_c(d, "injection.yaml")
    assert_safe(c_text)
    code = code_outside_literals(c_text)
    assert "#define" not in code and "QZX_LIVE" not in code
    assert '"QZX*/\\012#define QZX_LIVE 1\\012/*\\?\\?=\\?\\?/\\\\\\"' in c_text


def test_no_descriptor_text_in_comments():
    d = dmod.parse_text(SMALL, "QZX*/evil.yaml")
    c_text = gen.skeleton_c(d, "QZX*/evil.yaml")
    for comment in re.findall(r"/\*.*?\*/", c_text, flags=re.S):
        assert "QZX" not in comment


@needs_cc
def test_the_injected_name_is_the_file_name_at_run_time(tmp_path):
    exe = _build(SMALL, tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    run_mpi(2, [exe, "--dir", out, "--timing", tmp_path / "t.json"], timeout=120)
    assert sorted(os.listdir(out)) == [".iotune-skel-files", 'QZX*\n#define QZX_LIVE 1\n??="\\.dat']
    assert (
        out / 'QZX*\n#define QZX_LIVE 1\n??="\\.dat'
    ).stat().st_size == 4 * 4 + 4  # rank 1 at n * 4


def test_enormous_steps_are_refused_when_read():
    with pytest.raises(
        dmod.DescriptorError, match=r"huge_steps.yaml:2: steps: is 9223372036854775807"
    ):
        dmod.load(str(CORPUS / "huge_steps.yaml"))
    with pytest.raises(dmod.DescriptorError, match="overflows 64-bit integers"):
        dmod.load(str(CORPUS / "steps_overflow.yaml"))


def test_an_integer_of_thousands_of_digits_is_one_message(tmp_path):
    # Python's int() refuses more than 4300 digits; the descriptor reader says so itself
    with pytest.raises(dmod.DescriptorError) as e:
        dmod.load(str(CORPUS / "steps_of_5000_digits.yaml"))
    assert "steps_of_5000_digits.yaml:2: not valid YAML: a whole number of 5000 characters" in str(
        e.value
    )
    assert "set_int_max_str_digits" not in str(e.value)


def test_expressions_overflowing_64_bits_are_errors():
    with pytest.raises(expr.ExprError, match="overflows"):
        expr.evaluate(expr.parse("n * n"), {"n": 2**40})
    with pytest.raises(expr.ExprError, match="does not fit"):
        expr.parse(str(2**63))
    assert expr.evaluate(expr.parse("n * 2"), {"n": 2**61}) == 2**62
    assert expr.to_c(expr.parse("-(a + b) / c % d")) == (
        "skel_imod(skel_idiv(skel_ineg(skel_iadd(P_a, P_b)), P_c), P_d)"
    )


@needs_cc
def test_the_runtime_refuses_enormous_steps_and_overflowing_sizes_with_a_message(tmp_path):
    exe = _build(SMALL.replace("QZX*\\n#define QZX_LIVE 1\\n??=", "plain"), tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    for args, said in (
        (["--steps", "9223372036854775807"], "too many to time"),
        (["--steps", "99999999999999999999999"], "bad option --steps"),
        (["--set", "n=4611686018427387904"], "4611686018427387904 * 4 overflows"),
        (["--set", "n=-5"], "negative offset or size"),
    ):
        proc = run_mpi(2, [exe, "--dir", out, *args], timeout=60, check=False)
        assert proc.returncode != 0, args
        assert said in proc.stderr, (args, proc.stderr[-2000:])
        assert "Segmentation" not in proc.stderr and "core dumped" not in proc.stderr


def test_a_billion_ranks_is_read_quickly_and_not_run(tmp_path, capsys):
    from iotune import cli

    t0 = time.monotonic()
    d = dmod.load(str(CORPUS / "ranks_billion.yaml"))
    assert time.monotonic() - t0 < 3 and d.ranks == 10**9
    rc = cli.main(["skel", "run", str(CORPUS / "ranks_billion.yaml"), "-o", str(tmp_path / "g")])
    err = capsys.readouterr().err.strip()
    assert (
        rc == 1 and err.startswith("iotune skel: not run: 1000000000 ranks on") and "\n" not in err
    )
    assert not (tmp_path / "g").exists()  # refused before generating anything


def test_a_run_larger_than_the_free_disk_or_memory_is_refused(tmp_path):
    d = dmod.parse_text(
        "skel: 1\nranks: 2\nparameters: {n: 1000000000000}\n"
        "files: [{name: a.dat, api: posix, writes: [{offset: rank * n, size: n}]}]\n"
    )
    c = cost.estimate(d, 2)
    assert c.total_bytes == 2 * 10**12 and c.calls_per_rank_step == 1
    with pytest.raises(cost.CostError, match="free in|of memory needed"):
        cost.check_local(c, str(tmp_path), cores=2)
    small = cost.estimate(dmod.parse_text(SMALL), 2)
    cost.check_local(small, str(tmp_path), cores=2)  # fits


def test_a_run_spending_days_between_calls_is_refused(tmp_path):
    """A descriptor may ask for up to a day of gap_s after each call and of compute_s between
    steps (MAX_COMPUTE_S); the total of a run is bounded too (cost.MAX_WAIT_S), and said."""
    text = (
        "skel: 1\nranks: 2\nsteps: 4\ncompute_s: {compute}\n"
        "files: [{{name: a.dat, api: posix, writes: [{{offset: rank * 8, size: 8, repeat: 3, "
        "gap_s: {gap}}}]}}]\n"
    )
    c = cost.estimate(dmod.parse_text(text.format(compute=0.5, gap=0.25)), 2)
    assert c.wait_s == pytest.approx(3 * 0.5 + 4 * 3 * 0.25)
    assert c.line().endswith(", 4.5 s of computation between calls")
    cost.check_local(c, str(tmp_path), cores=2)  # fits
    gaps = dmod.parse_text(text.format(compute=0, gap=86400))
    with pytest.raises(cost.CostError, match=r"288.0 h of computation.*--gaps off"):
        cost.check_local(cost.estimate(gaps, 2), str(tmp_path), cores=2)
    cost.check_local(cost.estimate(gaps, 2, gaps=False), str(tmp_path), cores=2)  # --gaps off
    steps = dmod.parse_text(text.format(compute=86400, gap=0))
    with pytest.raises(cost.CostError, match="72.0 h of computation between calls"):
        cost.check_local(cost.estimate(steps, 2, gaps=False), str(tmp_path), cores=2)
    cost.check_local(cost.estimate(steps, 2, steps=1), str(tmp_path), cores=2)  # --steps 1


def test_skel_run_refuses_days_of_gaps_unless_they_are_off(tmp_path, capsys):
    from iotune import cli

    desc = tmp_path / "gaps.yaml"
    desc.write_text(
        "skel: 1\nranks: 2\nsteps: 2\nfiles: [{name: a.dat, api: posix, writes: "
        "[{offset: rank * 8, size: 8, gap_s: 86400}]}]\n"
    )
    rc = cli.main(["skel", "run", str(desc), "-o", str(tmp_path / "g")])
    err = capsys.readouterr().err.strip()
    assert rc == 1 and "48.0 h of computation between calls" in err and "\n" not in err
    assert not (tmp_path / "g").exists()


DIRECT_GAPS = """\
skel: 1
ranks: 1
steps: 3
files:
  - name: c.h5
    serial: true
    datasets: [{name: /d, type: uint16, dims: [64, 64], chunks: [16, 64]}]
    writes:
      - {dataset: /d, start: [0, 0], count: [16, 64], direct: true, size: 700, gap_s: 2,
         repeat: 2}
      - {dataset: /d, start: [0, 0], count: [16, 64], direct: true, size: 700, read: true,
         gap_s: 1}
      - {dataset: /d, start: [0, 0], count: [64, 64], read: true, gap_s: 0.5}
"""


def test_gaps_after_direct_chunk_calls_and_reads_are_counted():
    """The skeleton spends gap_s after H5Dwrite_chunk/H5Dread_chunk and reads as after writes."""
    c = cost.estimate(dmod.parse_text(DIRECT_GAPS), 1)
    assert c.gap_s_per_rank_step == pytest.approx(2 * 2 + 1 + 0.5)
    assert c.wait_s == pytest.approx(3 * 5.5)


def test_entries_that_depend_on_the_step_are_estimated_over_the_steps(tmp_path):
    """`when: step > 0` and `repeat: step` change what each step does: step 0 alone said 0."""
    d = dmod.parse_text(
        "skel: 1\nranks: 2\nsteps: 10\nfiles: [{name: a.dat, api: posix, writes: ["
        "{offset: rank * 8, size: 8, when: 'step > 0', gap_s: 86400}, "
        "{offset: 16 + rank * 8, size: 8, repeat: step}]}]\n"
    )
    c = cost.estimate(d, 2)
    assert c.gap_s_per_rank_step == pytest.approx(86400 * 9 / 10)
    assert c.total_bytes == pytest.approx(2 * 8 * (9 + sum(range(10))), rel=0.01)  # all 10 steps
    assert c.calls_per_rank_step == 1 + 9  # the busiest step
    with pytest.raises(cost.CostError, match="216.0 h of computation"):
        cost.check_local(c, str(tmp_path), cores=2)
    many = cost.estimate(d, 2, steps=1000)  # 17 steps sampled, extrapolated
    # step 0 (no gap) counts once, not as 1 of the 17 sampled steps (86400 * 16/17 before)
    assert many.gap_s_per_rank_step == pytest.approx(86400 * 999 / 1000)


def test_a_comparison_counts_every_run_it_makes(tmp_path):
    d = dmod.parse_text(
        "skel: 1\nranks: 2\nsteps: 2\nfiles: [{name: a.dat, api: posix, writes: "
        "[{offset: rank * 8, size: 8, gap_s: 3600}]}]\n"
    )
    c = cost.estimate(d, 2)  # 2 h a run
    cost.check_local(c, str(tmp_path), cores=2)
    with pytest.raises(cost.CostError, match="in each of 20 runs.*fewer repeats or methods"):
        cost.check_local(c, str(tmp_path), cores=2, launches=20)


def test_the_skeletons_own_gaps_option_decides_what_is_counted():
    from iotune.skel import cli as skel_cli

    assert skel_cli._gaps_of(["--steps", "2"], "sleep") == "sleep"
    assert skel_cli._gaps_of(["--gaps", "off", "--steps", "2"], "busy") == "off"
    assert skel_cli._gaps_of(["--gaps", "off", "--gaps", "busy"], "sleep") == "busy"  # the last


@pytest.mark.parametrize(
    "seed, where",
    [
        ("deep_flow.yaml", ":2: nested more than 64 levels deep"),
        ("deep_block.yaml", ": nested more than 64 levels deep"),
        ("binary.yaml", ":1: the descriptor is not UTF-8 text"),
        ("nul.yaml", ":2: not text"),
        ("unhashable_key.yaml", ":2: not valid YAML"),
        ("too_many_dims.yaml", ":2: files[0].datasets[0].dims: more than 32 dimensions"),
        ("list_type.yaml", ":2: files[0].datasets[0].type: expected one of"),
    ],
)
def test_bad_files_give_one_message_with_file_and_line(seed, where):
    with pytest.raises(dmod.DescriptorError) as e:
        dmod.load(str(CORPUS / seed))
    msg = str(e.value)
    assert msg.startswith(str(CORPUS / seed)) and where in msg and "\n" not in msg


def test_a_fifo_is_refused_at_once(tmp_path):
    fifo = tmp_path / "d.yaml"
    os.mkfifo(fifo)
    result: list = []
    t = threading.Thread(target=lambda: result.append(_load_error(fifo)), daemon=True)
    t.start()
    t.join(5)
    assert result and "not a regular file" in result[0]


def _load_error(path: Path) -> str:
    try:
        dmod.load(str(path))
    except dmod.DescriptorError as e:
        return str(e)
    return ""


def test_cli_prints_one_line_for_a_binary_descriptor(capsys):
    from iotune import cli

    assert cli.main(["skel", "params", str(CORPUS / "binary.yaml"), "-o", "-"]) == 2
    err = capsys.readouterr().err.strip()
    assert "binary.yaml:1: the descriptor is not UTF-8 text" in err and "\n" not in err


def test_bad_parameter_and_timing_files_give_one_message(tmp_path):
    from iotune.skel import run as runmod

    d = dmod.parse_text(SMALL)
    deep = tmp_path / "p.yaml"
    deep.write_text("parameters: " + "[" * 200)
    with pytest.raises(dmod.DescriptorError, match="p.yaml:1: nested more than"):
        runmod.apply_params(d, str(deep))
    big = tmp_path / "q.yaml"
    big.write_text("parameters: {n: 99999999999999999999999}\n")
    with pytest.raises(dmod.DescriptorError, match="n: expected a 64-bit integer"):
        runmod.apply_params(d, str(big))
    timing = tmp_path / "t.json"
    timing.write_text('{"schema": "iotune-skel-timing", "per_rank": [{"steps": [[1, 2]]}]}')
    with pytest.raises(runmod.RunError, match="not a skeleton timing file"):
        runmod.load_timing(str(timing))
    timing.write_text("[" * 100000)
    with pytest.raises(runmod.RunError, match="t.json"):
        runmod.load_timing(str(timing))


def test_a_profile_that_is_not_one_gives_one_message(tmp_path):
    from iotune.skel import from_profile as fp

    prof = tmp_path / "profile.json"
    for text in ("[1, 2]", '{"ranks": 1e999}', '{"ranks": 10000000000}', "\x00\x01"):
        prof.write_text(text)
        with pytest.raises(fp.FromProfileError, match="profile.json"):
            fp.from_profile(str(prof))


def test_datasets_are_created_in_the_order_listed():
    text = """\
skel: 1
files:
  - name: a.h5
    datasets:
      - {name: /first, type: int8, dims: [4]}
      - {name: /written, type: int8, dims: [4]}
      - {name: /last, type: int8, dims: [4]}
    writes:
      - {dataset: /written, start: [0], count: [4], when: rank == 0}
"""
    c_text = gen.skeleton_c(dmod.parse_text(text), "a.yaml")
    at = [c_text.index(f'skel_dataset(f, "/{n}"') for n in ("first", "written", "last")]
    assert at == sorted(at) and c_text.index("skel_write(f,") < at[2]


@pytest.mark.parametrize(
    "text, said",
    [
        ("ranks: 4294967296\n", "ranks: expected an integer from 1 to 2147483647"),
        ("steps: 9223372036854775807\n", "steps: expected 1 to 429496729"),
    ],
)
def test_a_parameter_file_is_bounded_like_the_descriptor(tmp_path, text, said):
    from iotune.skel import run as runmod

    params = tmp_path / "p.yaml"
    params.write_text(text)
    with pytest.raises(dmod.DescriptorError, match=said):
        runmod.apply_params(dmod.parse_text(SMALL), str(params))


def test_rank_where_every_rank_gives_one_value_is_named_as_such():
    """A file size (or an extent) set with `rank` in it is refused saying why, not as an unknown
    name beside a list that names rank as known."""
    seed = CORPUS / "bad_set_size_of_rank.yaml"
    with pytest.raises(dmod.DescriptorError) as e:
        dmod.load(str(seed))
    assert "'rank' cannot be used here: every rank gives the same value" in str(e.value)
    assert "unknown name" not in str(e.value)


def test_descriptors_are_read_by_libyaml_where_pyyaml_has_it():
    """The pure-Python scanner read ~1 MB/s: a 50 MB descriptor line took over a minute to
    refuse (an outside tester); libyaml's takes seconds, with the same safe constructors."""
    import yaml

    from iotune.skel import descriptor

    if yaml.__with_libyaml__:
        assert issubclass(descriptor._Loader, yaml.CSafeLoader)
    with pytest.raises(descriptor.DescriptorError, match=r":1: not valid YAML"):
        descriptor.parse_text("x" * 100_000 + ": 1: 2\n", "big.yaml")
