#!/usr/bin/env python3
"""README "Predicted vs published": the generated rows, and the errors every
printed figure carries (issue 23 item 5), from one run of moeplan.

Usage: tests/bench/predicted-vs-published.py [--moeplan BIN] [--write | --check] [MOEPLAN]
  (no flag)  print the README block (the markdown table)
  --write    rewrite the README block `<!-- BEGIN generated: predicted-vs-published -->`
             and src/model/published-error.c (the errors compiled into moeplan)
  --check    exit 1 (with a diff) when either differs from this run
BIN defaults to build/src/cli/moeplan. Rerun with --write after any change
to the step model, then rebuild (CONTRIBUTING.md, "Generated blocks").

Runs each published case through `moeplan step --format json` and prints a
markdown table: published figure, predicted, signed error (predicted /
published - 1), and the class of printed figure the row counts toward. A
row counts toward a class when it compares a figure moeplan prints, run
with the defaults (no --kernels: the kernel table the hardware file names,
else the scalar factors), against a published one; each
class's errors go into src/model/published-error.c, which gives every
printed step time, tokens/s, TPOT and TTFT its "published cases" interval
(src/model/trust.c). The stored errors are the table's error column
(rounded to 0.1%), so the two cannot differ. A published range (20-22
tokens/s per user) is compared at its midpoint (21). TPOT's published
figure is 1 / the per-user rate.

The published figures and their sources:
  [P] deepseek-ai/profile-data@449602428a1b README: decode, H800, EP128,
      128 requests per GPU, 4K prompt, two micro-batches, balanced; 96 ms
      per step (a third party's per-kernel reading of its decode trace,
      zdszero.github.io "deepseek_profile": routed GEMMs + activation
      128 us per layer and micro-batch).
  [S] seed 000 (the V4.1-Flash article): EP64 step at 8 requests 10.0 ms;
      EP64/EP8 tokens/s per GPU 1.36 at 8 requests, 1.06 at 256.
  [D] DeepSeek's day statistics (deepseek-ai/open-infra-index,
      "day-6 one more thing"): 1,850 output tokens/s per GPU on H800 decode
      (14.8k per node), 20-22 tokens/s per user; prefill 73.7k input tokens/s
      per node = 9,213 per GPU (cache hits included). The decode batch, 88
      requests per GPU, is derived from them (1,850 / 21); 128 per GPU is the
      batch profile-data calls "closely matching the actual online deployment".
"""
import argparse
import difflib
import json
import os
import subprocess
import sys

BLOCK = 'predicted-vs-published'
DATA = 'src/model/published-error.c'
# enum mp_trust_kind order (include/moeplan/trust.h)
CLASSES = ['step time', 'decode tokens/s per GPU', 'tokens/s per user', 'TPOT',
           'prefill tokens/s per GPU', 'TTFT']
ENUMS = ['MP_TRUST_STEP_TIME', 'MP_TRUST_DECODE_TPS_GPU', 'MP_TRUST_TPS_USER', 'MP_TRUST_TPOT',
         'MP_TRUST_PREFILL_TPS_GPU', 'MP_TRUST_TTFT']
V3 = ['-m', 'plans/models/deepseek-v3.yaml', '-H', 'hardware/hgx-h800.yaml', '--ep', '128',
      '-r', '128', '-c', '4096', '-T', '2', '--acceptance', '1', '--overlap', 'two_batch']
V41 = ['-m', 'plans/models/deepseek-v4.1-flash.yaml', '-H', 'hardware/gb200-nvl72.yaml',
       '--min-redundant', '32', '-c', '131072', '-T', '4', '--acceptance', '0.75']
DAY = ['-m', 'plans/models/deepseek-v3.yaml', '-H', 'hardware/hgx-h800.yaml', '--phase', 'decode',
       '--ep', '144', '--min-redundant', '32', '-c', '4989', '--tokens-per-request', '2',
       '--acceptance', '0.85', '--overlap', 'two_batch']
PREFILL = ['-m', 'plans/models/deepseek-v3.yaml', '-H', 'hardware/hgx-h800.yaml', '--phase', 'prefill',
           '--ep', '32', '--min-redundant', '32', '-c', '4096', '--chunk-tokens', '16384',
           '--overlap', 'two_batch']


def step(exe, args, table=None):
    extra = ['--kernels', table] if table else []
    out = subprocess.run([exe, 'step', '--format', 'json'] + args + extra, check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out)


def term(doc, name):
    return next(t for t in doc['terms'] if t['name'] == name)['time_s']


