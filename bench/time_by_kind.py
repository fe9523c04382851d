"""Where the time goes in kora, onnxruntime and OpenVINO on one model, by kind of work
(issue 24: find where kora loses to them): each system's own profiler, the same thread
count, random inputs, medians over RUNS runs after a warm-up:
  kora         the artifact's kernels timed inside the running plan (the Python package,
               InferenceSession.profile); a kernel counts for the kind of its first matmul or
               convolution primitive, else of its first primitive, by the ONNX operator
               the primitive came from
  onnxruntime  its profiling JSON (bench/ort_profile.py), per node, by operator type
  openvino     its per-layer performance counters (PERF_COUNT), by layer type, at
               float32 (INFERENCE_PRECISION_HINT=f32) and, with --bf16, its default precision
Kinds: conv, matmul (MatMul, Gemm, attention), norm (normalizations, softmax), pool,
elementwise (activations and arithmetic), layout (reshape, transpose, concat, slice,
gather, reorders) and other. Sums of per-node medians differ from the end-to-end median
(printed too) by what the profilers miss between nodes.

usage: python bench/time_by_kind.py ARTIFACT MODEL.onnx [--threads N] [--runs N]
           [--bf16] [--top N] [--json FILE]
(ARTIFACT: `kora compile MODEL.onnx -o ARTIFACT --threads N`; the package is imported
from build/python unless kora is installed.)
"""
import argparse
import collections
import json
import os
import re
import statistics
import sys

import numpy as np
import onnx

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(1, os.path.join(HERE, "..", "build", "python"))

KINDS = ["conv", "matmul", "norm", "pool", "elementwise", "layout", "other"]
RULES = [  # (kind, regex over an operator or layer type), first match wins
    ("conv", r"conv"),
    ("matmul", r"matmul|gemm|fullyconnected|attention|innerproduct|einsum"),
    ("norm", r"norm|mvn|softmax|lrn"),
    ("pool", r"pool|reducemean|reduce"),
    ("layout", r"reshape|transpose|concat|slice|gather|split|squeeze|flatten|reorder|pad|"
               r"permute|shape|expand|tile|resize|interpolate|depthtospace|spacetodepth|"
               r"scatter|strided|input|output|parameter|result|constant"),
    ("elementwise", r"eltwise|add|mul|sub|div|relu|sigmoid|tanh|gelu|erf|clip|swish|silu|"
                    r"hardswish|hardsigmoid|pow|sqrt|exp|where|max|min|cast|convert|subgraph|"
                    r"neg|abs|log|sin|cos|elu|prelu|leaky|not|equal|less|greater|and|or|"
                    r"fakequantize|mish|softplus"),
]


def kind_of(op_type):
    t = op_type.lower()
    for kind, pattern in RULES:
        if re.search(pattern, t):
            return kind
    return "other"


def kora_times(artifact, model, threads, runs):
    import kora
    op_of_node = {n.name: n.op_type for n in onnx.load(model, load_external_data=False).graph.node}
    session = kora.InferenceSession(artifact, threads=threads)
    rng = np.random.default_rng(0)
    feeds = {}
    for i in session.get_inputs():
        feeds[i.name] = (rng.standard_normal(i.shape).astype(i.dtype)
                         if np.issubdtype(i.dtype, np.floating)
                         else rng.integers(0, 2, i.shape).astype(i.dtype))
    for _ in range(3):
        session.run(None, feeds)
    end_to_end = statistics.median(session.plan_ms() for _ in range(runs))
    items = []
    for k in session.profile(iters=runs):
        prims = [p.strip() for p in k["primitives"].split(",")]
        ops = [op_of_node.get(p.rsplit("#", 1)[0], "?") for p in prims]
        linear = [op for op in ops if kind_of(op) in ("conv", "matmul")]
        op = linear[0] if linear else ops[0]
        items.append((f"{k['impl']} {prims[0]}" + (f" +{len(prims) - 1}" if len(prims) > 1 else ""),
                      op, k["in_plan_ms"]))
    return items, end_to_end


