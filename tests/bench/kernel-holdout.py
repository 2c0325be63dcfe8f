#!/usr/bin/env python3
"""Held-out error of the shipped kernel tables (issue 23); not run by CI.

Usage: tests/bench/kernel-holdout.py [hardware/kernels/*.csv]

For each table and kernel, rows are taken in file order; rows 0, 2, 4, ...
(even positions within that kernel) build the table, rows 1, 3, 5, ... are
held out and predicted as roofline_us / efficiency(lookup). The lookup is
the one src/model/kernels.c implements (mp_kernel_lookup): along the
primary axis (gemm: M; moe_block: local experts; mla_decode: batch) the two
measured values that bracket the query (clamped at the ends), at each of
them the secondary axis (gemm: K; moe_block: tokens per GPU; mla_decode:
context) bracketed the same way, linear in the logarithms of both axes;
rows with equal axes are averaged. Prints the median and max |error| per
kernel and GPU, and the MoE block's fixed latency fit:
  measured = roofline / e + a + b E   (e = 1, roofline at datasheet peaks)
least squares for a, b on the even rows, residual on the odd rows.
"""
import csv, glob, math, statistics, sys

AXES = {'gemm_dense': ('m', 'k'), 'gemm_masked': ('m', 'k'), 'gemm_contiguous': ('m', 'k'),
        'moe_block': ('experts', 'm'), 'mla_decode': ('m', 'context')}


def read(path):
    with open(path) as f:
        return list(csv.DictReader(l for l in f if not l.startswith('#')))


def bracket(xs, x):
    xs = sorted(set(xs))
    if x <= xs[0]:
        return xs[0], xs[0], 0.0, x < xs[0]
    if x >= xs[-1]:
        return xs[-1], xs[-1], 0.0, x > xs[-1]
    for lo, hi in zip(xs, xs[1:]):
        if lo <= x <= hi:
            return lo, hi, (math.log(x) - math.log(lo)) / (math.log(hi) - math.log(lo)), False


def lookup(pts, p, s):
    """pts: list of (p, s, eff). Returns (eff, clamped)."""
    lo, hi, w, cl = bracket([q[0] for q in pts], p)
    val = []
    for pv in (lo, hi):
        sub = [q for q in pts if q[0] == pv]
        slo, shi, sw, scl = bracket([q[1] for q in sub], s)
        a = statistics.mean(q[2] for q in sub if q[1] == slo)
        b = statistics.mean(q[2] for q in sub if q[1] == shi)
        val.append(a + sw * (b - a))
        cl = cl or scl
    return val[0] + w * (val[1] - val[0]), cl


def main():
    paths = sys.argv[1:] or sorted(glob.glob('hardware/kernels/*.csv'))
    allerr = []
    print('| gpu | kernel | built from | held out | median error | max error | clamped |')
    print('|---|---|---|---|---|---|---|')
    for path in paths:
        gpu = path.rsplit('/', 1)[-1][:-4]
        rows = read(path)
        for kern, (pa, sa) in AXES.items():
            rs = [r for r in rows if r['kernel'] == kern]
            if not rs:
                continue
            pts = lambda sel: [(float(r[pa]), float(r[sa]), float(r['efficiency'])) for r in sel]
            build, held = rs[0::2], rs[1::2]
            errs, ncl = [], 0
            for r in held:
                e, cl = lookup(pts(build), float(r[pa]), float(r[sa]))
                ncl += cl
                pred = float(r['roofline_us']) / e
                errs.append(abs(pred / float(r['measured_us']) - 1))
            allerr += errs
            print('| %s | %s | %d | %d | %.1f%% | %.1f%% | %d |' % (gpu, kern, len(build), len(held),
                  100 * statistics.median(errs), 100 * max(errs), ncl))
    print('\nall held-out rows: %d, median error %.1f%%' % (len(allerr), 100 * statistics.median(allerr)))
    print('\nMoE block fixed latency: measured_us = roofline_us + a + b experts (even rows fit, odd rows held out)')
    print('| gpu | a (us) | b (us per local expert) | fit median residual | held-out median residual |')
    print('|---|---|---|---|---|')
    for path in paths:
        gpu = path.rsplit('/', 1)[-1][:-4]
        rs = [r for r in read(path) if r['kernel'] == 'moe_block']
        if not rs:
            continue
        xs = [(float(r['experts']), float(r['measured_us']) - float(r['roofline_us']), r) for r in rs]
        fit = xs[0::2]
        n = len(fit); sx = sum(x for x, _, _ in fit); sy = sum(y for _, y, _ in fit)
        sxx = sum(x * x for x, _, _ in fit); sxy = sum(x * y for x, y, _ in fit)
        b = (n * sxy - sx * sy) / (n * sxx - sx * sx); a = (sy - b * sx) / n
        res = lambda sel: statistics.median(abs((float(r['roofline_us']) + a + b * x) / float(r['measured_us']) - 1) for x, _, r in sel)
        print('| %s | %.1f | %.2f | %.1f%% | %.1f%% |' % (gpu, a, b, 100 * res(fit), 100 * res(xs[1::2])))


if __name__ == '__main__':
    main()
