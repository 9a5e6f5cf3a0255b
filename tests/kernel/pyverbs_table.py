#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# check.sh pyverbs: the side-by-side table of rdma-core's test_rdmacm cases,
# kernel rdma_cm against madcm, from DIR/pyverbs.{kernel,madcm}.results
# (guest/pyverbs_run.py: "NAME PASS|FAIL|ERROR|SKIP SECS [why]").  Exits 1
# when a case that passes on the kernel does not pass on madcm, when the
# madcm turn reported anything besides cases, or when either has no result.
#
#   pyverbs_table.py DIR [TURNS]     TURNS: "madcm kernel" (default)
import os
import sys

d = sys.argv[1]
turns = sys.argv[2].split() if len(sys.argv) > 2 else ['madcm', 'kernel']


def load(cm):
    res, extra = {}, []
    if cm not in turns:
        return res, extra
    try:
        for line in open(os.path.join(d, 'pyverbs.%s.results' % cm)):
            f = line.split(None, 3)
            if len(f) >= 2 and f[0].startswith('test_'):
                res[f[0]] = (f[1], f[2] if len(f) > 2 else '?',
                             f[3].strip() if len(f) > 3 else '')
            elif line.strip():
                extra.append(line.strip())
    except OSError:
        extra.append('no results')
    if not res and not extra:
        extra.append('no results')
    return res, extra


k, kx = load('kernel')
m, mx = load('madcm')
bad = 0
print('   %-46s %-6s %-6s %s' % ('case', 'kernel', 'madcm', ''))
for n in sorted(set(k) | set(m)):
    ks, ms = k.get(n, ('-', ))[0], m.get(n, ('-', ))[0]
    kt, mt = k.get(n, ('', ''))[1], m.get(n, ('', ''))[1]
    note = ''
    if ks == 'PASS' and ms != 'PASS':
        note, bad = 'madcm does not pass what the kernel passes', bad + 1
    elif ks == 'SKIP' and ms == 'SKIP':
        note = 'skipped on both: ' + k[n][2]
    elif ks not in ('PASS', '-') and ms != 'PASS':
        note = 'fails on both (kernel: %s; madcm: %s)' % (k[n][2][:50], m.get(n, ('', '', ''))[2][:50])
    elif ms == 'PASS' and ks not in ('PASS', '-'):
        note = 'passes on madcm only'
    print('   %-46s %-6s %-6s %s' % (n, ks, ms, ('%5s s %5s s  ' % (kt, mt)) + note))
for cm, x in (('kernel', kx), ('madcm', mx)):
    for line in x:
        print('   %s turn: %s' % (cm, line))
        bad += 1
if bad:
    print('   FAILED: %d line(s) above' % bad)
elif 'kernel' not in turns or 'madcm' not in turns:
    print('   PASS (one turn only: nothing compared)')
else:
    print('   PASS: madcm passes every case the kernel passes')
sys.exit(1 if bad else 0)
