#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# rdma-core's pyverbs tests (unpacked by guest/pyverbs.sh into a directory
# of their own, this file copied beside run_tests.py), run as run_tests.py
# runs them, with two differences:
#  - rdma-core 44 finds a device's netdev only under
#    /sys/class/infiniband/DEV/device/net/, which rxe lacks, so every
#    rdmacm case would skip; as newer rdma-core does, fall back to the
#    netdev of the GID (ports/PORT/gid_attrs/ndevs/INDEX);
#  - a failing player (the forked passive or active side) prints its
#    traceback, not only the exception's text (often empty: an assert);
#  - each case's outcome goes to RESULTS, one line "NAME STATUS SECONDS"
#    (STATUS: PASS, FAIL, ERROR, SKIP).
#
#   pyverbs_run.py RESULTS [run_tests.py arguments, e.g. -v NAME...]
import os
import sys
import time
import traceback
import unittest
from importlib.machinery import SourceFileLoader

here = os.path.dirname(os.path.abspath(__file__))
results_path = sys.argv.pop(1)
from args_parser import parser  # noqa: E402 (after the path is known)

tests = SourceFileLoader('tests', os.path.join(here, '__init__.py')).load_module()
import tests.base as base  # noqa: E402

_orig_get_ip_mac = base.RDMATestCase._get_ip_mac


def _get_ip_mac(self, dev, port, idx):
    if os.path.exists('/sys/class/infiniband/{}/device/net/'.format(dev)):
        return _orig_get_ip_mac(self, dev, port, idx)
    ndev = '/sys/class/infiniband/{}/ports/{}/gid_attrs/ndevs/{}'.format(
        dev, port, idx if idx is not None else 0)
    try:
        with open(ndev) as f:
            name = f.read().strip()
        ip_addr, mac_addr = self.get_ip_mac_address(name)
    except (OSError, KeyError, IndexError, ValueError):
        self.args.append([dev, port, idx, None, None])
    else:
        self.args.append([dev, port, idx, ip_addr, mac_addr])


base.RDMATestCase._get_ip_mac = _get_ip_mac
_orig_handler = base.RDMACMBaseTest._rdmacm_exception_handler


def _rdmacm_exception_handler(passive, exception):
    if not isinstance(exception, unittest.case.SkipTest):
        traceback.print_exception(exception)
    _orig_handler(passive, exception)


base.RDMACMBaseTest._rdmacm_exception_handler = staticmethod(_rdmacm_exception_handler)


class Result(unittest.TextTestResult):
    """Records each case's outcome and time in results_path."""

    def startTest(self, test):
        self._t0 = time.monotonic()
        super().startTest(test)

    def _record(self, test, status, why=''):
        name = test.id().split('.')[-1]
        with open(results_path, 'a') as f:
            f.write('%s %s %.1f%s\n' % (name, status, time.monotonic() - self._t0,
                                        ' ' + why.replace('\n', ' ')[:120] if why else ''))

    def addSuccess(self, test):
        super().addSuccess(test)
        self._record(test, 'PASS')

    def addFailure(self, test, err):
        super().addFailure(test, err)
        self._record(test, 'FAIL', str(err[1]))

    def addError(self, test, err):
        super().addError(test, err)
        self._record(test, 'ERROR', str(err[1]))

    def addSkip(self, test, reason):
        super().addSkip(test, reason)
        self._record(test, 'SKIP', reason)


class Runner(unittest.TextTestRunner):
    resultclass = Result


open(results_path, 'w').close()
parser.parse_args()
prog = unittest.main(module=tests, exit=False,
                     testRunner=Runner)
sys.exit(0 if prog.result.wasSuccessful() else 1)
