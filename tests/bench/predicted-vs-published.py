#!/usr/bin/env python3
"""The issue-23 rows of README "Predicted vs published", generated (not typed).

Usage: tests/bench/predicted-vs-published.py [MOEPLAN]   (default build/src/cli/moeplan)

Runs each published case through `moeplan step --json`, with the scalar
factors and with the shipped kernel table named in the row, and prints a
markdown table: published figure, predicted, signed error. The published
figures and their sources:
  [P] deepseek-ai/profile-data@449602428a1b README: decode, H800, EP128,
      128 requests per GPU, 4K prompt, two micro-batches, balanced; 96 ms
      per step (a third party's per-kernel reading of its decode trace,
      zdszero.github.io "deepseek_profile": routed GEMMs + activation
      128 us per layer and micro-batch).
  [S] seed 000 (the V4.1-Flash article): EP64 step at 8 requests 10.0 ms;
      EP64/EP8 tokens/s per GPU 1.36 at 8 requests, 1.06 at 256.
"""
import json, subprocess, sys

EXE = sys.argv[1] if len(sys.argv) > 1 else 'build/src/cli/moeplan'
V3 = ['-m', 'plans/models/deepseek-v3.yaml', '-H', 'hardware/hgx-h800.yaml', '--ep', '128',
      '-r', '128', '-c', '4096', '-T', '2', '--acceptance', '1', '--overlap', 'two_batch']
V41 = ['-m', 'plans/models/deepseek-v4.1-flash.yaml', '-H', 'hardware/gb200-nvl72.yaml',
       '--min-redundant', '32', '-c', '131072', '-T', '4', '--acceptance', '0.75']


def step(args, table):
    extra = ['--kernels', table] if table else []
    out = subprocess.run([EXE, 'step', '--format', 'json'] + args + extra, check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def term(doc, name):
    return next(t for t in doc['terms'] if t['name'] == name)['time_s']


def row(case, pub, pred, unit, cmd):
    err = 100.0 * (pred / pub - 1.0)
    print('| %s | %s | %s | %+.1f%% | `%s` |' % (case, fmt(pub, unit), fmt(pred, unit), err, cmd))


def fmt(v, unit):
    return '%.3g %s' % (v, unit) if unit else '%.3g' % v


def main():
    print('| case | published | predicted | error | command |')
    print('|---|---|---|---|---|')
    for table, label in ((None, 'scalar factors'), ('hardware/kernels/h100.csv', 'H100 kernel table (H800 = H100 die)')):
        d = step(V3, table)
        cmd = 'moeplan step ' + ' '.join(V3) + (' --kernels ' + table if table else '')
        row('[P] DeepSeek decode step, %s' % label, 96.0, d['step_time_s'] * 1e3, 'ms', cmd)
        row('[P] routed GEMMs + activation per layer and micro-batch, %s' % label, 128.0,
            term(d, 'routed') / 2 / 58 * 1e6, 'us', cmd)
    for table, label in ((None, 'scalar factors'), ('hardware/kernels/b200.csv', 'B200 kernel table')):
        ext = ' --kernels ' + table if table else ''
        d64 = step(V41 + ['--ep', '64', '-r', '8'], table)
        d8 = step(V41 + ['--ep', '8', '-r', '8'], table)
        row('[S] V4.1-Flash EP64 step, 8 requests, GB200, %s' % label, 10.0, d64['step_time_s'] * 1e3, 'ms',
            'moeplan step ' + ' '.join(V41) + ' --ep 64 -r 8' + ext)
        row('[S] EP64/EP8 tokens/s per GPU, 8 requests, %s' % label, 1.36,
            d64['tokens_per_s_per_gpu'] / d8['tokens_per_s_per_gpu'], '', 'the same with --ep 8')
        d64 = step(V41 + ['--ep', '64', '-r', '256'], table)
        d8 = step(V41 + ['--ep', '8', '-r', '256'], table)
        row('[S] EP64/EP8 tokens/s per GPU, 256 requests, %s' % label, 1.06,
            d64['tokens_per_s_per_gpu'] / d8['tokens_per_s_per_gpu'], '', '-r 256 at both widths')


if __name__ == '__main__':
    main()
