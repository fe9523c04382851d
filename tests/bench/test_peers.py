"""bench/peers.py (`make bench`) end to end on a small synthetic model: kora's three
strategies and onnxruntime run on the same inputs; every number the results file holds is
there and sane (p90 >= median > 0, peak memory > 0, kora's outputs within 1e-4 relative
L2 of onnxruntime's); an empty cache is profiled once and a second run reuses it; a
system that cannot run (TVM where apache-tvm is not installed) is an error entry, not a
crash.

usage: test_peers.py PATH_TO_KORA
"""
import json
import os
import subprocess
import sys
import tempfile
import unittest

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

KORA = None
ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")


def load_json(path):
    with open(path) as f:
        return json.load(f)


def tiny_model(path):
    """conv + bias -> relu -> conv -> residual add -> global average pool -> matmul."""
    rng = np.random.default_rng(3)
    init = [numpy_helper.from_array((rng.standard_normal(s) * 0.3).astype(np.float32), n)
            for n, s in [("w1", (8, 3, 3, 3)), ("b1", (8,)), ("w2", (8, 8, 3, 3)),
                         ("fc", (8, 4))]]
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1], name="conv1"),
        helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
        helper.make_node("Conv", ["r1", "w2"], ["c2"], pads=[1, 1, 1, 1], name="conv2"),
        helper.make_node("Add", ["c2", "r1"], ["a"], name="residual"),
        helper.make_node("GlobalAveragePool", ["a"], ["g"], name="pool"),
        helper.make_node("Flatten", ["g"], ["f"], name="flatten"),
        helper.make_node("MatMul", ["f", "fc"], ["y"], name="fc"),
    ]
    graph = helper.make_graph(
        nodes, "tiny", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 16, 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])], init)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, path)


class PeersTest(unittest.TestCase):
    def run_bench(self, tmp, systems):
        out = os.path.join(tmp, "results.json")
        proc = subprocess.run(
            [sys.executable, os.path.join(ROOT, "bench", "peers.py"), KORA,
             os.path.join(tmp, "zoo"), "--models", "tiny", "--systems", systems, "--runs", "5",
             "--threads", "2", "--cache", os.path.join(tmp, "cache"), "--work",
             os.path.join(tmp, "work"), "--json", out, "--kora-args", "--max-kernel-size 4"],
            capture_output=True, text=True, timeout=600)
        self.assertEqual(proc.returncode, 0, proc.stderr[-3000:])
        return load_json(out), proc

    def test_kora_and_onnxruntime(self):
        with tempfile.TemporaryDirectory() as tmp:
            os.makedirs(os.path.join(tmp, "zoo"))
            tiny_model(os.path.join(tmp, "zoo", "tiny.onnx"))
            report, proc = self.run_bench(
                tmp, "kora-optimal,kora-greedy,kora-unfused,onnxruntime,tvm")
            entry = report["models"]["tiny"]
            for system in ("kora-optimal", "kora-greedy", "kora-unfused", "onnxruntime"):
                r = entry["systems"][system]
                self.assertGreater(r["median_ms"], 0, system)
                self.assertGreaterEqual(r["p90_ms"], r["median_ms"], system)
                self.assertGreater(r["peak_mb"], 1, system)
                self.assertLess(r["rel_l2_vs_onnxruntime"], 1e-4, system)
            self.assertEqual(entry["systems"]["onnxruntime"]["rel_l2_vs_onnxruntime"], 0)
            self.assertIn("kernels", entry["systems"]["kora-optimal"])
            tvm = entry["systems"]["tvm"]
            self.assertTrue("error" in tvm or tvm["rel_l2_vs_onnxruntime"] < 1e-4, tvm)
            opt = entry["kora_optimization"]
            self.assertGreater(opt["profile_empty_db_s"], 0)
            self.assertGreater(opt["warm_db_s"], 0)
            self.assertAlmostEqual(opt["empty_db_s"], opt["profile_empty_db_s"] + opt["warm_db_s"])
            self.assertIn("| tiny |", proc.stdout)
            profiled = load_json(os.path.join(tmp, "cache", "tiny", "profile.json"))
            self.assertIn("kora profile (empty database", proc.stderr)

            # Warm cache: no profiling, the empty-database time is the first run's.
            report2, proc2 = self.run_bench(tmp, "kora-optimal,onnxruntime")
            self.assertNotIn("kora profile (empty database", proc2.stderr)
            opt2 = report2["models"]["tiny"]["kora_optimization"]
            self.assertEqual(opt2["profile_empty_db_s"], profiled["empty_s"])
            self.assertLess(report2["models"]["tiny"]["systems"]["kora-optimal"]
                            ["rel_l2_vs_onnxruntime"], 1e-4)

    def test_unknown_system(self):
        proc = subprocess.run([sys.executable, os.path.join(ROOT, "bench", "peers.py"), KORA,
                               "/nonexistent", "--systems", "kora-optimal,mxnet"],
                              capture_output=True, text=True)
        self.assertNotEqual(proc.returncode, 0)
        self.assertIn("unknown systems ['mxnet']", proc.stderr)


if __name__ == "__main__":
    KORA = os.path.abspath(sys.argv.pop(1))
    unittest.main()
