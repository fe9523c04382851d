"""GPU benchmark of the model zoo (the GPU mode of `make bench`): kora's CUDA artifacts
(optimal, greedy, unfused) against PyTorch eager, torch.compile (default and, with
--max-autotune, mode="max-autotune") and onnxruntime's CUDA provider where installed, on
one GPU, batch 1, float32 (TF32 off everywhere), the same input shapes.

Every system is timed the same way: warm-up runs first, then --iters runs each timed by
CUDA events around the forward pass with the inputs already on the GPU; the median is
reported. kora's time comes from `kora run ART --iters N` ("gpu median": CUDA events
around the replayed plan).

usage: python bench/gpu_bench.py --kora build/kora --artifacts DIR --models a,b
                                 [--iters 200] [--max-autotune] [--out results.json]
ARTIFACTS/MODEL-STRATEGY are kora artifacts compiled with --target cuda.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "models"))
import export  # noqa: E402  (the zoo's own model definitions)


def cuda_median_ms(fn, iters, warmup):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(iters):
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop))
    times.sort()
    return times[len(times) // 2]


def torch_times(name, iters, max_autotune, budget_s):
    model, args, _, _ = export.seeded(name)
    model = model.cuda().eval()
    args = tuple(a.cuda() for a in args)
    out = {}
    with torch.no_grad():
        out["eager"] = cuda_median_ms(lambda: model(*args), iters, 20)
        modes = ["default"] + (["max-autotune"] if max_autotune else [])
        for mode in modes:
            start = time.time()
            try:
                compiled = torch.compile(model, mode=mode)
                compiled(*args)  # compiles
                out["compile_seconds_" + mode] = time.time() - start
                out["torch.compile" + ("" if mode == "default" else " " + mode)] = cuda_median_ms(
                    lambda: compiled(*args), iters, 20)
            except Exception as e:  # noqa: BLE001 (recorded, not fatal)
                out["torch.compile " + mode + " error"] = str(e)[:300]
            if time.time() - start > budget_s:
                break
    return out


def kora_time(kora, artifact, iters):
    r = subprocess.run([kora, "run", artifact, "--iters", str(iters)], capture_output=True,
                       text=True, timeout=600)
    if r.returncode != 0:
        return {"error": (r.stderr or r.stdout)[-300:]}
    got = {}
    for key, pattern in (("gpu_ms", r"^gpu median ([0-9.]+)"), ("end_to_end_ms", r"^median ([0-9.]+)")):
        m = re.search(pattern, r.stdout, re.M)
        if m:
            got[key] = float(m.group(1))
    m = re.search(r"^runs \d+ \(after \d+ warm-up\), (.*)$", r.stdout, re.M)
    if m:
        got["device"] = m.group(1)
    return got


def ort_time(model_path, name, iters):
    try:
        import onnxruntime as ort
    except ImportError:
        return None
    if "CUDAExecutionProvider" not in ort.get_available_providers():
        return None
    s = ort.InferenceSession(model_path, providers=["CUDAExecutionProvider"])
    _, args, names, _ = export.seeded(name)
    feeds = {n: a.numpy() for n, a in zip(names, args)}
    for _ in range(20):
        s.run(None, feeds)
    times = []
    for _ in range(iters):
        t = time.perf_counter()
        s.run(None, feeds)
        times.append((time.perf_counter() - t) * 1e3)
    times.sort()
    return times[len(times) // 2]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--kora", required=True)
    p.add_argument("--artifacts", required=True)
    p.add_argument("--zoo", default="models/zoo")
    p.add_argument("--models", required=True)
    p.add_argument("--iters", type=int, default=200)
    p.add_argument("--max-autotune", action="store_true")
    p.add_argument("--autotune-budget", type=float, default=240)
    p.add_argument("--out")
    a = p.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    results = {"gpu": torch.cuda.get_device_name(0), "torch": torch.__version__,
               "date": time.strftime("%Y-%m-%d"), "iters": a.iters, "models": {}}
    for name in a.models.split(","):
        row = {}
        for strategy in ("optimal", "greedy", "unfused"):
            art = os.path.join(a.artifacts, name + "-" + strategy)
            if os.path.isdir(art):
                row["kora " + strategy] = kora_time(a.kora, art, a.iters)
        row.update(torch_times(name, a.iters, a.max_autotune, a.autotune_budget))
        ort_ms = ort_time(os.path.join(a.zoo, name + ".onnx"), name, a.iters)
        if ort_ms is not None:
            row["onnxruntime cuda"] = ort_ms
        results["models"][name] = row
        print(name, json.dumps(row), flush=True)
        if a.out:  # after every model: a call cut short (max-autotune) keeps what it measured
            with open(a.out, "w") as f:
                json.dump(results, f, indent=1)
    # A short table last.
    cols = ["kora optimal", "kora greedy", "kora unfused", "eager", "torch.compile",
            "torch.compile max-autotune"]
    print("model".ljust(16) + "".join(c[:14].rjust(15) for c in cols))
    for name, row in results["models"].items():
        cells = []
        for c in cols:
            v = row.get(c)
            if isinstance(v, dict):
                v = v.get("gpu_ms")
            cells.append(("%.3f" % v if isinstance(v, float) else "-").rjust(15))
        print(name.ljust(16) + "".join(cells))


if __name__ == "__main__":
    main()
