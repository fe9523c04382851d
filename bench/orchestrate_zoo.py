"""Orchestration scale on the model zoo: for each model in models/zoo/ (make zoo), runs
`kora orchestrate` with the optimal, greedy and unfused strategies (roofline costs) and
prints a markdown table: primitives, segments (and how many distinct problems were
solved), candidates, unique signatures, enumeration and solve time, the wall time of the
whole optimal run (import and fission included), the three plan costs and the optimal
plan's proven gap.

usage: python3 bench/orchestrate_zoo.py KORA ZOO_DIR [--time-limit S] [--max-segment N]
                                       [--save DIR] [NAME ...]
"""
import argparse
import json
import os
import subprocess
import time

MODELS = ["mobilenet_v2", "efficientvit_b0", "resnet50", "candy", "yolov8n", "segformer_b0",
          "vit_b_16", "bert_base"]


def run(kora, path, strategy, time_limit, extra):
    start = time.time()
    out = subprocess.run([kora, "orchestrate", path, "--strategy", strategy, "--json",
                          "--time-limit", str(time_limit), *extra], capture_output=True,
                         text=True, check=True).stdout
    result = json.loads(out)
    result["wall_seconds"] = time.time() - start
    return result


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("kora")
    ap.add_argument("zoo")
    ap.add_argument("names", nargs="*")
    ap.add_argument("--time-limit", type=float, default=60, help="per segment, seconds")
    ap.add_argument("--max-segment", type=int, help="passed to kora orchestrate")
    ap.add_argument("--save", help="keep each JSON result here")
    args = ap.parse_args()
    extra = ["--max-segment", str(args.max_segment)] if args.max_segment else []
    print("| model | primitives | segments (solved) | candidates | unique signatures "
          "| enumerate (s) | optimal: solve (s) | optimal: wall (s) | optimal (ms) "
          "| proven gap (ms) | greedy (ms) | unfused (ms) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for name in args.names or MODELS:
        path = os.path.join(args.zoo, name + ".onnx")
        r = {s: run(args.kora, path, s, args.time_limit, extra)
             for s in ("optimal", "greedy", "unfused")}
        if args.save:
            os.makedirs(args.save, exist_ok=True)
            for s, j in r.items():
                with open(os.path.join(args.save, f"{name}.{s}.json"), "w") as f:
                    json.dump(j, f)
        o = r["optimal"]
        gap = "0 (proven)" if o["proven_optimal"] else f"{o['gap']:.3f}"
        solved = o["segments"] - o.get("segments_reused", 0)
        print(f"| {name} | {o['primitives']} | {o['segments']} ({solved}) | {o['candidates']} "
              f"| {o['unique_signatures']} | {o['enumerate_seconds']:.2f} "
              f"| {o['solve_seconds']:.2f} | {o['wall_seconds']:.1f} | {o['total_cost_ms']:.3f} "
              f"| {gap} "
              f"| {r['greedy']['total_cost_ms']:.3f} | {r['unfused']['total_cost_ms']:.3f} |",
              flush=True)


if __name__ == "__main__":
    main()
