#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# bench/storm.sh small, counts asserted (never times):
#   1. 8 hosts all-to-all, each program's CM in the program: all 56
#      connections established, and the SA answered exactly one PathRecord
#      query per connection (each program queries each destination once);
#   2. 8 hosts many-to-one through madcmd: all 7 established, between 1
#      and 7 PathRecord queries (a host SA cache in madcmd may share them);
#   3. a ring of 8 hosts through madcmd, 5% of CM MADs lost: all 8
#      established despite the loss (REQ/REP/RTU retries).
# Exit 77 (skip) when the simulator or OpenSM is not there.
set -u
: "${top_builddir:=$(cd "$(dirname "$0")/../.." && pwd)}"
: "${top_srcdir:=$(cd "$(dirname "$0")/../.." && pwd)}"
. "$(dirname "$0")/../skip.sh"
[ -x "$top_builddir/sim/fabsim" ] || { echo "SKIP: fabsim not built"; exit 77; }
[ -x "$top_builddir/bench/storm_worker" ] || { echo "SKIP: storm_worker not built"; exit 77; }
[ -x /usr/sbin/opensm ] || skip_missing opensm opensm
export top_builddir
out=$(mktemp -d "${TMPDIR:-/tmp}/storm_small.XXXXXX") || exit 1
trap 'rm -rf "$out"' EXIT
fail=0
bad() {
	echo "FAIL: $*"
	fail=1
}

# storm NAME ARGS...: the storm, bounded; its last line in $line.
storm() {
	n=$1
	shift
	echo "== storm.sh $*"
	timeout 600 sh "$top_srcdir/bench/storm.sh" --out "$out/$n" --timeout 300 "$@" >"$out/$n.log" 2>&1
	rc=$?
	cat "$out/$n.log"
	[ "$rc" = 0 ] || bad "storm.sh $* exited $rc"
	line=$(grep '^storm: ' "$out/$n.log" | tail -1)
	[ -s "$out/$n/storm.csv" ] || bad "$n: no storm.csv"
}
# queries: the PathRecord count of the last line.
queries() { echo "$line" | sed -n 's/.*SA PathRecord queries \([0-9]*\)$/\1/p'; }

storm a2a --hosts 8 --pattern all-to-all --no-madcmd
echo "$line" | grep -q "^storm: 8 hosts, 1 per host, all-to-all: established 56 of 56 in " ||
	bad "all-to-all: not every connection established: $line"
[ "$(queries)" = 56 ] || bad "all-to-all: PathRecord queries $(queries), want 56"
[ "$(grep -c ',ok,' "$out/a2a/storm.csv")" = 56 ] || bad "all-to-all: storm.csv rows"

storm m2o --hosts 8 --pattern many-to-one
echo "$line" | grep -q "^storm: 8 hosts, 1 per host, many-to-one: established 7 of 7 in " ||
	bad "many-to-one: not every connection established: $line"
q=$(queries)
[ -n "$q" ] && [ "$q" -ge 1 ] && [ "$q" -le 7 ] || bad "many-to-one: PathRecord queries '$q', want 1..7"

storm ring --hosts 8 --pattern ring --loss 5
echo "$line" | grep -q "^storm: 8 hosts, 1 per host, ring: established 8 of 8 in " ||
	bad "ring with loss: not every connection established: $line"
exit $fail
