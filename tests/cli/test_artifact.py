"""End-to-end tests of `kora compile`, `kora run` and `kora check` on synthetic models:
every strategy's artifact matches onnxruntime (kora check's own comparison, and outputs
written by kora run compared here with numpy); latency is printed; a C program linked
only against libkora_runtime runs an artifact; an unsupported operator, bad inputs and a
corrupt artifact are one clear error line each and leave nothing half written; an LSTM
and a GRU (unrolled recurrences) pass kora check too.

usage: test_artifact.py PATH_TO_KORA PATH_TO_C_EXAMPLE
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

KORA = None
C_EXAMPLE = None


def avx512_core():
    """Whether this CPU has what oneDNN's bf16 kernels need (AVX-512 F, BW, VL and DQ)."""
    with open("/proc/cpuinfo") as f:
        flags = next((l.split(":", 1)[1].split() for l in f if l.startswith("flags")), [])
    return all(f in flags for f in ("avx512f", "avx512bw", "avx512vl", "avx512dq"))


def save(graph, path, opset=17):
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    onnx.save(model, path)
    return path


def conv_model(path):
    """conv + bias -> relu -> residual -> global average pool -> gemm -> softmax, and
    TopK on the pooled features (an opaque operator: int64 output)."""
    rng = np.random.default_rng(1)
    w = numpy_helper.from_array((rng.standard_normal((8, 3, 3, 3)) * 0.3).astype(np.float32), "w")
    b = numpy_helper.from_array(rng.standard_normal(8).astype(np.float32), "b")
    w2 = numpy_helper.from_array((rng.standard_normal((8, 8, 3, 3)) * 0.2).astype(np.float32), "w2")
    fc = numpy_helper.from_array((rng.standard_normal((8, 5)) * 0.5).astype(np.float32), "fc")
    k = numpy_helper.from_array(np.array([2], np.int64), "k")
    nodes = [
        helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1], name="conv1"),
        helper.make_node("Relu", ["c"], ["r"], name="relu1"),
        helper.make_node("Conv", ["r", "w2"], ["c2"], pads=[1, 1, 1, 1], name="conv2"),
        helper.make_node("Add", ["c2", "r"], ["a"], name="residual"),
        helper.make_node("GlobalAveragePool", ["a"], ["g"], name="pool"),
        helper.make_node("Flatten", ["g"], ["f"], name="flatten"),
        helper.make_node("MatMul", ["f", "fc"], ["logits"], name="fc"),
        helper.make_node("Softmax", ["logits"], ["probs"], axis=1, name="softmax"),
        helper.make_node("TopK", ["f", "k"], ["top", "idx"], axis=1, name="topk"),
    ]
    graph = helper.make_graph(
        nodes, "conv_model",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 12, 12])],
        [helper.make_tensor_value_info("probs", TensorProto.FLOAT, [1, 5]),
         helper.make_tensor_value_info("top", TensorProto.FLOAT, [1, 2]),
         helper.make_tensor_value_info("idx", TensorProto.INT64, [1, 2])],
        [w, b, w2, fc, k])
    return save(graph, path)


def conv_chain_model(path):
    """Four convolutions of 16 channels (what oneDNN's blocked layouts hold without
    padding), with relus and a residual add between them, pooled at the end."""
    rng = np.random.default_rng(4)
    def init(name, shape, scale):
        return numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(np.float32),
                                       name)
    inits = [init("w1", (16, 3, 3, 3), 0.3), init("b1", (16,), 0.1),
             init("w2", (16, 16, 3, 3), 0.1), init("b2", (16,), 0.1),
             init("w3", (16, 16, 1, 1), 0.2), init("w4", (16, 16, 3, 3), 0.1)]
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1], name="conv1"),
        helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
        helper.make_node("Conv", ["r1", "w2", "b2"], ["c2"], pads=[1, 1, 1, 1], name="conv2"),
        helper.make_node("Relu", ["c2"], ["r2"], name="relu2"),
        helper.make_node("Conv", ["r2", "w3"], ["c3"], name="conv3"),
        helper.make_node("Add", ["c3", "r2"], ["a"], name="residual"),
        helper.make_node("Relu", ["a"], ["r3"], name="relu3"),
        helper.make_node("Conv", ["r3", "w4"], ["c4"], pads=[1, 1, 1, 1], strides=[2, 2],
                         name="conv4"),
        helper.make_node("GlobalAveragePool", ["c4"], ["y"], name="pool"),
    ]
    graph = helper.make_graph(
        nodes, "conv_chain",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 20, 20])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 16, 1, 1])], inits)
    return save(graph, path)


