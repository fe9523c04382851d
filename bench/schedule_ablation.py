"""What one library schedule is worth to whole models: the numbers behind docs/benchmarks.md's
"Winograd" table, for any schedule the profile database stores (onednn:winograd,
onednn:native, ...).

Per model, with one profile database per model in --out (`kora profile --threads N`
first: it measures what the database lacks):
  1. a copy of the database without the schedule's records;
  2. `kora compile --no-verify --no-measure` from each (the solver's plan alone, so that
     the difference is the schedule's, not the check on the clock's; measuring nothing, or
     the profile would measure the missing schedule again), `kora check` of each;
  3. how many kernels of the plan use the schedule;
  4. both artifacts timed in turn (`kora run --iters`, separate processes, ROUNDS rounds,
     the order alternating), the median of the round medians.

usage: python3 bench/schedule_ablation.py build/kora MODEL.onnx [MODEL.onnx ...]
           --schedule onednn:winograd [--threads 2] [--rounds 5] [--iters 30]
           [--out DIR] [--json FILE] [--kora-args '--max-kernel-size 3']
"""
import argparse
import json
import os
import re
import shlex
import sqlite3
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from plan_check import latency, run  # noqa: E402  (kora's commands, its run timing)


def rel_l2(kora, art, model):
    out = run([kora, "check", art, model]).stdout
    return float(re.search(r"^max_rel_l2 (\S+)", out, re.M).group(1))


def uses(art, schedule):
    with open(os.path.join(art, "manifest.json")) as f:
        manifest = json.load(f)
    return sum(1 for k in manifest["kernels"] if k.get("schedule", "") == schedule)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("kora")
    p.add_argument("models", nargs="+")
    p.add_argument("--schedule", required=True)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--iters", type=int, default=30)
    p.add_argument("--out", default="/tmp/kora-ablation")
    p.add_argument("--json")
    p.add_argument("--kora-args", default="",
                   help="more options for kora profile and compile, e.g. '--max-kernel-size 3'")
    a = p.parse_args()
    extra = shlex.split(a.kora_args)
    os.makedirs(a.out, exist_ok=True)
    rows = {}
    for model in a.models:
        name = os.path.splitext(os.path.basename(model))[0]
        db = os.path.join(a.out, name + ".db")
        # Measures what the database lacks (nothing when it is whole).
        run([a.kora, "profile", model, "--db", db, "--threads", str(a.threads), "--all"] + extra)
        without = os.path.join(a.out, name + "-without.db")
        if os.path.exists(without):
            os.remove(without)
        with sqlite3.connect(db) as src, sqlite3.connect(without) as c:
            src.backup(c)  # with what a write-ahead log still holds
            removed = c.execute("DELETE FROM profiles WHERE schedule = ?", (a.schedule,)).rowcount
        arts = {}
        for label, path in (("with", db), ("without", without)):
            arts[label] = os.path.join(a.out, f"{name}-{label}")
            # --no-measure: a compile that measures would fill the removed schedule in again.
            run([a.kora, "compile", model, "--db", path, "--threads", str(a.threads),
                 "--no-verify", "--no-measure", "-o", arts[label]] + extra)
        times = {"with": [], "without": []}
        for r in range(a.rounds):
            for label in (("with", "without") if r % 2 == 0 else ("without", "with")):
                times[label].append(latency(a.kora, arts[label], a.iters))
        row = {"records": removed, "kernels_using": uses(arts["with"], a.schedule)}
        for label in ("with", "without"):
            row[label + "_ms"] = statistics.median(times[label])
            row[label + "_rounds"] = times[label]
            row[label + "_rel_l2"] = rel_l2(a.kora, arts[label], model)
        row["speedup"] = row["without_ms"] / row["with_ms"]
        rows[name] = row
        print(f"{name:28s} {removed:4d} records, {row['kernels_using']:3d} kernels use it: "
              f"with {row['with_ms']:8.3f} ms, without {row['without_ms']:8.3f} ms, "
              f"{row['speedup']:.3f}x (rel L2 {row['with_rel_l2']:.1e} / "
              f"{row['without_rel_l2']:.1e})", flush=True)
        if a.json:  # after every model: a run cut short keeps what it finished
            with open(a.json, "w") as f:
                json.dump({"schedule": a.schedule, "threads": a.threads, "rounds": a.rounds,
                           "iters": a.iters, "models": rows}, f, indent=1)


if __name__ == "__main__":
    main()
