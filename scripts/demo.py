"""`make demo`: kora end to end on the built-in example models (models/builtin.py, no
download). For each model and each strategy (optimal, greedy, unfused): `kora compile`
(profiling the kernels this machine has not measured yet into the profile database),
`kora check` against onnxruntime, `kora run --iters` for the measured latency; then
onnxruntime's own latency with the same thread count. Prints one table, then writes the
plan report of candy_mini's optimal plan (`kora report`, one HTML page) and its path.

usage: python3 scripts/demo.py BUILD_DIR [--iters N] [--threads N] [--max-kernel-size K]
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time

import numpy as np
import onnxruntime as ort

MODELS = ["candy_mini", "encoder_mini"]
STRATEGIES = ["optimal", "greedy", "unfused"]


def run(cmd, **kw):
    r = subprocess.run(cmd, stdout=subprocess.PIPE, text=True, **kw)
    if r.returncode not in (0, 1) or (r.returncode == 1 and "check" not in cmd[1:2]):
        sys.exit(f"demo: '{' '.join(cmd)}' failed (exit {r.returncode})")
    return r


def onnxruntime_ms(model, threads, iters):
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    sess = ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(0)
    feeds = {}
    for i in sess.get_inputs():
        shape = [d if isinstance(d, int) else 1 for d in i.shape]
        feeds[i.name] = (rng.standard_normal(shape).astype(np.float32) if "float" in i.type
                         else np.zeros(shape, np.int64))
    for _ in range(max(3, iters // 10)):
        sess.run(None, feeds)
    times = []
    for _ in range(iters):
        t = time.perf_counter()
        sess.run(None, feeds)
        times.append((time.perf_counter() - t) * 1e3)
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--iters", type=int, default=100)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--max-kernel-size", type=int, default=6)
    args = ap.parse_args()
    kora = os.path.join(args.build, "kora")
    examples = os.path.join(args.build, "examples")
    rows = []
    for name in MODELS:
        model = os.path.join(examples, name + ".onnx")
        results = {}
        for strategy in STRATEGIES:
            out = os.path.join(examples, f"{name}.{strategy}")
            print(f"=== kora compile {model} --strategy {strategy} -o {out}", file=sys.stderr,
                  flush=True)
            c = json.loads(run([kora, "compile", model, "-o", out, "--strategy", strategy,
                                "--threads", str(args.threads), "--max-kernel-size",
                                str(args.max_kernel_size), "--json"]).stdout)
            check = run([kora, "check", out, model])
            err = float(check.stdout.strip().splitlines()[-1].split()[1])
            timing = run([kora, "run", out, "--iters", str(args.iters)]).stdout
            median = float(re.search(r"^median ([\d.]+) ms", timing, re.M).group(1))
            p90 = float(re.search(r"^p90 ([\d.]+) ms", timing, re.M).group(1))
            results[strategy] = dict(kernels=c["kernels"], predicted=c["predicted_ms"],
                                     median=median, p90=p90, err=err,
                                     ok=check.returncode == 0)
        ort_ms = onnxruntime_ms(model, args.threads, args.iters)
        rows.append((name, results, ort_ms))

    print(f"\nkora demo: built-in models, {args.threads} threads, median of {args.iters} runs "
          f"after warm-up (kernels of at most {args.max_kernel_size} primitives)")
    header = (f"{'model':<13} {'strategy':<8} {'kernels':>7} {'predicted':>10} {'measured':>9} "
              f"{'p90':>8} {'vs unfused':>10} {'vs greedy':>9} {'vs ORT':>7} {'max_rel_l2':>10}")
    print(header)
    print("-" * len(header))
    failed = False
    for name, results, ort_ms in rows:
        for strategy in STRATEGIES:
            r = results[strategy]
            failed |= not r["ok"]
            print(f"{name:<13} {strategy:<8} {r['kernels']:>7} {r['predicted']:>8.3f}ms "
                  f"{r['median']:>7.3f}ms {r['p90']:>6.3f}ms "
                  f"{results['unfused']['median'] / r['median']:>9.2f}x "
                  f"{results['greedy']['median'] / r['median']:>8.2f}x "
                  f"{ort_ms / r['median']:>6.2f}x {r['err']:>10.2e}"
                  + ("" if r["ok"] else "  FAILED CHECK"))
        print(f"{name:<13} {'onnxruntime':<11} {'':>15} {ort_ms:>7.3f}ms")
    print("\nspeedups are latency ratios (> 1: kora's plan is faster); predicted = sum of the "
          "measured kernel costs; max_rel_l2 = kora check vs onnxruntime")
    artifact = os.path.join(examples, "candy_mini.optimal")
    report = artifact + ".html"
    run([kora, "report", artifact, "-o", report])
    print(f"\nplan report of candy_mini's optimal plan (open it in a browser): {report}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