def attention_model(path):
    """A layer norm, a single-head self-attention with an additive mask from an int64
    input, and a GELU MLP, with symbolic sequence length."""
    rng = np.random.default_rng(2)
    d = 16

    def init(name, shape, scale=0.3):
        return numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(np.float32),
                                       name)

    inits = [init("q", (d, d)), init("kw", (d, d)), init("v", (d, d)), init("m1", (d, 32)),
             init("m2", (32, d)), init("gamma", (d,)), init("beta", (d,)),
             numpy_helper.from_array(np.array(0.25, np.float32), "scale")]
    nodes = [
        helper.make_node("LayerNormalization", ["x", "gamma", "beta"], ["n"], axis=-1,
                         name="ln"),
        helper.make_node("MatMul", ["n", "q"], ["Q"], name="mq"),
        helper.make_node("MatMul", ["n", "kw"], ["K"], name="mk"),
        helper.make_node("MatMul", ["n", "v"], ["V"], name="mv"),
        helper.make_node("Transpose", ["K"], ["Kt"], perm=[0, 2, 1], name="kt"),
        helper.make_node("MatMul", ["Q", "Kt"], ["S"], name="qk"),
        helper.make_node("Mul", ["S", "scale"], ["Ss"], name="scale"),
        helper.make_node("Cast", ["mask"], ["mf"], to=TensorProto.FLOAT, name="cast"),
        helper.make_node("Sub", ["mf", "one"], ["inv"], name="inv"),
        helper.make_node("Mul", ["inv", "big"], ["bias"], name="bias"),
        helper.make_node("Add", ["Ss", "bias"], ["Sm"], name="masked"),
        helper.make_node("Softmax", ["Sm"], ["P"], axis=-1, name="softmax"),
        helper.make_node("MatMul", ["P", "V"], ["O"], name="pv"),
        helper.make_node("Add", ["O", "x"], ["h"], name="res1"),
        helper.make_node("MatMul", ["h", "m1"], ["u"], name="fc1"),
        helper.make_node("Erf", ["u"], ["eu"], name="erf"),
        helper.make_node("MatMul", ["eu", "m2"], ["o2"], name="fc2"),
        helper.make_node("Add", ["o2", "h"], ["y"], name="res2"),
    ]
    inits += [numpy_helper.from_array(np.array(1.0, np.float32), "one"),
              numpy_helper.from_array(np.array(1e4, np.float32), "big")]
    graph = helper.make_graph(
        nodes, "attention",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, "seq", d]),
         helper.make_tensor_value_info("mask", TensorProto.INT64, [1, 1, "seq"])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, "seq", d])], inits)
    return save(graph, path)


def operator_mix_model(path):
    """Operators whose fission makes masks, windows and bit patterns: a causal mask (Trilu),
    position ids (CumSum, int64), a reversed exclusive CumSum, trigonometric functions,
    bitwise logic and shifts, OneHot, Hardmax, LRN, CenterCropPad and a cross-entropy loss
    with a scalar output."""
    rng = np.random.default_rng(3)
    inits = [numpy_helper.from_array(np.asarray(a), n) for n, a in [
        ("k0", np.array(0, np.int64)), ("ax1", np.array(1, np.int64)),
        ("depth", np.array([6], np.int64)), ("onoff", np.array([0.0, 2.0], np.float32)),
        ("w", (rng.standard_normal(5) ** 2 + 0.5).astype(np.float32)),
        ("crop", np.array([2, 7], np.int64))]]
    node = helper.make_node
    nodes = [
        node("Transpose", ["q"], ["qt"], perm=[0, 2, 1]),
        node("MatMul", ["q", "qt"], ["s"]),
        node("Trilu", ["s", "k0"], ["causal"], upper=0),
        node("Softmax", ["causal"], ["attn"], axis=-1),
        node("Tanh", ["q"], ["t"]),
        node("Asin", ["t"], ["as"]),
        node("Cosh", ["as"], ["ch"]),
        node("Atan", ["ch"], ["trig"]),
        node("CumSum", ["ids", "ax1"], ["pos"]),
        node("CumSum", ["q", "ax1"], ["qrev"], reverse=1, exclusive=1),
        node("BitwiseAnd", ["ids", "ids2"], ["band"]),
        node("Cast", ["ids"], ["u"], to=TensorProto.UINT64),
        node("Cast", ["ids2"], ["u2"], to=TensorProto.UINT64),
        node("BitShift", ["u", "u2"], ["shl"], direction="LEFT"),
        node("Cast", ["shl"], ["shl64"], to=TensorProto.INT64),
        node("OneHot", ["ids", "depth", "onoff"], ["hot"], axis=-1),
        node("Hardmax", ["q"], ["hm"], axis=1),
        node("LRN", ["img"], ["lrn"], size=3),
        node("CenterCropPad", ["img", "crop"], ["ccp"], axes=[2, 3]),
        node("SoftmaxCrossEntropyLoss", ["logits", "labels", "w"], ["loss"], ignore_index=1),
    ]
    outputs = ["attn", "trig", "pos", "qrev", "band", "shl64", "hot", "hm", "lrn", "ccp", "loss"]
    graph = helper.make_graph(
        nodes, "operator_mix",
        [helper.make_tensor_value_info("q", TensorProto.FLOAT, [2, 8, 4]),
         helper.make_tensor_value_info("ids", TensorProto.INT64, [2, 8]),
         helper.make_tensor_value_info("ids2", TensorProto.INT64, [2, 8]),
         helper.make_tensor_value_info("img", TensorProto.FLOAT, [1, 6, 5, 5]),
         helper.make_tensor_value_info("logits", TensorProto.FLOAT, [4, 5, 3]),
         helper.make_tensor_value_info("labels", TensorProto.INT64, [4, 3])],
        [onnx.ValueInfoProto(name=n) for n in outputs], inits)
    return save(graph, path, opset=18)


