"""Compiles zoo models with every strategy, checks each artifact against onnxruntime and
measures its end-to-end latency: the numbers behind docs/benchmarks.md's "end to end"
table. Per model and strategy: kernels (generated / oneDNN / interpreter), predicted cost
(sum of measured kernel medians), measured latency (`kora run --iters`, median and p90
after warm-up), max relative L2 error (`kora check`), peak activation memory vs the sum
of intermediates, and compile time. Also onnxruntime's latency with the same threads.

usage: python3 bench/compile_zoo.py build/kora models/zoo [--models a,b] [--db FILE]
           [--iters N] [--threads N] [--out DIR] [--json FILE] [--no-measure]
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

STRATEGIES = ["optimal", "greedy", "unfused"]


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
                         else rng.integers(0, 2, shape).astype(np.int64))
    for _ in range(max(3, iters // 10)):
        sess.run(None, feeds)
    times = []
    for _ in range(iters):
        t = time.perf_counter()
        sess.run(None, feeds)
        times.append((time.perf_counter() - t) * 1e3)
    times.sort()
    return statistics.median(times), times[min(len(times) - 1, int(0.9 * len(times)))]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("kora")
    ap.add_argument("zoo")
    ap.add_argument("--models", default="")
    ap.add_argument("--db", default="")
    ap.add_argument("--iters", type=int, default=50)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--out", default="/tmp/kora_zoo_artifacts")
    ap.add_argument("--json", default="")
    ap.add_argument("--no-measure", action="store_true")
    args = ap.parse_args()
    models = (args.models.split(",") if args.models else
              sorted(f[:-5] for f in os.listdir(args.zoo) if f.endswith(".onnx")))
    results = {}
    for name in models:
        model = os.path.join(args.zoo, name + ".onnx")
        results[name] = {}
        for strategy in STRATEGIES:
            out = os.path.join(args.out, f"{name}.{strategy}")
            cmd = [args.kora, "compile", model, "-o", out, "--strategy", strategy, "--threads",
                   str(args.threads), "--json"]
            if args.db:
                cmd += ["--db", args.db]
            if args.no_measure:
                cmd.append("--no-measure")
            print(f"[{name} {strategy}] compile", file=sys.stderr, flush=True)
            c = subprocess.run(cmd, stdout=subprocess.PIPE, text=True)
            if c.returncode != 0:
                results[name][strategy] = {"error": "compile failed"}
                continue
            summary = json.loads(c.stdout)
            chk = subprocess.run([args.kora, "check", out, model], capture_output=True, text=True)
            last = chk.stdout.strip().splitlines()[-1] if chk.stdout.strip() else ""
            err = float(last.split()[1]) if last.startswith("max_rel_l2") else float("nan")
            run = subprocess.run([args.kora, "run", out, "--iters", str(args.iters)],
                                 capture_output=True, text=True)
            median = float(re.search(r"^median ([\d.]+) ms", run.stdout, re.M).group(1))
            p90 = float(re.search(r"^p90 ([\d.]+) ms", run.stdout, re.M).group(1))
            results[name][strategy] = dict(summary, median_ms=median, p90_ms=p90,
                                           max_rel_l2=err, check_ok=chk.returncode == 0)
            print(f"[{name} {strategy}] {summary['kernels']} kernels, predicted "
                  f"{summary['predicted_ms']:.3f} ms, measured {median:.3f} ms, "
                  f"max_rel_l2 {err:.2e}", file=sys.stderr, flush=True)
        med, p90 = onnxruntime_ms(model, args.threads, args.iters)
        results[name]["onnxruntime"] = {"median_ms": med, "p90_ms": p90}

    print("| model | strategy | kernels (gen/oneDNN/interp) | predicted ms | measured ms | p90 ms "
          "| vs unfused | vs greedy | vs ORT | max_rel_l2 | arena MB (sum) | compile s |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for name, res in results.items():
        for strategy in STRATEGIES:
            r = res.get(strategy, {})
            if "median_ms" not in r:
                print(f"| {name} | {strategy} | {r.get('error', 'missing')} |")
                continue
            ratio = lambda other: (f"{res[other]['median_ms'] / r['median_ms']:.2f}x"
                                   if "median_ms" in res.get(other, {}) else "-")
            print(f"| {name} | {strategy} | {r['kernels']} ({r['generated']}/{r['onednn']}/"
                  f"{r['interpreter']}) | {r['predicted_ms']:.3f} | {r['median_ms']:.3f} | "
                  f"{r['p90_ms']:.3f} | {ratio('unfused')} | {ratio('greedy')} | "
                  f"{ratio('onnxruntime')} | {r['max_rel_l2']:.1e} | "
                  f"{r['arena_bytes'] / 1e6:.1f} ({r['intermediate_bytes'] / 1e6:.1f}) | "
                  f"{r['seconds']['total']:.0f} |")
        print(f"| {name} | onnxruntime | | | {res['onnxruntime']['median_ms']:.3f} | "
              f"{res['onnxruntime']['p90_ms']:.3f} | | | | | | |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
