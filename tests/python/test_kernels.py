"""Tests of the C I/O kernels (kernels/): report format, byte counts, file structure, determinism,
the documented data formula and layout, and that verification catches a corrupted file.

Every kernel runs at a tiny size with 1 and 2 ranks in a temporary directory, always with its
read phase (verification) on.
"""

import json
import os
import re
import resource
import shutil
import signal
import struct
import subprocess

import pytest
from conftest import launcher

KERNELS = ["vpicio", "vorpalio", "gcrmio", "haccio", "iorio"]
HDF5_KERNELS = ["vpicio", "vorpalio", "gcrmio", "iorio"]
PREFIX = "IOTUNE_RESULT "
TIMEOUT = 60

# ----------------------------------------------------------------------------- the data formula
# The kernels' documented generator (docs/kernels.md): value = f(global index, variable, step).

MASK = (1 << 64) - 1


def kc_hash(index, var, step):
    key = (var << 32) | step
    z = (index + 0x9E3779B97F4A7C15 * (key + 1)) & MASK
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return z ^ (z >> 31)


def value_bytes(kind, index, var, step):
    h = kc_hash(index, var, step)
    if kind == "f32":
        return struct.pack("<f", (h >> 40) * 2.0**-24)
    if kind == "f64":
        return struct.pack("<d", (h >> 11) * 2.0**-53)
    if kind == "i32":
        return struct.pack("<I", h >> 32)
    if kind == "u16":
        return struct.pack("<H", h >> 48)
    return struct.pack("<Q", h)  # i64, u64


def values_bytes(kind, first, n, var, step):
    return b"".join(value_bytes(kind, first + i, var, step) for i in range(n))


# ----------------------------------------------------------------------------- helpers


def results(proc):
    """The IOTUNE_RESULT objects of a run, by phase; also checks stdout has nothing else."""
    out = {}
    for line in proc.stdout.splitlines():
        if line.startswith(PREFIX):
            obj = json.loads(line[len(PREFIX) :])
            out[obj["phase"]] = obj
        else:
            assert re.match(r"^\w+ (write|read): \d+ ranks?, ", line), f"unexpected: {line!r}"
    return out


def check_result(res, kernel, phase, nprocs, nbytes):
    assert res["kernel"] == kernel
    assert res["phase"] == phase
    assert res["ranks"] == nprocs
    assert res["bytes"] == nbytes
    for key in ("open_s", "io_s", "close_s", "total_s"):
        assert res[key] >= 0
    assert res["total_s"] == pytest.approx(
        res["open_s"] + res["io_s"] + res["close_s"], rel=1e-6, abs=1e-8
    )
    if res["total_s"] > 0:
        assert res["mb_s"] == pytest.approx(nbytes / res["total_s"] / 1e6, rel=1e-3, abs=1e-3)
    assert res["verified"] is (None if phase == "write" else True)


def run_kernel(mpirun, kernel, nprocs, args, cwd, check=True):
    return mpirun(nprocs, [kernel, *map(str, args)], cwd=cwd, timeout=TIMEOUT, check=check)


def write_and_read(mpirun, kernel_path, name, nprocs, args, cwd, nbytes):
    proc = run_kernel(mpirun, kernel_path, nprocs, [*args, "--read"], cwd)
    assert name not in proc.stderr, proc.stderr
    res = results(proc)
    assert set(res) == {"write", "read"}
    check_result(res["write"], name, "write", nprocs, nbytes)
    check_result(res["read"], name, "read", nprocs, nbytes)
    return res


def h5_structure(path):
    """{dataset path: {"type": ..., "dims": (...), "chunk": (...) or None}} from h5dump -p -H."""
    out = subprocess.run(
        ["h5dump", "-p", "-H", str(path)],
        capture_output=True,
        text=True,
        check=True,
        timeout=TIMEOUT,
    ).stdout
    stack, dsets, current = [], {}, None
    for raw in out.splitlines():
        line = raw.strip()
        m = re.match(r'^(GROUP|DATASET) "([^"]*)" \{$', line)
        if m:
            stack.append((m.group(1), m.group(2)))
            if m.group(1) == "DATASET":
                names = [n for kind, n in stack if kind in ("GROUP", "DATASET") and n != "/"]
                current = "/" + "/".join(names)
                dsets[current] = {"chunk": None}
            continue
        if line.endswith("{"):
            stack.append(("OTHER", None))
            continue
        if line == "}":
            kind, _ = stack.pop()
            if kind == "DATASET":
                current = None
            continue
        if current is None:
            continue
        if line.startswith("DATATYPE"):
            dsets[current]["type"] = line.split()[1]
        m = re.match(r"^DATASPACE\s+SIMPLE \{ \( ([\d, ]+) \)", line)
        if m:
            dsets[current]["dims"] = tuple(int(x) for x in m.group(1).split(","))
        m = re.match(r"^CHUNKED \( ([\d, ]+) \)", line)
        if m:
            dsets[current]["chunk"] = tuple(int(x) for x in m.group(1).split(","))
    return dsets