def quantized_model(path):
    """int8 quantization both ways: QuantizeLinear of the input, a QLinearConv (uint8 x
    int8 per channel, padding, bias) and a DequantizeLinear -> Conv -> QuantizeLinear block
    as onnxruntime.quantization writes it (onnxruntime fuses it into an integer convolution),
    uint8 outputs; and DynamicQuantizeLinear -> MatMulInteger (int32 output)."""
    rng = np.random.default_rng(3)
    def const(name, value):
        return numpy_helper.from_array(np.asarray(value), name)
    inits = [const("xs", np.float32(0.02)), const("xz", np.uint8(128)),
             const("w", rng.integers(-127, 128, (4, 3, 3, 3)).astype(np.int8)),
             # The QDQ block's weights, scales and zero points apart: onnxruntime's exact
             # integer GEMMs (session.x64quantprecision, which kora check asks for: CPUs
             # without VNNI saturate otherwise) fail on a graph whose QLinearConv and
             # DequantizeLinear share the int8 zero point (kora check then says so).
             const("w2", rng.integers(-127, 128, (4, 3, 3, 3)).astype(np.int8)),
             const("ws2", (rng.random(4) * 0.004 + 0.002).astype(np.float32)),
             const("wz2", np.zeros(4, np.int8)),
             const("ws", (rng.random(4) * 0.004 + 0.002).astype(np.float32)),
             const("wz", np.zeros(4, np.int8)),
             const("ys", np.float32(0.01)), const("yz", np.uint8(100)),
             const("b", rng.integers(-500, 500, 4).astype(np.int32)),
             const("mw", rng.integers(-128, 128, (12, 5)).astype(np.int8))]
    nodes = [
        helper.make_node("QuantizeLinear", ["x", "xs", "xz"], ["xq"], name="quantize"),
        helper.make_node("QLinearConv", ["xq", "xs", "xz", "w", "ws", "wz", "ys", "yz", "b"],
                         ["qconv"], pads=[1, 1, 1, 1], name="qconv"),
        helper.make_node("DequantizeLinear", ["xq", "xs", "xz"], ["xd"], name="dq_x"),
        helper.make_node("DequantizeLinear", ["w2", "ws2", "wz2"], ["wd"], axis=0, name="dq_w"),
        helper.make_node("Conv", ["xd", "wd"], ["c"], strides=[2, 2], name="conv"),
        helper.make_node("QuantizeLinear", ["c", "ys", "yz"], ["qdq"], name="quantize_out"),
        helper.make_node("DynamicQuantizeLinear", ["v"], ["vq", "vs", "vz"], name="dyn"),
        helper.make_node("MatMulInteger", ["vq", "mw", "vz"], ["mm"], name="mmi"),
    ]
    graph = helper.make_graph(
        nodes, "quantized",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 6, 6]),
         helper.make_tensor_value_info("v", TensorProto.FLOAT, [3, 12])],
        [helper.make_tensor_value_info("qconv", TensorProto.UINT8, [1, 4, 6, 6]),
         helper.make_tensor_value_info("qdq", TensorProto.UINT8, [1, 4, 2, 2]),
         helper.make_tensor_value_info("mm", TensorProto.INT32, [3, 5])], inits)
    return save(graph, path, opset=13)


def sampling_signal_model(path):
    """A spatial transformer (AffineGrid from a regressed theta, GridSample), a cubic
    GridSample with reflection on a given grid, and the onesided DFT power spectrum of the
    sampled image's rows."""
    rng = np.random.default_rng(3)
    inits = [numpy_helper.from_array(np.asarray(a), n) for n, a in [
        ("size", np.array([2, 3, 8, 9], np.int64)),
        ("W", (rng.standard_normal((3 * 8 * 9, 6)) * 0.02).astype(np.float32)),
        ("b", np.array([1, 0, 0, 0, 1, 0], np.float32)),
        ("tshape", np.array([2, 2, 3], np.int64)), ("axis", np.array(2, np.int64)),
        ("sshape", np.array([2, 3, 8, 9, 1], np.int64))]]
    node = helper.make_node
    nodes = [
        node("Flatten", ["x"], ["f"]), node("MatMul", ["f", "W"], ["m"]),
        node("Add", ["m", "b"], ["a"]), node("Reshape", ["a", "tshape"], ["theta"]),
        node("AffineGrid", ["theta", "size"], ["grid"]),
        node("GridSample", ["x", "grid"], ["gs"]),
        node("GridSample", ["x", "g2"], ["gs2"], mode="cubic", padding_mode="reflection"),
        node("Relu", ["gs"], ["r"]), node("Reshape", ["r", "sshape"], ["sig"]),
        node("DFT", ["sig", "", "axis"], ["spec"], onesided=1),
        node("Mul", ["spec", "spec"], ["p"]),
    ]
    graph = helper.make_graph(
        nodes, "sampling_signal",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 8, 9]),
         helper.make_tensor_value_info("g2", TensorProto.FLOAT, [2, 5, 4, 2])],
        [onnx.ValueInfoProto(name=n) for n in ("p", "gs2")], inits)
    return save(graph, path, opset=20)


