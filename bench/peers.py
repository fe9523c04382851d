"""kora against the runtimes users would pick instead (`make bench`): for each zoo model,
end-to-end latency of kora optimal, greedy and unfused, kora optimal with bf16 oneDNN
kernels (--bf16), onnxruntime, OpenVINO (float32
and its default precision), TVM, PyTorch eager
and torch.compile, all on the same inputs with the same thread count; peak memory of the
process that runs each; kora's optimization time with an empty and a warm profile
database; every system's output against onnxruntime's (relative L2).

kora, per model, under CACHE/MODEL/ (the layout `bench/profile_zoo.py --keep` writes):
  - profiles.db and kernels/ (the kernel cache). When there is no database yet,
    `kora profile` fills it and its wall time is kept in profile.json (empty database);
  - `kora compile --strategy S --db` per strategy: the optimal one's wall time is the
    optimization time with a warm database; with an empty one it is profiling + that;
  - `kora run --iters RUNS` times the artifact (its own warm-up, max(3, RUNS/10) runs).
Every other system runs in a process of its own (bench/peer_run.py), warm-up alike.
Peak memory is the running process's maximum resident set (wait4), libraries included.

usage: python bench/peers.py KORA ZOO_DIR [--models a,b] [--systems a,b] [--quick]
           [--runs N] [--rounds R] [--threads N] [--cache DIR] [--json FILE] [--chart FILE.png]
           [--kora-args '...'] [--max-seconds S]
  --quick   10 runs instead of 50 (and the model list, unless --models, the small ones)
Prints a markdown table (latency normalized to kora optimal) and writes the JSON
(default bench/results/DATE-MACHINE.json) and the chart (bench/chart.py).
"""
import argparse
import json
import math
import os
import platform
import re
import shlex
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx

HERE = os.path.dirname(os.path.abspath(__file__))
KORA_SYSTEMS = ["kora-optimal", "kora-greedy", "kora-unfused", "kora-bf16"]
PEERS = ["onnxruntime", "openvino-f32", "openvino", "tvm", "torch-eager", "torch-compile"]
SYSTEMS = KORA_SYSTEMS + PEERS
MODELS = ["mobilenet_v2", "efficientvit_b0", "resnet50", "candy", "yolov8n", "segformer_b0",
          "vit_b_16", "bert_base"]
QUICK_MODELS = ["mobilenet_v2", "efficientvit_b0", "candy"]


def load_json(path):
    with open(path) as f:
        return json.load(f)


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def run_measured(cmd, env=None):
    """Runs cmd; returns (stdout, wall seconds, peak resident MB of that process). The peak
    comes from GNU time: a child forked from this Python process would report this
    process's own resident set as its maximum (Linux carries it across exec)."""
    with tempfile.NamedTemporaryFile("r", suffix=".rss") as rss:
        start = time.perf_counter()
        proc = subprocess.run(["/usr/bin/time", "-f", "%M", "-o", rss.name] + cmd,
                              capture_output=True, text=True, env=env)
        wall = time.perf_counter() - start
        if proc.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)} failed ({proc.returncode}):\n"
                               f"{proc.stderr[-3000:]}")
        return proc.stdout, wall, int(rss.read().split()[-1]) / 1024.0


def make_inputs(model, directory, seed=0):
    """Random inputs for every graph input (floats normal, integers 0/1 as `kora check`),
    saved as NAME.npy; returns {name: path}."""
    os.makedirs(directory, exist_ok=True)
    rng = np.random.default_rng(seed)
    graph = onnx.load(model, load_external_data=False).graph
    paths = {}
    for i in graph.input:
        t = i.type.tensor_type
        shape = [d.dim_value if d.dim_value > 0 else 1 for d in t.shape.dim]
        dtype = onnx.helper.tensor_dtype_to_np_dtype(t.elem_type)
        value = (rng.standard_normal(shape).astype(dtype) if np.issubdtype(dtype, np.floating)
                 else rng.integers(0, 2, shape).astype(dtype))
        paths[i.name] = os.path.join(directory, i.name + ".npy")
        np.save(paths[i.name], value)
    return paths


