"""Where onnxruntime spends its time on a model: runs it with ORT's profiler (all graph
optimizations, CPU provider, THREADS intra-op threads) for RUNS runs after a warm-up and
prints per fused node and per operator type the median time per run, to set next to
`kora run ARTIFACT --profile 0` (kora's per-kernel times inside the running plan).

usage: python bench/ort_profile.py MODEL.onnx [--threads N] [--runs N] [--top N]
"""
import argparse
import collections
import json
import os
import statistics
import tempfile

import numpy as np
import onnxruntime as ort


def random_feeds(inputs):
    """Seeded random inputs for onnxruntime's input descriptions (floats normal, integers
    0/1), symbolic dimensions 1."""
    rng = np.random.default_rng(0)
    feeds = {}
    for i in inputs:
        shape = [d if isinstance(d, int) else 1 for d in i.shape]
        feeds[i.name] = (rng.standard_normal(shape).astype(np.float32) if "float" in i.type
                         else rng.integers(0, 2, shape).astype(np.int64))
    return feeds


def node_times(model, threads, runs, warmup=5):
    """onnxruntime's profile of `runs` runs after `warmup`: ({node: median ms per run},
    {node: op type}, median ms of a whole run)."""
    with tempfile.TemporaryDirectory() as tmp:
        so = ort.SessionOptions()
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        so.intra_op_num_threads = threads
        so.inter_op_num_threads = 1
        so.enable_profiling = True
        so.profile_file_prefix = os.path.join(tmp, "ort")
        sess = ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])
        feeds = random_feeds(sess.get_inputs())
        for _ in range(warmup):
            sess.run(None, feeds)
        for _ in range(runs):
            sess.run(None, feeds)
        with open(sess.end_profiling()) as f:
            events = json.load(f)
    per_node = collections.defaultdict(list)
    op_of = {}
    run_ms = []
    for e in events:
        if e.get("cat") == "Session" and e["name"] == "model_run":
            run_ms.append(e["dur"] / 1e3)
        if e.get("cat") != "Node" or not e["name"].endswith("_kernel_time"):
            continue
        node = e["name"][:-len("_kernel_time")]
        per_node[node].append(e["dur"] / 1e3)
        op_of[node] = e["args"].get("op_name", "?")
    median = {n: statistics.median(v[warmup:] or v) for n, v in per_node.items()}
    measured = statistics.median(run_ms[warmup:]) if run_ms else float("nan")
    return median, op_of, measured


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--top", type=int, default=25)
    args = ap.parse_args()
    median, op_of, measured = node_times(args.model, args.threads, args.runs)
    by_op = collections.defaultdict(float)
    count = collections.Counter()
    for n, ms in median.items():
        by_op[op_of[n]] += ms
        count[op_of[n]] += 1
    print(f"onnxruntime {ort.__version__}, {args.threads} threads: run median {measured:.3f} ms, "
          f"{len(median)} nodes, sum of node medians {sum(median.values()):.3f} ms")
    print("by operator: ms, nodes")
    for op, ms in sorted(by_op.items(), key=lambda x: -x[1]):
        print(f"  {op:28s} {ms:8.3f} {count[op]:4d}")
    print(f"slowest {args.top} nodes:")
    for n, ms in sorted(median.items(), key=lambda x: -x[1])[:args.top]:
        print(f"  {ms:8.3f}  {op_of[n]:20s} {n}")


if __name__ == "__main__":
    main()
