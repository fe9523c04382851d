"""Shape-inference conformance against the official ONNX backend node tests.

For every test under onnx/backend/test/data/node (shipped in the onnx wheel), decide
whether kora supports it (default-domain operators kora lists, opset in kora's range or
older with its operators unchanged since, element types kora computes with). For each supported test, bind the test's inputs as
constants (some operators take their output shape from an input's value), run
`kora inspect --json`, and compare every output's shape and dtype with the expected
output tensors. Then execute it: `kora interpret` (import -> fission -> reference
interpreter) on the test's inputs, each passed as --input unless kora reports that an
operator needs it as a constant, and compare the outputs with the expected ones within
the ONNX backend test tolerance (rtol 1e-3, atol 1e-7; integers and bools exactly); the few
tests whose expected outputs are wrong (ORT_REFERENCE) are compared with onnxruntime instead,
and the random generators' tests (RANDOM) by the properties of their distributions.
Writes docs/conformance.md with --write-doc; with --check, exits 1 if a supported test
fails either check.

usage: run_conformance.py --kora build/kora [--check] [--write-doc docs/conformance.md]
"""
import argparse
import collections
import concurrent.futures
import glob
import json
import os
import re
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import numpy_helper

MIN_OPSET, MAX_OPSET = 11, 22
# Element types kora computes with (TensorProto numbers).
KORA_DTYPES = {1: "float32", 2: "uint8", 3: "int8", 4: "uint16", 5: "int16", 6: "int32",
               7: "int64", 9: "bool", 10: "float16", 11: "float64", 12: "uint32",
               13: "uint64", 16: "bfloat16"}
# Operators whose output size depends on the data: kora sizes them for the largest
# possible result, so the check is that the bound holds.
DATA_DEPENDENT = {"NonMaxSuppression"}
# Tests whose expected outputs are wrong, and why: their execution is compared with
# onnxruntime's outputs on the test's inputs instead.
ORT_REFERENCE = {
    name: "onnx 1.17's reference QLinearMatMul casts to int8 without saturating (an "
          "accumulator of -236 is stored as 20); the operator's spec and onnxruntime saturate"
    for name in ("test_qlinearmatmul_2D_int8_float16", "test_qlinearmatmul_2D_int8_float32",
                 "test_qlinearmatmul_3D_int8_float16", "test_qlinearmatmul_3D_int8_float32")}

# Tests whose expected outputs carry more float32 rounding than the backend tests' atol
# allows where the exact value is 0 (onnxruntime differs from them by up to 1.9e-5 too),
# and the absolute tolerance they are compared with instead.
ATOL = {name: (1e-4, "an inverse DFT of values up to 54 whose exact zeros the expected "
                     "output holds as float32 rounding (up to 1.9e-5)")
        for name in ("test_dft_inverse", "test_dft_inverse_opset19")}


def bernoulli_properties(inputs, got, expected):
    """Bernoulli draws: 0 or 1, 0 where the probability is 0, 1 where it is 1."""
    p, y = inputs[0], got[0].astype(np.float64)
    if not np.isin(y, (0, 1)).all():
        return "values other than 0 and 1"
    if (y[p == 0] != 0).any() or (y[p == 1] != 1).any():
        return "a certain outcome drawn the other way"
    return None


def dropout_properties(inputs, got, expected):
    """Dropout in training mode: each element dropped (0, mask false) or kept and scaled by
    1 / (1 - ratio) (mask true); the fraction dropped near the ratio (5 sigma)."""
    x = inputs[0].astype(np.float64)
    ratio = float(inputs[1]) if len(inputs) > 1 else 0.5
    y = got[0].astype(np.float64)
    kept = ~np.isclose(y, 0) | np.isclose(x, 0)
    if not np.allclose(y[kept], x[kept] / (1 - ratio), rtol=1e-5):
        return "kept elements not scaled by 1 / (1 - ratio)"
    if len(got) > 1:
        mask = got[1].astype(bool)
        if (y[~mask] != 0).any() or not np.allclose(y[mask], x[mask] / (1 - ratio), rtol=1e-5):
            return "the mask disagrees with the output"
        dropped = 1 - mask.mean()
    else:
        dropped = 1 - kept.mean()
    if abs(dropped - ratio) > 5 * np.sqrt(ratio * (1 - ratio) / x.size) + 1e-9:
        return f"{dropped:.2f} dropped at ratio {ratio}"
    return None


