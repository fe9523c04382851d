#!/usr/bin/env bash
# `make demo`: writes the built-in example models (generated here, no download) and runs
# kora on them. Until compilation lands this is `kora inspect`.
set -euo pipefail
build=${1:-build}
cd "$(dirname "$0")/.."
mkdir -p "$build/examples"
python3 models/builtin.py "$build/examples" >/dev/null
for model in candy_mini encoder_mini; do
  echo "=== kora inspect $build/examples/$model.onnx"
  "$build/kora" inspect "$build/examples/$model.onnx"
  echo
done
