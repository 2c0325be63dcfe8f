#!/usr/bin/env python3
"""How likely is an exactly balanced plan? A first-moment estimate (issue 17).

A layer is proven optimal cheaply when every GPU carries exactly the mean load
sum(w) / G (the mean bounds every plan). Whether such a plan exists is a
multiway number-partitioning question. This script runs `moeplan place` on the
shipped traces at 8, 16 and 32 GPUs (the cases of the issue's 90% target, as in
tests/bench/bench-placement.c) and, per layer, estimates with the plan's own
replica counts r_e the expected number of exactly balanced packings:

    E[#] = #packings * P(every GPU sum = M)
    #packings = N! / ((S!)^G * G! * prod_e r_e!)      (unordered GPUs, identical
                                                      replicas; duplicates on a
                                                      GPU not removed: an over-count)
    P = (d / (sqrt(2 pi) sigma_S))^(G - 1)            (local limit theorem for the sum
                                                      of S of the N replica loads, on
                                                      the lattice of span d; one
                                                      constraint is implied by the total)

with replica loads scaled to integers (lcm of the counts), d their gcd and
sigma_S^2 = S var (N - S) / (N - 1). This is the first-moment estimate used
for random number partitioning (S. Mertens, Phys. Rev. Lett. 81, 4281 (1998);
C. Borgs, J. Chayes, B. Pittel, Random Struct. Alg. 19, 247 (2001)): when
E[#] << 1 an exact partition almost surely does not exist; it is a heuristic,
not a proof. "log10 vectors" is log10 of the number of replica-count vectors
(C(N - 1, E - 1), an upper bound), the most other counts could multiply E[#] by.

Usage: tests/bench/perfect-count.py [MOEPLAN] [TRACES_DIR]
Not run by the tests (it reports, it asserts nothing).
"""
import json
import math
import subprocess
import sys

CASES = [  # (name, file, slots, gpus): the 8-, 16- and 32-GPU trace cases of bench-placement.c
    ("mixtral c4 16/EP8", "mixtral8x7b_c4.csv", 16, 8),
    ("olmoe c4 72/EP8", "olmoe_c4.csv", 72, 8),
    ("olmoe github 72/EP8", "olmoe_github.csv", 72, 8),
    ("qwen1.5 book 64/EP8", "qwen15moe_bookcorpus.csv", 64, 8),
    ("switch128 book 136/EP8", "switch128_bookcorpus.csv", 136, 8),
    ("olmoe book 80/EP16", "olmoe_book.csv", 80, 16),
    ("qwen1.5 book 96/EP16", "qwen15moe_bookcorpus.csv", 96, 16),
    ("switch128 book 144/EP16", "switch128_bookcorpus.csv", 144, 16),
    ("mixtral c4 48/EP16 (3/GPU)", "mixtral8x7b_c4.csv", 48, 16),
    ("olmoe github 80/EP16 (5/GPU)", "olmoe_github.csv", 80, 16),
    ("qwen1.5 book 64/EP16 (4/GPU)", "qwen15moe_bookcorpus.csv", 64, 16),
    ("olmoe github 96/EP32", "olmoe_github.csv", 96, 32),
    ("mixtral github 96/EP32 (3/GPU)", "mixtral8x7b_github.csv", 96, 32),
    ("olmoe c4 96/EP32 (3/GPU)", "olmoe_c4.csv", 96, 32),
    ("qwen1.5 book 96/EP32 (3/GPU)", "qwen15moe_bookcorpus.csv", 96, 32),
    ("switch128 book 160/EP32 (5/GPU)", "switch128_bookcorpus.csv", 160, 32),
]


def loads(path):
    rows = []
    for line in open(path):
        if line.startswith("#") or not line.strip():
            continue
        rows.append([int(x) for x in line.split(",")])
    return rows


def log10_expected(w, r, G):
    """log10 E[#exactly balanced packings] for loads w, counts r; -inf when
    the mean is not on the replica loads' lattice."""
    N = sum(r)
    S = N // G
    D = math.lcm(*r)
    items = [w[e] * D // r[e] for e in range(len(w)) for _ in range(r[e])]
    total = sum(items)
    d = math.gcd(*items) or 1
    if total % G or (total // G) % d:
        return float("-inf")
    mu = total / N
    var = sum((x - mu) ** 2 for x in items) / N
    sig = math.sqrt(S * var * (N - S) / (N - 1)) if N > 1 else 0.0
    if sig == 0:
        return 0.0
    lp = math.lgamma(N + 1) - G * math.lgamma(S + 1) - math.lgamma(G + 1)
    lp -= sum(math.lgamma(x + 1) for x in r)
    return lp / math.log(10) + (G - 1) * math.log10(d / (math.sqrt(2 * math.pi) * sig))


def main():
    moeplan = sys.argv[1] if len(sys.argv) > 1 else "build/src/cli/moeplan"
    traces = sys.argv[2] if len(sys.argv) > 2 else "plans/traces"
    print("| case | layer | status | plan max - mean | log10 E[# balanced] (plan's counts) | log10 vectors |")
    print("|---|---|---|---|---|---|")
    for name, f, slots, gpus in CASES:
        path = f"{traces}/{f}"
        out = subprocess.run([moeplan, "place", path, "--gpus", str(gpus), "--slots", str(slots),
                              "-f", "json", "-q", "-t", "0"], capture_output=True, text=True, check=True)
        plan = json.loads(out.stdout)
        rows = loads(path)
        E = len(rows[0])
        vec = (math.lgamma(slots) - math.lgamma(E) - math.lgamma(slots - E + 1)) / math.log(10)
        for i, lay in enumerate(plan["layers"]):
            le = log10_expected(rows[i], lay["replicas"], gpus)
            print(f"| {name} | {lay['layer']} | {lay['status']} | {lay['max_load'] - lay['mean_load']:.4g} "
                  f"| {le:.1f} | {vec:.1f} |")


if __name__ == "__main__":
    main()
