"""Horizontal fusion's cost to the orchestration (issue 27; `--horizontal N` on the cuda
target): per model, `kora orchestrate --target cuda` without pairs and with N per segment,
at the H100 roofline's costs (a 4 us launch each) on the fake GPU of the test build, so no
GPU is needed; each also with --tf32, where pairs may hold a GEMM (kora's tensor-core GEMM
beside a CUDA-core kernel, offered first): candidates, unique signatures (kernels to
measure), pairs offered and chosen, the plan's roofline cost, enumeration and solve seconds. It says what the pairs
cost to enumerate, measure and solve, and where a launch-bound cost model takes them; not
what they gain on a GPU (that needs measured costs: kora profile --target cuda --horizontal
N on one).

usage: python3 bench/horizontal_pairs.py build/kora MODEL.onnx [MODEL.onnx ...]
           [--pairs N] [--fake build/tests/libkora_fake_cuda.so] [--json FILE]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile


def orchestrate(kora, model, pairs, tf32, env):
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(env, KORA_PROFILE_DB=os.path.join(tmp, "profiles.db"))
        out = subprocess.run([kora, "orchestrate", model, "--target", "cuda", "--horizontal",
                              str(pairs), "--json"] + (["--tf32"] if tf32 else []), env=env,
                             capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"{model}: {out.stderr.strip()}")
    return json.loads(out.stdout)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("kora")
    ap.add_argument("models", nargs="+")
    ap.add_argument("--pairs", type=int, default=64)
    ap.add_argument("--fake", default="build/tests/libkora_fake_cuda.so")
    ap.add_argument("--json")
    a = ap.parse_args()
    fake = os.path.abspath(a.fake)
    env = dict(os.environ, KORA_CUDA_DRIVER=fake, KORA_CUBLAS=fake, KORA_CUBLASLT=fake,
               KORA_CUDNN=fake)
    rows = []
    print(f"| model | candidates | unique | pairs offered | chosen | roofline ms "
          f"| enumerate s | solve s |")
    print("|---|---|---|---|---|---|---|---|")
    for model in a.models:
        name = os.path.splitext(os.path.basename(model))[0]
        for pairs, tf32 in ((0, False), (a.pairs, False), (0, True), (a.pairs, True)):
            r = orchestrate(a.kora, model, pairs, tf32, env)
            row = {"model": name, "pairs": pairs, "tf32": tf32, "candidates": r["candidates"],
                   "unique": r["unique_signatures"], "offered": r["horizontal_pairs"],
                   "chosen": r["horizontal_chosen"], "cost_ms": r["total_cost_ms"],
                   "enumerate_s": r["enumerate_seconds"], "solve_s": r["solve_seconds"]}
            rows.append(row)
            flags = (f" --horizontal {pairs}" if pairs else "") + (" --tf32" if tf32 else "")
            print(f"| {name}{flags} "
                  f"| {row['candidates']} | {row['unique']} | {row['offered']} "
                  f"| {row['chosen']} | {row['cost_ms']:.3f} | {row['enumerate_s']:.2f} "
                  f"| {row['solve_s']:.2f} |", flush=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
