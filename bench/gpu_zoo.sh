#!/bin/bash
# The GPU mode of `make bench` (make bench BENCH_TARGET=cuda): the model zoo on the GPU here.
# Per model: kora profile --target cuda (every kernel's default schedule and every cuDNN
# algorithm, then all schedules of the generated kernels slower than 10 us; or the first N
# schedules of each with --schedules N), kora compile --target cuda with each strategy (optimal, greedy,
# unfused), kora check against onnxruntime on the CPU, then bench/gpu_bench.py times the
# artifacts against PyTorch eager and torch.compile (and onnxruntime's CUDA provider where
# installed). Results: bench/results/DATE-gpu.json and a table at the end.
#
# usage: bench/gpu_zoo.sh KORA ZOO_DIR [--models a,b] [--schedules N] [--iters N] [--max-autotune]
# $PYTHON: the Python with torch (CUDA) and onnxruntime (default python3).
set -u
KORA=$1 ZOO=$2
shift 2
MODELS="mobilenet_v2,resnet50,candy,efficientvit_b0,vit_b_16,bert_base,segformer_b0,yolov8n"
SCHEDULES= ITERS=200 AUTOTUNE=
while [ $# -gt 0 ]; do
  case $1 in
    --models) MODELS=$2; shift 2 ;;
    --schedules) SCHEDULES="--schedules $2"; shift 2 ;;
    --iters) ITERS=$2; shift 2 ;;
    --max-autotune) AUTOTUNE=--max-autotune; shift ;;
    *) echo "gpu_zoo.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
PYTHON=${PYTHON:-python3}
ART=${ART:-$(mktemp -d)/artifacts}
OUT=bench/results/$(date +%F)-gpu.json
if ! "$KORA" profile --help >/dev/null || ! $PYTHON -c "import torch, sys; sys.exit(not torch.cuda.is_available())" 2>/dev/null; then
  echo "kora bench: no usable GPU here (PyTorch sees none): BENCH_TARGET=cuda needs one" >&2
  exit 1
fi
failed=0
for m in ${MODELS//,/ }; do
  echo "== $m"
  "$KORA" profile "$ZOO/$m.onnx" --target cuda --all $SCHEDULES 2>&1 | grep -E "^(kernels|results|device|tuned)"
  for s in optimal greedy unfused; do
    "$KORA" compile "$ZOO/$m.onnx" --target cuda --strategy $s --no-measure -o "$ART/$m-$s" 2>&1 |
      grep -E "error|CUDA kernels"
    "$KORA" check "$ART/$m-$s" "$ZOO/$m.onnx" | tail -1 || failed=1
  done
done
$PYTHON bench/gpu_bench.py --kora "$KORA" --artifacts "$ART" --zoo "$ZOO" --models "$MODELS" \
  --iters "$ITERS" $AUTOTUNE --out "$OUT"
echo "kora bench: results in $OUT"
exit $failed