# Tests of random generators: their expected outputs are numpy's draws, which no other
# generator reproduces; kora's draws (src/interpreter/random.cc) are checked for the
# distribution's properties instead, with the reason.
RANDOM = {}
for _name in ("test_bernoulli", "test_bernoulli_double", "test_bernoulli_seed"):
    for _suffix in ("", "_expanded"):
        RANDOM[_name + _suffix] = (bernoulli_properties, "Bernoulli draws: 0 or 1, certain "
                                   "outcomes (probability 0 or 1) exact")
for _name in ("test_training_dropout", "test_training_dropout_default",
              "test_training_dropout_default_mask", "test_training_dropout_mask"):
    RANDOM[_name] = (dropout_properties, "a random mask: each element 0 or scaled by "
                     "1 / (1 - ratio), the mask agreeing, the fraction dropped near the ratio")


def node_test_dir():
    return os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "node")


def elem_types(model):
    types = set()
    for vi in list(model.graph.input) + list(model.graph.output):
        if vi.type.HasField("tensor_type"):
            types.add(vi.type.tensor_type.elem_type)
        else:
            types.add(-1)  # sequence / optional / map
    for init in model.graph.initializer:
        types.add(init.data_type)
    return types


# Older operator versions kora implements too (older_opset.cc's also_implemented).
ALSO_IMPLEMENTED = {("Upsample", 9), ("Scan", 9), ("Scan", 8), ("Scatter", 9)}


def unchanged_since(ops, opset):
    """An older opset is read as MIN_OPSET when none of its operators changed in between
    (src/frontend/older_opset.cc asks ONNX's schema registry the same question)."""
    for op in set(ops) - {"Constant"}:
        try:
            then = onnx.defs.get_schema(op, opset).since_version
            now = onnx.defs.get_schema(op, MIN_OPSET).since_version
        except onnx.defs.SchemaError:
            return False
        if then != now and (op, then) not in ALSO_IMPLEMENTED:
            return False
    return True


def classify(model, supported_ops):
    """(status, reason) before running kora: 'supported' or 'unsupported'."""
    ops = [n.op_type for n in model.graph.node]
    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 0)
    other = sorted({n.domain for n in model.graph.node if n.domain not in ("", "ai.onnx")})
    if other:
        return "unsupported", f"operator domain {other[0]}"
    missing = sorted({op for op in ops if op not in supported_ops})
    if missing:
        return "unsupported", "operator " + ", ".join(missing)
    if opset > MAX_OPSET or (opset < MIN_OPSET and not unchanged_since(ops, opset)):
        return "unsupported", f"opset {opset}"
    bad = sorted(t for t in elem_types(model) if t not in KORA_DTYPES)
    if bad:
        names = [onnx.TensorProto.DataType.Name(t) if t >= 0 else "non-tensor" for t in bad]
        return "unsupported", "element type " + ", ".join(names)
    return "supported", ""


def load_pb(path):
    t = onnx.TensorProto()
    with open(path, "rb") as f:
        t.ParseFromString(f.read())
    return t