def fmt(v, unit):
    t = '{:,.0f}'.format(v) if abs(v) >= 1000 else '%.3g' % v
    return t + ' ' + unit if unit else t


class Table:
    def __init__(self):
        self.lines = ['| case | published | predicted | error | counts toward | command |',
                      '|---|---|---|---|---|---|']
        self.errors = {c: [] for c in CLASSES}

    def row(self, case, pub, pred, unit, cls, cmd, pub_text=None):
        err = round(pred / pub - 1.0, 3)  # the stored error is the printed one
        if cls:
            self.errors[cls].append(err)
        self.lines.append('| %s | %s | %s | %+.1f%% | %s | `%s` |' % (
            case, pub_text or fmt(pub, unit), fmt(pred, unit), 100 * err, cls or '-', cmd))


def cmd_of(args, table=None):
    return 'moeplan step ' + ' '.join(args) + (' --kernels ' + table if table else '')


def build(exe):
    t = Table()
    for table, label in ((None, 'default: the H800 kernel table hgx-h800.yaml names'),
                         ('none', 'scalar factors (--kernels none)'),
                         ('hardware/kernels/h100.csv', 'H100 kernel table (H800 = H100 die)')):
        d = step(exe, V3, table)
        cls = None if table else 'step time'
        t.row('[P] DeepSeek decode step, %s' % label, 96.0, d['step_time_s'] * 1e3, 'ms', cls, cmd_of(V3, table))
        t.row('[P] routed GEMMs + activation per layer and micro-batch, %s' % label, 128.0,
              term(d, 'routed') / 2 / 58 * 1e6, 'us', None, cmd_of(V3, table))
        if table is None:
            # every term beside the trace's per-layer figure (issue 23's reading of
            # the trace): per layer and micro-batch, 61 layers (58 MoE)
            for name, pub, pred in (
                    ('attention core (MLA)', 255.0, term(d, 'attention') / 2 / 61),
                    ('other attention kernels (projections, norms, rope, quantisation; '
                     'moeplan: its dense term, with the 3 dense MLPs and the router)', 133.0,
                     term(d, 'dense') / 2 / 61),
                    ('dispatch', 187.0, term(d, 'dispatch') / 2 / 58),
                    ('combine', 394.0, term(d, 'combine') / 2 / 58)):
                t.row('[P] %s per layer and micro-batch, %s' % (name, label), pub, pred * 1e6, 'us', None,
                      cmd_of(V3, table))
            t.row('[P] outside the layers (embedding, LM head, MTP, sampling; moeplan: lm_head + drafter '
                  '+ overhead), %s' % label, 8.7,
                  (term(d, 'lm_head') + term(d, 'drafter') + term(d, 'overhead')) * 1e3, 'ms', None,
                  cmd_of(V3, table))
    for table, label in ((None, 'default: scalar factors (no GB200 table)'),
                         ('hardware/kernels/b200.csv', 'B200 kernel table (its moe_block rows are '
                          "DeepSeek-V3's expert shape, not V4.1-Flash's: the routed term keeps the factors)")):
        d64 = step(exe, V41 + ['--ep', '64', '-r', '8'], table)
        d8 = step(exe, V41 + ['--ep', '8', '-r', '8'], table)
        t.row('[S] V4.1-Flash EP64 step, 8 requests, GB200, %s' % label, 10.0, d64['step_time_s'] * 1e3, 'ms',
              None if table else 'step time', cmd_of(V41 + ['--ep', '64', '-r', '8'], table))
        t.row('[S] EP64/EP8 tokens/s per GPU, 8 requests, %s' % label, 1.36,
              d64['tokens_per_s_per_gpu'] / d8['tokens_per_s_per_gpu'], '', None, 'the same with --ep 8')
        d64 = step(exe, V41 + ['--ep', '64', '-r', '256'], table)
        d8 = step(exe, V41 + ['--ep', '8', '-r', '256'], table)
        t.row('[S] EP64/EP8 tokens/s per GPU, 256 requests, %s' % label, 1.06,
              d64['tokens_per_s_per_gpu'] / d8['tokens_per_s_per_gpu'], '', None, '-r 256 at both widths')
    d = step(exe, DAY + ['-r', '88'])
    c = cmd_of(DAY + ['-r', '88'])
    t.row('[D] DeepSeek-V3 decode, H800, EP144, 88 requests/GPU, MTP acceptance 0.85: output tokens/s per GPU',
          1850.0, d['tokens_per_s_per_gpu'], '', 'decode tokens/s per GPU', c, '1,850 (a day average)')
    t.row('[D] the same, tokens/s per user', 21.0, d['tokens_per_s_per_user'], '', 'tokens/s per user', c, '20-22')
    t.row('[D] the same, TPOT', 1e3 / 21.0, d['tpot_s'] * 1e3, 'ms', 'TPOT', c, '1 / 21 tokens/s = 47.6 ms')
    for extra, cls, label in (([], True, 'busiest factor 1'), (['--busiest', '1.178'], False,
                              "the plan's EP144 busiest-GPU factor 1.178 (counted once, at factor 1)")):
        d = step(exe, DAY + ['-r', '128'] + extra)
        c = cmd_of(DAY + ['-r', '128'] + extra)
        t.row('[D] the same at 128 requests/GPU, %s: tokens/s per user' % label, 21.0,
              d['tokens_per_s_per_user'], '', 'tokens/s per user' if cls else None, c, '20-22')
        t.row('[D] the same, TPOT', 1e3 / 21.0, d['tpot_s'] * 1e3, 'ms', 'TPOT' if cls else None, c,
              '1 / 21 tokens/s = 47.6 ms')
    d = step(exe, PREFILL)
    t.row('[D] DeepSeek-V3 prefill, H800, EP32, 16K tokens/GPU, 4K prompts: input tokens/s per GPU', 9213.0,
          d['tokens_per_s_per_gpu'], '', 'prefill tokens/s per GPU', cmd_of(PREFILL),
          '9,213 (cache hits included; 4,026 uncached)')
    return t


