"""Profiling time on the model zoo: for each model in models/zoo/ (make zoo), runs
`kora profile` twice into a fresh profile database and kernel cache (a temporary
directory): first empty (everything generated, compiled, checked and measured), then warm
(nothing new). Prints a markdown table: unique kernels, implementations measured,
translation units, implementations that had another's generated code (compiled and
measured once), failures, seconds per stage of the empty run, wall seconds of both
runs, and then the optimal plan's cost from the measurements (`kora orchestrate --db`)
next to greedy's and unfused's.

usage: python3 bench/profile_zoo.py KORA ZOO_DIR [NAME ...] [--threads N] [--keep DIR]
With --keep, DIR/NAME/ keeps the database (profiles.db), the kernel cache (kernels/) and
profile.json (both runs' wall seconds, the date, the empty run's summary): the layout
bench/peers.py --cache reuses.
"""
import argparse
import json
import os
import subprocess
import tempfile
import time

MODELS = ["mobilenet_v2", "efficientvit_b0", "resnet50", "candy", "yolov8n", "segformer_b0",
          "vit_b_16", "bert_base"]


def run(cmd, env):
    start = time.time()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout), time.time() - start


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("kora")
    ap.add_argument("zoo")
    ap.add_argument("names", nargs="*")
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--keep", help="use (and keep) this directory for the database and cache")
    args = ap.parse_args()
    names = args.names or MODELS
    tmp = None if args.keep else tempfile.TemporaryDirectory()
    root = args.keep or tmp.name
    print(f"threads {args.threads}")
    print("| model | kernels | impls | units | same code | failed | compile s | measure s "
          "| empty s | warm s | optimal ms | greedy ms | unfused ms |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for name in names:
        path = os.path.join(args.zoo, name + ".onnx")
        work = os.path.join(root, name)
        os.makedirs(work, exist_ok=True)
        env = dict(os.environ, KORA_KERNEL_CACHE=os.path.join(work, "kernels"))
        db = os.path.join(work, "profiles.db")
        prof = [args.kora, "profile", path, "--db", db, "--threads", str(args.threads), "--all",
                "--json"]
        empty, empty_s = run(prof, env)
        warm, warm_s = run(prof, env)
        assert warm["measured"] == 0, warm
        if args.keep:  # bench/peers.py reads this: the empty database's profiling time
            with open(os.path.join(work, "profile.json"), "w") as f:
                json.dump({"empty_s": empty_s, "warm_s": warm_s, "threads": args.threads,
                           "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                           "summary": empty}, f, indent=1)
        costs = {}
        for strategy in ("optimal", "greedy", "unfused"):
            orch, _ = run([args.kora, "orchestrate", path, "--db", db, "--threads",
                           str(args.threads), "--strategy", strategy, "--json"], env)
            costs[strategy] = orch["total_cost_ms"]
        print(f"| {name} | {empty['kernels']} | {empty['implementations']} | {empty['units']} "
              f"| {empty.get('same_code', 0)} | {len(empty['failures'])} | {empty['seconds']['compile']:.0f} "
              f"| {empty['seconds']['measure']:.0f} | {empty_s:.0f} | {warm_s:.1f} "
              f"| {costs['optimal']:.3f} | {costs['greedy']:.3f} | {costs['unfused']:.3f} |",
              flush=True)
        for f in empty["failures"][:5]:
            print(f"  failed: {f['schedule']} of {f['kernel']}: {' '.join(l for l in f['error'].splitlines() if 'error' in l)[:300]}")


if __name__ == "__main__":
    main()