def run_test(kora, test_dir, supported_ops):
    name = os.path.basename(test_dir)
    model = onnx.load(os.path.join(test_dir, "model.onnx"), load_external_data=False)
    ops = sorted({n.op_type for n in model.graph.node})
    status, reason = classify(model, supported_ops)
    if status != "supported":
        return name, ops, status, reason, "-", ""
    data = os.path.join(test_dir, "test_data_set_0")
    graph_inputs = [vi for vi in model.graph.input
                    if vi.name not in {i.name for i in model.graph.initializer}]
    with tempfile.TemporaryDirectory() as tmp:
        args = [kora, "inspect", "--json", os.path.join(test_dir, "model.onnx")]
        for k, vi in enumerate(graph_inputs):
            pb = os.path.join(data, f"input_{k}.pb")
            if not os.path.exists(pb):
                continue
            if vi.type.tensor_type.elem_type == onnx.TensorProto.BFLOAT16:
                continue  # numpy has no bfloat16; such inputs never define a shape
            npy = os.path.join(tmp, f"in{k}.npy")
            np.save(npy, numpy_helper.to_array(load_pb(pb)))
            args += ["--constant", f"{vi.name}={npy}"]
        proc = subprocess.run(args, capture_output=True, text=True, timeout=120)
    if proc.returncode != 0:
        message = proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else "no message"
        if proc.returncode == 1 and "not supported" in message:
            return name, ops, "unsupported", message.replace("kora: error: ", ""), "-", ""
        return name, ops, "fail", message, "-", ""
    got = {o["name"]: o for o in json.loads(proc.stdout)["outputs"]}
    problems = []
    for k, vo in enumerate(model.graph.output):
        expected = load_pb(os.path.join(data, f"output_{k}.pb"))
        shape = list(expected.dims)
        dtype = KORA_DTYPES.get(vo.type.tensor_type.elem_type, "?")
        o = got.get(vo.name)
        if o is None:
            problems.append(f"output {vo.name} missing")
            continue
        if dtype != o["dtype"]:
            problems.append(f"{vo.name}: dtype {o['dtype']}, expected {dtype}")
        if set(ops) & DATA_DEPENDENT:
            ok = len(shape) == len(o["shape"]) and o["shape"][1:] == shape[1:] \
                and o["shape"][0] >= shape[0]
            if not ok:
                problems.append(f"{vo.name}: bound {o['shape']} does not cover {shape}")
        elif shape != o["shape"]:
            problems.append(f"{vo.name}: shape {o['shape']}, expected {shape}")
    exec_status, exec_reason = execute(kora, test_dir, model, graph_inputs)
    if problems:
        return name, ops, "fail", "; ".join(problems), exec_status, exec_reason
    if set(ops) & DATA_DEPENDENT:
        return (name, ops, "pass", "data-dependent rows: kora's upper bound covers the result",
                exec_status, exec_reason)
    return name, ops, "pass", "", exec_status, exec_reason


NEEDS_CONSTANT = re.compile(r"input '([^']*)' \([^)]*\) must be a constant")


def npy_name(tensor):
    return re.sub(r"[^A-Za-z0-9_.-]", "_", tensor) + ".npy"


def compare(expected, got, data_dependent, atol=1e-7):
    """None when `got` matches `expected`, else what differs."""
    if data_dependent:  # kora's static bound: selected rows first, the rest -1
        rows = expected.shape[0]
        if got.shape[0] < rows or not (got[rows:] == -1).all():
            return "rows beyond the selection are not -1"
        got = got[:rows]
    if got.shape != expected.shape:
        return f"shape {list(got.shape)} vs {list(expected.shape)}"
    if expected.dtype.kind in "fc":
        exp64, got64 = expected.astype(np.float64), got.astype(np.float64)
        bad = ~np.isclose(got64, exp64, rtol=1e-3, atol=atol, equal_nan=True)
        if bad.any():
            i = np.unravel_index(np.argmax(bad), bad.shape)
            return f"{bad.sum()} of {bad.size} differ, e.g. at {list(i)}: {got64[i]} vs {exp64[i]}"
        return None
    if not np.array_equal(got.astype(np.int64), expected.astype(np.int64)):
        return "values differ"
    return None


