"""The plan checked against the clock (kora compile's default), measured per model: the
numbers behind docs/benchmarks.md's "costs in context" table.

Per model, with one profile database for the run (profiled first, `kora profile`):
  1. `kora compile --strategy optimal` (the check on the clock: optimal, greedy and unfused
     plans timed in turn, in-plan costs fed back, re-solved, the fastest emitted): what it
     predicted for the emitted plan when it chose it, what it measured, how long it took;
  2. `kora compile` again (the database now holds in-plan costs): the solver's prediction
     for its plan against that plan's measured latency: how well costs in context predict;
  3. `kora compile --strategy greedy|unfused --no-verify`: the baselines' artifacts;
  4. the emitted, greedy and unfused artifacts timed in turn (`kora run --iters`, separate
     processes, ROUNDS rounds, each round every artifact once in a rotated order): the
     emitted plan's latency against the baselines'.

usage: python3 bench/plan_check.py build/kora MODEL.onnx [MODEL.onnx ...] [--db FILE]
           [--threads N] [--rounds N] [--iters N] [--out DIR] [--json FILE]
           [--max-kernel-size N]
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{r.stderr[-2000:]}")
    return r


def latency(kora, art, iters):
    out = run([kora, "run", art, "--iters", str(iters)]).stdout
    return float(re.search(r"^median ([\d.]+) ms", out, re.M).group(1))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("kora")
    ap.add_argument("models", nargs="+")
    ap.add_argument("--db", default="/tmp/kora_plan_check.db")
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--iters", type=int, default=30)
    ap.add_argument("--out", default="/tmp/kora_plan_check")
    ap.add_argument("--json", default="")
    ap.add_argument("--max-kernel-size", type=int, default=0)
    args = ap.parse_args()
    common = ["--db", args.db, "--threads", str(args.threads)]
    if args.max_kernel_size:
        common += ["--max-kernel-size", str(args.max_kernel_size)]
    results = {}
    for model in args.models:
        name = os.path.splitext(os.path.basename(model))[0]
        r = results[name] = {}
        t = time.time()
        run([args.kora, "profile", model, "--all", "--json"] + common)
        r["profile_s"] = time.time() - t
        arts = {}
        for label, extra in [("optimal", []), ("optimal_again", []),
                             ("greedy", ["--strategy", "greedy", "--no-verify"]),
                             ("unfused", ["--strategy", "unfused", "--no-verify"])]:
            arts[label] = os.path.join(args.out, f"{name}.{label}")
            t = time.time()
            s = json.loads(run([args.kora, "compile", model, "-o", arts[label], "--json"] +
                               common + extra).stdout)
            r[label] = {"compile_s": time.time() - t, "kernels": s["kernels"],
                        "predicted_ms": s["predicted_ms"], "measured_ms": s.get("measured_ms"),
                        "checked": s.get("checked", [])}
            print(f"[{name}] {label}: {s['kernels']} kernels, predicted {s['predicted_ms']:.3f}"
                  f" ms, checked {s.get('measured_ms')} ms ({time.time() - t:.0f} s)",
                  file=sys.stderr, flush=True)
        timed = ["optimal_again", "greedy", "unfused"]
        samples = {k: [] for k in timed}
        for i in range(args.rounds):  # in turn, the order rotated every round
            order = timed[i % 3:] + timed[:i % 3]
            for k in order:
                samples[k].append(latency(args.kora, arts[k], args.iters))
        for k in timed:
            r[k]["timed_ms"] = statistics.median(samples[k])
        emitted = r["optimal_again"]["timed_ms"]
        r["vs_greedy"] = r["greedy"]["timed_ms"] / emitted
        r["vs_unfused"] = r["unfused"]["timed_ms"] / emitted
        r["predicted_over_measured"] = r["optimal_again"]["predicted_ms"] / emitted
        r["first_predicted_over_measured"] = r["optimal"]["checked"][0]["predicted_ms"] / (
            r["optimal"]["checked"][0]["measured_ms"] or float("nan"))
        print(f"[{name}] emitted {emitted:.3f} ms, greedy {r['greedy']['timed_ms']:.3f}, unfused "
              f"{r['unfused']['timed_ms']:.3f}; predicted/measured {r['predicted_over_measured']:.2f}"
              f" (first solve, costs alone: {r['first_predicted_over_measured']:.2f})",
              file=sys.stderr, flush=True)

    print("| model | emitted ms | greedy ms | unfused ms | vs greedy | vs unfused | predicted / "
          "measured (in context) | first solve (costs alone) | check s |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name, r in results.items():
        print(f"| {name} | {r['optimal_again']['timed_ms']:.3f} | {r['greedy']['timed_ms']:.3f} | "
              f"{r['unfused']['timed_ms']:.3f} | {r['vs_greedy']:.2f}x | {r['vs_unfused']:.2f}x | "
              f"{r['predicted_over_measured']:.2f} | {r['first_predicted_over_measured']:.2f} | "
              f"{r['optimal']['compile_s']:.0f} |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
