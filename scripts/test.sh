#!/usr/bin/env bash
# Runs every test: lint (ruff, clang-format), the C tests (CTest) and the Python/MPI tests
# (pytest). Installs and builds first when needed, so it works in a fresh clone.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh
echo "== lint"
.venv/bin/ruff check src tests/python bench tools kernels
.venv/bin/ruff format --check src tests/python bench tools kernels
git ls-files -- '*.c' '*.h' | xargs clang-format --dry-run --Werror
echo "== ctest"
(cd build && ctest --output-on-failure --timeout 300)
echo "== pytest"
.venv/bin/python -m pytest -q -p no:cacheprovider tests/python
