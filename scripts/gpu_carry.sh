#!/bin/bash
# Packs what a bare GPU machine (one with only the NVIDIA driver, CUDA's libraries and
# Python) needs to run kora built here: kora, kora-cuda-worker, libkora_runtime.so,
# kora_tests with the fake driver, and the shared libraries they link that such a machine
# lacks (oneDNN, protobuf, CBC, SQLite, fmt, ...; not libc, libstdc++, NVRTC or CUDA's),
# compressed into DIR/libs.tar.xz. On the GPU machine:
#   tar xJf DIR/libs.tar.xz -C /tmp && export LD_LIBRARY_PATH=/tmp/lib:$PWD/build
#   build/kora profile MODEL.onnx --target cuda ... (see bench/gpu_zoo.sh), or the whole
#   checklist in one call: scripts/gpu_session.sh $OUT --models a,b [--tests]
# usage: scripts/gpu_carry.sh [BUILD] [DIR]   (defaults: build, .dev)
set -eu
BUILD=${1:-build} DIR=${2:-.dev}
mkdir -p "$DIR/lib"
for l in $(ldd "$BUILD/kora" "$BUILD/tests/kora_tests" | awk '/=>/ {print $3}' | sort -u); do
  case $(basename "$l") in
    libc.so* | libm.so* | libdl.so* | libpthread.so* | librt.so* | libstdc++* | libgcc_s* | \
      libnvrtc* | libkora_runtime* | libz.so*) ;;
    *) cp -L "$l" "$DIR/lib/" ;;
  esac
done
tar cJf "$DIR/libs.tar.xz" -C "$DIR" lib
rm -rf "$DIR/lib"
echo "gpu_carry: $(du -h "$DIR/libs.tar.xz" | cut -f1) in $DIR/libs.tar.xz; carry it with" \
  "$BUILD/kora $BUILD/kora-cuda-worker $BUILD/libkora_runtime.so $BUILD/tests/kora_tests" \
  "$BUILD/tests/libkora_fake_cuda.so"