def h5diff_same(a, b):
    proc = subprocess.run(
        ["h5diff", str(a), str(b)], capture_output=True, text=True, timeout=TIMEOUT
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    # h5diff 1.10 exits 0 for datasets of different shapes, only saying so
    assert "not comparable" not in proc.stdout, proc.stdout


def corrupt_at(path, offset, length):
    with open(path, "r+b") as f:
        f.seek(offset)
        data = f.read(length)
        f.seek(offset)
        f.write(bytes(b ^ 0xFF for b in data))


def corrupt_needle(path, needle):
    """Flip the bytes of `needle`, which must occur exactly once in the file."""
    data = path.read_bytes()
    at = data.find(needle)
    assert at >= 0, "expected data not found in the file (data formula changed?)"
    assert data.find(needle, at + 1) < 0, "needle not unique"
    corrupt_at(path, at, len(needle))


def expect_verification_failure(mpirun, kernel_path, nprocs, args, cwd):
    proc = run_kernel(mpirun, kernel_path, nprocs, [*args, "--read-only"], cwd, check=False)
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert "verification failed" in proc.stderr
    res = results(proc)
    assert res["read"]["verified"] is False


def expect_read_only_ok(mpirun, kernel_path, nprocs, args, cwd):
    proc = run_kernel(mpirun, kernel_path, nprocs, [*args, "--read-only"], cwd)
    res = results(proc)
    assert set(res) == {"read"} and res["read"]["verified"] is True


def expect_too_short(mpirun, kernel_path, nprocs, args, cwd, path, size):
    """--read-only of `path` cut to `size` bytes says so, whatever the API."""
    proc = run_kernel(mpirun, kernel_path, nprocs, [*args, "--read-only"], cwd, check=False)
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert f"{path.name}: file too short: {size} bytes, expected " in proc.stderr
    m = re.search(r"(\d+) of (\d+) checked values differ", proc.stderr)
    assert m and 0 < int(m.group(1)) <= int(m.group(2)), proc.stderr


# ----------------------------------------------------------------------------- all kernels


@pytest.mark.parametrize("name", KERNELS)
def test_help_and_bad_option(kernel, mpirun, tmp_path, name):
    proc = run_kernel(mpirun, kernel(name), 1, ["--help"], tmp_path)
    assert proc.stdout.startswith("usage:") and "--read" in proc.stdout
    proc = run_kernel(mpirun, kernel(name), 2, ["--no-such-option", "1"], tmp_path, check=False)
    assert proc.returncode == 2
    assert "unknown option '--no-such-option'" in proc.stderr
    assert proc.stderr.count("unknown option") == 1  # rank 0 only
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("name", KERNELS)
def test_read_only_missing_file(kernel, mpirun, tmp_path, name):
    proc = run_kernel(
        mpirun, kernel(name), 2, ["--read-only", "--file", "absent.x"], tmp_path, check=False
    )
    assert proc.returncode == 1
    assert "cannot read" in proc.stderr and "absent" in proc.stderr


HUGE = "4194304T"  # 2**62: any product of it with a size > 1 overflows 64 bits
OVERFLOW_ARGS = {
    "vpicio": ["--particles", HUGE],
    "vorpalio": ["--block", f"{HUGE},1,1"],
    "gcrmio": ["--cells", HUGE],
    "iorio": ["--segments", HUGE, "--block", 8, "--transfer", 8],
}
# sizes that fit in 64 bits but not in any machine's memory (32 TiB and more per rank)
TOO_BIG_ARGS = {
    "vpicio": ["--particles", "1T"],
    "vorpalio": ["--block", "1,1,1", "--components", "2T"],
    "gcrmio": ["--cells", "1T"],
    "iorio": ["--block", "8T", "--transfer", 8],
}


@pytest.mark.parametrize("name", OVERFLOW_ARGS)
def test_size_overflow_and_memory_limit_are_clean_errors(kernel, mpirun, tmp_path, name):
    proc = run_kernel(mpirun, kernel(name), 2, OVERFLOW_ARGS[name], tmp_path, check=False)
    assert proc.returncode == 2, proc.stderr
    assert re.fullmatch(rf"{name}: error: too large: .* does not fit in 64 bits\n", proc.stderr)
    proc = run_kernel(mpirun, kernel(name), 2, TOO_BIG_ARGS[name], tmp_path, check=False)
    assert proc.returncode == 1, proc.stderr
    assert re.fullmatch(rf"{name}: error: a rank needs .* physical memory\n", proc.stderr)
    assert list(tmp_path.iterdir()) == []


def run_limited(nprocs, argv, cwd, limit):
    """mpiexec under a timeout with `limit()` applied to the launched processes."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("IOTUNE_")}
    env["UCX_TLS"] = "self,tcp"  # no shared-memory files: they would hit a file-size limit
    return subprocess.run(
        [*launcher(), str(nprocs), *map(str, argv)],
        preexec_fn=limit,
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )


def test_failed_allocation_is_a_clean_error(kernel, tmp_path):
    # more than the address space the run may use, less than physical memory: malloc fails
    limit = 2 << 30
    if os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") < 2 * limit:
        pytest.skip("needs 4 GiB of physical memory")
    args = ["--block", "3G", "--transfer", "1M", "--segments", 1]
    proc = run_limited(
        1,
        [kernel("iorio"), *args],
        tmp_path,
        lambda: resource.setrlimit(resource.RLIMIT_AS, (limit, limit)),
    )
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr.startswith("iorio: error: out of memory")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "argv",
    [
        ["gcrmio", "--cells", 8000],
        ["iorio", "--block", "16M", "--transfer", "4M", "--segments", 1],
        ["haccio", "--particles", 500000, "--mode", "posix", "--layout", "fpp"],
    ],
    ids=lambda argv: argv[0],
)
def test_failed_write_leaves_no_partial_file(kernel, tmp_path, argv):
    def limit_file_size():  # writes past 16 MiB fail with EFBIG instead of a signal
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (16 << 20, 16 << 20))

    proc = run_limited(2, [kernel(argv[0]), *argv[1:]], tmp_path, limit_file_size)
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr.startswith(f"{argv[0]}: error (rank ")
    assert list(tmp_path.iterdir()) == []


def test_long_file_name_in_json(kernel, mpirun, tmp_path):
    # longer than any fixed escape buffer below PATH_MAX, with characters JSON must escape
    deep = tmp_path.joinpath(*["d" * 200] * 6)
    deep.mkdir(parents=True)
    name = 'a"b\\c\td.dat'
    args = ["--api", "posix", "--block", "8K", "--transfer", "4K", "--segments", 1, "--read"]
    proc = run_kernel(mpirun, kernel("iorio"), 1, [*args, "--dir", deep, "--file", name], tmp_path)
    res = results(proc)
    assert res["write"]["file"] == res["read"]["file"] == str(deep / name)


@pytest.mark.parametrize("name", HDF5_KERNELS)
def test_hdf5_kernels_link_hdf5_dynamically(kernel, name):
    ldd = subprocess.run(["ldd", str(kernel(name))], capture_output=True, text=True).stdout
    assert re.search(r"libhdf5\S*\.so", ldd), ldd
    assert re.search(r"libmpi\S*\.so", ldd), ldd


def test_haccio_does_not_link_hdf5(kernel):
    ldd = subprocess.run(["ldd", str(kernel("haccio"))], capture_output=True, text=True).stdout
    assert "libhdf5" not in ldd and re.search(r"libmpi\S*\.so", ldd)


# ----------------------------------------------------------------------------- VPIC-IO

VPIC_VARS = [
    ("x", "f32"),
    ("y", "f32"),
    ("z", "f32"),
    ("px", "f32"),
    ("py", "f32"),
    ("pz", "f32"),
    ("id1", "i32"),
    ("id2", "i32"),
]
H5TYPE = {
    "f32": "H5T_IEEE_F32LE",
    "f64": "H5T_IEEE_F64LE",
    "i32": "H5T_STD_I32LE",
    "u64": "H5T_STD_U64LE",
}


@pytest.mark.parametrize("nprocs", [1, 2])
def test_vpicio(kernel, mpirun, tmp_path, nprocs):
    n, steps = 1000, 2
    args = ["--particles", n, "--steps", steps]
    res = write_and_read(
        mpirun, kernel("vpicio"), "vpicio", nprocs, args, tmp_path, nprocs * n * 32 * steps
    )
    assert res["write"]["steps"] == steps and res["write"]["mode"] == "collective"
    dsets = h5_structure(tmp_path / "vpicio.h5")
    assert set(dsets) == {f"/Step#{s}/{v}" for s in range(steps) for v, _ in VPIC_VARS}
    for s in range(steps):
        for v, kind in VPIC_VARS:
            d = dsets[f"/Step#{s}/{v}"]
            assert d["type"] == H5TYPE[kind] and d["dims"] == (nprocs * n,) and d["chunk"] is None

    # the same particles from 2 ranks, independent I/O, are the same file contents
    other = tmp_path / "other"
    other.mkdir()
    run_kernel(
        mpirun,
        kernel("vpicio"),
        3 - nprocs,
        ["--particles", n * nprocs // (3 - nprocs), "--steps", steps, "--mode", "independent"],
        other,
    )
    h5diff_same(tmp_path / "vpicio.h5", other / "vpicio.h5")

    if nprocs == 2:
        expect_read_only_ok(mpirun, kernel("vpicio"), nprocs, args, tmp_path)
        idx = 2 * n - 3  # a particle of rank 1, variable y, step 1
        corrupt_needle(tmp_path / "vpicio.h5", values_bytes("f32", idx, 2, 1, 1))
        expect_verification_failure(mpirun, kernel("vpicio"), nprocs, args, tmp_path)


# ----------------------------------------------------------------------------- VORPAL-IO


@pytest.mark.parametrize("nprocs", [1, 2])
def test_vorpalio(kernel, mpirun, tmp_path, nprocs):
    block, steps = (4, 3, 2), 2
    args = ["--block", ",".join(map(str, block)), "--steps", steps, "--procs", f"{nprocs},1,1"]
    nbytes = nprocs * block[0] * block[1] * block[2] * 3 * 8 * steps
    res = write_and_read(mpirun, kernel("vorpalio"), "vorpalio", nprocs, args, tmp_path, nbytes)
    assert res["write"]["procs"] == f"{nprocs}x1x1" and res["write"]["components"] == 3
    dsets = h5_structure(tmp_path / "vorpalio.h5")
    assert set(dsets) == {f"/Step#{s}/Block/E/{c}" for s in range(steps) for c in range(3)}
    for d in dsets.values():  # (z, y, x), x fastest; the process grid splits x
        assert d["type"] == "H5T_IEEE_F64LE" and d["chunk"] is None
        assert d["dims"] == (block[2], block[1], nprocs * block[0])

    # one rank with the whole grid, independent I/O: same data
    other = tmp_path / "other"
    other.mkdir()
    whole = f"{block[0] * nprocs},{block[1]},{block[2]}"
    run_kernel(
        mpirun,
        kernel("vorpalio"),
        1,
        ["--block", whole, "--steps", steps, "--mode", "independent"],
        other,
    )
    h5diff_same(tmp_path / "vorpalio.h5", other / "vorpalio.h5")

    if nprocs == 2:
        expect_read_only_ok(mpirun, kernel("vorpalio"), nprocs, args, tmp_path)
        nx = 2 * block[0]
        g = (1 * block[1] + 2) * nx + 5  # cell (z=1, y=2, x=5): rank 1's block
        corrupt_needle(tmp_path / "vorpalio.h5", values_bytes("f64", g, 2, 2, 0))
        expect_verification_failure(mpirun, kernel("vorpalio"), nprocs, args, tmp_path)


# one global grid of 8 x 6 x 6 cells (x, y, z), split over 2 ranks along each axis
VORPAL_SPLITS = {"x": ("2,1,1", (4, 6, 6)), "y": ("1,2,1", (8, 3, 6)), "z": ("1,1,2", (8, 6, 3))}


@pytest.mark.parametrize("axis", VORPAL_SPLITS)
def test_vorpalio_split_along_each_axis_even_and_uneven(kernel, mpirun, tmp_path, axis):
    procs, block = VORPAL_SPLITS[axis]
    steps, nbytes = 2, 8 * 6 * 6 * 3 * 8 * 2
    ref = tmp_path / "ref"
    ref.mkdir()
    run_kernel(mpirun, kernel("vorpalio"), 1, ["--block", "8,6,6", "--steps", steps], ref)
    b = block["xyz".index(axis)]
    plane = 8 * 6 * 6 // (2 * b)  # cells of a block per cell of its extent along the split
    for uneven, extents in ((False, (b, b)), (True, (b - b // 2, b + b // 2))):
        out = tmp_path / f"uneven{int(uneven)}"
        out.mkdir()
        args = ["--procs", procs, "--block", ",".join(map(str, block)), "--steps", steps]
        args += ["--uneven"] if uneven else []
        res = write_and_read(mpirun, kernel("vorpalio"), "vorpalio", 2, args, out, nbytes)
        assert res["read"]["uneven"] == uneven
        assert (res["read"]["block_cells_min"], res["read"]["block_cells_max"]) == (
            plane * extents[0],
            plane * extents[1],
        )
        h5diff_same(ref / "vorpalio.h5", out / "vorpalio.h5")  # the same grid and data


def test_vorpalio_default_process_grid_and_bad_grid(kernel, mpirun, tmp_path):
    proc = run_kernel(mpirun, kernel("vorpalio"), 2, ["--block", "3,2,2"], tmp_path)
    res = results(proc)["write"]
    assert res["procs"] == "2x1x1" and res["bytes"] == 2 * 12 * 3 * 8
    proc = run_kernel(
        mpirun,
        kernel("vorpalio"),
        2,
        ["--block", "3,2,2", "--procs", "3,1,1"],
        tmp_path,
        check=False,
    )
    assert proc.returncode == 2 and "--procs" in proc.stderr


# ----------------------------------------------------------------------------- GCRM-IO

GCRM_VARS = [
    ("pressure", 1, 0),
    ("temperature", 1, 0),
    ("vertical_velocity", 1, 1),
    ("normal_wind", 3, 0),
    ("vorticity", 2, 0),
]


@pytest.mark.parametrize("nprocs,chunk", [(1, 30), (2, 30), (2, 0)])
def test_gcrmio(kernel, mpirun, tmp_path, nprocs, chunk):
    cells, levels, iters = 100, 5, 2
    args = ["--cells", cells, "--levels", levels, "--chunk-cells", chunk, "--iterations", iters]
    nbytes = cells * nprocs * 8 * (8 * levels + 1) * iters
    write_and_read(mpirun, kernel("gcrmio"), "gcrmio", nprocs, args, tmp_path, nbytes)
    dsets = h5_structure(tmp_path / "gcrmio.h5")
    assert set(dsets) == {f"/Step#{i}/{v}" for i in range(iters) for v, _, _ in GCRM_VARS}
    for i in range(iters):
        for v, per_cell, extra in GCRM_VARS:
            d = dsets[f"/Step#{i}/{v}"]
            rows = cells * nprocs * per_cell
            assert d["type"] == "H5T_IEEE_F64LE"
            assert d["dims"] == (rows, levels + extra)
            assert d["chunk"] == ((min(chunk * per_cell, rows), levels + extra) if chunk else None)

    # other decomposition, other chunking, independent I/O: same data
    other = tmp_path / "other"
    other.mkdir()
    run_kernel(
        mpirun,
        kernel("gcrmio"),
        3 - nprocs,
        [
            "--cells",
            cells * nprocs // (3 - nprocs),
            "--levels",
            levels,
            "--chunk-cells",
            7,
            "--iterations",
            iters,
            "--mode",
            "independent",
        ],
        other,
    )
    h5diff_same(tmp_path / "gcrmio.h5", other / "gcrmio.h5")

    if nprocs == 2:
        expect_read_only_ok(mpirun, kernel("gcrmio"), nprocs, args, tmp_path)
        g = 350 * levels + 2  # normal_wind (variable 3), edge row 350 (rank 1), level 2
        corrupt_needle(tmp_path / "gcrmio.h5", values_bytes("f64", g, 2, 3, 1))
        expect_verification_failure(mpirun, kernel("gcrmio"), nprocs, args, tmp_path)


def test_gcrmio_chunks_of_4_gib_are_refused_before_the_file_exists(kernel, mpirun, tmp_path):
    args = ["--cells", 1000000, "--levels", 200, "--chunk-cells", 1000000]
    proc = run_kernel(mpirun, kernel("gcrmio"), 1, args, tmp_path, check=False)
    assert proc.returncode == 2, proc.stderr
    m = re.fullmatch(
        r"gcrmio: error: --chunk-cells 1000000 makes chunks of 4800000000 bytes \(normal_wind\); "
        r"HDF5 chunks must be below 4 GiB: use --chunk-cells (\d+) or less, or 0 \(contiguous\)\n",
        proc.stderr,
    )
    assert m and int(m.group(1)) == (2**32 - 1) // (3 * 200 * 8), proc.stderr
    assert list(tmp_path.iterdir()) == []


# ----------------------------------------------------------------------------- HACC-IO

HACC_VARS = ["f32"] * 7 + ["i64", "u16"]
HACC_SIZES = [4] * 7 + [8, 2]
HACC_MODES = ["mpiio-one-call", "mpiio-per-var", "mpiio-indep", "posix"]


def hacc_check_file(path, nblocks, n, first):
    """Header and a few values at the documented offsets."""
    data = path.read_bytes()
    header = 16 + 8 * nblocks
    assert len(data) == header + 38 * n * nblocks
    assert data[:8] == b"IOTHACC1"
    assert struct.unpack_from(f"<{1 + nblocks}q", data, 8) == (nblocks, *[n] * nblocks)
    region = header
    for v, (kind, size) in enumerate(zip(HACC_VARS, HACC_SIZES, strict=True)):
        for i in (0, n - 1, n * nblocks - 1):
            if i < n * nblocks:
                at = region + i * size
                assert data[at : at + size] == value_bytes(kind, first + i, v, 0), (v, i)
        region += n * nblocks * size


@pytest.mark.parametrize("mode", HACC_MODES)
@pytest.mark.parametrize("layout", ["shared", "fpp"])
def test_haccio(kernel, mpirun, tmp_path, mode, layout):
    n, nprocs = 500, 2
    args = ["--particles", n, "--mode", mode, "--layout", layout]
    header = 16 + 8 * nprocs if layout == "shared" else 24 * nprocs
    res = write_and_read(
        mpirun, kernel("haccio"), "haccio", nprocs, args, tmp_path, 38 * n * nprocs + header
    )
    assert res["write"]["mode"] == mode and res["write"]["layout"] == layout
    if layout == "shared":
        files = [tmp_path / "haccio.dat"]
        hacc_check_file(files[0], nprocs, n, 0)
    else:
        files = [tmp_path / f"haccio.r{r}.dat" for r in range(nprocs)]
        for r, f in enumerate(files):
            hacc_check_file(f, 1, n, r * n)
    assert sorted(tmp_path.iterdir()) == sorted(files)

    # every mode writes the same bytes: compare with a run in another mode
    other = tmp_path / "other"
    other.mkdir()
    other_mode = HACC_MODES[(HACC_MODES.index(mode) + 1) % len(HACC_MODES)]
    run_kernel(
        mpirun,
        kernel("haccio"),
        nprocs,
        ["--particles", n, "--mode", other_mode, "--layout", layout],
        other,
    )
    for f in files:
        assert f.read_bytes() == (other / f.name).read_bytes()

    expect_read_only_ok(mpirun, kernel("haccio"), nprocs, args, tmp_path)
    # corrupt the mask (variable 8) of rank 1's particle 7
    if layout == "shared":
        target, at = files[0], 16 + 8 * nprocs + 36 * n * nprocs + (n + 7) * 2
    else:
        target, at = files[1], 24 + 36 * n + 7 * 2
    assert target.read_bytes()[at : at + 2] == value_bytes("u16", n + 7, 8, 0)
    corrupt_at(target, at, 2)
    expect_verification_failure(mpirun, kernel("haccio"), nprocs, args, tmp_path)


@pytest.mark.parametrize("mode", HACC_MODES)
def test_haccio_one_rank(kernel, mpirun, tmp_path, mode):
    n = 300
    args = ["--particles", n, "--mode", mode]
    write_and_read(mpirun, kernel("haccio"), "haccio", 1, args, tmp_path, 38 * n + 24)
    path = tmp_path / "haccio.dat"
    hacc_check_file(path, 1, n, 0)
    # a checkpoint of another size: the header check fails
    other = ["--particles", n + 1, "--mode", mode, "--read-only"]
    proc = run_kernel(mpirun, kernel("haccio"), 1, other, tmp_path, check=False)
    assert proc.returncode == 3
    assert "header does not describe 1 ranks x 301 particles" in proc.stderr
    # a truncated one: too short (MPI-IO would just read zeros past the end)
    os.truncate(path, 24 + 38 * n // 2)
    expect_too_short(mpirun, kernel("haccio"), 1, args, tmp_path, path, 24 + 38 * n // 2)


# ----------------------------------------------------------------------------- IOR


def ior_files(layout, steps, nprocs, ext):
    names = []
    for s in range(steps):
        step = f".{s}" if steps > 1 else ""
        if layout == "shared":
            names.append(f"iorio{step}.{ext}")
        else:
            names += [f"iorio{step}.r{r}.{ext}" for r in range(nprocs)]
    return names


@pytest.mark.parametrize("api", ["hdf5", "mpiio", "posix"])
@pytest.mark.parametrize("layout", ["shared", "fpp"])
@pytest.mark.parametrize("order", ["sequential", "random"])
def test_iorio(kernel, mpirun, tmp_path, api, layout, order):
    nprocs, block, segments, steps = 2, 4096, 3, 2
    mode = "collective" if api != "posix" and order == "random" else "independent"
    args = [
        "--api",
        api,
        "--layout",
        layout,
        "--order",
        order,
        "--mode",
        mode,
        "--block",
        "4K",
        "--transfer",
        "1k",
        "--segments",
        segments,
        "--steps",
        steps,
    ]
    nbytes = segments * block * nprocs * steps
    res = write_and_read(mpirun, kernel("iorio"), "iorio", nprocs, args, tmp_path, nbytes)
    assert res["write"]["api"] == api and res["write"]["order"] == order
    assert res["write"]["mode"] == mode and res["write"]["steps"] == steps
    ext = "h5" if api == "hdf5" else "dat"
    names = ior_files(layout, steps, nprocs, ext)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(names)

    words = segments * block * (nprocs if layout == "shared" else 1) // 8
    for name in names:
        path = tmp_path / name
        step = int(name.split(".")[1]) if steps > 1 else 0
        var = int(re.search(r"\.r(\d+)\.", name).group(1)) if layout == "fpp" else 0
        if api == "hdf5":
            d = h5_structure(path)
            assert d == {"/data": {"type": "H5T_STD_U64LE", "dims": (words,), "chunk": None}}
        else:  # word w of the file holds value(w, file's variable, step)
            data = path.read_bytes()
            assert len(data) == words * 8
            for w in (0, 1, words // 2, words - 1):
                assert data[8 * w : 8 * w + 8] == value_bytes("u64", w, var, step)

    # a second run (other order) writes the same files
    other = tmp_path / "other"
    other.mkdir()
    other_args = list(args)
    other_args[other_args.index(order)] = "random" if order == "sequential" else "sequential"
    other_args[other_args.index(mode)] = "independent"
    run_kernel(mpirun, kernel("iorio"), nprocs, other_args, other)
    for name in names:
        if api == "hdf5":
            h5diff_same(tmp_path / name, other / name)
        else:
            assert (tmp_path / name).read_bytes() == (other / name).read_bytes()

    if layout == "shared" and order == "random":
        expect_read_only_ok(mpirun, kernel("iorio"), nprocs, args, tmp_path)
        # rank 1's second block (segment 1) in the last step's file
        w = (1 * block * nprocs + block) // 8 + 5
        corrupt_needle(tmp_path / names[-1], values_bytes("u64", w, 2, 0, steps - 1))
        expect_verification_failure(mpirun, kernel("iorio"), nprocs, args, tmp_path)


@pytest.mark.parametrize("api", ["hdf5", "mpiio", "posix"])
@pytest.mark.parametrize("layout,order", [("shared", "sequential"), ("fpp", "random")])
def test_iorio_one_rank(kernel, mpirun, tmp_path, api, layout, order):
    block, segments = 8192, 2
    mode = "independent" if api == "posix" else "collective"
    args = ["--api", api, "--layout", layout, "--order", order, "--mode", mode,
            "--block", "8K", "--transfer", "2K", "--segments", segments]  # fmt: skip
    res = write_and_read(mpirun, kernel("iorio"), "iorio", 1, args, tmp_path, segments * block)
    assert res["write"]["layout"] == layout and res["write"]["order"] == order
    (name,) = ior_files(layout, 1, 1, "h5" if api == "hdf5" else "dat")
    path = tmp_path / name
    assert [p.name for p in tmp_path.iterdir()] == [name]
    words = segments * block // 8
    if api == "hdf5":
        d = h5_structure(path)
        assert d == {"/data": {"type": "H5T_STD_U64LE", "dims": (words,), "chunk": None}}
        run_kernel(mpirun, kernel("iorio"), 1, [*args, "--read-only", "--cleanup"], tmp_path)
    else:  # word w holds value(w, 0, 0): var 0 for a shared file and for rank 0's own file
        data = path.read_bytes()
        assert len(data) == words * 8
        for w in (0, words // 2 + 3, words - 1):
            assert data[8 * w : 8 * w + 8] == value_bytes("u64", w, 0, 0)
        os.truncate(path, 5000)
        expect_too_short(mpirun, kernel("iorio"), 1, [*args, "--cleanup"], tmp_path, path, 5000)
    assert list(tmp_path.iterdir()) == []  # --cleanup removed the file


def test_iorio_bad_sizes(kernel, mpirun, tmp_path):
    for args in (
        ["--block", "1000", "--transfer", "300"],
        ["--transfer", "12"],
        ["--api", "posix", "--mode", "collective"],
        ["--block", "1X"],
    ):
        proc = run_kernel(mpirun, kernel("iorio"), 1, args, tmp_path, check=False)
        assert proc.returncode == 2, args
    assert list(tmp_path.iterdir()) == []


def test_tools_present():
    for tool in ("h5dump", "h5diff", "ldd"):
        assert shutil.which(tool), f"{tool} is needed by these tests"


# ----------------------------------------------------------------------------- file per step

PER_STEP = {
    "gcrmio": ["--cells", 100, "--levels", 5, "--chunk-cells", 30],
    "vorpalio": ["--block", "6,4,3"],
}


@pytest.mark.parametrize("name", sorted(PER_STEP))
def test_file_per_step_writes_each_step_to_its_own_file(kernel, mpirun, tmp_path, name):
    """--file-per-step: step i in <file>.i.h5 (as codes write a checkpoint per step), each
    holding exactly the group the one-file run holds for that step; read back, --read-only
    and --cleanup see every step's file."""
    args = [*PER_STEP[name], "--steps", 3]
    one = tmp_path / "one"
    one.mkdir()
    run_kernel(mpirun, kernel(name), 2, args, one)
    per = tmp_path / "per"
    per.mkdir()
    res = results(run_kernel(mpirun, kernel(name), 2, [*args, "--file-per-step", "--read"], per))
    assert res["write"]["bytes"] == res["read"]["bytes"] and res["read"]["verified"] is True
    assert sorted(p.name for p in per.iterdir()) == [f"{name}.{i}.h5" for i in range(3)]
    for i in range(3):
        groups = {d.split("/")[1] for d in h5_structure(per / f"{name}.{i}.h5")}
        assert groups == {f"Step#{i}"}
        pair = [one / f"{name}.h5", per / f"{name}.{i}.h5", f"/Step#{i}", f"/Step#{i}"]
        proc = subprocess.run(["h5diff", *pair], capture_output=True, text=True)
        assert proc.returncode == 0 and "not comparable" not in proc.stdout, proc.stdout
    (per / f"{name}.2.h5").unlink()
    proc = run_kernel(mpirun, kernel(name), 2, [*args, "--file-per-step", "--read-only"], per,
                      check=False)  # fmt: skip
    assert proc.returncode == 1 and f"{name}.2.h5" in proc.stderr
    run_kernel(mpirun, kernel(name), 2, [*args, "--file-per-step", "--cleanup"], per)
    assert list(per.iterdir()) == []
