"""Compile time of kernel translation units under different compiler flags: compiles the
same sample of units (kernel-cache sources, KEY.cc, as `kora profile` wrote them) once per
flag set and reports the compiler's CPU seconds (user + system, of the compiler and its
children), which a shared machine's load moves far less than wall time. The variants run
interleaved unit by unit, so that load that comes and goes hits each about equally.

usage: python3 bench/compile_time.py [--compiler g++] [--sample N] [--seed S]
                                     --variant NAME='FLAGS' ... [--prefix NAME=FILE ...]
                                     CACHE_DIR ...
A variant's FLAGS are its optimization flags; the others are the profile's
(src/cpu/compile.h but -O...). --prefix puts FILE's text before each unit for
that variant only (e.g. the standard headers an older prelude included).
"""
import argparse
import glob
import os
import random
import resource
import shlex
import subprocess
import tempfile

BASE = ["-march=native", "-fPIC", "-shared", "-std=c++17", "-fopenmp", "-fno-trapping-math",
        "-fno-math-errno"]


def cpu_seconds(cmd):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = subprocess.run(cmd, capture_output=True, text=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{proc.stderr[-2000:]}")
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("caches", nargs="+")
    ap.add_argument("--compiler", default="g++")
    ap.add_argument("--variant", action="append", required=True)
    ap.add_argument("--sample", type=int, default=4, help="units per cache directory")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--prefix", action="append", default=[],
                    help="NAME=FILE: FILE's text goes before each unit for variant NAME")
    args = ap.parse_args()
    variants = [(v.split("=", 1)[0], shlex.split(v.split("=", 1)[1])) for v in args.variant]
    rng = random.Random(args.seed)
    units = []
    for cache in args.caches:
        sources, texts = [], set()
        for path in sorted(glob.glob(os.path.join(cache, "*.cc"))):  # one of each text
            if open(path).read() not in texts:
                texts.add(open(path).read())
                sources.append(path)
        units += rng.sample(sources, min(args.sample, len(sources)))
    prefix = {p.split("=", 1)[0]: open(p.split("=", 1)[1]).read() for p in args.prefix}
    totals = {name: 0.0 for name, _ in variants}
    kernels = 0
    with tempfile.TemporaryDirectory() as tmp:
        for unit in units:
            text = open(unit).read()
            kernels += text.count('extern "C"')
            row = []
            for name, flags in variants:
                src = os.path.join(tmp, "unit.cc")
                with open(src, "w") as f:
                    f.write(prefix.get(name, "") + text)
                s = cpu_seconds([args.compiler] + flags + BASE + [src, "-o",
                                                                  os.path.join(tmp, "u.so")])
                totals[name] += s
                row.append(f"{name} {s:.2f}")
            print(f"{os.path.basename(os.path.dirname(os.path.dirname(unit)))}/"
                  f"{os.path.basename(unit)}: " + ", ".join(row), flush=True)
    first = variants[0][0]
    print(f"{len(units)} units, {kernels} kernels")
    for name, _ in variants:
        print(f"{name}: {totals[name]:.1f} CPU s, {totals[name] / kernels:.3f} s per kernel, "
              f"{totals[name] / totals[first]:.2f}x {first}")


if __name__ == "__main__":
    main()