def rel_l2(reference, path):
    a = np.load(reference).astype(np.float64).ravel()
    b = np.load(path).astype(np.float64).ravel()
    if a.shape != b.shape:
        return float("inf")
    return float(np.linalg.norm(a - b) / max(np.linalg.norm(a), 1e-30))


def kora_model(args, name, model, inputs, work, systems):
    """Profiles (when the cache has no database), compiles and runs kora's strategies."""
    cache = os.path.join(args.cache, name)
    os.makedirs(cache, exist_ok=True)
    env = dict(os.environ, KORA_KERNEL_CACHE=os.path.join(cache, "kernels"))
    db = os.path.join(cache, "profiles.db")
    info_path = os.path.join(cache, "profile.json")
    if not os.path.exists(db):
        log(f"[{name}] kora profile (empty database; minutes to an hour)")
        out, wall, _ = run_measured([args.kora, "profile", model, "--db", db, "--threads",
                                     str(args.threads), "--all", "--json"] + args.kora_args,
                                    env)
        with open(info_path, "w") as f:
            json.dump({"empty_s": wall, "threads": args.threads,
                       "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                       "summary": json.loads(out)}, f, indent=1)
    info = load_json(info_path) if os.path.exists(info_path) else {}
    results, optimization = {}, {"profile_empty_db_s": info.get("empty_s"),
                                 "profile_date": info.get("date")}
    for system in systems:
        # kora-bf16: the optimal plan with oneDNN kernels in bf16 (--bf16; its own records
        # in the database, measured by this compile the first time).
        bf16 = system == "kora-bf16"
        strategy = "optimal" if bf16 else system.split("-", 1)[1]
        artifact = os.path.join(work, system)
        log(f"[{name}] kora compile --strategy {strategy}" + (" --bf16" if bf16 else ""))
        out, wall, _ = run_measured([args.kora, "compile", model, "-o", artifact, "--strategy",
                                     strategy, "--db", db, "--threads", str(args.threads),
                                     "--json"] + (["--bf16"] if bf16 else []) + args.kora_args,
                                    env)
        summary = json.loads(out)
        if strategy == "optimal" and not bf16:
            optimization["warm_db_s"] = wall
            if info.get("empty_s") is not None:
                optimization["empty_db_s"] = info["empty_s"] + wall
        log(f"[{name}] kora run {system} --iters {args.runs}")
        feeds = [f"--input={n}={p}" for n, p in inputs.items()]
        out, _, peak = run_measured([args.kora, "run", artifact, "--iters", str(args.runs),
                                     "--threads", str(args.threads), "--output-dir",
                                     os.path.join(work, system + ".out")] + feeds, env)
        median = float(re.search(r"^median ([\d.]+) ms", out, re.M).group(1))
        p90 = float(re.search(r"^p90 ([\d.]+) ms", out, re.M).group(1))
        output = sorted(os.listdir(os.path.join(work, system + ".out")))[0]
        results[system] = {"median_ms": median, "p90_ms": p90, "peak_mb": peak, "runs": args.runs,
                           "kernels": summary["kernels"], "predicted_ms": summary["predicted_ms"],
                           "output": os.path.join(work, system + ".out", output)}
    return results, optimization


def peer_model(args, name, model, input_dir, work, system):
    env = dict(os.environ, TVM_NUM_THREADS=str(args.threads), OMP_NUM_THREADS=str(args.threads))
    output = os.path.join(work, system + ".npy")
    log(f"[{name}] {system}")
    out, _, peak = run_measured([sys.executable, os.path.join(HERE, "peer_run.py"), system,
                                 model, input_dir, output, "--threads", str(args.threads),
                                 "--runs", str(args.runs), "--max-seconds",
                                 str(args.max_seconds)], env)
    result = json.loads(out.strip().splitlines()[-1])
    result.update(peak_mb=peak, output=output)
    return result


def versions(kora):
    v = {"python": platform.python_version()}
    for module, key in [("onnxruntime", "onnxruntime"), ("openvino", "openvino"),
                        ("torch", "torch"), ("tvm", "tvm"),
                        ("numpy", "numpy")]:
        try:
            v[key] = __import__(module).__version__
        except Exception:  # a system not installed is reported, not fatal
            v[key] = None
    v["kora"] = subprocess.run(["git", "-C", HERE, "rev-parse", "--short", "HEAD"],
                               capture_output=True, text=True).stdout.strip() or None
    v["g++"] = subprocess.run(["g++", "-dumpfullversion"], capture_output=True,
                              text=True).stdout.strip()
    return v


def machine():
    cpu = "cpu"
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    return cpu, os.cpu_count()


def geomean(xs):
    xs = [x for x in xs if x and x > 0 and math.isfinite(x)]
    return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else float("nan")


def table(results, systems, runs):
    lines = ["| model | " + " | ".join(systems) + " |", "|---|" + "---|" * len(systems)]
    for name, res in results.items():
        base = res.get("kora-optimal", {}).get("median_ms")
        cells = []
        for s in systems:
            r = res.get(s, {})
            if "median_ms" not in r:
                cells.append(r.get("error", "-")[:40])
            else:
                ratio = f" ({r['median_ms'] / base:.2f}x)" if base else ""
                fewer = f" [{r['runs']} runs]" if r.get("runs", runs) < runs else ""
                cells.append(f"{r['median_ms']:.2f}{ratio}{fewer}")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    def ratios(s):
        return [res[s]["median_ms"] / res["kora-optimal"]["median_ms"]
                for res in results.values()
                if "median_ms" in res.get(s, {}) and "median_ms" in res.get("kora-optimal", {})]
    lines.append("| geomean vs kora optimal | " +
                 " | ".join(f"{geomean(ratios(s)):.2f}x" for s in systems) + " |")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("kora")
    ap.add_argument("zoo")
    ap.add_argument("--models", default="")
    ap.add_argument("--systems", default=",".join(SYSTEMS))
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--runs", type=int, default=0)
    ap.add_argument("--rounds", type=int, default=1,
                    help="time every system this many times, in turn (A B C A B C ...); each "
                         "system's median is the median of its rounds' medians")
    ap.add_argument("--max-seconds", type=float, default=0,
                    help="a peer whose RUNS runs would take longer gets fewer (at least 10; "
                         "the results record how many)")
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--cache", default=os.path.join(os.path.expanduser("~"), ".cache", "kora",
                                                    "bench"))
    ap.add_argument("--work", default="/tmp/kora_bench")
    ap.add_argument("--json", default="")
    ap.add_argument("--chart", default="")
    ap.add_argument("--kora-args", default="",
                    help="more options for kora profile and compile, e.g. '--max-kernel-size 8'")
    args = ap.parse_args()
    args.kora_args = shlex.split(args.kora_args)
    args.runs = args.runs or (10 if args.quick else 50)
    models = (args.models.split(",") if args.models else
              [m for m in (QUICK_MODELS if args.quick else MODELS)
               if os.path.exists(os.path.join(args.zoo, m + ".onnx"))])
    systems = args.systems.split(",")
    unknown = [s for s in systems if s not in SYSTEMS]
    if unknown:
        raise SystemExit(f"unknown systems {unknown}; choose from {SYSTEMS}")
    if not os.path.exists("/usr/bin/time"):
        raise SystemExit("bench needs GNU time for peak memory: apt-get install time")
    cpu, cores = machine()
    stamp = time.strftime("%Y-%m-%d")
    slug = re.sub(r"[^a-z0-9]+", "-", cpu.lower()).strip("-") + f"-{cores}c"
    json_path = args.json or os.path.join(HERE, "results", f"{stamp}-{slug}.json")
    report = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "machine": cpu,
              "cores": cores, "threads": args.threads, "runs": args.runs,
              "versions": versions(args.kora), "command": " ".join(sys.argv), "models": {}}
    for name in models:
        model = os.path.join(args.zoo, name + ".onnx")
        if not os.path.exists(model):
            raise SystemExit(f"{model} does not exist (make zoo exports the zoo)")
        work = os.path.join(args.work, name)
        inputs = make_inputs(model, os.path.join(work, "inputs"))
        res, entry = {}, {}
        # onnxruntime first: it is the reference every output is compared with.
        order = (["onnxruntime"] + [s for s in systems if s != "onnxruntime"])
        kora_systems = [s for s in order if s in KORA_SYSTEMS]
        for system in order:
            try:
                if system in KORA_SYSTEMS:
                    if system == kora_systems[0]:
                        kres, entry["kora_optimization"] = kora_model(args, name, model, inputs,
                                                                      work, kora_systems)
                        res.update(kres)
                else:
                    res[system] = peer_model(args, name, model, os.path.join(work, "inputs"),
                                             work, system)
            except Exception as e:  # one system failing does not stop the others
                lines = str(e).strip().splitlines()
                errors = [l for l in lines if "Error" in l or "error:" in l]
                res[system] = {"error": (errors or lines)[-1].strip()[:300]}
                log(f"[{name}] {system} failed: {e}")
        # More rounds, every system in turn, so that a noisy spell hits them all alike.
        for r in range(1, args.rounds):
            for system in order:
                if "median_ms" not in res.get(system, {}):
                    continue
                log(f"[{name}] round {r + 1}: {system}")
                if system in KORA_SYSTEMS:
                    out, _, _ = run_measured([args.kora, "run", os.path.join(work, system),
                                              "--iters", str(args.runs), "--threads",
                                              str(args.threads)])
                    ms = float(re.search(r"^median ([\d.]+) ms", out, re.M).group(1))
                else:
                    ms = peer_model(args, name, model, os.path.join(work, "inputs"), work,
                                    system)["median_ms"]
                res[system].setdefault("round_medians", [res[system]["median_ms"]]).append(ms)
        for r in res.values():
            if "round_medians" in r:
                r["median_ms"] = float(np.median(r["round_medians"]))
        reference = res.get("onnxruntime", {}).get("output")
        for system, r in res.items():
            if "output" in r:
                if reference:
                    r["rel_l2_vs_onnxruntime"] = rel_l2(reference, r["output"])
                del r["output"]
            if "median_ms" in r:
                log(f"[{name}] {system}: median {r['median_ms']:.3f} ms, p90 {r['p90_ms']:.3f} "
                    f"ms, peak {r['peak_mb']:.0f} MB, rel_l2 "
                    f"{r.get('rel_l2_vs_onnxruntime', float('nan')):.1e}")
        entry["systems"] = {s: res[s] for s in systems if s in res}
        report["models"][name] = entry
        os.makedirs(os.path.dirname(json_path), exist_ok=True)
        with open(json_path, "w") as f:  # after every model: a long run keeps what it has
            json.dump(report, f, indent=1)
    print(f"{cpu}, {cores} cores, {args.threads} threads, median of {args.runs} runs (ms); "
          f"in parentheses, the time relative to kora optimal")
    print(table({n: e["systems"] for n, e in report["models"].items()}, systems, args.runs))
    print("\nkora optimization time (s): model, empty database (profile + compile), warm")
    for n, e in report["models"].items():
        o = e.get("kora_optimization", {})
        print(f"  {n}: {o.get('empty_db_s') or float('nan'):.0f}, "
              f"{o.get('warm_db_s') or float('nan'):.1f}")
    print(f"\nresults: {json_path}")
    chart = args.chart or os.path.join(os.path.dirname(json_path), os.path.basename(
        json_path)[:-5] + ".png")
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        print("no chart: matplotlib is not installed (make bench installs it)")
        return
    subprocess.run([sys.executable, os.path.join(HERE, "chart.py"), json_path, chart],
                   check=True)


if __name__ == "__main__":
    main()
