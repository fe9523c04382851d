"""Writes kora's built-in example models (no download): small versions of two real
architectures, built with onnx.helper and seeded random weights.

  candy_mini.onnx    fast-neural-style (Candy) shape: reflection padding, 9x9 and 3x3
                     convolutions, instance norm, residual blocks, nearest upsampling.
  encoder_mini.onnx  a transformer encoder layer as PyTorch exports it, with the
                     Shape/Gather/Concat shape arithmetic feeding Reshape.

usage: python3 models/builtin.py OUTPUT_DIR
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17


class Builder:
    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)
        self.nodes, self.inits = [], []
        self.count = 0

    def name(self, prefix):
        self.count += 1
        return f"{prefix}_{self.count}"

    def weight(self, prefix, shape, scale=None):
        fan_in = int(np.prod(shape[1:])) if len(shape) > 1 else int(shape[0])
        scale = scale if scale is not None else 1.0 / np.sqrt(max(fan_in, 1))
        arr = (self.rng.standard_normal(shape) * scale).astype(np.float32)
        n = self.name(prefix)
        self.inits.append(numpy_helper.from_array(arr, n))
        return n

    def const(self, prefix, arr):
        n = self.name(prefix)
        self.inits.append(numpy_helper.from_array(np.asarray(arr), n))
        return n

    def op(self, op_type, inputs, n_out=1, **attrs):
        outs = [self.name(op_type.lower()) for _ in range(n_out)]
        self.nodes.append(helper.make_node(op_type, inputs, outs, name=self.name(op_type), **attrs))
        return outs[0] if n_out == 1 else outs


def candy_mini(size=64, width=16):
    b = Builder(1)

    def conv_in_relu(x, cin, cout, k, stride=1, relu=True):
        p = k // 2
        x = b.op("Pad", [x, b.const("pads", np.array([0, 0, p, p, 0, 0, p, p], np.int64))],
                 mode="reflect")
        x = b.op("Conv", [x, b.weight("w", [cout, cin, k, k]), b.weight("b", [cout], 0.1)],
                 kernel_shape=[k, k], strides=[stride, stride])
        x = b.op("InstanceNormalization",
                 [x, b.weight("gamma", [cout], 1.0), b.weight("beta", [cout], 0.1)], epsilon=1e-5)
        return b.op("Relu", [x]) if relu else x

    x = "input"
    x = conv_in_relu(x, 3, width, 9)
    x = conv_in_relu(x, width, 2 * width, 3, 2)
    x = conv_in_relu(x, 2 * width, 4 * width, 3, 2)
    for _ in range(2):
        y = conv_in_relu(x, 4 * width, 4 * width, 3)
        y = conv_in_relu(y, 4 * width, 4 * width, 3, relu=False)
        x = b.op("Add", [x, y])
    for cin, cout in [(4 * width, 2 * width), (2 * width, width)]:
        x = b.op("Resize", [x, "", b.const("scales", np.array([1, 1, 2, 2], np.float32))],
                 mode="nearest")
        x = conv_in_relu(x, cin, cout, 3)
    x = b.op("Pad", [x, b.const("pads", np.array([0, 0, 4, 4, 0, 0, 4, 4], np.int64))],
             mode="reflect")
    x = b.op("Conv", [x, b.weight("w", [3, width, 9, 9]), b.weight("b", [3], 0.1)],
             kernel_shape=[9, 9])
    out = b.op("Tanh", [x])
    graph = helper.make_graph(
        b.nodes, "candy_mini",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 3, size, size])],
        [helper.make_tensor_value_info(out, TensorProto.FLOAT, None)], b.inits)
    return graph


def encoder_mini(seq=32, dim=64, heads=4, ffn=128):
    b = Builder(2)
    x = "tokens"
    # Shape arithmetic as exporters write it: batch and sequence read off the input.
    shape = b.op("Shape", [x])
    batch = b.op("Gather", [shape, b.const("i0", np.array(0, np.int64))], axis=0)
    length = b.op("Gather", [shape, b.const("i1", np.array(1, np.int64))], axis=0)
    unsq = lambda t: b.op("Unsqueeze", [t, b.const("ax", np.array([0], np.int64))])
    split_heads = b.op("Concat", [unsq(batch), unsq(length),
                                  b.const("h", np.array([heads, dim // heads], np.int64))], axis=0)
    merge_heads = b.op("Concat", [unsq(batch), unsq(length),
                                  b.const("d", np.array([dim], np.int64))], axis=0)

    def linear(t, cin, cout):
        return b.op("Add", [b.op("MatMul", [t, b.weight("w", [cin, cout])]),
                            b.weight("b", [cout], 0.1)])

    def heads_first(t):
        return b.op("Transpose", [b.op("Reshape", [t, split_heads])], perm=[0, 2, 1, 3])

    q, k, v = (heads_first(linear(x, dim, dim)) for _ in range(3))
    scores = b.op("MatMul", [q, b.op("Transpose", [k], perm=[0, 1, 3, 2])])
    scores = b.op("Div", [scores, b.const("scale", np.array(np.sqrt(dim // heads), np.float32))])
    attn = b.op("Softmax", [scores], axis=-1)
    ctx = b.op("Transpose", [b.op("MatMul", [attn, v])], perm=[0, 2, 1, 3])
    ctx = linear(b.op("Reshape", [ctx, merge_heads]), dim, dim)
    h = b.op("LayerNormalization", [b.op("Add", [x, ctx]), b.weight("ln1_g", [dim], 1.0),
                                     b.weight("ln1_b", [dim], 0.1)], axis=-1, epsilon=1e-5)
    f = linear(h, dim, ffn)
    # GELU (exact), as PyTorch exports it at opset 17: x * 0.5 * (1 + erf(x / sqrt(2))).
    erf = b.op("Erf", [b.op("Div", [f, b.const("sqrt2", np.array(np.sqrt(2), np.float32))])])
    f = b.op("Mul", [b.op("Mul", [f, b.op("Add", [erf, b.const("one", np.array(1, np.float32))])]),
                     b.const("half", np.array(0.5, np.float32))])
    f = linear(f, ffn, dim)
    out = b.op("LayerNormalization", [b.op("Add", [h, f]), b.weight("ln2_g", [dim], 1.0),
                                       b.weight("ln2_b", [dim], 0.1)], axis=-1, epsilon=1e-5)
    graph = helper.make_graph(
        b.nodes, "encoder_mini",
        [helper.make_tensor_value_info("tokens", TensorProto.FLOAT, ["batch", seq, dim])],
        [helper.make_tensor_value_info(out, TensorProto.FLOAT, None)], b.inits)
    return graph


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else "."
    os.makedirs(out_dir, exist_ok=True)
    for name, graph in [("candy_mini", candy_mini()), ("encoder_mini", encoder_mini())]:
        model = helper.make_model(graph, producer_name="kora-builtin",
                                  opset_imports=[helper.make_opsetid("", OPSET)])
        model.ir_version = 8
        onnx.save(model, os.path.join(out_dir, name + ".onnx"))
        print(os.path.join(out_dir, name + ".onnx"))


if __name__ == "__main__":
    main()
