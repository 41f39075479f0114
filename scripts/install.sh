#!/usr/bin/env bash
# Installs what iotune needs and builds it; safe to run again (it only does what is missing).
#   - MPI, parallel HDF5, libexpat, zlib, CMake, a C compiler: taken from the environment when found
#     (cluster modules, or -DHDF5_ROOT/MPI_HOME via IOTUNE_CMAKE_ARGS); Debian packages are
#     installed only when something is missing and apt-get can be used.
#   - .venv with the iotune package (editable) and its Python dependencies.
#   - one CMake build per MPI family, installed side by side into .venv
#     (lib/iotune/<family>/libiotune.so, libexec/iotune/<family>/kernels/...): build/ for the
#     default family (MPICH when present), build-<family>/ for each other one.
#     IOTUNE_MPI=all (default: every MPI found by its own name, mpicc.mpich / mpicc.openmpi;
#     both installed where apt-get can), mpich, openmpi, or auto (the MPI on PATH or given by
#     IOTUNE_CMAKE_ARGS=-DMPI_HOME=...: a cluster's module; also the fallback when neither
#     Debian-named MPI is there).
set -euo pipefail
cd "$(dirname "$0")/.."
say() { printf 'iotune-install: %s\n' "$*"; }

missing=()
have() { command -v "$1" >/dev/null 2>&1; }
can_apt() { have apt-get && { [ "$(id -u)" = 0 ] || sudo -n true 2>/dev/null; }; }

# ---- MPI families: which MPIs to build for, and their packages (begin) ----
# Each MPI is named by its own tools (mpicc.<family>, pkg-config hdf5-<family>): where the
# mpicc/mpirun/h5pcc alternatives point never matters.
IOTUNE_MPI=${IOTUNE_MPI:-all}
case "$IOTUNE_MPI" in
  all) families=(mpich openmpi) ;;
  mpich | openmpi) families=("$IOTUNE_MPI") ;;
  auto) families=() ;;
  *) say "IOTUNE_MPI=$IOTUNE_MPI: give all, mpich, openmpi or auto"; exit 2 ;;
esac
if [ "$IOTUNE_MPI" = all ] && ! can_apt && ! have mpicc.mpich && ! have mpicc.openmpi; then
  IOTUNE_MPI=auto families=() # no Debian-named MPI and no apt-get: the MPI module loaded
