"""Two compilers on kora's generated kernels (default g++ against clang++): profiles one
model with each (`kora profile --compiler`, one fresh database and kernel cache in a
temporary directory; the compiler is part of the device fingerprint, so the two sets of
records sit side by side) and compares every generated kernel measured with both, same
signature and schedule: the geometric mean of the second/first time ratio, how often each
is faster by more than 5%, and each compiler's compile time. A "compiler" may be a wrapper
script that adds flags (`exec g++ "$@" -O2`): its file name is the fingerprint's compiler
name, so two wrappers with the same flags measure the noise.

usage: python3 bench/compiler_compare.py KORA MODEL.onnx [--threads N] [--compilers A B]
                                        [--keep DIR]
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
    ap.add_argument("--compilers", nargs=2, default=["g++", "clang++"])
    ap.add_argument("--keep", help="use (and keep) this directory for the database and caches")
    args = ap.parse_args()
    first, second = args.compilers
    tag = {first: "a", second: "b"}
    with tempfile.TemporaryDirectory() as scratch:
        tmp = args.keep or scratch
        os.makedirs(tmp, exist_ok=True)
        db = os.path.join(tmp, "profiles.db")
        summaries = {}
        for cc in (first, second):
            env = dict(os.environ, KORA_KERNEL_CACHE=os.path.join(tmp, tag[cc]))
            proc = subprocess.run([args.kora, "profile", args.model, "--db", db, "--threads",
                                   str(args.threads), "--compiler", cc, "--all", "--json"],
                                  capture_output=True, text=True, env=env)
            if proc.returncode != 0:
                raise SystemExit(f"kora profile --compiler {cc} failed:\n{proc.stderr[-3000:]}")
            summaries[cc] = json.loads(proc.stdout)
        con = sqlite3.connect(db)
        dev_a, dev_b = summaries[first]["device"], summaries[second]["device"]
        rows = con.execute(
            "SELECT a.median_ms, b.median_ms FROM profiles a JOIN profiles b "
            "ON a.signature = b.signature AND a.schedule = b.schedule "
            "WHERE a.device = ? AND b.device = ? AND a.schedule LIKE 'gen:%' "
            "AND a.failed = 0 AND b.failed = 0", (dev_a, dev_b)).fetchall()
    ratios = [b / a for a, b in rows if a > 0 and b > 0]
    geomean = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
    print(f"model {os.path.basename(args.model)}, threads {args.threads}, "
          f"{len(ratios)} generated kernels measured with both")
    print(f"{second} / {first} time, geometric mean: {geomean:.3f}; total time "
          f"{sum(b for _, b in rows) / sum(a for a, _ in rows):.3f}")
    print(f"{first} faster by > 5%: {sum(r > 1.05 for r in ratios)}; "
          f"{second} faster by > 5%: {sum(r < 1 / 1.05 for r in ratios)}")
    for cc, s in summaries.items():
        print(f"{cc}: compile {s['seconds']['compile']:.0f} s for {s['units']} units, "
              f"measure {s['seconds']['measure']:.0f} s, {len(s['failures'])} failures")


if __name__ == "__main__":
    main()