def lstm_model(path):
    """A bidirectional LSTM with initial states and peepholes (unrolled by fission: one
    input projection, one recurrent matmul per step) under a GRU and a linear head."""
    rng = np.random.default_rng(3)
    t, n, i, h = 6, 2, 8, 8

    def init(name, shape, scale=0.4):
        return numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(np.float32),
                                       name)

    inits = [init("W", (2, 4 * h, i)), init("R", (2, 4 * h, h)), init("B", (2, 8 * h)),
             init("h0", (2, n, h)), init("c0", (2, n, h)), init("P", (2, 3 * h)),
             init("gW", (1, 3 * h, 2 * h)), init("gR", (1, 3 * h, h)), init("gB", (1, 6 * h)),
             init("fc", (h, 3))]
    nodes = [
        helper.make_node("LSTM", ["x", "W", "R", "B", "", "h0", "c0", "P"], ["Y", "Y_h", "Y_c"],
                         hidden_size=h, direction="bidirectional", name="lstm"),
        helper.make_node("Transpose", ["Y"], ["Yt"], perm=[0, 2, 1, 3], name="yt"),
        helper.make_node("Reshape", ["Yt", "seq_shape"], ["seq"], name="merge_directions"),
        helper.make_node("GRU", ["seq", "gW", "gR", "gB"], ["", "G_h"], hidden_size=h,
                         linear_before_reset=1, name="gru"),
        helper.make_node("MatMul", ["G_h", "fc"], ["logits"], name="head"),
    ]
    inits.append(numpy_helper.from_array(np.array([t, n, 2 * h], np.int64), "seq_shape"))
    graph = helper.make_graph(
        nodes, "recurrent",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [t, n, i])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, n, 3]),
         helper.make_tensor_value_info("Y_h", TensorProto.FLOAT, [2, n, h]),
         helper.make_tensor_value_info("Y_c", TensorProto.FLOAT, [2, n, h])], inits)
    return save(graph, path)


def read(path, mode="r"):
    with open(path, mode) as f:
        return f.read()


def write(path, data, mode="w"):
    with open(path, mode) as f:
        f.write(data)


def kora(*args, env=None, timeout=300):
    return subprocess.run([KORA, *args], capture_output=True, text=True, timeout=timeout, env=env)


class ArtifactTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="kora_artifact_")
        cls.env = dict(os.environ, KORA_KERNEL_CACHE=os.path.join(cls.tmp, "kernels"))
        cls.db = os.path.join(cls.tmp, "profiles.db")
        cls.conv = conv_model(os.path.join(cls.tmp, "conv.onnx"))
        cls.attention = attention_model(os.path.join(cls.tmp, "attention.onnx"))
        cls.chain = conv_chain_model(os.path.join(cls.tmp, "chain.onnx"))
        cls.quantized = quantized_model(os.path.join(cls.tmp, "quantized.onnx"))


        cls.lstm = lstm_model(os.path.join(cls.tmp, "lstm.onnx"))
        cls.compiled = {}

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def compile(self, model, out, *extra, measure=False):
        args = ["compile", model, "-o", out, "--db", self.db, "--threads", "2", *extra]
        if not measure:
            args.append("--no-measure")
        return kora(*args, env=self.env)

    def artifact(self, name, model, *extra):
        """The artifact compiled from `model` with `extra` options, compiled once."""
        if name not in self.compiled:
            out = os.path.join(self.tmp, name)
            r = self.compile(model, out, *extra)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.compiled[name] = (out, r)
        return self.compiled[name][0]

    def check(self, artifact, model, *extra):
        r = kora("check", artifact, model, *extra, env=self.env)
        self.assertIn("max_rel_l2", r.stdout, r.stderr)
        err = float(re.search(r"^max_rel_l2 (\S+)", r.stdout, re.M).group(1))
        return r, err

    def test_every_strategy_passes_check(self):
        for model, dims in ((self.conv, []), (self.attention, ["--dim", "seq=7"])):
            for strategy in ("optimal", "greedy", "unfused"):
                with self.subTest(model=os.path.basename(model), strategy=strategy):
                    name = os.path.basename(model) + "." + strategy
                    out = self.artifact(name, model, "--strategy", strategy, *dims)
                    summary = self.compiled[name][1].stdout
                    self.assertRegex(summary, r"\d+ kernels \(\d+ generated, \d+ oneDNN, "
                                              r"\d+ interpreter\)")
                    self.assertIn(f"strategy {strategy}, predicted", summary)
                    self.assertRegex(summary, r"activations [\d.]+ MB in one arena")
                    r, err = self.check(out, model)
                    self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
                    self.assertLess(err, 1e-4)
                    manifest = json.loads(read(os.path.join(out, "manifest.json")))
                    self.assertEqual(manifest["strategy"], strategy)
                    self.assertLessEqual(manifest["arena_bytes"], manifest["intermediate_bytes"])

    def test_operator_mix_passes_check(self):
        """Masks, windows, bit patterns and a scalar loss through generated code (and the
        interpreter for what is kept whole) match onnxruntime."""
        model = operator_mix_model(os.path.join(self.tmp, "mix.onnx"))
        out = self.artifact("mix.optimal", model)
        r, err = self.check(out, model)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertLess(err, 1e-4)
        self.assertRegex(r.stdout, r"loss float32 \[\] rel_l2")

    def test_quantized_model_gives_the_same_integers(self):
        out = self.artifact("quantized.onnx.optimal", self.quantized, "--strategy", "optimal")
        r, err = self.check(out, self.quantized)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        for name in ("qconv uint8", "qdq uint8", "mm int32"):
            self.assertRegex(r.stdout, name + r" \[[\d, ]+\] exact")

    def test_check_names_quantized_groups_computed_in_float(self):
        """A quantized Sigmoid (DequantizeLinear -> Sigmoid -> QuantizeLinear), which
        onnxruntime runs as a lookup table kora does not reproduce: kora check accepts the
        QDQ tolerance and says why; a model whose groups all fold (the quantized model
        above) keeps float32's."""
        def const(name, value):
            return numpy_helper.from_array(np.asarray(value), name)
        inits = [const("s", np.float32(0.03)), const("z", np.uint8(128)),
                 const("s2", np.float32(0.004)), const("z2", np.uint8(0))]
        nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["xq"]),
                 helper.make_node("DequantizeLinear", ["xq", "s", "z"], ["xd"]),
                 helper.make_node("Sigmoid", ["xd"], ["y"]),
                 helper.make_node("QuantizeLinear", ["y", "s2", "z2"], ["yq"]),
                 helper.make_node("DequantizeLinear", ["yq", "s2", "z2"], ["out"])]
        graph = helper.make_graph(
            nodes, "qdq_sigmoid", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 64])],
            [helper.make_tensor_value_info("out", TensorProto.FLOAT, [2, 64])], inits)
        model = save(graph, os.path.join(self.tmp, "qdq_sigmoid.onnx"))
        out = self.artifact("qdq_sigmoid.optimal", model)
        r, err = self.check(out, model)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertLess(err, 3e-2)
        self.assertIn("tolerance 0.03 (quantized 1 Sigmoid computed in float32", r.stdout)
        out = self.artifact("quantized.onnx.optimal", self.quantized, "--strategy", "optimal")
        r, _ = self.check(out, self.quantized)
        self.assertNotIn("tolerance", r.stdout)

    def test_sampling_and_dft_pass_check(self):
        """GridSample (kept whole, the interpreter) after AffineGrid and before a DFT (both
        matmuls, generated code) match onnxruntime."""
        model = sampling_signal_model(os.path.join(self.tmp, "signal.onnx"))
        out = self.artifact("signal.optimal", model)
        r, err = self.check(out, model)


    def test_recurrent_model_passes_check(self):
        """LSTM and GRU, unrolled by fission, compile to an artifact that matches
        onnxruntime. Greedy: the optimal plan's solver is slow on unrolled recurrences."""
        out = self.artifact("lstm.onnx.greedy", self.lstm, "--strategy", "greedy")
        r, err = self.check(out, self.lstm)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertLess(err, 1e-4)

    def test_progress_per_stage(self):
        out = self.artifact("conv.onnx.optimal", self.conv, "--strategy", "optimal")
        stderr = self.compiled["conv.onnx.optimal"][1].stderr
        for stage in ("import and fission", "orchestrate", "kernels"):
            self.assertIn("kora compile: " + stage, stderr)
        self.assertTrue(os.path.exists(os.path.join(out, "weights.bin")))

    def test_measured_compile(self):
        """Without --no-measure the kernels of the plans the solver chooses are measured (on
        demand, the default) and the plan holds measured kernels only; with --all every
        candidate is measured first."""
        out = os.path.join(self.tmp, "conv_measured")
        r = self.compile(self.conv, out, "--json", measure=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("kora compile: measure on demand", r.stderr)
        summary = json.loads(r.stdout)
        self.assertGreater(summary["on_demand"]["measured"], 0)
        self.assertEqual(summary["estimated_kernels"], 0)  # every kernel of the plan measured
        self.assertGreater(summary["measured_costs"], 0)
        r, err = self.check(out, self.conv)
        self.assertEqual(r.returncode, 0, r.stdout)

        out = os.path.join(self.tmp, "conv_measured_all")
        r = self.compile(self.conv, out, "--json", "--all", measure=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("kora compile: profile:", r.stderr)
        summary = json.loads(r.stdout)
        self.assertNotIn("on_demand", summary)
        self.assertEqual(summary["roofline_costs"], 0)
        r, err = self.check(out, self.conv)
        self.assertEqual(r.returncode, 0, r.stdout)

    def test_blocked_layouts_between_convolutions(self):
        """Tensors between oneDNN convolutions (and the elementwise kernels between them)
        are stored blocked, and every plan still matches onnxruntime: without measurements
        wherever every user can take the layout, measured where the solver chose it."""
        def blocked(out):
            manifest = json.loads(read(os.path.join(out, "manifest.json")))
            self.assertEqual(manifest["version"], 4)
            layouts = {t["name"]: t["layout"] for t in manifest["tensors"] if "layout" in t}
            for name in layouts:  # only activations between kernels
                self.assertNotIn(name, manifest["inputs"] + manifest["outputs"])
            for k in manifest["kernels"]:
                if k["impl"] == "interpreter":
                    self.assertFalse(set(k["reads"] + k["writes"]) & set(layouts), k)
            return layouts
        for strategy in ("optimal", "greedy", "unfused"):
            with self.subTest(strategy=strategy):
                out = self.artifact("chain.onnx." + strategy, self.chain, "--strategy", strategy)
                summary = self.compiled["chain.onnx." + strategy][1].stdout
                self.assertRegex(summary, r"layouts: \d+ tensors kept in oneDNN's layouts")
                r, err = self.check(out, self.chain)
                self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
                self.assertLess(err, 1e-4)
                layouts = blocked(out)
                if strategy == "greedy":  # conv + bias + relu kernels, all oneDNN's
                    self.assertGreater(len(layouts), 0, summary)
        out = os.path.join(self.tmp, "chain_measured")
        r = self.compile(self.chain, out, measure=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        r, err = self.check(out, self.chain)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertLess(err, 1e-4)
        blocked(out)

    def test_bf16_option(self):
        """--bf16: oneDNN kernels compute in bf16, measured under their own fingerprint (the
        generated kernels' float32 records taken over), and the artifact passes kora check at
        the bf16 tolerance, visibly not float32."""
        db = os.path.join(self.tmp, "bf16.db")
        r = kora("profile", self.chain, "--db", db, "--threads", "2", "--all", "--json",
                 env=self.env)
        self.assertEqual(r.returncode, 0, r.stderr)
        float32 = json.loads(r.stdout)
        self.assertEqual(float32["reused_float32"], 0)
        r = kora("profile", self.chain, "--db", db, "--threads", "2", "--bf16", "--all",
                 "--json", env=self.env)
        if not avx512_core():  # oneDNN's bf16 kernels need AVX-512: one clear error instead
            self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
            self.assertRegex(r.stderr, r"--bf16: onednn [\d.]+ has bfloat16 convolutions and "
                             r"matmuls on CPUs with AVX-512 only.*compile without --bf16")
            r = kora("compile", self.chain, "-o", os.path.join(self.tmp, "chain_bf16"), "--db",
                     db, "--bf16", env=self.env)
            self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
            self.assertIn("compile without --bf16", r.stderr)
            return
        self.assertEqual(r.returncode, 0, r.stderr)
        bf16 = json.loads(r.stdout)
        self.assertTrue(bf16["device"].endswith(" bf16"))
        self.assertEqual(bf16["kernels"], float32["kernels"])
        self.assertGreater(bf16["reused_float32"], 0)  # generated code: not measured again
        self.assertLess(bf16["implementations"], float32["implementations"])
        out = os.path.join(self.tmp, "chain_bf16")
        r = kora("compile", self.chain, "-o", out, "--db", db, "--threads", "2", "--bf16",
                 env=self.env)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertRegex(r.stderr, r"on demand: \d+ solves, 0 kernels measured now")
        manifest = json.loads(read(os.path.join(out, "manifest.json")))
        self.assertTrue(manifest["device"].endswith(" bf16"), manifest["device"])
        schedules = [k["schedule"] for k in manifest["kernels"] if k["impl"] == "onednn"]
        self.assertTrue(all(s.endswith("+bf16") for s in schedules), schedules)
        # Tensors kept in bfloat16 between kernels are read and written by oneDNN and by
        # generated code on layout views, never by the interpreter.
        bf16_tensors = {t["name"] for t in manifest["tensors"]
                        if t.get("layout", "").endswith("+bf16")}
        for k in manifest["kernels"]:
            touched = bf16_tensors & set(k["reads"] + k["writes"])
            if touched:
                self.assertIn(k["impl"], ("onednn", "generated"), (k, touched))
        with open("/proc/cpuinfo") as f:
            if " avx512_bf16" in f.read():  # a bf16 convolution beats float32 code here
                self.assertTrue(schedules, manifest["kernels"])
        r, err = self.check(out, self.chain)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("tolerance 0.03 (bf16 library math)", r.stdout)
        self.assertLess(err, 3e-2)
        if schedules:
            self.assertGreater(err, 1e-6)

    def test_colocate(self):
        """kora colocate: a small latency-critical artifact beside a best-effort one, four runs
        reported (as JSON and as a table); bad options and one artifact given twice are one
        clear line."""
        lc = self.artifact("conv.onnx.optimal", self.conv, "--strategy", "optimal")
        be = self.artifact("chain.onnx.greedy", self.chain, "--strategy", "greedy")
        r = kora("colocate", "--lc", lc, "--be", be, "--qps", "50", "--target-ms", "50",
                 "--seconds", "1", "--json", env=self.env)
        self.assertEqual(r.returncode, 0, r.stderr)
        report = json.loads(r.stdout)
        self.assertEqual(set(report["runs"]), {"lc_alone", "be_alone", "naive", "scheduled"})
        requests = report["runs"]["lc_alone"]["lc"]["requests"]
        self.assertGreater(requests, 20)
        for mode in ("naive", "scheduled"):
            run = report["runs"][mode]
            self.assertEqual(run["lc"]["requests"], requests, mode)  # the same seeded stream
            self.assertLessEqual(run["lc"]["p50_ms"], run["lc"]["p99_ms"])
            self.assertGreater(run["be"][0]["runs"], 0, mode)
            self.assertEqual(run["be"][0]["error"], "")
        self.assertGreater(report["runs"]["be_alone"]["be"][0]["per_second"], 0)
        self.assertNotIn("lc", report["runs"]["be_alone"])
        r = kora("colocate", "--lc", lc, "--be", be, "--qps", "50", "--target-ms", "50",
                 "--seconds", "1", env=self.env)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertRegex(r.stdout, r"scheduled +\d+ +[\d.]+ +[\d.]+")
        self.assertIn("kora colocate: scheduled (1 s)", r.stderr)
        for args, message in (
                (["--qps", "0"], "--qps must be a positive"),
                (["--target-ms", "-3"], "--target-ms must be a positive"),
                (["--seconds", "0"], "--seconds must be positive")):
            base = {"--qps": "50", "--target-ms": "50", "--seconds": "1"}
            base[args[0]] = args[1]
            flat = [x for kv in base.items() for x in kv]
            r = kora("colocate", "--lc", lc, "--be", be, *flat, env=self.env)
            self.assertNotEqual(r.returncode, 0)
            self.assertIn(message, r.stderr)
            self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
        r = kora("colocate", "--lc", lc, "--be", lc + "/", "--qps", "5", "--target-ms", "9",
                 env=self.env)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("given twice", r.stderr)

    def test_run_with_inputs_and_timing(self):
        out = self.artifact("attention.onnx.optimal", self.attention, "--strategy", "optimal",
                            "--dim", "seq=7")
        rng = np.random.default_rng(5)
        x = rng.standard_normal((1, 7, 16)).astype(np.float32)
        mask = np.array([[[1, 1, 1, 1, 0, 1, 0]]], np.int64)
        np.save(os.path.join(self.tmp, "x.npy"), x)
        np.save(os.path.join(self.tmp, "mask.npy"), mask)
        res = os.path.join(self.tmp, "outputs")
        r = kora("run", out, "--input", "x=" + os.path.join(self.tmp, "x.npy"), "--input",
                 "mask=" + os.path.join(self.tmp, "mask.npy"), "--output-dir", res,
                 "--iters", "20", env=self.env)
        self.assertEqual(r.returncode, 0, r.stderr)
        median = re.search(r"^median ([\d.]+) ms$", r.stdout, re.M)
        p90 = re.search(r"^p90 ([\d.]+) ms$", r.stdout, re.M)
        self.assertTrue(median and p90, r.stdout)
        self.assertLessEqual(float(median.group(1)), float(p90.group(1)))
        # --profile: every kernel's time inside the plan next to its prediction.
        manifest = json.loads(read(os.path.join(out, "manifest.json")))
        r = kora("run", out, "--iters", "3", "--profile", "0", env=self.env)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("kernel profile (median of 3 runs): in plan", r.stdout)
        rows = [l for l in r.stdout.splitlines() if re.match(r"^\s+\d+  (generated|onednn|"
                                                              r"interpreter) ", l)]
        self.assertEqual(len(rows), len(manifest["kernels"]))
        sess = ort.InferenceSession(self.attention, providers=["CPUExecutionProvider"])
        (want,) = sess.run(None, {"x": x, "mask": mask})
        got = np.load(os.path.join(res, "y.npy"))
        self.assertLess(np.linalg.norm(got - want) / np.linalg.norm(want), 1e-5)

    def test_c_program_with_only_the_runtime_library(self):
        out = self.artifact("conv.onnx.optimal", self.conv, "--strategy", "optimal")
        ldd = subprocess.run(["ldd", C_EXAMPLE], capture_output=True, text=True).stdout
        self.assertIn("libkora_runtime", ldd)
        for lib in ("libCbc", "libsqlite3", "libprotobuf", "libonnx"):
            self.assertNotIn(lib, ldd)
        r = subprocess.run([C_EXAMPLE, out], capture_output=True, text=True, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        # It prints each output's first values; the input is all ones.
        sess = ort.InferenceSession(self.conv, providers=["CPUExecutionProvider"])
        probs = sess.run(None, {"x": np.ones((1, 3, 12, 12), np.float32)})[0]
        line = [l for l in r.stdout.splitlines() if l.startswith("probs")][0]
        got = [float(v) for v in line.split()[1:]]
        np.testing.assert_allclose(got, probs.ravel()[:len(got)], rtol=1e-4)

    def test_unsupported_operator_writes_nothing(self):
        graph = helper.make_graph(
            [helper.make_node("Relu", ["x"], ["r"], name="relu"),
             helper.make_node("ImageDecoder", ["r"], ["y"], name="the_decoder")], "unsupported",
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])])
        model = save(graph, os.path.join(self.tmp, "unsupported.onnx"))
        out = os.path.join(self.tmp, "unsupported_out")
        r = self.compile(model, out)
        self.assertEqual(r.returncode, 1)
        self.assertIn("the_decoder", r.stderr)
        self.assertIn("ImageDecoder", r.stderr)
        self.assertFalse(os.path.exists(out))
        self.assertEqual([f for f in os.listdir(self.tmp) if ".tmp-" in f], [])

    def test_output_directory_taken(self):
        taken = os.path.join(self.tmp, "taken")
        os.makedirs(taken, exist_ok=True)
        write(os.path.join(taken, "notes.txt"), "mine")
        r = self.compile(self.conv, taken)
        self.assertEqual(r.returncode, 1)
        self.assertIn("exists and is not a kora artifact", r.stderr)
        self.assertEqual(read(os.path.join(taken, "notes.txt")), "mine")

    def test_bad_inputs_and_corrupt_artifacts(self):
        out = self.artifact("conv.onnx.greedy", self.conv, "--strategy", "greedy")
        def fails(args, words):
            r = kora(*args, env=self.env)
            self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
            self.assertIn(words, r.stderr)
            self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
        wrong = os.path.join(self.tmp, "wrong.npy")
        np.save(wrong, np.zeros((1, 3, 12, 11), np.float32))
        fails(["run", out, "--input", "x=" + wrong], "must be float32 [1, 3, 12, 12]")
        fails(["run", out, "--input", wrong], "must be float32 [1, 3, 12, 12]")  # bare file
        fails(["run", out, "--input", "nope=" + wrong], "no input 'nope'")
        fails(["run", out, "--input", "x=" + os.path.join(self.tmp, "missing.npy")],
              "missing.npy")
        fails(["run", os.path.join(self.tmp, "no_such_artifact")], "not a directory")
        fails(["check", out, os.path.join(self.tmp, "no_such_model.onnx")], "onnxruntime")

        def corrupt(name, edit):
            bad = os.path.join(self.tmp, name)
            shutil.rmtree(bad, ignore_errors=True)
            shutil.copytree(out, bad)
            edit(bad)
            return bad
        def truncate(path, keep):
            data = read(path, "rb")
            write(path, data[:keep(len(data))], "wb")
        bad = corrupt("bad_manifest", lambda d: truncate(os.path.join(d, "manifest.json"),
                                                         lambda n: n // 3))
        fails(["run", bad], "manifest")
        bad = corrupt("bad_weights", lambda d: truncate(os.path.join(d, "weights.bin"),
                                                        lambda n: n - 100))
        fails(["run", bad], "truncated")
        def flip(d):
            p = os.path.join(d, "weights.bin")
            data = bytearray(read(p, "rb"))
            data[len(data) // 2] ^= 1
            write(p, bytes(data), "wb")
        fails(["run", corrupt("flipped_weights", flip)], "corrupt")
        def drop_kernel(d):
            p = os.path.join(d, "manifest.json")
            m = json.loads(read(p))
            m["kernels"][0]["writes"] = ["x"]
            write(p, json.dumps(m))
        fails(["run", corrupt("bad_writes", drop_kernel)], "writes 'x', which is stored as input")
        def layout(d, name, value):
            p = os.path.join(d, "manifest.json")
            m = json.loads(read(p))
            for t in m["tensors"]:
                if t["name"] == name:
                    t["layout"] = value
            write(p, json.dumps(m))
        chain = self.artifact("chain.onnx.greedy", self.chain, "--strategy", "greedy")
        m = json.loads(read(os.path.join(chain, "manifest.json")))
        laid = next(t["name"] for t in m["tensors"] if "layout" in t)
        out = chain
        fails(["run", corrupt("bad_layout", lambda d: layout(d, laid, "nChw5c"))],
              "layout 'nChw5c', which kora does not know")
        fails(["run", corrupt("input_layout", lambda d: layout(d, "x", "acdb"))],
              "only arena tensors have a \"layout\"")
        # bfloat16 tensors in a float32 artifact: a float32 oneDNN kernel and generated code
        # (the attention's elementwise kernels) refuse them, each with its reason.
        fails(["run", corrupt("bf16_onednn", lambda d: layout(d, laid, "acdb+bf16"))],
              "is stored as bfloat16 (layout acdb+bf16), but the kernel computes in float32")
        out = self.artifact("attention.onnx.unfused", self.attention, "--strategy", "unfused")
        m = json.loads(read(os.path.join(out, "manifest.json")))
        users = {}
        for k in m["kernels"]:
            for t in k["reads"] + k["writes"]:
                users.setdefault(t, set()).add(k["impl"])
        by_generated = next(t["name"] for t in m["tensors"]
                            if t["storage"] == "arena" and users.get(t["name"]) == {"generated"})
        fails(["run", corrupt("bf16_generated", lambda d: layout(d, by_generated, "acdb+bf16"))],
              "generated code reads bfloat16 only on the layout views it was generated for")

    def test_check_fails_above_tolerance(self):
        out = self.artifact("conv.onnx.greedy", self.conv, "--strategy", "greedy")
        r, err = self.check(out, self.conv, "--tolerance", "0")
        if err > 0:
            self.assertEqual(r.returncode, 1)
        r = kora("check", out, self.attention, env=self.env)  # another model
        self.assertEqual(r.returncode, 1)


if __name__ == "__main__":
    KORA = os.path.abspath(sys.argv.pop(1))
    C_EXAMPLE = os.path.abspath(sys.argv.pop(1))
    unittest.main(verbosity=1)
