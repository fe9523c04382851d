"""The end-to-end bar chart of a bench/peers.py results file, like the Korch paper's:
per model, each system's median latency divided by kora optimal's (lower is faster;
1.0 is kora optimal), and a geometric mean group. Systems that failed or did not run on a
model leave a gap.

usage: python bench/chart.py RESULTS.json OUT.png
"""
import json
import math
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

ORDER = ["kora-optimal", "kora-greedy", "kora-unfused", "kora-bf16", "onnxruntime", "openvino-f32",
         "openvino",
         "tvm", "torch-eager", "torch-compile"]


def load_json(path):
    with open(path) as f:
        return json.load(f)


def main():
    if len(sys.argv) != 3:
        raise SystemExit(__doc__)
    report = load_json(sys.argv[1])
    models = [m for m, e in report["models"].items()
              if "median_ms" in e["systems"].get("kora-optimal", {})]
    if not models:  # ratios are to kora optimal: without it, no chart
        print(f"chart: no model of {sys.argv[1]} has kora-optimal; no chart written")
        return
    systems = [s for s in ORDER if any(s in report["models"][m]["systems"] for m in models)]
    ratios = {s: [] for s in systems}
    for m in models:
        res = report["models"][m]["systems"]
        base = res["kora-optimal"]["median_ms"]
        for s in systems:
            ms = res.get(s, {}).get("median_ms")
            ratios[s].append(ms / base if ms else float("nan"))
    for s in systems:
        finite = [r for r in ratios[s] if math.isfinite(r)]
        ratios[s].append(math.exp(sum(map(math.log, finite)) / len(finite)) if finite
                         else float("nan"))
    groups = models + ["geomean"]
    width = 0.8 / len(systems)
    fig, ax = plt.subplots(figsize=(max(8, 1.4 * len(groups)), 4.2))
    for i, s in enumerate(systems):
        xs = [g + (i - (len(systems) - 1) / 2) * width for g in range(len(groups))]
        ax.bar(xs, ratios[s], width, label=s)
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_yscale("log")
    ax.set_xticks(range(len(groups)), groups, rotation=20)
    ax.set_ylabel("latency / kora optimal (log)")
    ax.set_title(f"{report['machine']}, {report['threads']} threads, median of "
                 f"{report['runs']} runs ({report['date'][:10]})", fontsize=9)
    ax.legend(fontsize=8, ncol=4)
    fig.tight_layout()
    fig.savefig(sys.argv[2], dpi=120)
    print(f"chart: {sys.argv[2]}")


if __name__ == "__main__":
    main()
