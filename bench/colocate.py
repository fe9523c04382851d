"""Co-location benchmark (issue 28): `kora colocate --json` on pairs of artifacts, one
markdown table row per run, the JSON of every pair kept.

usage: python bench/colocate.py KORA --pair LC_ART:BE_ART:QPS:TARGET_MS [--pair ...]
           [--seconds S] [--seed N] [--json FILE]
Each pair runs the latency-critical artifact LC_ART under Poisson requests at QPS beside
BE_ART in a loop: alone, best-effort alone, naive and scheduled, S seconds each (kora
colocate). Artifacts come from `kora compile`; each must be a directory of its own.
Prints, per pair and run, the requests' p50/p99 and violations of TARGET_MS and the
best-effort inferences per second (scheduled: its share of what it gets alone).
"""
import argparse
import json
import os
import subprocess
import time


def run_pair(kora, lc, be, qps, target, seconds, seed):
    out = subprocess.run([kora, "colocate", "--lc", lc, "--be", be, "--qps", str(qps),
                          "--target-ms", str(target), "--seconds", str(seconds), "--seed",
                          str(seed), "--json"], capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def short(path):
    """An artifact's last two path components (MODEL/kora-optimal as bench/peers.py writes)."""
    parts = os.path.normpath(path).split(os.sep)
    return "/".join(parts[-2:])


def rows(report):
    runs = report["runs"]
    alone = runs["be_alone"]["be"][0]["per_second"]
    name = (f"{short(report['lc'])} at {report['qps']:g}/s, target {report['target_ms']:g} ms; "
            f"{short(report['be'][0])}")
    for mode in ("lc_alone", "naive", "scheduled"):
        lc = runs[mode]["lc"]
        be = runs[mode]["be"]
        throughput = (f"{alone:.2f} (alone)" if mode == "lc_alone" else
                      f"{be[0]['per_second']:.2f} ({100 * be[0]['per_second'] / alone:.0f}%)")
        yield (f"| {name if mode == 'lc_alone' else ''} | {mode} | {lc['p50_ms']:.2f} | "
               f"{lc['p99_ms']:.2f} | {lc['violations']} of {lc['requests']} | {throughput} |")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("kora")
    ap.add_argument("--pair", action="append", required=True,
                    help="LC_ARTIFACT:BE_ARTIFACT:QPS:TARGET_MS")
    ap.add_argument("--seconds", type=float, default=20)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json", default="")
    args = ap.parse_args()
    reports = []
    for pair in args.pair:
        lc, be, qps, target = pair.rsplit(":", 3)
        reports.append(run_pair(args.kora, lc, be, float(qps), float(target), args.seconds,
                                args.seed))
    print("| latency-critical, best-effort | run | p50 ms | p99 ms | violations | "
          "best-effort runs/s |")
    print("|---|---|---|---|---|---|")
    for r in reports:
        for line in rows(r):
            print(line)
        print(f"(slowdown beside best-effort work {r['slowdown']:.2f}x; a request waited "
              f"{r['runs']['scheduled'].get('lc_waited_ms', 0):.3f} ms on average)")
    path = args.json or os.path.join(os.path.dirname(os.path.abspath(__file__)), "results",
                                     time.strftime("%Y-%m-%d") + "-colocate.json")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        json.dump({"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                   "seconds": args.seconds, "reports": reports}, f, indent=1)
    print(f"results: {path}")


if __name__ == "__main__":
    main()