def block_text(t):
    return '\n'.join(t.lines) + '\n'


def data_text(t):
    out = ['/* Generated by tests/bench/predicted-vs-published.py --write from the run that',
           ' * wrote README.md\'s "Predicted vs published" block (predicted-vs-published);',
           ' * do not edit: rerun the script. Signed errors, predicted / published - 1,',
           ' * of the rows of each class (trust.h). */',
           '#include "published-error.h"', '']
    for cls, enum in zip(CLASSES, ENUMS):
        e = t.errors[cls]
        if len(e) > 32:
            sys.exit('%s: more than MP_PUBLISHED_MAX (32) cases' % cls)
        if e:
            out.append('static const double err_%s[] = {%s}; /* %s */' % (
                enum[9:].lower(), ', '.join('%.3f' % v for v in e), cls))
    out.append('')
    out.append('const struct mp_published_set mp_published_error[MP_TRUST_KIND_COUNT] = {')
    for cls, enum in zip(CLASSES, ENUMS):
        e = t.errors[cls]
        out.append('\t[%s] = {%d, %s},' % (enum, len(e), 'err_' + enum[9:].lower() if e else 'NULL'))
    out.append('};')
    return '\n'.join(out) + '\n'


def readme_with(readme, block):
    begin = '<!-- BEGIN generated: %s -->\n' % BLOCK
    end = '<!-- END generated: %s -->\n' % BLOCK
    i = readme.index(begin) + len(begin)
    j = readme.index(end, i)
    return readme[:i] + block + readme[j:], readme[i:j]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('exe', nargs='?', default=None)
    ap.add_argument('--moeplan', default='build/src/cli/moeplan')
    ap.add_argument('--root', default='.')
    g = ap.add_mutually_exclusive_group()
    g.add_argument('--write', action='store_true')
    g.add_argument('--check', action='store_true')
    a = ap.parse_args()
    exe = os.path.abspath(a.exe or a.moeplan)
    os.chdir(a.root)
    t = build(exe)
    block, data = block_text(t), data_text(t)
    if not (a.write or a.check):
        sys.stdout.write(block)
        return 0
    readme = open('README.md').read()
    new_readme, old_block = readme_with(readme, block)
    old_data = open(DATA).read() if os.path.exists(DATA) else ''
    if a.check:
        bad = 0
        for name, old, new in (('README.md (%s)' % BLOCK, old_block, block), (DATA, old_data, data)):
            if old != new:
                bad = 1
                sys.stdout.writelines(difflib.unified_diff(old.splitlines(True), new.splitlines(True),
                                                           name, 'this run'))
        if bad:
            print('run: python3 tests/bench/predicted-vs-published.py --write, then rebuild')
        return bad
    for path, text in (('README.md', new_readme), (DATA, data)):
        with open(path + '.tmp', 'w') as f:
            f.write(text)
        os.replace(path + '.tmp', path)
    return 0


if __name__ == '__main__':
    sys.exit(main())