def execute(kora, test_dir, model, graph_inputs):
    """Runs the test through kora's interpreter: ('pass'|'fail'|'skip', reason)."""
    data = os.path.join(test_dir, "test_data_set_0")
    if any(vi.type.tensor_type.elem_type == onnx.TensorProto.BFLOAT16
           for vi in list(model.graph.input) + list(model.graph.output)):
        return "skip", "bfloat16 data (numpy has no bfloat16)"
    constants = set()
    with tempfile.TemporaryDirectory() as tmp:
        files = {}
        for k, vi in enumerate(graph_inputs):
            pb = os.path.join(data, f"input_{k}.pb")
            if os.path.exists(pb):
                files[vi.name] = os.path.join(tmp, f"in{k}.npy")
                np.save(files[vi.name], numpy_helper.to_array(load_pb(pb)))
        for _ in range(len(files) + 1):
            args = [kora, "interpret", os.path.join(test_dir, "model.onnx"),
                    "--output-dir", os.path.join(tmp, "out")]
            for name, f in files.items():
                args += ["--constant" if name in constants else "--input", f"{name}={f}"]
            proc = subprocess.run(args, capture_output=True, text=True, timeout=300)
            if proc.returncode == 0:
                break
            message = proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else "crash"
            message = message.replace("kora: error: ", "")
            if proc.returncode == 1 and "not supported" in message:
                return "unsupported", message
            m = NEEDS_CONSTANT.search(message)
            if not m or set(files) <= constants:
                return "fail", message
            # Bind the input kora names; if it names a computed tensor, bind them all.
            constants |= {m.group(1)} if m.group(1) in files else set(files)
        ops = {n.op_type for n in model.graph.node}
        reference = None
        if os.path.basename(test_dir) in ORT_REFERENCE:
            import onnxruntime
            session = onnxruntime.InferenceSession(os.path.join(test_dir, "model.onnx"),
                                                   providers=["CPUExecutionProvider"])
            reference = session.run(None, {n: np.load(f) for n, f in files.items()})
        if os.path.basename(test_dir) in RANDOM:
            check = RANDOM[os.path.basename(test_dir)][0]
            got = [np.load(os.path.join(tmp, "out", npy_name(vo.name))) for vo in model.graph.output]
            wanted = [numpy_helper.to_array(load_pb(os.path.join(data, f"output_{k}.pb")))
                      for k in range(len(got))]
            for g, w in zip(got, wanted):
                if g.shape != w.shape or g.dtype != w.dtype:
                    return "fail", f"{g.dtype} {list(g.shape)} vs {w.dtype} {list(w.shape)}"
            why = check([np.load(files[vi.name]) for vi in graph_inputs if vi.name in files],
                        got, wanted)
            return ("fail", why) if why else ("pass", "")
        for k, vo in enumerate(model.graph.output):
            expected = numpy_helper.to_array(load_pb(os.path.join(data, f"output_{k}.pb")))
            if reference is not None:
                expected = reference[k]
            got = np.load(os.path.join(tmp, "out", npy_name(vo.name)))
            atol = ATOL.get(os.path.basename(test_dir), (1e-7, ""))[0]
            why = compare(expected, got, bool(ops & DATA_DEPENDENT), atol)
            if why:
                return "fail", f"{vo.name}: {why}"
    return "pass", ""


ZOO_BEGIN, ZOO_END = "<!-- zoo:begin -->", "<!-- zoo:end -->"


def zoo_section(path):
    """The real-model section `tests/zoo/test_zoo.py --write-doc` keeps in the same file."""
    try:
        text = open(path).read()
    except OSError:
        return []
    if ZOO_BEGIN not in text or ZOO_END not in text:
        return []
    body = text[text.index(ZOO_BEGIN):text.index(ZOO_END) + len(ZOO_END)]
    return body.split("\n") + [""]


