#!/bin/bash
# oneDNN 3.2 (Intel's PyPI wheel built with GNU OpenMP, onednn-cpu-gomp 2023.2.0) against
# the oneDNN kora builds with (Debian's libdnnl-dev, 2.6.3), kernel by kernel, in one
# process (driver.cc): the evidence for which one kora links (issue 24). Installs the wheel
# into PREFIX (default /tmp/kora-onednn-3.2), builds kernels.cc against each, runs ROUNDS
# rounds (default 12) on THREADS threads (default 2).
# usage: bash bench/onednn_versions/run.sh [ROUNDS] [THREADS] [PREFIX]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
rounds=${1:-12} threads=${2:-2} prefix=${3:-/tmp/kora-onednn-3.2}
if [ ! -e "$prefix/lib/libdnnl.so.3" ]; then
  python3 -m pip install -q --disable-pip-version-check --no-deps --ignore-installed \
    --prefix "$prefix" onednn-cpu-gomp==2023.2.0 onednn-devel-cpu-gomp==2023.2.0 ||
    python3 -m pip install -q --disable-pip-version-check --no-deps --ignore-installed \
      --break-system-packages --prefix "$prefix" onednn-cpu-gomp==2023.2.0 \
      onednn-devel-cpu-gomp==2023.2.0
fi
out=$(mktemp -d)
g++ -O2 -std=c++17 -fPIC -shared "$here/kernels.cc" -o "$out/a.so" -ldnnl
g++ -O2 -std=c++17 -fPIC -shared "$here/kernels.cc" -o "$out/b.so" -I"$prefix/include" \
  -L"$prefix/lib" -Wl,-rpath,"$prefix/lib" -ldnnl
g++ -O2 -std=c++17 "$here/driver.cc" -o "$out/driver" -ldl
echo "A: $(ldd "$out/a.so" | awk '/libdnnl/ {print $3}')   B: $(ldd "$out/b.so" | awk '/libdnnl/ {print $3}')"
OMP_NUM_THREADS=$threads OMP_PROC_BIND=true "$out/driver" "$out/a.so" "$out/b.so" "$rounds"
rm -rf "$out"
