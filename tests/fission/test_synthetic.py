"""Synthetic graphs that exercise every fission rule in combination, run through
`kora interpret` (import -> fission -> reference interpreter) and compared with
onnxruntime on the same random inputs: relative L2 error below 1e-4 per float output,
integer outputs exactly.

usage: test_synthetic.py PATH_TO_KORA
"""
import functools
import os
import re
import subprocess
import sys
import tempfile
import unittest

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

KORA = None
RNG = np.random.default_rng(7)


class G:
    """A tiny graph builder: tensors are names; weights are seeded random initializers."""

    def __init__(self):
        self.nodes, self.inits, self.n = [], [], 0

    def w(self, *shape, scale=0.5, dtype=np.float32, positive=False):
        a = RNG.standard_normal(shape) * scale
        if positive:
            a = np.abs(a) + 0.5
        return self.c(a.astype(dtype))

    def c(self, arr):
        self.n += 1
        name = f"c{self.n}"
        self.inits.append(numpy_helper.from_array(np.asarray(arr), name))
        return name

    def op(self, op_type, inputs, outputs=1, **attrs):
        self.n += 1
        outs = [f"t{self.n}_{k}" for k in range(outputs)]
        self.nodes.append(helper.make_node(op_type, inputs, outs, name=f"{op_type}_{self.n}", **attrs))
        return outs[0] if outputs == 1 else outs

    def model(self, inputs, outputs, opset=17):
        graph = helper.make_graph(
            self.nodes, "synthetic",
            [helper.make_tensor_value_info(n, t, s) for n, t, s in inputs],
            [onnx.ValueInfoProto(name=o) for o in outputs],
            self.inits)
        m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
        m.ir_version = 8
        return m


def exact_integer_gemm(opts):
    """onnxruntime's uint8 x int8 GEMMs without AVX-512 VNNI saturate pairs of products to 16
    bits (MatMulInteger, ConvInteger, QLinearConv, QLinearMatMul); the reference asks for
    exact ones (no effect where VNNI is, nor on a graph run unoptimized)."""
    opts.add_session_config_entry("session.x64quantprecision", "1")


@functools.cache
def ort_integer_gemm_saturates():
    """Whether onnxruntime's uint8 x int8 GEMM saturates here with the graph as written (no
    AVX-512 VNNI; session.x64quantprecision takes effect only through graph optimizations,
    and not for every operator): 255 x 127 twice is 64770, over int16."""
    a = helper.make_tensor_value_info("a", TensorProto.UINT8, [1, 2])
    y = helper.make_tensor_value_info("y", TensorProto.INT32, [1, 1])
    w = numpy_helper.from_array(np.full((2, 1), 127, np.int8), "w")
    graph = helper.make_graph([helper.make_node("MatMulInteger", ["a", "w"], ["y"])], "probe",
                              [a], [y], [w])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])
    return int(sess.run(None, {"a": np.full((1, 2), 255, np.uint8)})[0][0, 0]) != 64770


def random_feed(dtype, shape):
    if dtype == TensorProto.FLOAT:
        return RNG.standard_normal(shape).astype(np.float32)
    if dtype == TensorProto.INT64:
        return RNG.integers(0, 4, shape).astype(np.int64)
    if dtype == TensorProto.BOOL:
        return RNG.integers(0, 2, shape).astype(bool)
    if dtype == TensorProto.UINT8:
        return RNG.integers(0, 256, shape).astype(np.uint8)
    if dtype == TensorProto.INT8:
        return RNG.integers(-128, 128, shape).astype(np.int8)
    raise ValueError(dtype)