def write_doc(path, results, supported_ops):
    per_op = collections.defaultdict(lambda: collections.Counter())
    for name, ops, status, _, exec_status, _ in results:
        for op in ops:
            per_op[op]["total"] += 1
            if status in ("pass", "fail"):
                per_op[op]["supported"] += 1
            if status == "pass":
                per_op[op]["passing"] += 1
            if exec_status == "pass":
                per_op[op]["executed"] += 1
    counts = collections.Counter(r[2] for r in results)
    exec_counts = collections.Counter(r[4] for r in results)
    lines = [
        "# ONNX conformance",
        "",
        "Generated by `tests/conformance/run_conformance.py --write-doc docs/conformance.md`",
        f"from the backend node tests of onnx {onnx.__version__} ({len(results)} tests).",
        "",
        "A test is *supported* when all its operators are in `kora operators`, its opset is",
        f"in {MIN_OPSET}..{MAX_OPSET} (or older, with every operator unchanged up to opset",
        f"{MIN_OPSET}) and its tensors use element types kora computes with.",
        "*Shape inference* passes when kora's inferred shape and dtype of every output equal",
        "the test's expected output (for NonMaxSuppression, whose row count depends on the",
        "data, kora's static upper bound must cover it). *Execution* passes when import ->",
        "fission -> reference interpreter (`kora interpret`) reproduces the expected outputs",
        "within the backend tests' tolerance (rtol 1e-3, atol 1e-7; integers exactly).",
        "`make test` runs both checks.",
        "",
        f"**Shape inference: {counts['pass']} passing / {counts['pass'] + counts['fail']} "
        f"supported / {len(results)} total.**",
        "",
        f"**Execution: {exec_counts['pass']} passing / {counts['pass'] + counts['fail']} "
        f"supported ({exec_counts['skip']} skipped: bfloat16 data numpy cannot hold; "
        f"{exec_counts['unsupported']} use a feature kora's fission does not support, listed "
        "below).**",
        "",
    ]
    lines += zoo_section(path) + [
        "| operator | shape inference passing | execution passing | supported | tests |",
        "|---|---|---|---|---|",
    ]
    for op in sorted(per_op):
        c = per_op[op]
        mark = "" if op in supported_ops else " (not supported)"
        lines.append(f"| {op}{mark} | {c['passing']} | {c['executed']} | {c['supported']} "
                     f"| {c['total']} |")
    lines += ["", "## Failing supported tests", ""]
    fails = [r for r in results if r[2] == "fail" or r[4] == "fail"]
    lines += [f"- `{r[0]}`: {r[3] or r[5]}" for r in fails] or ["None."]
    lines += ["", "## Tests compared with onnxruntime (wrong expected outputs)", ""]
    lines += [f"- `{n}`: {why}" for n, why in sorted(ORT_REFERENCE.items())]
    lines += ["", "## Tests compared with a larger absolute tolerance", ""]
    lines += [f"- `{n}`: atol {a:g}, {why}" for n, (a, why) in sorted(ATOL.items())]
    lines += ["", "## Tests of random generators, checked by their distribution's properties", ""]
    lines += [f"- `{n}`: {why}" for n, (_, why) in sorted(RANDOM.items())]
    lines += ["", "## Supported operators, unsupported features (execution)", ""]
    lines += [f"- `{r[0]}`: {r[5]}" for r in results if r[4] == "unsupported"] or ["None."]
    lines += ["", "## Unsupported tests and why", ""]
    reasons = collections.defaultdict(list)
    for n, _, status, why, _, _ in results:
        if status == "unsupported":
            reasons[why].append(n)
    for why in sorted(reasons, key=lambda w: (-len(reasons[w]), w)):
        names = reasons[why]
        shown = ", ".join(f"`{n}`" for n in names[:6]) + (" ..." if len(names) > 6 else "")
        lines.append(f"- {why} ({len(names)}): {shown}")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--kora", required=True)
    ap.add_argument("--check", action="store_true", help="exit 1 if a supported test fails")
    ap.add_argument("--write-doc", help="write the conformance table here")
    ap.add_argument("--filter", default="", help="only tests whose name matches this regex")
    args = ap.parse_args()
    supported_ops = set(subprocess.run([args.kora, "operators"], capture_output=True, text=True,
                                       check=True).stdout.split())
    tests = sorted(d for d in glob.glob(os.path.join(node_test_dir(), "test_*"))
                   if re.search(args.filter, os.path.basename(d)))
    if not tests:
        print("no ONNX node tests found: is onnx==1.17.0 installed?")
        return 1
    with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        results = list(pool.map(lambda d: run_test(args.kora, d, supported_ops), tests))
    counts = collections.Counter(r[2] for r in results)
    exec_counts = collections.Counter(r[4] for r in results)
    for name, _, status, why, exec_status, exec_why in results:
        if status == "fail":
            print(f"FAIL shape {name}: {why}")
        if exec_status == "fail":
            print(f"FAIL exec {name}: {exec_why}")
    if args.write_doc:
        write_doc(args.write_doc, results, supported_ops)
    supported = counts["pass"] + counts["fail"]
    print(f"conformance (shape inference): {counts['pass']} passing / {supported} supported / "
          f"{len(results)} total")
    print(f"conformance (execution): {exec_counts['pass']} passing / {supported} supported, "
          f"{exec_counts['skip']} skipped, {exec_counts['unsupported']} unsupported features")
    failed = sum(1 for r in results if r[2] == "fail" or r[4] == "fail")
    passed = sum(1 for r in results if r[2] == "pass" and r[4] != "fail")
    print(f"{passed} passed, {failed} failed")
    return 1 if args.check and failed else 0


if __name__ == "__main__":
    sys.exit(main())
