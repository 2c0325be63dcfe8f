#!/usr/bin/env python3
"""Every printed figure carries the model's measured error on published
cases (issue 23 item 5), and that error is README's, not typed.

Usage: published-error.py MOEPLAN SOURCE_ROOT

The expected summaries are computed here, by hand, from the rows of
README.md's generated "Predicted vs published" block: for each class in
the "counts toward" column, the signed errors of its rows (the error
column, "+91.9%" -> 0.919); n; min and max; the median of the absolute
errors (statistics.median: the mean of the two middle ones when n is
even). Checked against:
  1. src/model/published-error.c: the same errors, the same order (the
     data compiled in cannot drift from the README table);
  2. `moeplan step --format json` (decode and prefill): error_vs_published
     beside step_time_s, tokens_per_s_per_gpu, tokens_per_s_per_user and
     tpot_s (decode) or ttft_s (prefill);
  3. `moeplan step` text: one "measured error, CLASS: ..." line per figure,
     its interval as written here from the README numbers;
  4. `moeplan plan --format json` (each phase's step, each width) and
     `--report` (a paragraph per phase);
  5. `moeplan search --no-placement --format json` (chosen points, pools;
     the placements do not change the errors, and take minutes) and its text
     and `--report`.
"""
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

CLASSES = ['step time', 'decode tokens/s per GPU', 'tokens/s per user', 'TPOT',
           'prefill tokens/s per GPU', 'TTFT']
PHASE = {True: {'step_time_s': 'step time', 'tokens_per_s_per_gpu': 'decode tokens/s per GPU',
                'tokens_per_s_per_user': 'tokens/s per user', 'tpot_s': 'TPOT'},
         False: {'step_time_s': 'step time', 'tokens_per_s_per_gpu': 'prefill tokens/s per GPU',
                 'ttft_s': 'TTFT'}}
V3 = ['-m', 'plans/models/deepseek-v3.yaml', '-H', 'hardware/hgx-h800.yaml']
DECODE = V3 + ['--phase', 'decode', '--ep', '144', '--min-redundant', '32', '-r', '88', '-c', '4989',
               '--tokens-per-request', '2', '--acceptance', '0.85', '--overlap', 'two_batch']
PREFILL = V3 + ['--phase', 'prefill', '--ep', '32', '--min-redundant', '32', '-c', '4096',
                '--chunk-tokens', '16384', '--overlap', 'two_batch']
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print('FAIL:', what)


def readme_errors(root):
    text = open(os.path.join(root, 'README.md')).read()
    m = re.search(r'<!-- BEGIN generated: predicted-vs-published -->\n(.*?)<!-- END generated', text, re.S)
    if not m:
        sys.exit('README.md: no predicted-vs-published block')
    errs = {c: [] for c in CLASSES}
    rows = [l for l in m.group(1).splitlines() if l.startswith('| [')]
    check(len(rows) >= 5, 'README block has rows')
    for l in rows:
        cells = [c.strip() for c in l.strip('|').split(' | ')]
        err, cls = cells[3], cells[4]
        if cls == '-':
            continue
        check(cls in errs, 'README class %r is one of moeplan\'s' % cls)
        errs.setdefault(cls, []).append(round(float(err.rstrip('%')) / 100, 6))
    return errs


def summary(e):
    if not e:
        return {'n': 0, 'min': None, 'max': None, 'median_abs': None}
    return {'n': len(e), 'min': min(e), 'max': max(e), 'median_abs': statistics.median(abs(v) for v in e)}


def short(e):
    s = summary(e)
    if s['n'] == 0:
        return 'no published case'
    if s['n'] == 1:
        return '%+.0f%%, n=1' % (100 * s['min'])
    return '%+.0f%%..%+.0f%%, median |err| %.0f%%, n=%d' % (100 * s['min'], 100 * s['max'],
                                                          100 * s['median_abs'], s['n'])


def line(cls, e):
    n = len(e)
    pre = '' if n == 0 else 'published case: ' if n == 1 else 'published cases: '
    return 'measured error, %s: %s%s; see README "Predicted vs published"' % (cls, pre, short(e))


def same(doc, want, where):
    check(doc is not None, where + ': has error_vs_published')
    if doc is None:
        return
    check(set(doc) == set(want), where + ': keys %s, want %s' % (sorted(doc), sorted(want)))
    for field, cls in want.items():
        got, exp = doc.get(field, {}), summary(ERR[cls])
        for k in ('n', 'min', 'max', 'median_abs'):
            g, x = got.get(k), exp[k]
            ok = g == x if x is None or k == 'n' else g is not None and abs(g - x) < 1e-9
            check(ok, '%s: %s.%s = %r, README gives %r' % (where, field, k, g, x))