fi
family_packages() { # the Debian packages of a family that are not there yet
  local fam=$1
  have "mpicc.$fam" || echo "lib$([ "$fam" = mpich ] && echo mpich || echo openmpi)-dev"
  have "mpicc.$fam" || echo "$([ "$fam" = mpich ] && echo mpich || echo openmpi-bin)"
  pkg-config --exists "hdf5-$fam" 2>/dev/null || echo "libhdf5-$fam-dev"
}
built=()
for fam in "${families[@]}"; do
  pkgs=($(family_packages "$fam"))
  if [ ${#pkgs[@]} -gt 0 ] && [ "$IOTUNE_MPI" = all ] && ! can_apt; then
    say "skipping $fam: not installed (${pkgs[*]})"
    continue
  fi
  missing+=("${pkgs[@]}")
  built+=("$fam")
done
if [ "$IOTUNE_MPI" = auto ]; then
  have mpicc || [ -n "${MPI_HOME:-}" ] || missing+=(mpich libmpich-dev)
  if ! { have h5pcc || pkg-config --exists hdf5-mpich 2>/dev/null || [ -n "${HDF5_ROOT:-}" ]; }; then
    missing+=(libhdf5-mpich-dev)
  fi
  built=(auto)
fi
# Software built on Debian's Open MPI that the tests run under the Open MPI runtime.
if [[ " ${built[*]} " == *" openmpi "* ]] && can_apt; then
  dpkg -s python3-h5py-mpi >/dev/null 2>&1 || missing+=(python3-h5py-mpi)
  pkg-config --exists netcdf-mpi 2>/dev/null || missing+=(libnetcdf-mpi-dev)
  pkg-config --exists pnetcdf 2>/dev/null || missing+=(libpnetcdf-dev)
  have ncmpidiff || missing+=(pnetcdf-bin) # the data check of the corpus's PnetCDF cases
fi
# ---- MPI families (end) ----
# HDF5's own parallel example (ph5example.c, a corpus case: corpus/cases.toml) ships in
# libhdf5-doc; only where apt-get can (the corpus says which cases it could not build).
if can_apt && [ ! -f /usr/share/doc/libhdf5-doc/examples/ph5example.c.gz ]; then
  missing+=(libhdf5-doc)
fi
have h5diff || missing+=(hdf5-tools)
{ pkg-config --exists expat 2>/dev/null || [ -f /usr/include/expat.h ]; } || missing+=(libexpat1-dev)
{ pkg-config --exists zlib 2>/dev/null || [ -f /usr/include/zlib.h ]; } || missing+=(zlib1g-dev)
have pkg-config || missing+=(pkg-config)
have cmake || missing+=(cmake)
have cc || missing+=(gcc)
have make || missing+=(make)
have clang-format || missing+=(clang-format)
PYTHON=${PYTHON:-python3}
have "$PYTHON" || missing+=(python3)
"$PYTHON" -c 'import ensurepip, venv' 2>/dev/null || missing+=(python3-venv)

if [ ${#missing[@]} -gt 0 ]; then
  apt=()
  if [ "$(id -u)" = 0 ]; then apt=(apt-get); elif sudo -n true 2>/dev/null; then apt=(sudo apt-get); fi
  if ! have apt-get || [ ${#apt[@]} = 0 ]; then
    say "missing: ${missing[*]}"
    say "load your site's MPI, parallel HDF5 and libexpat modules (or install them) and run again"
    exit 1
  fi
  say "installing Debian packages: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  "${apt[@]}" update -qq
  "${apt[@]}" install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if [ ! -x .venv/bin/python ]; then
  say "creating .venv"
  "$PYTHON" -m venv .venv
fi
if ! .venv/bin/python -c 'import iotune, optuna, pytest, xdist, darshan, hypothesis, orjson' 2>/dev/null; then
  say "installing the iotune Python package into .venv"
  .venv/bin/pip install -q --upgrade pip
  .venv/bin/pip install -q -e '.[dev]'
fi

# ---- begin h5py block: Python applications (mpi4py + h5py on the runtime's HDF5) ----
# h5py from a binary wheel bundles its own HDF5 (the block after this one tests that one): build
# mpi4py and h5py from source against the parallel HDF5 the runtime wraps, with MPICH's own
# compiler (the plain `mpicc` alternative may point to another MPI). pip caches the built wheels,
# so only the first set-up pays the build (~4 + 4.5 min of CPU). Pins: newer numpy, Cython and
# h5py fail to build against HDF5 1.10. IOTUNE_NO_H5PY=1 skips this step (h5py tests then skip).
h5py_hdf5_lib() { # the HDF5 library h5py's defs*.so links: it must be the system's, not a copy
  local defs
  defs=$(.venv/bin/python -c 'import glob, os, h5py, mpi4py
assert h5py.get_config().mpi
print(glob.glob(os.path.join(os.path.dirname(h5py.__file__), "defs*.so"))[0])' 2>/dev/null) ||
    return 1
  ldd "$defs" | awk '$1 ~ /^libhdf5/ && $3 !~ /site-packages|h5py/ {print $3; found=1} END {exit !found}'
}
h5py_ready() { h5py_hdf5_lib >/dev/null; }
if [ -z "${IOTUNE_NO_H5PY:-}" ] && ! h5py_ready; then
  h5py_cc=${IOTUNE_H5PY_CC:-mpicc.mpich}
  have "$h5py_cc" || h5py_cc=mpicc
  h5py_hdf5=${IOTUNE_H5PY_HDF5_DIR:-${HDF5_ROOT:-/usr/lib/x86_64-linux-gnu/hdf5/mpich}}
  if [ ! -d "$h5py_hdf5/include" ]; then
    say "no parallel HDF5 found at $h5py_hdf5 (set IOTUNE_H5PY_HDF5_DIR, or IOTUNE_NO_H5PY=1)"
    exit 1
  fi
  say "building mpi4py and h5py from source with $h5py_cc against $h5py_hdf5 (first time: minutes)"
  h5py_start=$(date +%s)
  .venv/bin/pip install -q "numpy<2.3" "Cython<3.1" pkgconfig setuptools wheel
  MPICC="$h5py_cc" CC="$h5py_cc" .venv/bin/pip install -q --no-binary=mpi4py mpi4py
  MPICC="$h5py_cc" CC="$h5py_cc" HDF5_MPI=ON HDF5_DIR="$h5py_hdf5" \
    .venv/bin/pip install -q --no-binary=h5py --no-build-isolation "h5py<3.13"
  h5py_ready || { say "h5py was built without MPI or does not link the system's HDF5"; exit 1; }
  say "mpi4py and h5py ready in $(($(date +%s) - h5py_start)) s; h5py links $(h5py_hdf5_lib | head -1)"
fi
# ---- end h5py block ----

# ---- begin: pip's h5py wheel (HDF5 2.0 inside, serial) in .venv-h5wheel, the second HDF5
# generation of tests/python/test_h5py_wheel.py; pip's cache makes it seconds after the first
# time. IOTUNE_NO_H5WHEEL=1 skips it (those tests then skip, saying why).
if [ -z "${IOTUNE_NO_H5WHEEL:-}" ] && ! .venv-h5wheel/bin/python -c 'import h5py' 2>/dev/null; then
  say "pip's h5py wheel (its own HDF5) into .venv-h5wheel"
  { python3 -m venv .venv-h5wheel && .venv-h5wheel/bin/pip install -q --only-binary=:all: h5py; } ||
    say "pip's h5py wheel not installed: tests/python/test_h5py_wheel.py will be skipped"
fi
# ---- end: pip's h5py wheel

# ---- begin: packages of the cluster and browser tests (tests/python/test_postgres.py,
# test_slurm.py, test_browser.py): a throw-away PostgreSQL server, a one-node SLURM cluster
# (munge + slurmctld + slurmd), headless Chromium and its driver, clang with libFuzzer for the
# fuzzers (tests/fuzz); in Python psycopg, selenium and optuna-dashboard (the dev extras).
# IOTUNE_TEST_PACKAGES=0 skips the Debian packages (the tests that need them are then skipped,
# saying why).
if [ "${IOTUNE_TEST_PACKAGES:-1}" != 0 ]; then
  test_missing=()
  { have pg_ctl || ls /usr/lib/postgresql/*/bin/pg_ctl >/dev/null 2>&1; } || test_missing+=(postgresql)
  { have slurmd || [ -x /usr/sbin/slurmd ]; } || test_missing+=(slurmd)
  { have slurmctld || [ -x /usr/sbin/slurmctld ]; } || test_missing+=(slurmctld)
  have sbatch || test_missing+=(slurm-client)
  { have munged || [ -x /usr/sbin/munged ]; } || test_missing+=(munge)
  have chromium || test_missing+=(chromium)
  have chromedriver || test_missing+=(chromium-driver)
  # libFuzzer and the sanitizers for the control-file fuzzers (tests/fuzz/run.sh)
  { have clang && [ -f "$(clang -print-file-name="libclang_rt.fuzzer-$(uname -m).a")" ]; } ||
    test_missing+=(clang libclang-rt-dev)
  # a single-host Ceph with CephFS for the striping tests (scripts/cephfs.sh, test_striping.py)
  for c in ceph-mon ceph-mgr ceph-osd ceph-mds ceph-fuse; do have "$c" || test_missing+=("$c"); done
  have getfattr || test_missing+=(attr)
  if [ ${#test_missing[@]} -gt 0 ]; then
    apt=()
    if [ "$(id -u)" = 0 ]; then apt=(apt-get); elif sudo -n true 2>/dev/null; then apt=(sudo apt-get); fi
    if have apt-get && [ ${#apt[@]} -gt 0 ]; then
      say "installing Debian packages for the cluster and browser tests: ${test_missing[*]}"
      export DEBIAN_FRONTEND=noninteractive
      "${apt[@]}" update -qq
      "${apt[@]}" install -y -qq --no-install-recommends "${test_missing[@]}" >/dev/null
    else
      say "not installed (their tests will be skipped): ${test_missing[*]}"
    fi
  fi
fi
if ! .venv/bin/python -c 'import psycopg, selenium, optuna_dashboard' 2>/dev/null; then
  say "installing the test extras (psycopg, selenium, optuna-dashboard) into .venv"
  .venv/bin/pip install -q -e '.[dev]'
fi
# ---- end: packages of the cluster and browser tests

# ---- MPI families: one build per family (begin) ----
# build/ holds the first (default) family, build-<family>/ the others; a build directory set
# up for another MPI is configured again from scratch.
first=1
for fam in "${built[@]}"; do
  if [ "$first" = 1 ]; then dir=build; else dir=build-$fam; fi
  first=0
  cached=$(sed -n 's/^IOTUNE_MPI:STRING=//p' "$dir/CMakeCache.txt" 2>/dev/null || true)
  if [ -n "$cached" ] && [ "$cached" != "$fam" ] || { [ -f "$dir/CMakeCache.txt" ] && [ -z "$cached" ]; }; then
    rm -rf "$dir/CMakeCache.txt" "$dir/CMakeFiles"
  fi
  say "building the runtime and kernels for $fam in $dir/"
  # shellcheck disable=SC2086
  cmake -S . -B "$dir" -DIOTUNE_MPI="$fam" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_INSTALL_PREFIX="$PWD/.venv" ${IOTUNE_CMAKE_ARGS:-} >/dev/null
  cmake --build "$dir" -j "$(nproc 2>/dev/null || echo 2)" >/dev/null
  cmake --install "$dir" >/dev/null
done
# ---- MPI families (end) ----

# ---- begin: the real-application corpus (corpus/README.md): upstream programs built into a
# cache outside the repository (IOTUNE_CORPUS_DIR, default ~/.cache/iotune/corpus), once; the
# cases that cannot be built (no network, a family not installed) are said in one line each
# and their tests skip. IOTUNE_NO_CORPUS=1 skips this step.
if [ -z "${IOTUNE_NO_CORPUS:-}" ]; then
  .venv/bin/python corpus/corpus.py build | sed -e '/: cached$/d' -e 's/^/iotune-install: /' || true
fi
# ---- end: the real-application corpus

say "ready: $(.venv/bin/iotune lib --all)"
