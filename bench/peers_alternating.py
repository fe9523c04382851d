"""kora against onnxruntime and OpenVINO in one process, the systems taking turns (issue 24:
pairs run in turn where this host's speed moves between rounds). In: the work directory
bench/peers.py wrote for a model (WORK/MODEL/kora-optimal and kora-bf16, the artifacts
it compiled), the model, the number of rounds. Each round every system runs 5 warm-up
and 20 timed runs, in an order rotated per round, 50 ms apart; out: per system the
median of its round medians and the geometric mean over rounds of its time over kora
optimal's in the same round. 2 threads everywhere; onnxruntime's threads do not spin
between runs (they would take the cores from the next system); OpenVINO at float32
(INFERENCE_PRECISION_HINT=f32) and at its default precision (bf16 on AVX512-BF16).

usage: python bench/peers_alternating.py WORK/MODEL MODEL.onnx ROUNDS
(the kora package is imported from build/python unless kora is installed)
"""
import math
import os
import statistics
import sys
import time

sys.path.insert(1, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "build", "python"))
import numpy as np  # noqa: E402
import kora  # noqa: E402
import onnxruntime as ort  # noqa: E402
import openvino as ov  # noqa: E402



def systems(work, model):
    """Each system's run on one random input: name -> a function running it once."""
    runs = {}
    ks = {n: kora.InferenceSession(os.path.join(work, n), threads=2)
          for n in ("kora-optimal", "kora-bf16")}
    # Every graph input: floats normal, integers 0/1 (as bench/peers.py and `kora check`).
    rng = np.random.default_rng(0)
    feeds = {}
    for i in ks["kora-optimal"].get_inputs():
        dtype = np.dtype(i.dtype)
        feeds[i.name] = (rng.standard_normal(i.shape).astype(dtype)
                         if np.issubdtype(dtype, np.floating)
                         else rng.integers(0, 2, i.shape).astype(dtype))
    for n, s in ks.items():
        runs[n] = (lambda s=s: s.run(None, feeds))
    so = ort.SessionOptions()
    so.intra_op_num_threads = 2
    so.inter_op_num_threads = 1
    so.add_session_config_entry("session.intra_op.allow_spinning", "0")
    o = ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])
    runs["onnxruntime"] = (lambda: o.run(None, feeds))
    core = ov.Core()
    for n, hint in (("openvino-f32", "f32"), ("openvino", None)):
        cfg = {"PERFORMANCE_HINT": "LATENCY", "NUM_STREAMS": "1", "INFERENCE_NUM_THREADS": "2"}
        if hint:
            cfg["INFERENCE_PRECISION_HINT"] = hint
        req = core.compile_model(model, "CPU", cfg).create_infer_request()
        runs[n] = (lambda req=req: req.infer(feeds))
    return runs


def main():
    work, model, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
    runs = systems(work, model)
    names = list(runs)
    ratios = {n: [] for n in names}
    medians = {n: [] for n in names}
    for r in range(rounds):
        t = {}
        for n in names[r % len(names):] + names[:r % len(names)]:
            for _ in range(5):
                runs[n]()
            times = []
            for _ in range(20):
                start = time.perf_counter()
                runs[n]()
                times.append((time.perf_counter() - start) * 1e3)
            t[n] = statistics.median(times)
            time.sleep(0.05)
        for n in names:
            ratios[n].append(t[n] / t["kora-optimal"])
            medians[n].append(t[n])
    print(os.path.basename(model), " | ".join(
        f"{n} {statistics.median(medians[n]):.2f} ms "
        f"({math.exp(statistics.mean(map(math.log, ratios[n]))):.2f}x)" for n in names))


if __name__ == "__main__":
    main()