def ort_times(model, threads, runs):
    import ort_profile
    median, op_of, measured = ort_profile.node_times(model, threads, runs)
    return [(n, op_of[n], ms) for n, ms in median.items()], measured


def openvino_times(model, threads, runs, f32):
    import openvino as ov
    import ort_profile
    config = {"PERFORMANCE_HINT": "LATENCY", "NUM_STREAMS": "1",
              "INFERENCE_NUM_THREADS": str(threads), "PERF_COUNT": "YES"}
    if f32:
        config["INFERENCE_PRECISION_HINT"] = "f32"
    compiled = ov.Core().compile_model(model, "CPU", config)
    request = compiled.create_infer_request()
    class Input:  # onnxruntime-like descriptions of the model's inputs
        def __init__(self, port):
            self.name = port.get_any_name()
            self.shape = [d if isinstance(d, int) else 1 for d in port.get_partial_shape()
                          .get_min_shape()]
            self.type = "float" if port.get_element_type().is_real() else "int64"
    feeds = ort_profile.random_feeds([Input(p) for p in compiled.inputs])
    per_layer = collections.defaultdict(list)
    type_of = {}
    run_ms = []
    for r in range(runs + 5):
        request.infer(feeds)
        if r < 5:
            continue
        run_ms.append(request.latency)
        for info in request.profiling_info:
            if info.status == info.Status.EXECUTED:
                per_layer[info.node_name].append(info.real_time.total_seconds() * 1e3)
                type_of[info.node_name] = info.node_type
    items = [(n, type_of[n], statistics.median(v)) for n, v in per_layer.items()]
    return items, statistics.median(run_ms)


def summarize(items):
    by_kind = collections.defaultdict(float)
    count = collections.Counter()
    for _, op, ms in items:
        by_kind[kind_of(op)] += ms
        count[kind_of(op)] += 1
    return by_kind, count


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("artifact")
    ap.add_argument("model")
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--bf16", action="store_true", help="also OpenVINO at its default precision")
    ap.add_argument("--top", type=int, default=8)
    ap.add_argument("--json", default="")
    args = ap.parse_args()
    systems = {
        "kora": kora_times(args.artifact, args.model, args.threads, args.runs),
        "onnxruntime": ort_times(args.model, args.threads, args.runs),
        "openvino-f32": openvino_times(args.model, args.threads, args.runs, True),
    }
    if args.bf16:
        systems["openvino"] = openvino_times(args.model, args.threads, args.runs, False)
    name = os.path.basename(args.model)[:-len(".onnx")]
    print(f"{name}, {args.threads} threads, medians of {args.runs} runs (ms); "
          f"in brackets, nodes/kernels/layers")
    header = f"{'kind':12s}" + "".join(f"{s:>20s}" for s in systems)
    print(header)
    summaries = {s: summarize(items) for s, (items, _) in systems.items()}
    for kind in KINDS:
        row = f"{kind:12s}"
        for s in systems:
            by_kind, count = summaries[s]
            row += f"{by_kind.get(kind, 0):>14.3f} [{count.get(kind, 0):3d}]"
        print(row)
    print(f"{'sum':12s}" + "".join(f"{sum(summaries[s][0].values()):>20.3f}" for s in systems))
    print(f"{'end to end':12s}" + "".join(f"{systems[s][1]:>20.3f}" for s in systems))
    for s, (items, _) in systems.items():
        print(f"\n{s}: slowest {args.top}")
        for label, op, ms in sorted(items, key=lambda x: -x[2])[:args.top]:
            print(f"  {ms:8.3f}  {kind_of(op):11s} {op:22s} {label[:60]}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"model": name, "threads": args.threads, "runs": args.runs,
                       "systems": {s: {"end_to_end_ms": e2e,
                                       "by_kind_ms": dict(summaries[s][0]),
                                       "count": dict(summaries[s][1])}
                                   for s, (_, e2e) in systems.items()}}, f, indent=1)


if __name__ == "__main__":
    main()
