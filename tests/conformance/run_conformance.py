"""Shape-inference conformance against the official ONNX backend node tests.

For every test under onnx/backend/test/data/node (shipped in the onnx wheel), decide
whether kora supports it (default-domain operators kora lists, opset in kora's range,
element types kora computes with). For each supported test, bind the test's inputs as
constants (some operators take their output shape from an input's value), run
`kora inspect --json`, and compare every output's shape and dtype with the expected
output tensors. Writes docs/conformance.md with --write-doc; with --check, exits 1 if a
supported test fails.

usage: run_conformance.py --kora build/kora [--check] [--write-doc docs/conformance.md]
"""
import argparse
import collections
import concurrent.futures
import glob
import json
import os
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
    if not MIN_OPSET <= opset <= MAX_OPSET:
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
        return name, ops, status, reason
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
            return name, ops, "unsupported", message.replace("kora: error: ", "")
        return name, ops, "fail", message
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
    if problems:
        return name, ops, "fail", "; ".join(problems)
    if set(ops) & DATA_DEPENDENT:
        return name, ops, "pass", "data-dependent rows: kora's upper bound covers the result"
    return name, ops, "pass", ""


def write_doc(path, results, supported_ops):
    per_op = collections.defaultdict(lambda: collections.Counter())
    for name, ops, status, _ in results:
        for op in ops:
            per_op[op]["total"] += 1
            if status in ("pass", "fail"):
                per_op[op]["supported"] += 1
            if status == "pass":
                per_op[op]["passing"] += 1
    counts = collections.Counter(r[2] for r in results)
    lines = [
        "# ONNX conformance",
        "",
        "Generated by `tests/conformance/run_conformance.py --write-doc docs/conformance.md`",
        f"from the backend node tests of onnx {onnx.__version__} ({len(results)} tests).",
        "",
        "A test is *supported* when all its operators are in `kora operators`, its opset is",
        f"in {MIN_OPSET}..{MAX_OPSET} and its tensors use element types kora computes with.",
        "*Shape inference* passes when kora's inferred shape and dtype of every output equal",
        "the test's expected output (for NonMaxSuppression, whose row count depends on the",
        "data, kora's static upper bound must cover it). `make test` runs this check.",
        "",
        f"**Shape inference: {counts['pass']} passing / {counts['pass'] + counts['fail']} "
        f"supported / {len(results)} total.**",
        "",
        "| operator | shape inference passing | supported | tests |",
        "|---|---|---|---|",
    ]
    for op in sorted(per_op):
        c = per_op[op]
        mark = "" if op in supported_ops else " (not supported)"
        lines.append(f"| {op}{mark} | {c['passing']} | {c['supported']} | {c['total']} |")
    lines += ["", "## Failing supported tests", ""]
    fails = [r for r in results if r[2] == "fail"]
    lines += [f"- `{n}`: {why}" for n, _, _, why in fails] or ["None."]
    lines += ["", "## Unsupported tests and why", ""]
    reasons = collections.defaultdict(list)
    for n, _, status, why in results:
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
    ap.add_argument("--filter", default="", help="only tests whose name contains this")
    args = ap.parse_args()
    supported_ops = set(subprocess.run([args.kora, "operators"], capture_output=True, text=True,
                                       check=True).stdout.split())
    tests = sorted(d for d in glob.glob(os.path.join(node_test_dir(), "test_*"))
                   if args.filter in os.path.basename(d))
    if not tests:
        print("no ONNX node tests found: is onnx==1.17.0 installed?")
        return 1
    with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        results = list(pool.map(lambda d: run_test(args.kora, d, supported_ops), tests))
    counts = collections.Counter(r[2] for r in results)
    for name, _, status, why in results:
        if status == "fail":
            print(f"FAIL {name}: {why}")
    if args.write_doc:
        write_doc(args.write_doc, results, supported_ops)
    print(f"conformance (shape inference): {counts['pass']} passing / "
          f"{counts['pass'] + counts['fail']} supported / {len(results)} total")
    print(f"{counts['pass']} passed, {counts['fail']} failed")
    return 1 if args.check and counts["fail"] else 0


if __name__ == "__main__":
    sys.exit(main())
