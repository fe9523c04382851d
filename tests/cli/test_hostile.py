"""Broken and hostile input through the kora program (issue 25): each is one clear error
line naming the file, node or tensor, exit status 1 and nothing half written left behind,
or the correct result.

- a graph output listed twice; a zero-sized batch dimension (compile under every strategy,
  profile on demand and with --all);
- external data symlinked out of the model's directory (to /etc/passwd);
- .npy files as numpy writes them, every dtype kora accepts, C and Fortran order, format
  versions 1 to 3, read exactly; trailing data refused;
- `kora run --threads 100000` clamps to the machine and says so;
- `kora check`'s hint about installing onnxruntime only when it is missing.

usage: test_hostile.py PATH_TO_KORA
"""
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

KORA = None


def kora(*args, env=None):
    return subprocess.run([KORA, *args], capture_output=True, text=True, timeout=300, env=env)


def save(graph, path, opset=17):
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    onnx.save(model, path)
    return path


def relu_model(path, shape, outputs=("y",), elem=TensorProto.FLOAT):
    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"], name="the_relu")], "relu",
        [helper.make_tensor_value_info("x", elem, shape)],
        [helper.make_tensor_value_info(o, elem, None) for o in outputs])
    return save(graph, path)


class HostileInputTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="kora_hostile_")

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def path(self, name):
        return os.path.join(self.tmp, name)

    def assert_error(self, args, *fragments, env=None):
        r = kora(*args, env=env)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        lines = r.stderr.strip().splitlines()
        self.assertEqual(len(lines), 1, r.stderr)
        self.assertTrue(lines[0].startswith("kora: error: "), lines[0])
        for f in fragments:
            self.assertIn(f, lines[0])
        return lines[0]

    def assert_nothing_left(self):
        left = [f for f in os.listdir(self.tmp) if ".tmp-" in f or ".plan-" in f or f == "out"]
        self.assertEqual(left, [])

    def test_output_listed_twice(self):
        model = relu_model(self.path("twice.onnx"), [2, 3], outputs=("y", "y"))
        self.assert_error(["inspect", model], "'y'", "listed twice")
        self.assert_error(["compile", model, "-o", self.path("out"), "--no-measure"],
                          "'y'", "listed twice")
        self.assert_nothing_left()

    def test_zero_sized_batch(self):
        graph = helper.make_graph(
            [helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")], "mm",
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, [0, 4])],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
            [numpy_helper.from_array(np.ones((4, 3), np.float32), "w")])
        model = save(graph, self.path("zero.onnx"))
        for strategy in ("optimal", "greedy", "unfused"):
            with self.subTest(strategy=strategy):
                self.assert_error(["compile", model, "-o", self.path("out"), "--strategy",
                                   strategy, "--db", self.path("db.sqlite")],
                                  "'x'", "[0, 4]", "no elements")
                self.assert_nothing_left()
        for extra in ([], ["--all"]):
            with self.subTest(profile=extra):
                self.assert_error(["profile", model, "--db", self.path("db.sqlite"), *extra],
                                  "'x'", "no elements")
        # Symbolic: the --dim that makes it zero.
        graph.input[0].type.tensor_type.shape.dim[0].dim_param = "batch"
        model = save(graph, self.path("zero_sym.onnx"))
        self.assert_error(["compile", model, "-o", self.path("out"), "--dim", "batch=0",
                           "--no-measure"], "'x'", "no elements")
        self.assert_nothing_left()

    def test_external_data_symlinked_out_of_the_model_directory(self):
        graph = helper.make_graph(
            [helper.make_node("Add", ["x", "w"], ["y"], name="add")], "ext",
            [helper.make_tensor_value_info("x", TensorProto.UINT8, [16])],
            [helper.make_tensor_value_info("y", TensorProto.UINT8, None)])
        w = TensorProto(name="w", data_type=TensorProto.UINT8, dims=[16])
        w.data_location = TensorProto.EXTERNAL
        for key, value in (("location", "w.bin"), ("offset", "0"), ("length", "16")):
            entry = w.external_data.add()
            entry.key, entry.value = key, value
        graph.initializer.append(w)
        model = save(graph, self.path("ext.onnx"))
        os.symlink("/etc/passwd", self.path("w.bin"))
        self.assert_error(["inspect", model], "initializer 'w'", "escapes the model directory")
        self.assert_error(["compile", model, "-o", self.path("out"), "--no-measure"],
                          "escapes the model directory")
        self.assert_nothing_left()

    def numpy_round_trip(self, array, name, version=None):
        """`kora interpret` of an Identity model on a .npy numpy wrote: the output is the
        input, element for element."""
        elem = helper.np_dtype_to_tensor_dtype(array.dtype)
        graph = helper.make_graph(
            [helper.make_node("Identity", ["x"], ["y"], name="id")], "id",
            [helper.make_tensor_value_info("x", elem, list(array.shape))],
            [helper.make_tensor_value_info("y", elem, None)])
        model = save(graph, self.path(name + ".onnx"))
        npy = self.path(name + ".npy")
        if version is None:
            np.save(npy, array)
        else:
            with open(npy, "wb") as f:
                np.lib.format.write_array(f, array, version=version)
        out = self.path(name + "_out")
        r = kora("interpret", model, "--input", "x=" + npy, "--output-dir", out)
        self.assertEqual(r.returncode, 0, r.stderr)
        got = np.load(os.path.join(out, "y.npy"))
        self.assertEqual(got.dtype, array.dtype, name)
        self.assertEqual(got.shape, array.shape, name)
        np.testing.assert_array_equal(got, np.ascontiguousarray(array), name)

    def test_npy_files_numpy_writes(self):
        rng = np.random.default_rng(3)
        dtypes = [np.float32, np.float64, np.float16, np.int8, np.int16, np.int32, np.int64,
                  np.uint8, np.uint16, np.uint32, np.uint64, np.bool_]
        for dtype in dtypes:
            name = np.dtype(dtype).name
            with self.subTest(dtype=name):
                if dtype == np.bool_:
                    a = rng.integers(0, 2, (3, 4, 5)).astype(np.bool_)
                elif np.issubdtype(dtype, np.integer):
                    info = np.iinfo(dtype)
                    a = rng.integers(info.min, info.max, (3, 4, 5), dtype=dtype, endpoint=True)
                else:
                    a = rng.standard_normal((3, 4, 5)).astype(dtype)
                self.numpy_round_trip(a, name)
                self.numpy_round_trip(np.asfortranarray(a), name + "_fortran")
                self.numpy_round_trip(a.T, name + "_transposed")  # Fortran order too
        scalar = np.array(2.5, np.float32)
        self.numpy_round_trip(scalar, "scalar")
        self.numpy_round_trip(np.arange(6, dtype=np.int32), "vector_v2", version=(2, 0))
        self.numpy_round_trip(np.arange(6, dtype=np.float64).reshape(2, 3), "v3",
                              version=(3, 0))

    def test_npy_with_trailing_data(self):
        model = relu_model(self.path("relu.onnx"), [2, 3])
        npy = self.path("x.npy")
        np.save(npy, np.ones((2, 3), np.float32))
        with open(npy, "ab") as f:
            f.write(b"\0" * 4)
        self.assert_error(["interpret", model, "--input", "x=" + npy,
                           "--output-dir", self.path("o")], "x.npy", "trailing data")

    def test_int64_and_float16_inputs_run(self):
        """Inputs of int64 and float16 compile into artifacts that kora run accepts and
        computes right (given as .npy and as random inputs)."""
        for dtype, elem in ((np.int64, TensorProto.INT64), (np.float16, TensorProto.FLOAT16)):
            name = np.dtype(dtype).name
            with self.subTest(dtype=name):
                graph = helper.make_graph(
                    [helper.make_node("Add", ["x", "c"], ["y"], name="add")], name,
                    [helper.make_tensor_value_info("x", elem, [2, 3])],
                    [helper.make_tensor_value_info("y", elem, None)],
                    [numpy_helper.from_array(np.array([3], dtype), "c")])
                model = save(graph, self.path(name + ".onnx"))
                art = self.path(name + "_art")
                r = kora("compile", model, "-o", art, "--no-measure", "--no-verify")
                self.assertEqual(r.returncode, 0, r.stderr)
                x = np.arange(-3, 3).reshape(2, 3).astype(dtype)
                np.save(self.path(name + ".npy"), x)
                out = self.path(name + "_out")
                r = kora("run", art, "--input", "x=" + self.path(name + ".npy"),
                         "--output-dir", out)
                self.assertEqual(r.returncode, 0, r.stderr)
                np.testing.assert_array_equal(np.load(os.path.join(out, "y.npy")), x + dtype(3))
                r = kora("check", art, model)
                self.assertEqual(r.returncode, 0, r.stdout + r.stderr)

    def test_threads_beyond_the_machine(self):
        model = relu_model(self.path("relu.onnx"), [2, 3])
        out = self.path("art")
        r = kora("compile", model, "-o", out, "--no-measure", "--no-verify")
        self.assertEqual(r.returncode, 0, r.stderr)
        r = kora("run", out, "--threads", "100000")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("--threads 100000 is more than this machine's", r.stderr)
        self.assertIn("y float32 [2, 3]", r.stdout)

    def test_check_hint_only_when_onnxruntime_is_missing(self):
        model = relu_model(self.path("relu.onnx"), [2, 3])
        out = self.path("art")
        r = kora("compile", model, "-o", out, "--no-measure", "--no-verify")
        self.assertEqual(r.returncode, 0, r.stderr)
        garbage = self.path("garbage.onnx")
        with open(garbage, "wb") as f:
            f.write(b"not a model")
        line = self.assert_error(["check", out, garbage], "onnxruntime could not run")
        self.assertNotIn("needs python3 with the onnxruntime package", line)
        # A python that cannot import onnxruntime (no site packages).
        wrapper = self.path("python_without_packages")
        with open(wrapper, "w") as f:
            f.write("#!/bin/sh\nexec %s -I -S \"$@\"\n" % sys.executable)
        os.chmod(wrapper, 0o755)
        env = dict(os.environ, KORA_PYTHON=wrapper)
        self.assert_error(["check", out, model], "needs python3 with the onnxruntime package",
                          env=env)


if __name__ == "__main__":
    KORA = os.path.abspath(sys.argv.pop(1))
    unittest.main(verbosity=1)
