#!/usr/bin/env bash
# Installs what iotune needs and builds it; safe to run again (it only does what is missing).
#   - MPI, parallel HDF5, MiniXML, CMake, a C compiler: taken from the environment when found
#     (cluster modules, or -DHDF5_ROOT/MPI_HOME via IOTUNE_CMAKE_ARGS); Debian packages are
#     installed only when something is missing and apt-get can be used.
#   - .venv with the iotune package (editable) and its Python dependencies.
#   - build/ (CMake), installed into .venv (lib/libiotune.so, libexec/iotune/kernels/...).
set -euo pipefail
cd "$(dirname "$0")/.."
say() { printf 'iotune-install: %s\n' "$*"; }

missing=()
have() { command -v "$1" >/dev/null 2>&1; }
have mpicc || missing+=(mpich libmpich-dev)
if ! { have h5pcc || pkg-config --exists hdf5-mpich 2>/dev/null || [ -n "${HDF5_ROOT:-}" ]; }; then
  missing+=(libhdf5-mpich-dev)
fi
have h5diff || missing+=(hdf5-tools)
{ pkg-config --exists mxml 2>/dev/null || [ -f /usr/include/mxml.h ]; } || missing+=(libmxml-dev)
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
    say "load your site's MPI, parallel HDF5 and MiniXML modules (or install them) and run again"
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
if ! .venv/bin/python -c 'import iotune, optuna, pytest' 2>/dev/null; then
  say "installing the iotune Python package into .venv"
  .venv/bin/pip install -q --upgrade pip
  .venv/bin/pip install -q -e '.[dev]'
fi

# ---- begin: packages of the cluster and browser tests (tests/python/test_postgres.py,
# test_slurm.py, test_browser.py): a throw-away PostgreSQL server, a one-node SLURM cluster
# (munge + slurmctld + slurmd), headless Chromium and its driver; in Python psycopg, selenium
# and optuna-dashboard (the dev extras). IOTUNE_TEST_PACKAGES=0 skips the Debian packages (the
# tests that need them are then skipped, saying why).
if [ "${IOTUNE_TEST_PACKAGES:-1}" != 0 ]; then
  test_missing=()
  { have pg_ctl || ls /usr/lib/postgresql/*/bin/pg_ctl >/dev/null 2>&1; } || test_missing+=(postgresql)
  { have slurmd || [ -x /usr/sbin/slurmd ]; } || test_missing+=(slurmd)
  { have slurmctld || [ -x /usr/sbin/slurmctld ]; } || test_missing+=(slurmctld)
  have sbatch || test_missing+=(slurm-client)
  { have munged || [ -x /usr/sbin/munged ]; } || test_missing+=(munge)
  have chromium || test_missing+=(chromium)
  have chromedriver || test_missing+=(chromium-driver)
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

say "building the runtime and kernels"
# shellcheck disable=SC2086
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_INSTALL_PREFIX="$PWD/.venv" \
  ${IOTUNE_CMAKE_ARGS:-} >/dev/null
cmake --build build -j "$(nproc 2>/dev/null || echo 2)" >/dev/null
cmake --install build >/dev/null
say "ready: $(.venv/bin/iotune lib)"
