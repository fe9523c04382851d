"""The parallel schedule (issue 27; `kora compile --schedule parallel`) against the serial
plan, per model, with one profile database for the run:
  1. `kora compile --schedule serial` and `--schedule parallel` (the second reuses the
     database the first filled); from the parallel compile's summary: whether a schedule
     was tried, its pairs, its predicted makespan and its latency in the check;
  2. both artifacts timed in turn (`kora run --iters`, separate processes, ROUNDS rounds,
     the order rotated each round): the parallel artifact's latency against the serial
     one's, and its predicted makespan against its measured latency.
The parallel compile emits its schedule only when faster on the clock, else a serial plan
(its own check's, which may differ from the serial compile's): such a model is reported
as "no schedule emitted", not timed.

usage: python3 bench/parallel_schedule.py build/kora MODEL.onnx [MODEL.onnx ...]
           [--db FILE] [--threads N] [--rounds N] [--iters N] [--out DIR] [--json FILE]
"""
import argparse
import json
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from plan_check import latency, run  # noqa: E402  (kora's commands, its run timing)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("kora")
    ap.add_argument("models", nargs="+")
    ap.add_argument("--db", default="/tmp/kora_parallel.db")
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--iters", type=int, default=30)
    ap.add_argument("--out", default="/tmp/kora_parallel")
    ap.add_argument("--json", default="")
    ap.add_argument("--kora-args", default="", help="more kora compile arguments")
    args = ap.parse_args()
    results = {}
    for model in args.models:
        name = os.path.splitext(os.path.basename(model))[0]
        r = results[name] = {}
        arts = {}
        for schedule in ("serial", "parallel"):
            art = arts[schedule] = os.path.join(args.out, f"{name}.{schedule}")
            t = time.time()
            summary = json.loads(run(
                [args.kora, "compile", model, "-o", art, "--db", args.db, "--threads",
                 str(args.threads), "--schedule", schedule, "--json"]
                + args.kora_args.split()).stdout)
            r[f"{schedule}_compile_s"] = round(time.time() - t, 1)
            if schedule == "parallel":
                tried = [c for c in summary.get("checked", [])
                         if c["label"] == "parallel schedule"]
                r["tried"] = bool(tried)
                if tried:
                    r["check_predicted_ms"] = tried[0]["predicted_ms"]
                    r["check_measured_ms"] = tried[0]["measured_ms"]
                    r["emitted_parallel"] = bool(tried[0].get("emitted"))
        with open(os.path.join(arts["parallel"], "manifest.json")) as f:
            kernels = json.load(f)["kernels"]
        steps = {}
        for k in kernels:
            steps.setdefault(k["step"], []).append(k)
        r["pairs"] = sum(len(v) == 2 for v in steps.values())
        r["kernels"] = len(kernels)
        if r["pairs"] == 0:
            # No schedule emitted: the parallel compile (a recompile) emitted a serial plan,
            # possibly another one than the serial compile's; timing the two would compare
            # serial plans, not a schedule.
            print(f"{name}: no schedule emitted ({r['kernels']} kernels)"
                  + (f"; in the check predicted {r['check_predicted_ms']:.3f} ms, measured "
                     f"{r['check_measured_ms']:.3f} ms" if r.get("tried") else "; not tried"),
                  flush=True)
            continue
        samples = {s: [] for s in arts}
        order = list(arts)
        for i in range(args.rounds):
            for s in order[i % 2:] + order[:i % 2]:
                samples[s].append(latency(args.kora, arts[s], args.iters))
        for s in arts:
            r[f"{s}_ms"] = statistics.median(samples[s])
        r["speedup"] = r["serial_ms"] / r["parallel_ms"]
        print(f"{name}: serial {r['serial_ms']:.3f} ms, parallel {r['parallel_ms']:.3f} ms "
              f"({r['speedup']:.2f}x), {r['pairs']} pairs of {r['kernels']} kernels"
              + (f"; in the check predicted {r['check_predicted_ms']:.3f} ms, measured "
                 f"{r['check_measured_ms']:.3f} ms" if r.get("tried") else "; not tried"),
              flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
