#!/bin/bash
# One call on a lent GPU machine (the device tool), after carrying kora there (see
# scripts/gpu_carry.sh): sets up the carried libraries, runs the GPU-only tests, exports
# the zoo models it lacks (models/export.py; a model carried in models/zoo/ is used as it
# is: YOLOv8n needs ultralytics, which such a machine may not have), then bench/gpu_zoo.sh
# on them: kora profile --target cuda, compile with each strategy, kora check, and the
# benchmark against PyTorch. Everything it learns goes to OUT: the log, the GPU tests'
# output, the profile database (to merge into the one here) and the bench results.
#
# usage: scripts/gpu_session.sh OUT [--models a,b] [--tests] [--colocate LC:BE:QPS:TARGET_MS]
#                               [gpu_zoo.sh options...]
#   --tests: also the GPU tests (CudaCodegenGpu, CudaArtifactGpu, CudaWorker.Measures*,
#   CudaDriver; about 2 min). --colocate: then kora colocate (4 runs of 10 s) of the optimal
#   CUDA artifacts of two of the models (issue 28's GPU table), its JSON in
#   OUT/colocate.json. Keep each call under the device's 10 minutes: a few models a call.
set -u
OUT=$1
shift
MODELS="mobilenet_v2,resnet50" TESTS= COLOCATE=
ARGS=()
while [ $# -gt 0 ]; do
  case $1 in
    --models) MODELS=$2; shift 2 ;;
    --tests) TESTS=1; shift ;;
    --colocate) COLOCATE=$2; shift 2 ;;
    *) ARGS+=("$1"); shift ;;
  esac
done
cd "$(dirname "$0")/.."
mkdir -p "$OUT" /tmp/zoo /tmp/kdb
t0=$(date +%s)
say() { echo "[$(($(date +%s) - t0))s] $*"; }
[ -f .dev/libs.tar.xz ] && tar xJf .dev/libs.tar.xz -C /tmp
export LD_LIBRARY_PATH=/tmp/lib:$PWD/build${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export KORA_CUDA_WORKER=$PWD/build/kora-cuda-worker PYTHONUNBUFFERED=1
export KORA_PROFILE_DB=/tmp/kdb/profiles.db
# The database of earlier calls on this machine, else one carried in .dev/ (measured before).
[ -f "$KORA_PROFILE_DB" ] || { [ -f .dev/profiles.db ] && cp .dev/profiles.db "$KORA_PROFILE_DB"; }
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
if [ -n "$TESTS" ]; then
  say "GPU tests"
  build/tests/kora_tests \
    --gtest_filter='CudaCodegenGpu.*:CudaArtifactGpu.*:CudaWorker.Measures*:CudaDriver.*' \
    > "$OUT/gpu_tests.log" 2>&1
  grep -E "^\[  (PASSED|FAILED|SKIPPED) " "$OUT/gpu_tests.log"
fi
for m in ${MODELS//,/ }; do
  if [ -f "models/zoo/$m.onnx" ]; then cp "models/zoo/$m.onnx" /tmp/zoo/; continue; fi
  say "export $m"
  timeout 300 python3 models/export.py /tmp/zoo "$m" > "$OUT/export_$m.log" 2>&1 ||
    echo "export $m failed: $(tail -1 "$OUT/export_$m.log")"
done
say "bench/gpu_zoo.sh $MODELS ${ARGS[*]}"
ART=/tmp/art PYTHON=python3 bench/gpu_zoo.sh build/kora /tmp/zoo --models "$MODELS" "${ARGS[@]}" \
  2>&1 | grep -v "^failed:" | tee "$OUT/gpu_zoo.log"
if [ -n "$COLOCATE" ]; then
  IFS=: read -r lc be qps target <<< "$COLOCATE"
  say "kora colocate --lc $lc --be $be --qps $qps --target-ms $target"
  cp -r "/tmp/art/$be-optimal" /tmp/art/colocate-be  # a directory of its own
  build/kora colocate --lc "/tmp/art/$lc-optimal" --be /tmp/art/colocate-be --qps "$qps" \
    --target-ms "$target" --seconds 10 --json > "$OUT/colocate.json" 2> "$OUT/colocate.log"
  tail -3 "$OUT/colocate.log"
fi
cp "$KORA_PROFILE_DB" "$OUT/profiles.db"
cp bench/results/*-gpu.json "$OUT/" 2>/dev/null
say done
