"""One peer system running one zoo model, in a process of its own (so that its peak
memory is its own): loads or builds the model, runs it on the given inputs, times RUNS
runs after max(3, RUNS / 10) warm-up runs (the warm-up `kora run --iters` does), writes
the first output to OUT.npy and prints one line of JSON: median_ms, p90_ms, setup_s
(loading, building or compiling, and the first run).

Systems:
  onnxruntime     onnxruntime's CPU provider, all graph optimizations
  openvino-f32    OpenVINO's CPU plugin, the ONNX model read directly, latency hint, one
                  stream, INFERENCE_PRECISION_HINT=f32 (float32 arithmetic, as kora)
  openvino        the same at OpenVINO's default precision (bf16 arithmetic on CPUs with
                  AVX512-BF16 or AMX: faster, with about 1e-3 relative error)
  tvm             apache-tvm: the Relax ONNX importer, relax.build for llvm with the host
                  CPU's -mcpu, default schedules (no tuning)
  torch-eager     the original PyTorch model (models/export.py builds it, same seeds and
                  weights as the ONNX file), torch.inference_mode
  torch-compile   the same model under torch.compile (inductor, default mode)

Threads: onnxruntime's intra-op pool, OpenVINO's INFERENCE_NUM_THREADS, torch.set_num_threads, TVM_NUM_THREADS (the caller
sets it before this process starts; TVM reads it once).

usage: python bench/peer_run.py SYSTEM MODEL.onnx INPUT_DIR OUT.npy --threads N --runs R
                                [--max-seconds S]
INPUT_DIR holds NAME.npy for each graph input.
"""
import argparse
import json
import os
import statistics
import sys
import time

import numpy as np
import onnx


def load_inputs(model, input_dir):
    names = [i.name for i in onnx.load(model, load_external_data=False).graph.input]
    return names, [np.load(os.path.join(input_dir, n + ".npy")) for n in names]


def onnxruntime_runner(model, names, arrays, threads):
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    sess = ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])
    feeds = dict(zip(names, arrays))
    return lambda: sess.run(None, feeds)[0]


def openvino_runner(model, names, arrays, threads, f32):
    import openvino as ov
    config = {"PERFORMANCE_HINT": "LATENCY", "NUM_STREAMS": "1",
              "INFERENCE_NUM_THREADS": str(threads)}
    if f32:
        config["INFERENCE_PRECISION_HINT"] = "f32"
    compiled = ov.Core().compile_model(model, "CPU", config)
    request = compiled.create_infer_request()
    feeds = dict(zip(names, arrays))

    def run():
        request.infer(feeds)
        return request.get_output_tensor(0).data.copy()
    return run


def tvm_runner(model, names, arrays, threads):
    import tvm
    from tvm import relax
    from tvm.relax.frontend.onnx import from_onnx
    from tvm.target import codegen
    mod = from_onnx(onnx.load(model))
    target = tvm.target.Target({"kind": "llvm", "mcpu": codegen.llvm_get_system_cpu()})
    vm = relax.VirtualMachine(relax.build(mod, target=target), tvm.cpu())
    tensors = [tvm.runtime.tensor(a) for a in arrays]

    def run():
        out = vm["main"](*tensors)
        return (out if hasattr(out, "numpy") else out[0]).numpy()
    return run


def torch_runner(model, names, arrays, threads, compiled):
    import torch
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "models"))
    import export  # models/export.py: the zoo's PyTorch definitions and seeds
    torch.set_num_threads(threads)
    torch.set_grad_enabled(False)
    torch.backends.mha.set_fastpath_enabled(False)
    net = export.original_model(os.path.basename(model)[:-len(".onnx")])
    if compiled:
        net = torch.compile(net)
    tensors = [torch.from_numpy(a) for a in arrays]

    def run():
        with torch.inference_mode():
            return net(*tensors).numpy()
    return run


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("system", choices=["onnxruntime", "openvino-f32", "openvino", "tvm",
                                       "torch-eager", "torch-compile"])
    ap.add_argument("model")
    ap.add_argument("inputs")
    ap.add_argument("out")
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--runs", type=int, default=50)
    ap.add_argument("--max-seconds", type=float, default=0,
                    help="fewer runs (at least 10) where RUNS would take longer than this")
    args = ap.parse_args()
    names, arrays = load_inputs(args.model, args.inputs)
    start = time.perf_counter()
    if args.system == "onnxruntime":
        run = onnxruntime_runner(args.model, names, arrays, args.threads)
    elif args.system.startswith("openvino"):
        run = openvino_runner(args.model, names, arrays, args.threads,
                              args.system == "openvino-f32")
    elif args.system == "tvm":
        run = tvm_runner(args.model, names, arrays, args.threads)
    else:
        run = torch_runner(args.model, names, arrays, args.threads,
                           args.system == "torch-compile")
    np.save(args.out, np.array(run(), order="C"))  # keeps a 0-d output 0-d
    setup_s = time.perf_counter() - start
    t = time.perf_counter()
    run()  # the first warm-up run
    runs = args.runs
    if args.max_seconds > 0:  # a slow system: fewer runs, at least 10
        runs = max(10, min(runs, int(args.max_seconds / (time.perf_counter() - t))))
    for _ in range(max(3, runs // 10) - 1):
        run()
    ms = []
    for _ in range(runs):
        t = time.perf_counter()
        run()
        ms.append((time.perf_counter() - t) * 1e3)
    ms.sort()
    print(json.dumps({"median_ms": statistics.median(ms),
                      "p90_ms": ms[min(len(ms) - 1, int(0.9 * len(ms)))],
                      "runs": runs, "setup_s": setup_s}))


if __name__ == "__main__":
    main()
