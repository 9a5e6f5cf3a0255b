#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# bench/rdmacm_bench end to end, small: the benchmark asserts nothing about
# time, so this only checks that each of its placements runs and reports.
#   1. the default (two rounds): each simulated host on a CPU of its own,
#      the fabric's processes on the server's CPU in round 1 and on the
#      client's in round 2; the engine and API rows, every one-at-a-time
#      connect established, each placement's medians, no error event on
#      the server, and its fabric taken down and removed;
#   2. -S (no placement) and -F any (the fabric anywhere), one round each
#      without the engine.
# Exit 77 (skip) when the simulator or OpenSM is not there.
set -u

: "${top_builddir:=$(cd "$(dirname "$0")/../.." && pwd)}"
BENCH=$top_builddir/bench/rdmacm_bench

skip() {
	echo "SKIP: $*"
	exit 77
}

fail=0
bad() {
	echo "FAIL: $*"
	fail=1
}

[ -x "$BENCH" ] || skip "$BENCH not built"
[ -x "$top_builddir/sim/fabsim" ] || skip "fabsim not built"
. "$(dirname "$0")/../skip.sh"
[ -x /usr/sbin/opensm ] || skip_missing opensm opensm

out=$(mktemp "${TMPDIR:-/tmp}/rdmacm_bench_test.XXXXXX") || exit 1
trap 'rm -f "$out"' EXIT

# has PATTERN WHAT: the last run's output has a line matching PATTERN.
has() {
	grep -q -- "$1" "$out" || bad "$2 (no line matching '$1')"
}

# run ARGS...: the bench, bounded, its exit status checked, its fabric gone.
run() {
	echo "== rdmacm_bench $*"
	timeout 600 "$BENCH" "$@" >"$out" 2>&1
	rc=$?
	[ "$rc" = 0 ] || { bad "rdmacm_bench $* exited $rc"; cat "$out"; }
	fab=$(sed -n 's/^rdmacm_bench: fabric in \([^ ]*\) .*/\1/p' "$out")
	[ -n "$fab" ] || bad "rdmacm_bench $*: no fabric directory printed"
	[ -z "$fab" ] || [ ! -e "$fab" ] || bad "rdmacm_bench $*: $fab left behind"
	has "^server: .* 0 error events" "the server saw an error event"
}

ncpu=$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 1)

run -R 2 -n 20 -i 20 -p 50
has "^connect rate: API [0-9]* conn/s, raw engine" "the API's rate next to the engine's"
has "one connection at a time (20 of 20 in 20 tries" "every one-at-a-time connect established"
has "^  over the floor alongside: [0-9.]* [0-9.]* (median" "each round's ratio"
has "the API's cost over the engine's rate (target <= +20%): " "each round's cost over the engine"
if [ "$ncpu" -ge 2 ]; then
	has "^each host on a CPU of its own: h1 on CPU 0, h2 on CPU $((ncpu - 1))" "the hosts' CPUs"
	has "^the fabric's processes on CPU 0, with the server's host" "round 1's placement"
	has "^the fabric's processes on CPU $((ncpu - 1)), with the client's host" "round 2's placement"
	has "^  the fabric on the server's CPU: connect over the floor alongside median" \
		"the server placement's medians"
	has "^  the fabric on the client's CPU: connect over the floor alongside median" \
		"the client placement's medians"
else
	has "^the hosts' processes on any CPU" "one CPU: no placement"
fi

run -S -R 1 -E -n 10 -i 10 -p 20
has "^the hosts' processes on any CPU (-S)" "-S: no placement"
has "one connection at a time (10 of 10 in 10 tries" "-S: every connect established"

run -F any -R 1 -E -n 10 -i 10 -p 20
has "^the fabric's processes (fabsimd, OpenSM) on any CPU" "-F any: the fabric anywhere"

exit $fail
