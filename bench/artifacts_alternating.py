"""Two kora artifacts of one model taking turns in one process (an old build's against a
new one's: whether a change made the model faster on a host whose speed moves between
rounds). In: the two artifact directories, a regular expression over a kernel's first
primitive, the number of rounds. Each round times each artifact end to end (median of 10
runs, InferenceSession.plan_ms) and then its kernels inside the running plan (medians of
10 runs, InferenceSession.profile); out, per round: the sum of the in-plan times of the
kernels the expression selects and the end-to-end median of both, and B's over A's; then
the median of each ratio over the rounds. 2 threads; every graph input random (floats
normal, integers 0/1, as bench/peers.py).

usage: python bench/artifacts_alternating.py A B REGEX ROUNDS
(the kora package is imported from build/python unless kora is installed)
"""
import os
import re
import statistics
import sys

sys.path.insert(1, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "build", "python"))
import numpy as np  # noqa: E402
import kora  # noqa: E402


def session(artifact):
    s = kora.InferenceSession(artifact, threads=2)
    rng = np.random.default_rng(0)
    feeds = {}
    for i in s.get_inputs():
        dtype = np.dtype(i.dtype)
        feeds[i.name] = (rng.standard_normal(i.shape).astype(dtype)
                         if np.issubdtype(dtype, np.floating)
                         else rng.integers(0, 2, i.shape).astype(dtype))
    s.run(None, feeds)  # binds the inputs
    return s


def main():
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    arts, pattern, rounds = sys.argv[1:3], re.compile(sys.argv[3]), int(sys.argv[4])
    sessions = [session(a) for a in arts]
    ratios_selected, ratios_e2e = [], []
    for r in range(rounds):
        out = []
        for s in sessions:
            e2e = statistics.median(s.plan_ms() for _ in range(10))
            kernels = [k for k in s.profile(iters=10)
                       if pattern.search(k["primitives"].split(",")[0])]
            out.append((sum(k["in_plan_ms"] for k in kernels), len(kernels), e2e))
        (sa, na, ea), (sb, nb, eb) = out
        ratios_selected.append(sb / sa if sa > 0 else float("nan"))
        ratios_e2e.append(eb / ea)
        print(f"round {r + 1}: selected A {sa:.3f} ms ({na}) B {sb:.3f} ms ({nb}), "
              f"end to end A {ea:.2f} ms B {eb:.2f} ms; B/A selected {ratios_selected[-1]:.3f} "
              f"end to end {ratios_e2e[-1]:.3f}", flush=True)
    print(f"median B/A over {rounds} rounds: selected {statistics.median(ratios_selected):.3f}, "
          f"end to end {statistics.median(ratios_e2e):.3f} "
          f"({min(ratios_e2e):.3f}-{max(ratios_e2e):.3f})")


if __name__ == "__main__":
    main()
