#!/usr/bin/env bash
# Installs what kora needs on a fresh Debian 12 machine, each piece only when missing:
# the Debian packages of the build (apt-get; graphviz lays out `kora report`'s graph,
# chromium opens the report in its test) and the Python test tools (pip).
set -euo pipefail
cd "$(dirname "$0")/.."

debs=(cmake g++ make pkg-config protobuf-compiler libprotobuf-dev libonnx-dev
      coinor-libcbc-dev libdnnl-dev ocl-icd-opencl-dev libsqlite3-dev libcli11-dev libssl-dev
      nlohmann-json3-dev libfmt-dev libgtest-dev python3 python3-pip time ccache
      graphviz chromium)
missing=()
for p in "${debs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# python3/pip may come from elsewhere (pyenv): only ask apt for them when absent.
if command -v python3 >/dev/null && python3 -m pip --version >/dev/null 2>&1; then
  missing=("${missing[@]/python3-pip}"); missing=("${missing[@]/python3}")
fi
missing=($(printf '%s\n' "${missing[@]}" | grep -v '^$' || true))
if [ ${#missing[@]} -gt 0 ]; then
  echo "kora setup: installing Debian packages: ${missing[*]}"
  sudo=""; [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if ! python3 scripts/check_python_tools.py 2>/dev/null; then
  echo "kora setup: installing Python test tools (requirements-test.txt)"
  python3 -m pip install -q --disable-pip-version-check -r requirements-test.txt \
    || python3 -m pip install -q --disable-pip-version-check --break-system-packages -r requirements-test.txt
fi
