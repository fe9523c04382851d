#!/usr/bin/env bash
# `make demo`: writes the built-in example models (generated here, no download) and runs
# kora on them: the model report (`kora inspect`), the primitive graph operator fission
# gives (`kora fission`, counted by kind), and the reference interpreter's outputs
# checked against onnxruntime on the same random input (`kora interpret`).
set -euo pipefail
build=${1:-build}
cd "$(dirname "$0")/.."
mkdir -p "$build/examples"
python3 models/builtin.py "$build/examples" >/dev/null
for model in candy_mini encoder_mini; do
  echo "=== kora inspect $build/examples/$model.onnx"
  "$build/kora" inspect "$build/examples/$model.onnx"
  echo
  echo "=== kora fission $build/examples/$model.onnx (primitives by kind)"
  "$build/kora" fission "$build/examples/$model.onnx" | grep '^counts:'
  echo
done
echo "=== kora interpret, compared with onnxruntime on the same random input"
python3 tests/zoo/test_zoo.py "$build/kora" "$build/examples"