class SyntheticTest(unittest.TestCase):
    def check(self, model, inputs, feeds=None, reference="onnxruntime", reference_model=None,
              optimized=False):
        """reference "onnx": ONNX's reference evaluator instead, where onnxruntime departs
        from the ONNX reference implementation. reference_model: onnxruntime runs this
        equivalent graph instead of `model`, where it does not run `model` (recurrent
        layout 1). optimized: onnxruntime at its default optimisation level (QDQ groups
        run as its integer kernels) instead of the graph as written."""
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "m.onnx")
            onnx.save(model, path)
            feeds = feeds or {n: random_feed(t, s) for n, t, s in inputs}
            opts = ort.SessionOptions()
            opts.graph_optimization_level = (ort.GraphOptimizationLevel.ORT_ENABLE_ALL if optimized
                                             else ort.GraphOptimizationLevel.ORT_DISABLE_ALL)
            exact_integer_gemm(opts)
            if reference == "onnx":
                expected = ReferenceEvaluator(model).run(None, feeds)
            else:
                ref = reference_model.SerializeToString() if reference_model else path
                sess = ort.InferenceSession(ref, opts, providers=["CPUExecutionProvider"])
                expected = sess.run(None, feeds)
            args = [KORA, "interpret", path, "--output-dir", os.path.join(tmp, "out")]
            for n, a in feeds.items():
                np.save(os.path.join(tmp, n + ".npy"), a)
                args += ["--input", f"{n}={os.path.join(tmp, n + '.npy')}"]
            proc = subprocess.run(args, capture_output=True, text=True, timeout=300)
            self.assertEqual(proc.returncode, 0, proc.stderr)
            for out, exp in zip(model.graph.output, expected):
                name = re.sub(r"[^A-Za-z0-9_.-]", "_", out.name) + ".npy"
                got = np.load(os.path.join(tmp, "out", name))
                self.assertEqual(got.shape, exp.shape, out.name)
                if exp.dtype.kind == "f":
                    err = np.linalg.norm(got.astype(np.float64) - exp) / max(np.linalg.norm(exp), 1e-30)
                    self.assertLess(err, 1e-4, f"{out.name}: relative L2 error {err}")
                else:
                    np.testing.assert_array_equal(got, exp, out.name)

    def test_attention_block(self):
        g = G()
        b, s, d, h = 2, 16, 32, 4
        x = "x"
        q, k, v = (g.op("Add", [g.op("MatMul", [x, g.w(d, d)]), g.w(d)]) for _ in range(3))
        split = g.c(np.array([b, s, h, d // h], np.int64))
        heads = lambda t: g.op("Transpose", [g.op("Reshape", [t, split])], perm=[0, 2, 1, 3])
        scores = g.op("MatMul", [heads(q), g.op("Transpose", [heads(k)], perm=[0, 1, 3, 2])])
        scores = g.op("Div", [scores, g.c(np.array(np.sqrt(d // h), np.float32))])
        # Padding mask: positions where mask == 0 get a large negative score.
        mask = g.op("Cast", [g.op("Equal", ["mask", g.c(np.array(0, np.int64))])], to=TensorProto.FLOAT)
        mask = g.op("Unsqueeze", [g.op("Mul", [mask, g.c(np.array(-1e4, np.float32))]),
                                  g.c(np.array([1, 2], np.int64))])
        attn = g.op("Softmax", [g.op("Add", [scores, mask])], axis=-1)
        ctx = g.op("Transpose", [g.op("MatMul", [attn, heads(v)])], perm=[0, 2, 1, 3])
        out = g.op("Add", [g.op("MatMul", [g.op("Reshape", [ctx, g.c(np.array([b, s, d], np.int64))]),
                                           g.w(d, d)]), x])
        inputs = [("x", TensorProto.FLOAT, [b, s, d]), ("mask", TensorProto.INT64, [b, s])]
        self.check(g.model(inputs, [out]), inputs)

    def test_conv_bn_relu(self):
        g = G()
        y = g.op("Conv", ["x", g.w(16, 3, 3, 3), g.w(16)], pads=[1, 1, 1, 1], strides=[2, 2])
        y = g.op("BatchNormalization", [y, g.w(16), g.w(16), g.w(16), g.w(16, positive=True)],
                 epsilon=1e-3)
        y = g.op("Relu", [y])
        y = g.op("MaxPool", [y], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
        y = g.op("Conv", [y, g.w(8, 16, 1, 1)])
        y = g.op("AveragePool", [y], kernel_shape=[3, 3], pads=[1, 1, 1, 1], count_include_pad=0)
        y = g.op("Flatten", [g.op("GlobalAveragePool", [y])])
        y = g.op("Gemm", [y, g.w(10, 8), g.w(10)], transB=1, alpha=0.5, beta=2.0)
        out = g.op("LogSoftmax", [y], axis=1)
        inputs = [("x", TensorProto.FLOAT, [2, 3, 32, 32])]
        self.check(g.model(inputs, [out]), inputs)

    def test_layer_norm_mlp(self):
        g = G()
        x = g.op("LayerNormalization", ["x", g.w(32, positive=True), g.w(32)], axis=-1, epsilon=1e-5)
        hdn = g.op("Add", [g.op("MatMul", [x, g.w(32, 64)]), g.w(64)])
        act = g.op("Gelu", [hdn], approximate="tanh")
        act2 = g.op("Gelu", [hdn])
        y = g.op("MatMul", [g.op("Add", [act, act2]), g.w(64, 32)])
        out = g.op("Add", ["x", y])
        inputs = [("x", TensorProto.FLOAT, [1, 8, 32])]
        self.check(g.model(inputs, [out], opset=20), inputs)

    def test_depthwise_separable_block(self):
        g = G()
        c = 8
        y = g.op("Conv", ["x", g.w(c, 1, 3, 3), g.w(c)], group=c, pads=[1, 1, 1, 1])
        y = g.op("HardSwish", [y])
        se = g.op("ReduceMean", [y, g.c(np.array([2, 3], np.int64))], keepdims=1)
        se = g.op("HardSigmoid", [g.op("Conv", [se, g.w(c, c, 1, 1)])])
        y = g.op("Mul", [y, se])
        y = g.op("Conv", [y, g.w(16, c, 1, 1)], dilations=[1, 1])
        y = g.op("Clip", [y, g.c(np.array(0, np.float32)), g.c(np.array(6, np.float32))])
        y = g.op("Conv", [y, g.w(16, 4, 3, 3)], group=4, dilations=[2, 2], pads=[2, 2, 2, 2])
        out = g.op("Add", [y, g.op("Mish", [y])])
        inputs = [("x", TensorProto.FLOAT, [1, c, 12, 12])]
        self.check(g.model(inputs, [out], opset=18), inputs)

    def test_upsample_block(self):
        g = G()
        y = g.op("Pad", ["x", g.c(np.array([0, 0, 1, 2, 0, 0, 1, 2], np.int64))], mode="reflect")
        y = g.op("Conv", [y, g.w(8, 4, 3, 3)])
        y = g.op("InstanceNormalization", [y, g.w(8, positive=True), g.w(8)])
        near = g.op("Resize", [y, "", g.c(np.array([1, 1, 2, 2], np.float32))], mode="nearest")
        lin = g.op("Resize", [y, "", g.c(np.array([1, 1, 2, 2], np.float32))], mode="linear")
        cub = g.op("Resize", [y, "", "", g.c(np.array([1, 8, 16, 18], np.int64))], mode="cubic",
                   coordinate_transformation_mode="align_corners")
        tr = g.op("ConvTranspose", [y, g.w(8, 4, 3, 3), g.w(8)], strides=[2, 2], pads=[1, 1, 1, 1],
                  output_padding=[1, 1], group=2)
        both = g.op("Concat", [near, lin, tr], axis=1)
        d2s = g.op("DepthToSpace", [both], blocksize=2, mode="CRD")
        s2d = g.op("SpaceToDepth", [d2s], blocksize=2)
        out = g.op("Tanh", [g.op("Add", [s2d, g.op("Tile", [g.op("ReduceMean", [cub], axes=[1]),
                                                                  g.c(np.array([1, 24, 1, 1], np.int64))])])])
        inputs = [("x", TensorProto.FLOAT, [1, 4, 8, 7])]
        self.check(g.model(inputs, [out]), inputs)

    def test_group_norm_and_reductions(self):
        g = G()
        gn = g.op("GroupNormalization", ["x", g.w(8, positive=True), g.w(8)], num_groups=4)
        l2 = g.op("ReduceL2", [gn, g.c(np.array([1], np.int64))], keepdims=0)
        lse = g.op("ReduceLogSumExp", [gn, g.c(np.array([2, 3], np.int64))], keepdims=1)
        prod = g.op("ReduceProd", [g.op("Sigmoid", [gn]), g.c(np.array([3], np.int64))])
        inputs = [("x", TensorProto.FLOAT, [2, 8, 3, 5])]
        self.check(g.model(inputs, [l2, lse, prod], opset=21), inputs)

    def test_group_norm_one_group_and_a_group_per_channel(self):
        g = G()
        one = g.op("GroupNormalization", ["x", g.w(1, positive=True), g.w(1)], num_groups=1)
        per_c = g.op("GroupNormalization", ["x", g.w(8, positive=True), g.w(8)], num_groups=8,
                     epsilon=1e-3)
        inputs = [("x", TensorProto.FLOAT, [2, 8, 3, 5])]
        self.check(g.model(inputs, [one, per_c], opset=18), inputs)

    def test_torch_group_norm_export(self):
        """torch.onnx's nn.GroupNorm: Reshape to [N, G, -1], InstanceNormalization with
        per-group scale and bias, Reshape back to x's shape, then the affine Mul and Add
        (kora folds the three into GroupNormalization, group_norm_fold.h); one, four and
        eight groups of 8 channels, and a group whose reshape is also read elsewhere (not
        folded)."""
        g = G()
        outs = []
        for groups in (1, 4, 8):
            grouped = g.op("Reshape", ["x", g.c(np.array([0, groups, -1], np.int64))])
            normed = g.op("InstanceNormalization", [grouped, g.w(groups, positive=True),
                                                    g.w(groups)], epsilon=1e-5)
            back = g.op("Reshape", [normed, g.op("Shape", ["x"])])
            outs.append(g.op("Add", [g.op("Mul", [back, g.w(8, 1, 1)]), g.w(8, 1, 1)]))
        grouped = g.op("Reshape", ["x", g.c(np.array([0, 2, -1], np.int64))])
        normed = g.op("InstanceNormalization", [grouped, g.w(2, positive=True), g.w(2)])
        back = g.op("Reshape", [normed, g.c(np.array([2, 8, 3, 5], np.int64))])
        outs += [back, g.op("ReduceSum", [grouped, g.c(np.array([2], np.int64))])]
        inputs = [("x", TensorProto.FLOAT, [2, 8, 3, 5])]
        self.check(g.model(inputs, outs), inputs)

    def test_summed_convolutions_of_one_input(self):
        """RepVGG- and MobileOne-style blocks in their training form: 3x3 and 1x1
        convolutions, a batch norm of x and x itself summed (kora merges them into one
        convolution, parallel_conv_merge.h); depthwise; stride 2 (1x1 unpadded beside 3x3
        padded); 5x5 dilated beside 3x3; and trees that must stay as written (different
        strides' offsets, an intermediate read elsewhere)."""
        g = G()
        x = "x"
        bn = lambda t, c: g.op("BatchNormalization", [t, g.w(c, positive=True), g.w(c), g.w(c),
                                                      g.w(c, positive=True)], epsilon=1e-3)
        rep = g.op("Add", [g.op("Add", [g.op("Conv", [x, g.w(8, 8, 3, 3), g.w(8)], pads=[1, 1, 1, 1]),
                                        g.op("Conv", [x, g.w(8, 8, 1, 1), g.w(8)])]), bn(x, 8)])
        rep = g.op("Relu", [g.op("Add", [rep, g.w(1, 8, 1, 1)])])
        dw = g.op("Add", [g.op("Add", [g.op("Conv", [rep, g.w(8, 1, 3, 3)], group=8, pads=[1, 1, 1, 1]),
                                       g.op("Conv", [rep, g.w(8, 1, 1, 1), g.w(8)], group=8)]), rep])
        s2 = g.op("Add", [g.op("Conv", [dw, g.w(6, 8, 1, 1), g.w(6)], strides=[2, 2]),
                          g.op("Conv", [dw, g.w(6, 8, 3, 3), g.w(6)], strides=[2, 2], pads=[1, 1, 1, 1])])
        dil = g.op("Add", [g.op("Conv", [dw, g.w(4, 8, 5, 5)], dilations=[2, 2], pads=[4, 4, 4, 4]),
                           g.op("Conv", [dw, g.w(4, 8, 3, 3)], dilations=[2, 2], pads=[2, 2, 2, 2])])
        unpadded = g.op("Add", [g.op("Conv", [dw, g.w(4, 8, 3, 3)]), g.op("Conv", [dw, g.w(4, 8, 3, 3)])])
        # same output shape, padding off centre differently: not merged
        shifted = g.op("Add", [g.op("Conv", [dw, g.w(4, 8, 3, 3)], pads=[2, 2, 0, 0]),
                               g.op("Conv", [dw, g.w(4, 8, 1, 1)])])
        shared = g.op("Conv", [dw, g.w(4, 8, 1, 1)])
        kept = g.op("Add", [g.op("Conv", [dw, g.w(4, 8, 3, 3)], pads=[1, 1, 1, 1]), shared])
        inputs = [("x", TensorProto.FLOAT, [2, 8, 9, 9])]
        self.check(g.model(inputs, [s2, dil, unpadded, shifted, kept, shared]), inputs)

    def test_weight_standardization(self):
        """timm's StdConv2d as torch exports it: BatchNormalization in training mode over
        the weight viewed as [1, filters, -1] (kora folds it into the weight, fold.cc)."""
        g = G()
        w = g.w(6, 4, 3, 3)
        flat = g.op("Reshape", [w, g.c(np.array([1, 6, -1], np.int64))])
        mean = g.op("ReduceMean", [flat], axes=[0, 2], keepdims=0)
        var = g.op("ReduceMean", [g.op("Mul", [g.op("Sub", [flat, g.op("ReduceMean", [flat], axes=[0, 2])])] * 2)],
                   axes=[0, 2], keepdims=0)
        std = g.op("BatchNormalization", [flat, g.c(np.ones(6, np.float32)), g.c(np.zeros(6, np.float32)),
                                          mean, var], outputs=3, epsilon=1e-8, training_mode=1)[0]
        ws = g.op("Reshape", [std, g.c(np.array([6, 4, 3, 3], np.int64))])
        out = g.op("Conv", ["x", ws, g.w(6)], pads=[1, 1, 1, 1])
        inputs = [("x", TensorProto.FLOAT, [1, 4, 7, 7])]
        self.check(g.model(inputs, [out], opset=15), inputs)

    def test_activations_and_variadics(self):
        g = G()
        x = "x"
        acts = [g.op("Elu", [x], alpha=0.7), g.op("Selu", [x]), g.op("Celu", [x], alpha=1.3),
                g.op("LeakyRelu", [x], alpha=0.1), g.op("PRelu", [x, g.w(1, 6)]),
                g.op("Softplus", [x]), g.op("Softsign", [x]), g.op("Erf", [x]),
                g.op("Sigmoid", [x]), g.op("Abs", [x])]
        s = g.op("Sum", acts[:4])
        m = g.op("Mean", acts[4:7])
        mx = g.op("Max", acts[7:])
        mn = g.op("Min", [s, m, mx])
        pw = g.op("Pow", [g.op("Abs", [mn]), g.c(np.array(1.5, np.float32))])
        out = g.op("Where", [g.op("Greater", [x, g.c(np.array(0.2, np.float32))]), pw, s])
        inputs = [("x", TensorProto.FLOAT, [3, 6])]
        self.check(g.model(inputs, [out]), inputs)

    def test_layout_and_opaque(self):
        g = G()
        x = "x"
        a, b2 = g.op("Split", [x, g.c(np.array([2, 4], np.int64))], outputs=2, axis=1)
        sl = g.op("Slice", [b2, g.c(np.array([3, 0], np.int64)), g.c(np.array([-100, 5], np.int64)),
                            g.c(np.array([1, 2], np.int64)), g.c(np.array([-1, 2], np.int64))])
        ga = g.op("Gather", [x, g.c(np.array([[0, -1], [2, 1]], np.int64))], axis=2)
        gd = g.op("Gather", [x, "idx"], axis=1)
        ge = g.op("GatherElements", [x, g.op("Abs", ["idx3"])], axis=2)
        ex = g.op("Expand", [a, g.c(np.array([2, 1, 1, 1], np.int64))])
        es = g.op("Einsum", [x, g.w(6, 4)], equation="bchw,wk->bhck")
        vals, idx = g.op("TopK", [x, g.c(np.array([2], np.int64))], outputs=2, axis=-1)
        am = g.op("ArgMax", [x], axis=1, keepdims=0, select_last_index=1)
        inputs = [("x", TensorProto.FLOAT, [1, 6, 5, 6]), ("idx", TensorProto.INT64, [3]),
                  ("idx3", TensorProto.INT64, [1, 6, 5, 2])]
        self.check(g.model(inputs, [a, sl, ga, gd, ge, ex, es, vals, idx, am]), inputs)

    def test_decoder_masks_and_positions(self):
        """A decoder's causal mask (Trilu on the scores), position ids from the attention
        mask (CumSum, int64), OneHot of token ids with values given at run time."""
        g = G()
        scores = g.op("MatMul", ["q", g.op("Transpose", ["q"], perm=[0, 2, 1])])
        causal = g.op("Trilu", [scores, g.c(np.array(0, np.int64))], upper=0)
        upper = g.op("Trilu", [scores, g.c(np.array(-1, np.int64))])
        attn = g.op("Softmax", [g.op("Add", [causal, upper])], axis=-1)
        pos = g.op("CumSum", ["mask", g.c(np.array(1, np.int64))])
        pos = g.op("Sub", [g.op("Mul", [pos, "mask"]), g.c(np.array(1, np.int64))])
        rev = g.op("CumSum", ["q", g.c(np.array(-2, np.int32))], exclusive=1, reverse=1)
        excl = g.op("CumSum", ["q", g.c(np.array(1, np.int64))], exclusive=1)
        hot = g.op("OneHot", ["mask", g.c(np.array([5], np.int64)), "onoff"], axis=1)
        hot_last = g.op("OneHot", [g.op("Cast", ["mask"], to=TensorProto.FLOAT),
                                   g.c(np.array(4.0, np.float32)),
                                   g.c(np.array([0, 3], np.float32))])
        eye = g.op("EyeLike", ["eyein"], k=1, dtype=TensorProto.FLOAT)
        inputs = [("q", TensorProto.FLOAT, [2, 6, 4]), ("mask", TensorProto.INT64, [2, 6]),
                  ("onoff", TensorProto.FLOAT, [2]), ("eyein", TensorProto.INT64, [3, 5])]
        self.check(g.model(inputs, [attn, pos, rev, excl, hot, hot_last, eye]), inputs)

    def test_losses_and_normalizations(self):
        """SoftmaxCrossEntropyLoss and NegativeLogLikelihoodLoss with weights, ignore_index
        and every reduction; Hardmax, LRN, MeanVarianceNormalization, LpPool."""
        g = G()
        w = g.w(4, positive=True)
        sce_mean, log_prob = g.op("SoftmaxCrossEntropyLoss", ["scores", "labels", w], outputs=2,
                                  ignore_index=2)
        sce_sum = g.op("SoftmaxCrossEntropyLoss", ["scores", "labels"], reduction="sum")
        nll_none = g.op("NegativeLogLikelihoodLoss", [log_prob, "labels", w], reduction="none",
                        ignore_index=0)
        nll_mean = g.op("NegativeLogLikelihoodLoss", [log_prob, "labels"], ignore_index=1)
        hard = g.op("Hardmax", ["x"], axis=1)
        lrn = g.op("LRN", ["x"], size=3, alpha=0.01, beta=0.6, bias=1.5)
        mvn = g.op("MeanVarianceNormalization", ["x"])
        lp = g.op("LpPool", ["x"], kernel_shape=[2, 2], p=3, strides=[1, 2], pads=[1, 0, 0, 1])
        glp = g.op("GlobalLpPool", ["x"], p=2)
        inputs = [("scores", TensorProto.FLOAT, [3, 4, 5]), ("labels", TensorProto.INT64, [3, 5]),
                  ("x", TensorProto.FLOAT, [2, 5, 4, 6])]
        self.check(g.model(inputs, [sce_mean, log_prob, sce_sum, nll_none, nll_mean, hard, lrn,
                                    mvn, lp, glp]), inputs)

    def test_math_bitwise_and_scatter(self):
        """The trigonometric and hyperbolic functions inside their domains, bitwise logic and
        shifts on unsigned bytes, GatherND, ScatterND and ScatterElements with reductions."""
        g = G()
        t = g.op("Tanh", ["x"])
        trig = [g.op(op, [t]) for op in ("Tan", "Asin", "Acos", "Atan", "Sinh", "Cosh", "Asinh")]
        trig.append(g.op("Acosh", [g.op("Add", [g.op("Abs", ["x"]), g.c(np.array(1, np.float32))])]))
        trig.append(g.op("Atanh", [g.op("Mul", [t, g.c(np.array(0.9, np.float32))])]))
        trig.append(g.op("ThresholdedRelu", ["x"], alpha=0.3))
        trig.append(g.op("Shrink", ["x"], lambd=0.4, bias=0.1))
        total = g.op("Sum", trig)
        u = g.op("Cast", ["n"], to=TensorProto.UINT8)
        shifted = g.op("BitShift", [u, g.c(np.array([1, 2, 3], np.uint8))], direction="LEFT")
        back = g.op("BitShift", [shifted, g.c(np.array(1, np.uint8))], direction="RIGHT")
        bits = g.op("BitwiseXor", [g.op("BitwiseAnd", ["n", "m"]), g.op("BitwiseOr", ["n", "m"])])
        bits = g.op("BitwiseNot", [bits])
        bytes_out = g.op("Cast", [g.op("BitwiseOr", [back, shifted])], to=TensorProto.INT64)
        gnd = g.op("GatherND", ["x", g.c(np.array([[0, 1], [1, 0]], np.int64))])
        snd = g.op("ScatterND", ["x", g.c(np.array([[1, 2], [0, 1], [1, 2]], np.int64)),
                                 g.w(3, 4)], reduction="add")
        sel = g.op("ScatterElements", ["x", g.c(np.array([[[0, 2, 1, 2]]], np.int64)),
                                       g.op("Slice", ["x", g.c(np.array([0, 0], np.int64)),
                                                      g.c(np.array([1, 1], np.int64)),
                                                      g.c(np.array([0, 1], np.int64))])],
                   axis=1, reduction="max")
        inputs = [("x", TensorProto.FLOAT, [2, 3, 4]), ("n", TensorProto.INT64, [2, 3]),
                  ("m", TensorProto.INT64, [2, 3])]
        self.check(g.model(inputs, [total, bytes_out, bits, gnd, snd, sel], opset=18), inputs)

    def test_grid_sample_modes(self):
        """GridSample on random grids (partly outside [-1, 1]) in every mode, padding mode
        and align_corners, 4-D and volumetric; Col2Im and Det. Cubic with border padding
        is checked against ONNX's reference in the next test."""
        g = G()
        outs = []
        for mode in ("linear", "nearest", "cubic"):
            for pad in ("zeros", "border", "reflection"):
                for align in (0, 1):
                    if (mode, pad) == ("cubic", "border"):
                        continue
                    outs.append(g.op("GridSample", ["x", "grid"], mode=mode, padding_mode=pad,
                                     align_corners=align))
        for mode in ("linear", "nearest"):
            outs.append(g.op("GridSample", ["v", "vgrid"], mode=mode, padding_mode="border"))
        outs.append(g.op("Col2Im", ["cols", g.c(np.array([5, 6], np.int64)),
                                    g.c(np.array([2, 3], np.int64))], strides=[1, 2],
                         pads=[1, 0, 0, 1]))
        outs.append(g.op("Det", [g.op("Reshape", ["grid", g.c(np.array([2, 14, 2, 2], np.int64))])]))
        inputs = [("x", TensorProto.FLOAT, [2, 3, 5, 6]), ("grid", TensorProto.FLOAT, [2, 4, 7, 2]),
                  ("v", TensorProto.FLOAT, [1, 2, 3, 4, 5]),
                  ("vgrid", TensorProto.FLOAT, [1, 2, 3, 2, 3]),
                  ("cols", TensorProto.FLOAT, [2, 12, 15])]
        self.check(g.model(inputs, outs, opset=20), inputs)

    def test_grid_sample_cubic_border(self):
        """ONNX's reference clamps an out-of-range cubic sample position to the border before
        taking the 4 taps; onnxruntime 1.32 gives other values there. kora follows ONNX's
        reference."""
        g = G()
        outs = [g.op("GridSample", ["x", "grid"], mode="cubic", padding_mode="border",
                     align_corners=a) for a in (0, 1)]
        inputs = [("x", TensorProto.FLOAT, [1, 2, 5, 6]), ("grid", TensorProto.FLOAT, [1, 4, 7, 2])]
        self.check(g.model(inputs, outs, opset=20), inputs, reference="onnx")

    def test_roi_align(self):
        """RoiAlign, avg and max, both coordinate transformations, fixed and adaptive
        sampling; MaxUnpool of MaxPool's indices."""
        g = G()
        rois = g.c(np.array([[0, 0, 5, 5], [2, 1.5, 9, 8.3], [1, 1, 3, 11], [4, 2, 4.5, 2.2]],
                            np.float32))
        idx = g.c(np.array([0, 1, 1, 0], np.int64))
        outs = []
        for mode in ("avg", "max"):
            for ctm in ("half_pixel", "output_half_pixel"):
                for ratio in (0, 2):
                    outs.append(g.op("RoiAlign", ["x", rois, idx], mode=mode, output_height=3,
                                     output_width=4, sampling_ratio=ratio, spatial_scale=0.8,
                                     coordinate_transformation_mode=ctm))
        pooled, ind = g.op("MaxPool", ["x"], outputs=2, kernel_shape=[2, 2], strides=[2, 2])
        outs.append(g.op("MaxUnpool", [pooled, ind], kernel_shape=[2, 2], strides=[2, 2]))
        inputs = [("x", TensorProto.FLOAT, [2, 3, 10, 12])]
        self.check(g.model(inputs, outs, opset=16), inputs)

    def test_deform_conv(self):
        """DeformConv with groups, two offset groups, a mask and a bias, strides, uneven pads
        and dilations, offsets large enough to sample outside X; and one with defaults only."""
        g = G()
        full = g.op("DeformConv", ["x", g.w(6, 2, 3, 2), "offset", g.w(6), "mask"], group=2,
                    offset_group=2, strides=[2, 1], pads=[1, 0, 2, 1], dilations=[1, 2])
        plain = g.op("DeformConv", ["x", g.w(3, 4, 2, 2), "offset2"])
        inputs = [("x", TensorProto.FLOAT, [2, 4, 7, 8]),
                  ("offset", TensorProto.FLOAT, [2, 24, 4, 7]),
                  ("mask", TensorProto.FLOAT, [2, 12, 4, 7]),
                  ("offset2", TensorProto.FLOAT, [2, 8, 6, 7])]
        feeds = {n: random_feed(t, s) for n, t, s in inputs}
        feeds["offset"] *= 2.5
        feeds["offset2"] *= 1.5
        self.check(g.model(inputs, [full, plain], opset=19), inputs, feeds)

    def test_einsum_diagonals(self):
        """Einsum with repeated labels: a batch diagonal, a trace (implicit output), a label
        three times, a diagonal beside a transpose, and a diagonal in one operand of a
        contraction."""
        g = G()
        outs = [g.op("Einsum", ["x"], equation="bii->bi"),
                g.op("Einsum", [g.op("Reshape", ["x", g.c(np.array([2, 2, 6, 6], np.int64))])],
                     equation="...ii"),
                g.op("Einsum", ["c"], equation="iii->i"),
                g.op("Einsum", ["d"], equation="ijib->bji"),
                g.op("Einsum", ["x", "y"], equation="bij,bjj->bi")]
        inputs = [("x", TensorProto.FLOAT, [4, 6, 6]), ("c", TensorProto.FLOAT, [5, 5, 5]),
                  ("d", TensorProto.FLOAT, [3, 4, 3, 2]), ("y", TensorProto.FLOAT, [4, 6, 6])]
        self.check(g.model(inputs, outs), inputs)

    def test_spectral(self):
        """DFT of a real signal (full and onesided, zero-padded), the inverse of a complex
        one along another axis, a long one (kept whole), and a log-mel spectrogram: STFT with a Hann window, power,
        MelWeightMatrix, Log; the other windows."""
        g = G()
        axis = lambda a: g.c(np.array(a, np.int64))
        full = g.op("DFT", ["s", "", axis(1)])
        half = g.op("DFT", ["s", g.c(np.array(20, np.int64)), axis(1)], onesided=1)
        inv = g.op("DFT", ["z", "", axis(-2)], inverse=1)
        hann = g.op("HannWindow", [g.c(np.array(16, np.int64))])
        spec = g.op("STFT", [g.op("Reshape", ["s", g.c(np.array([2, 64, 1], np.int64))]),
                             g.c(np.array(4, np.int64)), hann, g.c(np.array(16, np.int64))])
        power = g.op("ReduceSum", [g.op("Mul", [spec, spec]), g.c(np.array([-1], np.int64))],
                     keepdims=0)
        mel = g.op("MelWeightMatrix", [g.c(np.array(8, np.int64)), g.c(np.array(16, np.int64)),
                                       g.c(np.array(8000, np.int64)),
                                       g.c(np.array(100, np.float32)),
                                       g.c(np.array(3000, np.float32))])
        logmel = g.op("Log", [g.op("Add", [g.op("MatMul", [power, mel]),
                                          g.c(np.array(1e-3, np.float32))])])
        windows = [g.op(op, [g.c(np.array(9, np.int64))], periodic=p)
                   for op in ("HammingWindow", "BlackmanWindow") for p in (0, 1)]
        # 8192 samples: a cos/sin matrix too large to keep, so the DFT is kept whole.
        long = g.op("DFT", ["long", "", axis(1)], onesided=1)
        inputs = [("s", TensorProto.FLOAT, [2, 64, 1]), ("z", TensorProto.FLOAT, [3, 12, 5, 2]),
                  ("long", TensorProto.FLOAT, [1, 8192, 1])]
        self.check(g.model(inputs, [full, half, inv, logmel, long] + windows, opset=20), inputs)

    def test_spatial_transformer(self):
        """AffineGrid from a regressed theta, then GridSample: a spatial transformer, 2-D
        and 3-D (align_corners both ways)."""
        g = G()
        outs = []
        for align in (0, 1):
            flat = g.op("Flatten", ["x"])
            theta = g.op("Reshape", [g.op("Add", [g.op("MatMul", [flat, g.w(3 * 8 * 9, 6, scale=0.02)]),
                                                  g.c(np.array([1, 0, 0, 0, 1, 0], np.float32))]),
                                     g.c(np.array([2, 2, 3], np.int64))])
            grid = g.op("AffineGrid", [theta, g.c(np.array([2, 3, 6, 7], np.int64))],
                        align_corners=align)
            outs.append(g.op("GridSample", ["x", grid], align_corners=align))
        grid3 = g.op("AffineGrid", ["theta3", g.c(np.array([1, 2, 3, 4, 5], np.int64))])
        outs.append(g.op("GridSample", ["v", grid3], padding_mode="border"))
        inputs = [("x", TensorProto.FLOAT, [2, 3, 8, 9]), ("theta3", TensorProto.FLOAT, [1, 3, 4]),
                  ("v", TensorProto.FLOAT, [1, 2, 3, 4, 5])]
        self.check(g.model(inputs, outs, opset=20), inputs)

    def test_constant_unique_wrap_pad_and_argmax_order(self):
        """Unique of a constant (its sizes are data: computed at compile time), wrap padding
        (a gather per dim), MaxPool's column-major Indices, Dropout in training mode with
        ratio 0 (keeps everything), BatchNormalization in training mode."""
        g = G()
        vals = g.c(np.array([[2, 1, 1], [3, 2, 1], [2, 1, 1]], np.int64))
        uy, ui, uinv, uc = g.op("Unique", [vals], outputs=4, axis=0, sorted=0)
        fy = g.op("Unique", [g.c(np.array([4.5, -1, 4.5, 0, -1], np.float32))], sorted=1)
        used = g.op("Add", ["x", g.op("ReduceSum", [g.op("Cast", [uy], to=TensorProto.FLOAT)],
                                      keepdims=0)])
        wrap = g.op("Pad", ["x", g.c(np.array([0, 0, 2, -1, 0, 0, 1, 3], np.int64))], mode="wrap")
        pooled, idx = g.op("MaxPool", ["x"], outputs=2, kernel_shape=[2, 2], storage_order=1)
        drop, mask = g.op("Dropout", ["x", g.c(np.array(0.0, np.float32)),
                                      g.c(np.array(True))], outputs=2)
        inputs = [("x", TensorProto.FLOAT, [1, 2, 4, 5])]
        self.check(g.model(inputs, [uy, ui, uinv, uc, fy, used, wrap, pooled, idx, drop, mask],
                           opset=19), inputs)

    def test_batch_norm_training(self):
        g = G()
        y, mean, var = g.op("BatchNormalization",
                            ["x", g.w(3), g.w(3), g.w(3), g.w(3, positive=True)], outputs=3,
                            training_mode=1, momentum=0.8, epsilon=1e-4)
        inputs = [("x", TensorProto.FLOAT, [2, 3, 4, 5])]
        self.check(g.model(inputs, [y, mean, var], opset=15), inputs)

    def test_tfidf_vectorizer_with_skips(self):
        """TfIdfVectorizer in TFIDF mode on a 2-D input: unigrams and bigrams (tokens up to
        3 skips apart), ngram_indexes permuted, each n-gram's weight at its output index."""
        g = G()
        y = g.op("TfIdfVectorizer", ["x"], mode="TFIDF", min_gram_length=1, max_gram_length=2,
                 max_skip_count=3, ngram_counts=[0, 4], ngram_indexes=[6, 0, 3, 1, 2, 5, 4],
                 pool_int64s=[2, 3, 5, 4, 5, 6, 7, 8, 6, 7],
                 weights=[0.5, 1.5, 2.0, 0.25, 3.0, 1.25, 0.75])
        inputs = [("x", TensorProto.INT64, [3, 12])]
        feeds = {"x": RNG.integers(2, 9, (3, 12)).astype(np.int64)}
        self.check(g.model(inputs, [y], opset=9), inputs, feeds=feeds)

    def test_resize_antialias(self):
        """Resize with antialias=1 (opset 18): a linear downsample by 0.6 widens the
        triangle filter to 1/0.6 (4 taps per output); cubic downsampling by sizes."""
        g = G()
        lin = g.op("Resize", ["x", "", g.c(np.array([1, 1, 0.6, 0.6], np.float32))],
                   mode="linear", antialias=1)
        cub = g.op("Resize", ["x", "", "", g.c(np.array([1, 3, 5, 4], np.int64))],
                   mode="cubic", antialias=1)
        inputs = [("x", TensorProto.FLOAT, [1, 3, 10, 9])]
        self.check(g.model(inputs, [lin, cub], opset=18), inputs)


class QuantizationTest(unittest.TestCase):
    """The quantization operators against onnxruntime's CPU provider: integers exactly."""

    check = SyntheticTest.check

    def test_quantize_dequantize(self):
        g = G()
        x = "x"
        scale6 = g.c(np.array([0.5, 0.25, 1.0, 0.125, 2.0, 0.75], np.float32))
        # Per axis to uint8 with zero points; per tensor to int8 (ties x / 0.5 = k + 0.5 and
        # values past both ends of the range saturate); int16; without a zero point (uint8).
        qu = g.op("QuantizeLinear", [x, scale6, g.c(np.array([0, 3, 128, 250, 7, 255], np.uint8))],
                  axis=1)
        qi = g.op("QuantizeLinear", [x, g.c(np.array(0.5, np.float32)), g.c(np.array(-3, np.int8))])
        q16 = g.op("QuantizeLinear", [x, g.c(np.array(0.01, np.float32)),
                                      g.c(np.array(-7, np.int16))])
        qn = g.op("QuantizeLinear", [x, g.c(np.array(0.3, np.float32))])
        # Blocked (opset 21): blocks of 2 along the last axis.
        qb = g.op("QuantizeLinear", [x, g.w(2, 6, 5, 2, positive=True),
                                     g.c(RNG.integers(-5, 5, (2, 6, 5, 2)).astype(np.int8))],
                  axis=-1, block_size=2)
        du = g.op("DequantizeLinear", [qu, scale6, g.c(np.array([0, 3, 128, 250, 7, 255], np.uint8))],
                  axis=1)
        di = g.op("DequantizeLinear", [qi, g.c(np.array(0.5, np.float32)), g.c(np.array(-3, np.int8))])
        # Runtime int8 input, per axis with zero points along axis 2.
        dr = g.op("DequantizeLinear", ["q", g.w(5, positive=True), g.c(np.arange(-2, 3).astype(np.int8))],
                  axis=2)
        outs = [qu, qi, q16, qn, qb, du, di, dr]
        inputs = [("x", TensorProto.FLOAT, [2, 6, 5, 4]), ("q", TensorProto.INT8, [2, 6, 5, 4])]
        feeds = {"x": (RNG.integers(-700, 700, (2, 6, 5, 4)) * 0.25).astype(np.float32),
                 "q": random_feed(TensorProto.INT8, [2, 6, 5, 4])}
        self.check(g.model(inputs, outs, opset=21), inputs, feeds)

    def test_dynamic_quantize_matmul_integer(self):
        # quantize_dynamic's pattern, with zero points on both sides and K = 1024 (sums of
        # uint8 x int8 products beyond 2^24, where float32 accumulation is inexact).
        g = G()
        q, s, z = g.op("DynamicQuantizeLinear", ["x"], outputs=3)
        w = g.c(RNG.integers(-128, 128, (1024, 6)).astype(np.int8))
        acc = g.op("MatMulInteger", [q, w, z, g.c(RNG.integers(-128, 128, 6).astype(np.int8))])
        y = g.op("Mul", [g.op("Cast", [acc], to=TensorProto.FLOAT),
                         g.op("Mul", [s, g.c(np.array(0.02, np.float32))])])
        big = g.op("MatMulInteger", ["a", "b", g.c(np.array(255, np.uint8)), g.c(np.array(-128, np.int8))])
        inputs = [("x", TensorProto.FLOAT, [2, 3, 1024]), ("a", TensorProto.UINT8, [4, 1024]),
                  ("b", TensorProto.INT8, [1024, 3])]
        feeds = {"x": random_feed(TensorProto.FLOAT, [2, 3, 1024]),
                 "a": np.zeros((4, 1024), np.uint8), "b": np.full((1024, 3), 127, np.int8)}
        # The reference: onnxruntime where its integer GEMM is exact, else ONNX's evaluator.
        reference = "onnx" if ort_integer_gemm_saturates() else "onnxruntime"
        self.check(g.model(inputs, [q, s, z, acc, y, big]), inputs, feeds, reference=reference)
        allzero = {"x": np.zeros((2, 3, 1024), np.float32), "a": feeds["a"], "b": feeds["b"]}
        self.check(g.model(inputs, [q, s, z]), inputs, allzero)

    def test_qlinear_conv(self):
        g = G()
        # uint8 activations, int8 weights per output channel, padding, stride, 2 groups, bias;
        # then int8 activations with per-tensor weights, no bias. Where onnxruntime's integer
        # GEMM saturates (AVX2), the weights keep to 7 bits, as its quantizer's reduce_range
        # does (the reference evaluator fails on per-channel QLinearConv; kora's exactness
        # at full range: test_qlinear_matmul, test_dynamic_quantize_matmul_integer).
        m = 8
        low, high = (-64, 64) if ort_integer_gemm_saturates() else (-128, 128)
        y = g.op("QLinearConv", ["x", g.c(np.array(0.05, np.float32)), g.c(np.array(120, np.uint8)),
                                 g.c(RNG.integers(low, high, (m, 3, 3, 3)).astype(np.int8)),
                                 g.c((RNG.random(m) * 0.004 + 0.001).astype(np.float32)),
                                 g.c(np.zeros(m, np.int8)),
                                 g.c(np.array(0.4, np.float32)), g.c(np.array(10, np.uint8)),
                                 g.c(RNG.integers(-3000, 3000, m).astype(np.int32))],
                 pads=[1, 2, 1, 0], strides=[2, 1], group=2)
        z = g.op("QLinearConv", ["xi", g.c(np.array(0.02, np.float32)), g.c(np.array(-5, np.int8)),
                                 g.c(RNG.integers(low, high, (4, 6, 1, 3)).astype(np.int8)),
                                 g.c(np.array(0.003, np.float32)), g.c(np.array(0, np.int8)),
                                 g.c(np.array(0.05, np.float32)), g.c(np.array(3, np.int8))],
                 pads=[0, 1, 0, 1])
        c = g.op("ConvInteger", ["x", g.c(RNG.integers(0, 256, (4, 6, 3, 3)).astype(np.uint8)),
                                 g.c(np.array(131, np.uint8)), g.c(np.array(17, np.uint8))],
                 pads=[1, 1, 1, 1])
        inputs = [("x", TensorProto.UINT8, [2, 6, 9, 7]), ("xi", TensorProto.INT8, [1, 6, 5, 5])]
        self.check(g.model(inputs, [y, z, c]), inputs)

    def test_qlinear_matmul(self):
        g = G()
        # uint8 x int8 with per-column scales and zero points of B, 3-D x 2-D; int8 x int8.
        y = g.op("QLinearMatMul", ["a", g.c(np.array(0.02, np.float32)), g.c(np.array(128, np.uint8)),
                                   g.c(RNG.integers(-128, 128, (64, 5)).astype(np.int8)),
                                   g.c((RNG.random(5) * 0.01 + 0.005).astype(np.float32)),
                                   g.c(RNG.integers(-3, 3, 5).astype(np.int8)),
                                   g.c(np.array(0.3, np.float32)), g.c(np.array(100, np.uint8))])
        z = g.op("QLinearMatMul", ["ai", g.c(np.array(0.03, np.float32)), g.c(np.array(3, np.int8)),
                                   g.c(RNG.integers(-128, 128, (64, 7)).astype(np.int8)),
                                   g.c(np.array(0.05, np.float32)), g.c(np.array(-1, np.int8)),
                                   g.c(np.array(2.5, np.float32)), g.c(np.array(-4, np.int8))])
        inputs = [("a", TensorProto.UINT8, [2, 3, 64]), ("ai", TensorProto.INT8, [4, 64])]
        reference = "onnx" if ort_integer_gemm_saturates() else "onnxruntime"  # as above
        self.check(g.model(inputs, [y, z]), inputs, reference=reference)

    def test_qdq_conv_block(self):
        # A QDQ graph as onnxruntime.quantization writes it (float operators between
        # DequantizeLinear and QuantizeLinear), ending in integers.
        g = G()
        dq = lambda t, s, z, **a: g.op("DequantizeLinear", [t, g.c(np.array(s, np.float32)), z], **a)
        x = dq(g.op("QuantizeLinear", ["x", g.c(np.array(0.02, np.float32)), g.c(np.array(128, np.uint8))]),
               0.02, g.c(np.array(128, np.uint8)))
        wq = g.c(RNG.integers(-127, 128, (8, 3, 3, 3)).astype(np.int8))
        w = g.op("DequantizeLinear", [wq, g.c((RNG.random(8) * 0.01 + 0.002).astype(np.float32)),
                                      g.c(np.zeros(8, np.int8))],
                 axis=0)
        y = g.op("Relu", [g.op("Conv", [x, w, g.w(8)], pads=[1, 1, 1, 1])])
        out = g.op("QuantizeLinear", [y, g.c(np.array(0.05, np.float32)), g.c(np.array(0, np.uint8))])
        inputs = [("x", TensorProto.FLOAT, [1, 3, 10, 10])]
        self.check(g.model(inputs, [out]), inputs)

    def test_qdq_groups_give_onnxruntime_integers(self):
        # quantize_static's QDQ form: Conv with per-channel int8 weights (and an int32 bias
        # of scale x_scale * w_scale), an Add of two quantized tensors, MatMul with
        # per-tensor weights. onnxruntime runs these as QLinearConv, QLinearAdd and
        # QLinearMatMul; kora folds them the same way (src/frontend/qdq_fold.h) and must
        # give the same integers. The inputs are every pair of uint8 values, and the scales
        # were picked (by trying) where the graph as written quantizes some elements one
        # step apart: the test fails if the fold is not done or not done as onnxruntime does.
        g = G()
        c = lambda a: g.c(np.array(a))
        f32 = np.float32
        dq = lambda t, s, z, **a: g.op("DequantizeLinear", [t, c(f32(s)), c(z)], **a)
        x = dq("x", 0.038017768412828445, np.uint8(128))
        w = g.op("DequantizeLinear", [g.c(np.array([[69, 83], [-10, -86]], np.int8).reshape(2, 2, 1, 1)),
                                      g.c(np.array([0.009312747977674007, 0.001627179211936891], f32)),
                                      g.c(np.zeros(2, np.int8))], axis=0)
        conv = g.op("QuantizeLinear", [g.op("Conv", [x, w]), c(f32(0.017277613282203674)), c(np.uint8(128))])
        ws = (RNG.random(8) * 0.004 + 0.001).astype(f32)
        wb = g.op("DequantizeLinear", [g.c(RNG.integers(-127, 128, (8, 2, 3, 3)).astype(np.int8)),
                                       g.c(ws), g.c(np.zeros(8, np.int8))], axis=0)
        bias = g.op("DequantizeLinear", [g.c(RNG.integers(-3000, 3000, 8).astype(np.int32)),
                                         g.c((f32(0.038017768412828445) * ws).astype(f32)),
                                         g.c(np.zeros(8, np.int32))], axis=0)
        conv_bias = g.op("QuantizeLinear", [g.op("Conv", [x, wb, bias], pads=[1, 1, 1, 1]),
                                            c(f32(0.05)), c(np.uint8(100))])
        add = g.op("QuantizeLinear", [g.op("Add", [dq("x", 0.04315642639994621, np.uint8(128)),
                                                   dq("a", 0.011433660984039307, np.uint8(100))]),
                                      c(f32(0.03989467769861221)), c(np.uint8(110))])
        rows = dq(g.op("Reshape", [add, g.c(np.array([512, 256], np.int64))]), 0.03989467769861221,
                  np.uint8(110))
        m = dq(g.c(RNG.integers(-127, 128, (256, 24)).astype(np.int8)), 0.002, np.int8(0))
        mm = g.op("QuantizeLinear", [g.op("MatMul", [rows, m]), c(f32(0.3)), c(np.uint8(128))])
        grid = np.stack(np.meshgrid(np.arange(256), np.arange(256), indexing="ij"))
        feeds = {"x": grid.reshape(1, 2, 256, 256).astype(np.uint8),
                 "a": grid[::-1].reshape(1, 2, 256, 256).astype(np.uint8)}
        inputs = [("x", TensorProto.UINT8, [1, 2, 256, 256]), ("a", TensorProto.UINT8, [1, 2, 256, 256])]
        model = g.model(inputs, [conv, conv_bias, add, mm])
        # The graph as written differs from onnxruntime's integer kernels here.
        results = []
        for level in (ort.GraphOptimizationLevel.ORT_DISABLE_ALL, ort.GraphOptimizationLevel.ORT_ENABLE_ALL):
            opts = ort.SessionOptions()
            opts.graph_optimization_level = level
            exact_integer_gemm(opts)
            sess = ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])
            results.append(sess.run(None, feeds))
        differ = [int(np.count_nonzero(a.astype(int) - b.astype(int))) for a, b in zip(*results)]
        self.assertGreater(differ[0], 0, "the Conv's scales no longer tell the two forms apart")
        self.assertGreater(differ[2], 0, "the Add's scales no longer tell the two forms apart")
        self.check(model, inputs, feeds, optimized=True)

    # Recurrent operators (unrolled at the sequence length): X [seq, batch, input].
    def recurrent(self, g, op, gates, hidden, x, dirs=1, bias=True, initial=(),
                  batch_first_states=False, **attrs):
        """A recurrent node with random weights for input X (name, shape); `initial` names the
        optional inputs to give (initial_h, initial_c, P; a dict may add sequence_lens).
        batch_first_states: states drawn as [batch, dirs, hidden] (and transposed for layout
        0), so that a layout-0 node computes what the layout-1 node with the same seed does."""
        size = x[1][-1]
        ins = [x[0], g.w(dirs, gates * hidden, size), g.w(dirs, gates * hidden, hidden)]
        ins.append(g.w(dirs, 2 * gates * hidden) if bias else "")
        layout = attrs.get("layout", 0)
        batch = x[1][0] if layout else x[1][1]

        def state():
            if layout or batch_first_states:
                s = g.w(batch, dirs, hidden)
                return s if layout else g.op("Transpose", [s], perm=[1, 0, 2])
            return g.w(dirs, batch, hidden)

        lens = initial.get("sequence_lens") if isinstance(initial, dict) else None
        ins.append(g.c(np.array(lens, np.int32)) if lens is not None else "")
        ins.append(state() if "initial_h" in initial else "")
        if op == "LSTM":
            ins.append(state() if "initial_c" in initial else "")
            ins.append(g.w(dirs, 3 * hidden) if "P" in initial else "")
        while ins[-1] == "":
            ins.pop()
        return g.op(op, ins, outputs=3 if op == "LSTM" else 2, hidden_size=hidden, **attrs)

    def test_lstm_bidirectional_peepholes_initial_states(self):
        g = G()
        x = ("x", [5, 3, 4])
        y, yh, yc = self.recurrent(g, "LSTM", 4, 6, x, dirs=2, direction="bidirectional",
                                   initial=("initial_h", "initial_c", "P"))
        inputs = [("x", TensorProto.FLOAT, x[1])]
        self.check(g.model(inputs, [y, yh, yc]), inputs)

    def test_lstm_clip_input_forget_activations(self):
        g = G()
        x = ("x", [4, 2, 3])
        y, yh, yc = self.recurrent(g, "LSTM", 4, 5, x, direction="reverse", clip=0.8,
                                   input_forget=1, initial=("P",),
                                   activations=["HardSigmoid", "Softsign", "ScaledTanh"],
                                   activation_alpha=[0.3, 0.9], activation_beta=[0.4, 1.1])
        inputs = [("x", TensorProto.FLOAT, x[1])]
        self.check(g.model(inputs, [y, yh, yc]), inputs)

    def test_gru_linear_before_reset(self):
        for lbr in (0, 1):
            with self.subTest(linear_before_reset=lbr):
                g = G()
                x = ("x", [6, 2, 4])
                y, yh = self.recurrent(g, "GRU", 3, 5, x, dirs=2, direction="bidirectional",
                                       linear_before_reset=lbr, initial=("initial_h",))
                # Without an initial state and bias: the first step's special cases.
                y2, yh2 = self.recurrent(g, "GRU", 3, 3, ("x", [6, 2, 4]), bias=lbr == 1,
                                         linear_before_reset=lbr, direction="reverse")
                inputs = [("x", TensorProto.FLOAT, x[1])]
                self.check(g.model(inputs, [y, yh, y2, yh2]), inputs)

    def test_rnn_activations_and_clip(self):
        g = G()
        x = ("x", [5, 2, 3])
        outs = []
        for acts, alpha, beta in [(["Relu", "LeakyRelu"], [0.2], []),
                                  (["Elu", "Affine"], [0.7, 0.5], [0.1]),
                                  (["ThresholdedRelu", "Softplus"], [0.1], []),
                                  (["Sigmoid", "Tanh"], [], [])]:
            scales = {k: v for k, v in (("activation_alpha", alpha), ("activation_beta", beta)) if v}
            outs += self.recurrent(g, "RNN", 1, 4, x, dirs=2, direction="bidirectional",
                                   activations=acts, clip=1.5, initial=("initial_h",), **scales)
        inputs = [("x", TensorProto.FLOAT, x[1])]
        self.check(g.model(inputs, outs), inputs)

    def test_recurrent_sequence_lens(self):
        g = G()
        x = ("x", [5, 3, 4])
        lens = {"sequence_lens": [5, 2, 0], "initial_h": 1, "initial_c": 1}
        outs = list(self.recurrent(g, "LSTM", 4, 3, x, dirs=2, direction="bidirectional",
                                   initial=lens))
        outs += self.recurrent(g, "GRU", 3, 3, x, dirs=2, direction="bidirectional",
                               linear_before_reset=1, initial=lens)
        outs += self.recurrent(g, "RNN", 1, 3, x, direction="reverse", initial=lens)
        inputs = [("x", TensorProto.FLOAT, x[1])]
        self.check(g.model(inputs, outs), inputs)

    def test_recurrent_layout_1(self):
        # onnxruntime has no batch-first recurrent kernels: the reference is the same node
        # with layout 0 between transposes.
        for op, gates in (("LSTM", 4), ("GRU", 3), ("RNN", 1)):
            with self.subTest(op=op):
                models = []
                for layout in (1, 0):
                    global RNG
                    RNG = np.random.default_rng(11)
                    g = G()
                    x = "x" if layout else g.op("Transpose", ["x"], perm=[1, 0, 2])
                    outs = self.recurrent(g, op, gates, 4, (x, [2, 5, 3] if layout else [5, 2, 3]),
                                          dirs=2, direction="bidirectional", layout=layout,
                                          initial=("initial_h", "initial_c", "P"),
                                          batch_first_states=True)
                    if not layout:
                        outs = [g.op("Transpose", [outs[0]], perm=[2, 0, 1, 3])] + [
                            g.op("Transpose", [o], perm=[1, 0, 2]) for o in outs[1:]]
                    models.append(g.model([("x", TensorProto.FLOAT, [2, 5, 3])], outs))
                inputs = [("x", TensorProto.FLOAT, [2, 5, 3])]
                self.check(models[0], inputs, reference_model=models[1])

    # Control flow, expanded at import: the subgraphs read tensors of the enclosing graph.
    @staticmethod
    def body(nodes, inputs, outputs):
        """A subgraph; a (name, type, shape) input gives its shape."""
        vi = lambda n, t, shape=None: helper.make_tensor_value_info(n, t, shape)
        return helper.make_graph(nodes, "body", [vi(*i) for i in inputs],
                                 [vi(*o) for o in outputs])

    def test_if_with_constant_condition(self):
        g = G()
        x = g.op("Relu", ["x"])
        w = g.w(4, 4)
        then_branch = self.body([helper.make_node("MatMul", [x, w], ["then_out"])], [],
                                [("then_out", TensorProto.FLOAT)])
        else_branch = self.body([helper.make_node("Neg", [x], ["else_out"])], [],
                                [("else_out", TensorProto.FLOAT)])
        outs = [g.op("If", [g.c(np.array(flag))], then_branch=then_branch,
                     else_branch=else_branch) for flag in (True, False)]
        inputs = [("x", TensorProto.FLOAT, [3, 4])]
        self.check(g.model(inputs, outs), inputs)

    def test_loop_unrolled(self):
        # y <- tanh(y W + x[i]) for a static trip count, with the running y as a scan output
        # and an If inside the body whose condition (iteration == 1) folds per iteration.
        g = G()
        w = g.w(4, 4)
        one = g.c(np.array(1, np.int64))
        row = helper.make_node("Gather", ["x", "i"], ["row"], axis=0)
        step = helper.make_node("Tanh", ["pre"], ["y_out"])
        mm = helper.make_node("MatMul", ["y_in", w], ["mm"])
        add = helper.make_node("Add", ["mm", "row"], ["pre"])
        is_one = helper.make_node("Equal", ["i", one], ["is_one"])
        branch = helper.make_node(
            "If", ["is_one"], ["extra"],
            then_branch=self.body([helper.make_node("Mul", ["y_out", "row"], ["t"])], [],
                                  [("t", TensorProto.FLOAT)]),
            else_branch=self.body([helper.make_node("Identity", ["y_out"], ["e"])], [],
                                  [("e", TensorProto.FLOAT)]))
        keep = helper.make_node("Identity", ["c_in"], ["c_out"])
        body = self.body([row, mm, add, step, is_one, branch, keep],
                         [("i", TensorProto.INT64, []), ("c_in", TensorProto.BOOL, []),
                          ("y_in", TensorProto.FLOAT)],
                         [("c_out", TensorProto.BOOL), ("y_out", TensorProto.FLOAT),
                          ("extra", TensorProto.FLOAT)])
        y, scan = g.op("Loop", [g.c(np.array(3, np.int64)), g.c(np.array(True)), "y0"],
                       outputs=2, body=body)
        inputs = [("x", TensorProto.FLOAT, [5, 2, 4]), ("y0", TensorProto.FLOAT, [2, 4])]
        self.check(g.model(inputs, [y, scan], opset=13), inputs)

    def test_scan_both_directions(self):
        # A running sum over axis 1 of one input and, backwards, axis 0 of another; the
        # scan outputs stacked along axis 0 and, reversed, axis 1.
        g = G()
        body = self.body(
            [helper.make_node("Add", ["s_in", "a"], ["s_out"]),
             helper.make_node("Mul", ["s_out", "b"], ["prod"]),
             helper.make_node("Relu", ["prod"], ["r"])],
            [("s_in", TensorProto.FLOAT), ("a", TensorProto.FLOAT), ("b", TensorProto.FLOAT)],
            [("s_out", TensorProto.FLOAT), ("prod", TensorProto.FLOAT),
             ("r", TensorProto.FLOAT)])
        s, prod, r = g.op("Scan", ["s0", "a", "b"], outputs=3, body=body, num_scan_inputs=2,
                          scan_input_axes=[1, 0], scan_input_directions=[0, 1],
                          scan_output_axes=[0, 1], scan_output_directions=[0, 1])
        inputs = [("s0", TensorProto.FLOAT, [3]), ("a", TensorProto.FLOAT, [3, 4]),
                  ("b", TensorProto.FLOAT, [4, 3])]
        self.check(g.model(inputs, [s, prod, r], opset=16), inputs)

    def test_scan8_batched(self):
        # Scan-8 (opset 8): a batch axis 0 before the sequence axis, sequence_lens first
        # (whole sequences here), `directions` per scan input.
        g = G()
        body = self.body(
            [helper.make_node("Add", ["s_in", "a"], ["s_out"]),
             helper.make_node("Mul", ["s_out", "b"], ["prod"])],
            [("s_in", TensorProto.FLOAT), ("a", TensorProto.FLOAT), ("b", TensorProto.FLOAT)],
            [("s_out", TensorProto.FLOAT), ("prod", TensorProto.FLOAT)])
        lens = g.c(np.array([5, 5], np.int64))
        s, prod = g.op("Scan", [lens, "s0", "a", "b"], outputs=2, body=body, num_scan_inputs=2,
                       directions=[0, 1])
        inputs = [("s0", TensorProto.FLOAT, [2, 3]), ("a", TensorProto.FLOAT, [2, 5, 3]),
                  ("b", TensorProto.FLOAT, [2, 5, 3])]
        self.check(g.model(inputs, [s, prod], opset=8), inputs)


class RandomTest(unittest.TestCase):
    """The random generators (src/interpreter/random.cc): their draws differ from numpy's,
    so their distributions are checked (moments within 6 standard errors over 40k draws),
    and that a seed makes a run repeatable while two generators draw differently."""

    def interpret(self, model, feeds=None):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "m.onnx")
            onnx.save(model, path)
            args = [KORA, "interpret", path, "--output-dir", os.path.join(tmp, "out")]
            for n, a in (feeds or {}).items():
                np.save(os.path.join(tmp, n + ".npy"), a)
                args += ["--input", f"{n}={os.path.join(tmp, n + '.npy')}"]
            proc = subprocess.run(args, capture_output=True, text=True, timeout=120)
            self.assertEqual(proc.returncode, 0, proc.stderr)
            return [np.load(os.path.join(tmp, "out", re.sub(r"[^A-Za-z0-9_.-]", "_", o.name) + ".npy"))
                    for o in model.graph.output]

    def test_distributions_seeds_and_dropout(self):
        g = G()
        n = 40000
        u = g.op("RandomUniform", [], shape=[200, 200], low=-1.0, high=3.0, seed=5.0)
        v = g.op("RandomNormal", [], shape=[200, 200], mean=2.0, scale=0.5, dtype=TensorProto.DOUBLE)
        w = g.op("RandomNormalLike", ["x"])
        b = g.op("Bernoulli", ["p"])
        y, mask = g.op("Dropout", ["x", g.c(np.array(0.3, np.float32)), g.c(np.array(True))],
                       outputs=2, seed=7)
        model = g.model([("x", TensorProto.FLOAT, [200, 200]), ("p", TensorProto.FLOAT, [200, 200])],
                        [u, v, w, b, y, mask])
        x = RNG.standard_normal((200, 200)).astype(np.float32) + 4
        p = np.where(np.arange(n).reshape(200, 200) % 2, 0.2, 0.9).astype(np.float32)
        uu, vv, ww, bb, yy, mm = self.interpret(model, {"x": x, "p": p})
        self.assertEqual((uu.dtype, vv.dtype, bb.dtype, mm.dtype),
                         (np.float32, np.float64, np.float32, np.bool_))
        self.assertTrue(((uu >= -1) & (uu < 3)).all())
        self.assertLess(abs(uu.mean() - 1.0), 6 * 4 / np.sqrt(12 * n))
        self.assertLess(abs(uu.var() - 16 / 12), 0.05)
        self.assertLess(abs(vv.mean() - 2.0), 6 * 0.5 / np.sqrt(n))
        self.assertLess(abs(vv.std() - 0.5), 0.01)
        self.assertLess(abs(ww.mean()), 6 / np.sqrt(n))
        self.assertTrue(np.isin(bb, (0, 1)).all())
        odd = (np.arange(n).reshape(200, 200) % 2).astype(bool)
        self.assertLess(abs(bb[odd].mean() - 0.2), 6 * np.sqrt(0.16 / (n / 2)))
        self.assertLess(abs(bb[~odd].mean() - 0.9), 6 * np.sqrt(0.09 / (n / 2)))
        np.testing.assert_allclose(yy[mm], x[mm] / 0.7, rtol=1e-6)
        self.assertTrue((yy[~mm] == 0).all())
        self.assertLess(abs((~mm).mean() - 0.3), 6 * np.sqrt(0.21 / n))
        # Repeatable: the same model draws the same values; the two normals differ.
        again = self.interpret(model, {"x": x, "p": p})
        for a, b2 in zip([uu, vv, ww, bb, yy, mm], again):
            np.testing.assert_array_equal(a, b2)
        self.assertFalse(np.array_equal((vv - 2) / 0.5, ww.astype(np.float64)))


class FissionStructureTest(unittest.TestCase):
    """What `kora fission --json` emits for a few operators, primitive by primitive."""

    def fission(self, model):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "m.onnx")
            onnx.save(model, path)
            proc = subprocess.run([KORA, "fission", "--json", path], capture_output=True,
                                  text=True, timeout=60)
            self.assertEqual(proc.returncode, 0, proc.stderr)
            import json
            return json.loads(proc.stdout)

    def test_softmax_is_numerically_stable(self):
        g = G()
        out = g.op("Softmax", ["x"], axis=-1)
        j = self.fission(g.model([("x", TensorProto.FLOAT, [4, 10])], [out]))
        ops = [(p["kind"], p["op"].split("(")[0].split(" ")[0]) for p in j["primitives"]
               if p["kind"] != "broadcast"]
        self.assertEqual(ops, [("reduce", "max"), ("elementwise", "sub"), ("elementwise", "exp"),
                               ("reduce", "sum"), ("elementwise", "div")])

    def test_batchnorm_coefficients_fold(self):
        g = G()
        y = g.op("BatchNormalization", ["x", g.w(3), g.w(3), g.w(3), g.w(3, positive=True)])
        j = self.fission(g.model([("x", TensorProto.FLOAT, [1, 3, 4, 4])], [y]))
        kinds = sorted(p["kind"] for p in j["primitives"])
        # x * a + b: the per-channel a and b are computed at compile time.
        self.assertEqual(kinds, ["broadcast", "broadcast", "elementwise", "elementwise"])

    def test_gemm_is_matmul_plus_add(self):
        g = G()
        y = g.op("Gemm", ["x", g.w(5, 3), g.w(5)], transB=1)
        j = self.fission(g.model([("x", TensorProto.FLOAT, [2, 3])], [y]))
        self.assertEqual(j["counts"], {"broadcast": 1, "elementwise": 1, "linear": 1})
        self.assertNotIn("transpose", " ".join(p["op"] for p in j["primitives"]))  # folded

    def test_text_and_dot_views(self):
        g = G()
        out = g.op("Relu", [g.op("MaxPool", ["x"], kernel_shape=[2, 2])])
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "m.onnx")
            onnx.save(g.model([("x", TensorProto.FLOAT, [1, 1, 4, 4])], [out]), path)
            text = subprocess.run([KORA, "fission", path], capture_output=True, text=True).stdout
            self.assertIn("layout window", text)
            self.assertIn("counts: elementwise 1, layout 2, reduce 1", text)
            dot = subprocess.run([KORA, "fission", "--dot", path], capture_output=True, text=True).stdout
            self.assertTrue(dot.startswith("digraph"))
            self.assertIn("->", dot)


if __name__ == "__main__":
    KORA = os.path.abspath(sys.argv.pop(1))
    unittest.main(verbosity=1)
