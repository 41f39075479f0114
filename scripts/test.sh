#!/usr/bin/env bash
# Runs every test: lint (ruff, clang-format), the C tests (CTest) and the Python/MPI tests
# (pytest), against every MPI built (MPICH and Open MPI on Debian). Installs and builds first
# when needed, so it works in a fresh clone.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh
echo "== lint"
.venv/bin/ruff check src tests/python bench tools kernels corpus
.venv/bin/ruff format --check src tests/python bench tools kernels corpus
git ls-files -- '*.c' '*.h' | xargs clang-format --dry-run --Werror
.venv/bin/python tools/check_layers.py # the runtime's layers one way (docs/architecture.md)
.venv/bin/python tools/check_imports.py # the Python package's layers, no import cycle (same doc)
# The C tests of every MPI built (build/ and build-<family>/, see scripts/install.sh).
for dir in build build-*; do
  [ -f "$dir/CTestTestfile.cmake" ] || continue
  echo "== ctest ($dir: $(sed -n 's/.*"family": "\([a-z]*\)".*/\1/p' "$dir/iotune-mpi.json"))"
  (cd "$dir" && OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
    ctest --output-on-failure --timeout 300)
done
# The control-file fuzzers, for a bounded time (tests/fuzz/run.sh; 77: no clang/libFuzzer here,
# the corpus is still replayed by CTest above).
echo "== fuzz"
rc=0
bash tests/fuzz/run.sh 8 controlfile:15 value match || rc=$?
[ "$rc" = 0 ] || [ "$rc" = 77 ] || exit "$rc"
echo "== pytest"
# Two workers, each running one test file at a time (--dist loadfile: a file's session servers
# and its runs stay on one worker). Measured on the 2-core VM: 22.4 min on one worker, 13.4 min
# on two, with every test passing (bench/README.md, "CI time: the test suite on one worker and on two"). IOTUNE_TEST_WORKERS=0: one.
workers=${IOTUNE_TEST_WORKERS:-2}
if [ "$workers" = 0 ]; then
  .venv/bin/python -m pytest -q -p no:cacheprovider tests/python
else
  .venv/bin/python -m pytest -q -p no:cacheprovider -n "$workers" --dist loadfile tests/python
fi
