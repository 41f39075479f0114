#!/usr/bin/env bash
# One command for a new user: install everything (Debian packages only where missing, .venv,
# build), then run the main job: a real, short tuning study of a built-in kernel that ends in
# a report (iotune-results/demo/report.html).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh
echo
echo "== main job: iotune tune --demo"
.venv/bin/iotune tune --demo
