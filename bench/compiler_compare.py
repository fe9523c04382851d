"""g++ against clang++ on kora's generated kernels: profiles one model with each compiler
(`kora profile --compiler`, one fresh database and kernel cache in a temporary directory;
the compiler is part of the device fingerprint, so the two sets of records sit side by
side) and compares every generated kernel measured with both, same signature and schedule:
the geometric mean of the clang++/g++ time ratio, how often each is faster by more than 5%,
and each compiler's compile time.

usage: python3 bench/compiler_compare.py KORA MODEL.onnx [--threads N]
"""
import argparse
import json
import math
import os
import sqlite3
import subprocess
import tempfile


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("kora")
    ap.add_argument("model")
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        db = os.path.join(tmp, "profiles.db")
        summaries = {}
        for cc in ("g++", "clang++"):
            env = dict(os.environ, KORA_KERNEL_CACHE=os.path.join(tmp, cc))
            proc = subprocess.run([args.kora, "profile", args.model, "--db", db, "--threads",
                                   str(args.threads), "--compiler", cc, "--json"],
                                  capture_output=True, text=True, env=env)
            if proc.returncode != 0:
                raise SystemExit(f"kora profile --compiler {cc} failed:\n{proc.stderr[-3000:]}")
            summaries[cc] = json.loads(proc.stdout)
        con = sqlite3.connect(db)
        gxx, clang = summaries["g++"]["device"], summaries["clang++"]["device"]
        rows = con.execute(
            "SELECT a.median_ms, b.median_ms FROM profiles a JOIN profiles b "
            "ON a.signature = b.signature AND a.schedule = b.schedule "
            "WHERE a.device = ? AND b.device = ? AND a.schedule LIKE 'gen:%' "
            "AND a.failed = 0 AND b.failed = 0", (gxx, clang)).fetchall()
    ratios = [b / a for a, b in rows if a > 0 and b > 0]
    geomean = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
    print(f"model {os.path.basename(args.model)}, threads {args.threads}, "
          f"{len(ratios)} generated kernels measured with both")
    print(f"clang++ / g++ time, geometric mean: {geomean:.3f}")
    print(f"g++ faster by > 5%: {sum(r > 1.05 for r in ratios)}; "
          f"clang++ faster by > 5%: {sum(r < 1 / 1.05 for r in ratios)}")
    for cc, s in summaries.items():
        print(f"{cc}: compile {s['seconds']['compile']:.0f} s for {s['units']} units, "
              f"measure {s['seconds']['measure']:.0f} s, {len(s['failures'])} failures")


if __name__ == "__main__":
    main()