def paragraphs(rep, where):
    """A report's paragraph per phase: every figure's class and summary."""
    paras = [l for l in rep.splitlines() if l.startswith('Measured error of these figures on published cases')]
    check(len(paras) == 2, '%s: a paragraph per phase (%d)' % (where, len(paras)))
    for para, decode in zip(paras, (False, True)):
        for cls in PHASE[decode].values():
            want = '%s %s' % (cls, short(ERR[cls]))
            check(': ' + want + ';' in para or '; ' + want + ';' in para or '; ' + want + '.' in para,
                  '%s has "%s"' % (where, want))


def run(exe, args, cwd):
    r = subprocess.run([exe] + args, cwd=cwd, capture_output=True, text=True)
    check(r.returncode == 0, '`moeplan %s` exits 0 (%d: %s)' % (' '.join(args), r.returncode, r.stderr[-300:]))
    return r.stdout


def main():
    global ERR
    exe, root = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    ERR = readme_errors(root)
    print('README rows by class:', {c: e for c, e in ERR.items()})
    # 1. the data compiled in
    data = open(os.path.join(root, 'src/model/published-error.c')).read()
    for c in CLASSES:
        m = re.search(r'static const double err_\w+\[\] = \{([^}]*)\}; /\* %s \*/' % re.escape(c), data)
        got = [float(v) for v in m.group(1).split(',')] if m else []
        check(got == ERR[c], 'published-error.c %s: %s, README %s (rerun predicted-vs-published.py --write)'
              % (c, got, ERR[c]))
    check(any(ERR[c] for c in CLASSES), 'some class has a published case')
    # 2, 3: step
    for decode, args in ((True, DECODE), (False, PREFILL)):
        d = json.loads(run(exe, ['step', '--format', 'json'] + args, root) or '{}')
        same(d.get('error_vs_published'), PHASE[decode], 'step %s json' % ('decode' if decode else 'prefill'))
        text = run(exe, ['step'] + args, root)
        for cls in PHASE[decode].values():
            check('  ' + line(cls, ERR[cls]) + '\n' in text, 'step text has "%s"' % line(cls, ERR[cls]))
    # 4, 5: plan and search
    with tempfile.TemporaryDirectory() as t:
        p = json.loads(run(exe, ['plan', 'plans/default.yaml', '--format', 'json'], root) or '{}')
        for ph, decode in (('prefill', False), ('decode', True)):
            same(p.get(ph, {}).get('step', {}).get('error_vs_published'), PHASE[decode], 'plan %s.step' % ph)
            ws = [w for w in p.get(ph, {}).get('widths', []) if 'step_time_s' in w]
            check(len(ws) > 0, 'plan %s has evaluated widths' % ph)
            for w in ws:
                same(w.get('error_vs_published'), PHASE[decode], 'plan %s.widths EP%s' % (ph, w.get('ep')))
        run(exe, ['plan', 'plans/default.yaml', '-o', os.path.join(t, 'p.yaml'), '--report',
                  os.path.join(t, 'r.md')], root)
        rep = open(os.path.join(t, 'r.md')).read() if os.path.exists(os.path.join(t, 'r.md')) else ''
        paragraphs(rep, 'plan report')
        s = json.loads(run(exe, ['search', 'plans/deepseek-v3-day.yaml', '--no-placement', '--format', 'json'], root) or '{}')
        for ph, decode in (('prefill', False), ('decode', True)):
            same(s.get(ph, {}).get('chosen', {}).get('error_vs_published'), PHASE[decode], 'search %s.chosen' % ph)
        same(s.get('pools', {}).get('error_vs_published'),
             {'input_tokens_per_s_per_gpu': 'prefill tokens/s per GPU',
              'output_tokens_per_s_per_gpu': 'decode tokens/s per GPU'}, 'search pools')
        text = run(exe, ['search', 'plans/deepseek-v3-day.yaml', '--no-placement', '--report', os.path.join(t, 's.md')], root)
        for decode in (False, True):
            for cls in PHASE[decode].values():
                check('  ' + line(cls, ERR[cls]) + '\n' in text, 'search text has "%s"' % line(cls, ERR[cls]))
        rep = open(os.path.join(t, 's.md')).read() if os.path.exists(os.path.join(t, 's.md')) else ''
        paragraphs(rep, 'search report')
    print('%d failures' % len(failures))
    return 1 if failures else 0


if __name__ == '__main__':
    sys.exit(main())
