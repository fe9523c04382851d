#!/usr/bin/env bash
# Creates the model zoo's virtual environment VENV (default .venv-zoo) and installs
# models/requirements-zoo.txt into it: torch, torchvision, transformers, timm, ultralytics,
# onnx, onnxruntime. Only `make zoo` and `make test-zoo` need it.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=${1:-.venv-zoo}
if [ ! -x "$venv/bin/python" ]; then
  if ! python3 -m venv "$venv" 2>/dev/null; then
    echo "kora zoo: installing python3-venv"
    sudo=""; [ "$(id -u)" -ne 0 ] && sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq python3-venv >/dev/null
    rm -rf "$venv"
    python3 -m venv "$venv"
  fi
fi
echo "kora zoo: installing models/requirements-zoo.txt into $venv (the first time takes minutes)"
"$venv/bin/python" -m pip install -q --disable-pip-version-check -r models/requirements-zoo.txt
touch "$venv/.installed"
