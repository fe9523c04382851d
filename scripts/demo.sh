#!/usr/bin/env bash
# `make demo`: writes the built-in example models (generated here, no download) and runs
# kora on them end to end (scripts/demo.py): compile with each strategy (the first run
# profiles the kernels into the profile database, later runs reuse it), check against
# onnxruntime, measure latency, print the table; then the plan report of candy_mini's
# optimal plan (kora report: one HTML page).
set -euo pipefail
build=${1:-build}
cd "$(dirname "$0")/.."
mkdir -p "$build/examples"
python3 models/builtin.py "$build/examples" >/dev/null
python3 scripts/demo.py "$build"
