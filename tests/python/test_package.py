"""The Python package (python/kora) end to end: compile models given as paths and as
onnx.ModelProto, run them through InferenceSession and compare with onnxruntime; the
session's description, errors, artifacts saved and loaded, progress on sys.stderr, and the
GIL released while kora compiles.

Run by `make test` (tests/CMakeLists.txt) with the build tree's python/ on PYTHONPATH:
    PYTHONPATH=build/python python3 -m pytest tests/python
"""
import json
import os
import threading
import time

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import kora


def rel_l2(got, want):
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    return np.linalg.norm(got - want) / max(np.linalg.norm(want), 1e-30)


def conv_net():
    """Conv -> BatchNorm-free bias -> Relu -> GlobalAveragePool -> Gemm, batch symbolic."""
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array(rng.standard_normal((8, 3, 3, 3)).astype(np.float32), "w")
    b = numpy_helper.from_array(rng.standard_normal(8).astype(np.float32), "b")
    fc = numpy_helper.from_array(rng.standard_normal((8, 5)).astype(np.float32), "fc")
    nodes = [
        helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1], name="conv"),
        helper.make_node("Relu", ["c"], ["r"], name="relu"),
        helper.make_node("GlobalAveragePool", ["r"], ["p"], name="pool"),
        helper.make_node("Flatten", ["p"], ["f"], name="flatten"),
        helper.make_node("MatMul", ["f", "fc"], ["logits"], name="fc"),
        helper.make_node("Softmax", ["logits"], ["probs"], axis=-1, name="softmax"),
    ]
    graph = helper.make_graph(
        nodes, "conv_net",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 3, 16, 16])],
        [helper.make_tensor_value_info("probs", TensorProto.FLOAT, ["batch", 5]),
         helper.make_tensor_value_info("r", TensorProto.FLOAT, ["batch", 8, 16, 16])],
        [w, b, fc])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def mixed_dtypes():
    """An int64 index input and a float input: Gather then Add."""
    table = numpy_helper.from_array(
        np.arange(40, dtype=np.float32).reshape(10, 4), "table")
    nodes = [helper.make_node("Gather", ["table", "ids"], ["g"], axis=0, name="gather"),
             helper.make_node("Add", ["g", "bias"], ["y"], name="add")]
    graph = helper.make_graph(
        nodes, "mixed",
        [helper.make_tensor_value_info("ids", TensorProto.INT64, [6]),
         helper.make_tensor_value_info("bias", TensorProto.FLOAT, [6, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [6, 4])], [table])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def ort_outputs(model, feeds, dims=None):
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    return str(tmp_path_factory.mktemp("db") / "profiles.db")


@pytest.fixture(scope="module")
def conv_artifact(tmp_path_factory, db):
    out = tmp_path_factory.mktemp("art") / "conv_net"
    return kora.compile(conv_net(), db=db, measure=False, output_dir=out, dims={"batch": 2},
                        progress=False)


def test_compile_model_proto_and_run_matches_onnxruntime(conv_artifact):
    art = conv_artifact
    assert art.kernels > 0 and art.strategy == "optimal" and art.target == "cpu"
    assert art.summary["kernels"] == art.kernels
    sess = kora.InferenceSession(art)
    x = np.random.default_rng(1).standard_normal((2, 3, 16, 16)).astype(np.float32)
    probs, r = sess.run(None, {"x": x})
    want_probs, want_r = ort_outputs(conv_net(), {"x": x})
    assert probs.shape == (2, 5) and probs.dtype == np.float32
    assert rel_l2(probs, want_probs) < 1e-4 and rel_l2(r, want_r) < 1e-4
    # Named outputs, in the order asked; a second run with other inputs gives new arrays.
    (only_r,) = sess.run(["r"], {"x": x})
    np.testing.assert_array_equal(only_r, r)
    x2 = np.ascontiguousarray(x[::-1])
    probs2, _ = sess.run(None, {"x": x2})
    assert rel_l2(probs2, ort_outputs(conv_net(), {"x": x2})[0]) < 1e-4
    assert rel_l2(probs, want_probs) < 1e-4  # the first result was not overwritten


def test_inputs_not_contiguous_or_python_lists(conv_artifact):
    sess = kora.InferenceSession(conv_artifact.path, threads=1)
    assert sess.threads == 1
    base = np.random.default_rng(2).standard_normal((16, 16, 3, 2)).astype(np.float32)
    x = base.transpose(3, 2, 0, 1)  # a strided view: copied once to C order
    assert not x.flags.c_contiguous
    (probs, _) = sess.run(None, {"x": x})
    assert rel_l2(probs, ort_outputs(conv_net(), {"x": np.ascontiguousarray(x)})[0]) < 1e-4


def test_stream_priority(conv_artifact):
    # A CPU artifact runs the same at any priority (a CUDA stream's); a bad one is one error.
    x = np.random.default_rng(3).standard_normal((2, 3, 16, 16)).astype(np.float32)
    (want, _) = kora.InferenceSession(conv_artifact).run(None, {"x": x})
    (got, _) = kora.InferenceSession(conv_artifact, priority="high").run(None, {"x": x})
    assert np.array_equal(want, got)
    with pytest.raises(kora.KoraError, match="takes 'normal', 'high' or 'low'"):
        kora.InferenceSession(conv_artifact, priority="urgent")


def test_get_inputs_and_outputs_like_onnxruntime(conv_artifact):
    sess = kora.InferenceSession(conv_artifact)
    (i,) = sess.get_inputs()
    assert (i.name, i.shape, i.type, i.dtype) == ("x", [2, 3, 16, 16], "tensor(float)",
                                                  np.float32)
    assert [o.name for o in sess.get_outputs()] == ["probs", "r"]
    assert [o.shape for o in sess.get_outputs()] == [[2, 5], [2, 8, 16, 16]]


def test_bf16_compile(tmp_path, db):
    """bf16=True: oneDNN kernels compute in bf16 (the fingerprint and the schedules say so),
    within the bf16 tolerance of onnxruntime and not as exactly as float32."""
    with open("/proc/cpuinfo") as f:
        flags = next((l.split(":", 1)[1].split() for l in f if l.startswith("flags")), [])
    if not all(f in flags for f in ("avx512f", "avx512bw", "avx512vl", "avx512dq")):
        # oneDNN's bf16 kernels need AVX-512: one clear error, not a float32 plan named bf16
        with pytest.raises(kora.KoraError, match="--bf16: .*AVX-512 only"):
            kora.compile(conv_net(), db=db, measure=False, output_dir=tmp_path / "bf16",
                         progress=False, bf16=True)
        return
    art = kora.compile(conv_net(), db=db, measure=False, output_dir=tmp_path / "bf16",
                       dims={"batch": 2}, progress=False, bf16=True, strategy="unfused")
    with open(os.path.join(art.path, "manifest.json")) as f:
        manifest = json.load(f)
    assert manifest["device"].endswith(" bf16")
    schedules = [k["schedule"] for k in manifest["kernels"] if k["impl"] == "onednn"]
    assert schedules and all(s.endswith("+bf16") for s in schedules), manifest["kernels"]
    x = np.random.default_rng(5).standard_normal((2, 3, 16, 16)).astype(np.float32)
    _, r = kora.InferenceSession(art).run(None, {"x": x})
    err = rel_l2(r, ort_outputs(conv_net(), {"x": x})[1])
    assert 1e-6 < err < 3e-2, err


def test_colocate(conv_artifact, tmp_path, db):
    """kora.colocate: a latency-critical artifact beside a best-effort one; the four runs."""
    be = kora.compile(mixed_dtypes(), db=db, measure=False, output_dir=tmp_path / "be",
                      progress=False)
    report = kora.colocate(conv_artifact, be, qps=40, target_ms=50, seconds=0.5,
                           progress=False)
    assert set(report["runs"]) == {"lc_alone", "be_alone", "naive", "scheduled"}
    assert report["runs"]["scheduled"]["lc"]["requests"] > 5
    assert report["runs"]["be_alone"]["be"][0]["runs"] > 0
    with pytest.raises(kora.KoraError, match="given twice"):
        kora.colocate(conv_artifact, [conv_artifact.path], qps=5, target_ms=9, seconds=0.5)
    with pytest.raises(kora.KoraError, match="--qps"):
        kora.colocate(conv_artifact, be, qps=0, target_ms=9)


def test_mixed_dtypes_from_a_path(tmp_path, db):
    model = mixed_dtypes()
    path = tmp_path / "mixed.onnx"
    onnx.save(model, path)
    art = kora.compile(str(path), db=db, measure=False, progress=False)
    sess = kora.InferenceSession(art)
    assert [i.type for i in sess.get_inputs()] == ["tensor(int64)", "tensor(float)"]
    ids = np.array([3, 1, 4, 1, 5, 9], np.int64)
    bias = np.random.default_rng(3).standard_normal((6, 4)).astype(np.float32)
    (y,) = sess.run(None, {"ids": ids, "bias": bias})
    np.testing.assert_allclose(y, np.arange(40, dtype=np.float32).reshape(10, 4)[ids] + bias,
                               rtol=1e-6)


def test_errors_are_kora_errors_with_one_line(conv_artifact, tmp_path, db):
    sess = kora.InferenceSession(conv_artifact)
    with pytest.raises(kora.KoraError, match=r"input 'x' must be float32 \[2, 3, 16, 16\]"):
        sess.run(None, {"x": np.zeros((1, 3, 16, 16), np.float32)})
    with pytest.raises(kora.KoraError, match=r"input 'x' must be float32"):
        sess.run(None, {"x": np.zeros((2, 3, 16, 16), np.float64)})
    with pytest.raises(kora.KoraError, match=r"no input 'y' \(its inputs: x\)"):
        sess.run(None, {"y": np.zeros((2, 3, 16, 16), np.float32)})
    with pytest.raises(kora.KoraError, match=r"no output 'nope'"):
        sess.run(["nope"], {"x": np.zeros((2, 3, 16, 16), np.float32)})
    assert issubclass(kora.KoraError, RuntimeError)
    # An operator kora does not know: the message names the node.
    bad = helper.make_model(helper.make_graph(
        [helper.make_node("NoSuchOp", ["a"], ["b"], name="mystery")], "bad",
        [helper.make_tensor_value_info("a", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("b", TensorProto.FLOAT, [2])]),
        opset_imports=[helper.make_opsetid("", 17)])
    with pytest.raises(kora.KoraError, match="mystery") as e:
        kora.compile(bad, db=db, measure=False, progress=False)
    assert "\n" not in str(e.value)
    with pytest.raises(kora.KoraError, match="not a kora artifact"):
        kora.load(tmp_path)
    with pytest.raises(kora.KoraError):
        kora.compile(str(tmp_path / "missing.onnx"), db=db, measure=False, progress=False)
    with pytest.raises(TypeError):
        kora.compile(42)


def test_temporary_artifact_saved_and_loaded(tmp_path, db):
    art = kora.compile(mixed_dtypes(), db=db, measure=False, progress=False)
    temp = art.path
    assert os.path.isdir(temp) and temp != str(tmp_path)
    saved = art.save(tmp_path / "saved")
    again = kora.load(tmp_path / "saved")
    assert again.kernels == saved.kernels == art.kernels
    assert again.predicted_ms == pytest.approx(art.predicted_ms)
    del art
    assert not os.path.exists(temp)  # removed with its Artifact
    sess = kora.InferenceSession(str(tmp_path / "saved"))
    ids = np.zeros(6, np.int64)
    (y,) = sess.run(None, {"ids": ids, "bias": np.ones((6, 4), np.float32)})
    np.testing.assert_allclose(y, np.tile(np.arange(4, dtype=np.float32) + 1, (6, 1)))
    with pytest.raises(kora.KoraError, match="not a kora artifact; not replacing"):
        (tmp_path / "other").mkdir()
        (tmp_path / "other" / "keep.txt").write_text("mine")
        again.save(tmp_path / "other")


def test_measured_compile_progress_and_profile(tmp_path, capsys):
    db = str(tmp_path / "measured.db")
    art = kora.compile(mixed_dtypes(), db=db, threads=1, progress=True)
    err = capsys.readouterr().err
    assert "kora" in err and "profile" in err  # the CLI's progress lines, on sys.stderr
    assert art.summary["profile"]["measured"] > 0 and art.summary["proven_optimal"]
    assert all(v >= 0 for v in art.summary["seconds"].values()), art.summary["seconds"]
    sess = kora.InferenceSession(art)
    sess.run(None, {"ids": np.zeros(6, np.int64), "bias": np.zeros((6, 4), np.float32)})
    kernels = sess.profile(iters=5)
    assert len(kernels) == art.kernels
    assert all(k["in_plan_ms"] >= 0 and k["primitives"] for k in kernels)
    assert sess.plan_ms() > 0
    # The database now holds the kernels: a second compile measures nothing.
    again = kora.compile(mixed_dtypes(), db=db, threads=1, progress=False)
    assert again.summary["profile"]["measured"] == 0
    # Measured on demand: some candidates are left; measure="all" measures them first.
    assert art.summary["on_demand"]["measured"] == art.summary["profile"]["measured"]
    full = kora.compile(mixed_dtypes(), db=db, threads=1, progress=False, measure="all")
    assert "on_demand" not in full.summary and full.summary["estimated_kernels"] == 0
    assert full.summary["roofline_costs"] == 0
    with pytest.raises(ValueError, match="measure must be"):
        kora.compile(mixed_dtypes(), db=db, measure="some")


def test_gil_released_while_compiling(db):
    model = conv_net()
    done = threading.Event()
    result = {}

    def work():
        try:
            result["art"] = kora.compile(model, db=db, measure=False, dims={"batch": 4},
                                         progress=False)
        finally:
            done.set()

    ticks = 0
    start = time.perf_counter()
    t = threading.Thread(target=work)
    t.start()
    while not done.is_set():
        ticks += 1
        time.sleep(0.001)
    t.join()
    elapsed = time.perf_counter() - start
    assert result["art"].kernels > 0
    # With the GIL held for the whole compile this thread could not have ticked.
    if elapsed > 0.2:
        assert ticks > 20, (ticks, elapsed)


def test_report_of_an_artifact(conv_artifact, tmp_path):
    page = conv_artifact.report(tmp_path / "plan.html", iters=3)
    html = open(page).read()
    assert "<svg" in html
    # One group per kernel of the plan, each named after its kernel.
    assert html.count('class="cluster kernel impl_') == conv_artifact.kernels
    for k in range(conv_artifact.kernels):
        assert f'<g id="kernel_{k}" class="cluster kernel impl_' in html
    assert "https://" not in html and "http://" not in html
    gone = conv_artifact.save(tmp_path / "gone")
    os.remove(os.path.join(gone.path, "manifest.json"))
    with pytest.raises(kora.KoraError, match="manifest"):
        gone.report(tmp_path / "gone.html")


def test_targets():
    assert "cpu" in kora.targets() and "cuda" in kora.targets()
