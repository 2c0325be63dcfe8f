#!/usr/bin/env python3
"""Exhaustive optimum of one placement layer, independent of moeplan's code
(issue 17): the source of the optima that tests/test-exact.c asserts for
Mixtral c4 on 16 GPUs x 3 slots. Not run by the tests (minutes of CPU).

Usage: exhaustive-opt.py W1,W2,... G S [UPPER]
  integer loads, G GPUs, S slots per GPU; UPPER (a fraction such as
  3139487/120) starts the search below it instead of from nothing, and
  "no plan below UPPER" then proves UPPER a lower bound. moeplan's model: G GPUs x S slots, every slot filled
(sum r_e = G*S), each GPU holds S distinct experts, a replica of e carries
w_e / r_e. Exact integers: replica load = w_e * D / r_e with D = lcm(1..G).

Method: with incumbent U (exact), look for any plan with max < U: every
replica-count vector (1 <= r_e <= G, sum = G*S) passing valid necessary
conditions, then a depth-first search over GPU contents (S-subsets with sum
in (L, U), L = W - (G-1) U: the other GPUs carry < U each) covering r
exactly, memo of failed remaining vectors. A plan found lowers U; when none
is found, U is the optimum."""
import sys, itertools
from math import lcm
from fractions import Fraction

def search(w, G, S, D, U, stats):
    E = len(w)
    N = G * S
    W = sum(w) * D
    L = W - (G - 1) * U
    found = None
    def vectors(e, r, n):
        if e == E - 1:
            k = N - n
            if 1 <= k <= G and w[e] * D < U * k:
                yield r + [k]
            return
        for k in range(1, min(G, N - n - (E - 1 - e)) + 1):
            if w[e] * D >= U * k:
                continue
            yield from vectors(e + 1, r + [k], n + k)
    for r in vectors(0, [], 0):
        p = [w[e] * D // r[e] for e in range(E)]
        ok = True
        for k in range(2, S + 1):  # at most k-1 replicas >= U/k per GPU
            if sum(r[e] for e in range(E) if k * p[e] >= U) > (k - 1) * G:
                ok = False
                break
        if not ok or sum(r[e] for e in range(E) if S * p[e] > L) < G:
            continue
        stats[0] += 1
        conts = [c for c in itertools.combinations(range(E), S)
                 if L < sum(p[e] for e in c) < U]
        plan = cover(r, conts, E)
        if plan is not None:
            return r, plan
    return None

def cover(r, conts, E):
    by_first = [[c for c in conts if c[0] == e] for e in range(E)]
    failed = set()
    out = []
    def dfs(rem, last):
        first = next((e for e in range(E) if rem[e] > 0), None)
        if first is None:
            return True
        key = (rem, last)
        if key in failed:
            return False
        lst = by_first[first]
        for i in range(last, len(lst)):
            c = lst[i]
            if any(rem[e] == 0 for e in c):
                continue
            nrem = list(rem)
            for e in c:
                nrem[e] -= 1
            out.append(c)
            if dfs(tuple(nrem), i if nrem[first] > 0 else 0):
                return True
            out.pop()
        failed.add(key)
        return False
    if dfs(tuple(r), 0):
        return list(out)
    return None

def main():
    w = [int(x) for x in sys.argv[1].split(",")]
    G, S = int(sys.argv[2]), int(sys.argv[3])
    D = 1
    for k in range(1, G + 1):
        D = lcm(D, k)
    U = 1 << 200
    if len(sys.argv) > 4:
        f = Fraction(sys.argv[4]) * D
        assert f.denominator == 1
        U = int(f)
    while True:
        stats = [0]
        res = search(w, G, S, D, U, stats)
        if res is None:
            print(f"no plan below {Fraction(U, D)} ({stats[0]} vectors searched)")
            break
        r, plan = res
        mx = max(sum(w[e] * D // r[e] for e in c) for c in plan)
        assert mx < U and len(plan) == G
        U = mx
        print(f"plan with max {Fraction(U, D)} = {float(Fraction(U, D))}: r={r} {plan}", flush=True)
    print("optimum", Fraction(U, D), float(Fraction(U, D)))

main()
