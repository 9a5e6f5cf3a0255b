#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# Check the CM protocol model (tests/model/cm.pml) with spin.
#   spin_check.sh [short|long]   (short: what `make check` runs, < 1 min)
# Each run is one bound (LOSS DUPS REORDER RETRIES) and one kind of search:
#   safety  assertions and invalid end states (deadlock), exhaustive;
#   np      non-progress cycles with no progress label: no cycle at all,
#           so no livelock (every run of the protocol ends);
#   bit     safety with bitstate hashing (supertrace), for the deepest bound.
# The model's own checks are described at the top of cm.pml.
set -eu

mode=${1:-short}
: "${top_srcdir:=$(cd "$(dirname "$0")/../.." && pwd)}"
model=$top_srcdir/tests/model/cm.pml
CC=${CC:-cc}

. "$(dirname "$0")/../skip.sh"
skip_missing spin spin

tmp=$(mktemp -d "${TMPDIR:-/tmp}/cm-model.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM
cp "$model" "$tmp/cm.pml"

# run KIND LOSS DUPS REORDER RETRIES
run() {
	kind=$1
	bounds="-DLOSS=$2 -DDUPS=$3 -DREORDER=$4 -DRETRIES=$5"
	case $kind in
	safety) ccflags="-DSAFETY" panflags="-m200000 -w22" ;;
	np) ccflags="-DNP" panflags="-l -m200000 -w22" ;;
	bit) ccflags="-DSAFETY -DBITSTATE" panflags="-m200000 -w31" ;;
	esac
	(
		cd "$tmp"
		rm -f pan pan.* ./*.trail
		spin $bounds -a cm.pml >spin.log 2>&1 || { cat spin.log; exit 1; }
		$CC -O1 $ccflags -o pan pan.c >cc.log 2>&1 || { cat cc.log; exit 1; }
		./pan $panflags >pan.log 2>&1 || true
		stored=$(sed -n 's/^ *\([0-9.e+]*\) states, stored.*/\1/p' pan.log)
		depth=$(sed -n 's/.*depth reached \([0-9]*\),.*/\1/p' pan.log)
		mem=$(sed -n 's/^ *\([0-9.]*\)[[:space:]]*total actual memory usage.*/\1/p' pan.log)
		secs=$(sed -n 's/^pan: elapsed time \([0-9.e+]*\) seconds.*/\1/p' pan.log)
		if grep -q 'errors: 0' pan.log && ! grep -q 'max search depth too small' pan.log; then
			echo "ok   $kind $bounds ($stored states, depth $depth, ${mem} MB, ${secs} s)"
		else
			echo "FAIL $kind $bounds"
			cat pan.log
			if ls ./*.trail >/dev/null 2>&1; then
				spin $bounds -t -p cm.pml | tail -80
			fi
			exit 1
		fi
	)
}

case $mode in
short)
	run safety 1 0 0 1 # loss and retransmission
	run safety 0 0 1 1 # reordering and retransmission
	run safety 1 1 1 0 # loss, duplication, reordering at once
	run np 0 0 0 1
	run np 1 1 1 0
	;;
long)
	run safety 1 0 1 1
	run safety 0 1 0 1
	run safety 1 1 0 1
	run np 1 0 0 1
	run np 0 0 1 1
	run bit 1 1 1 1
	run bit 2 1 1 2
	;;
*)
	echo "usage: $0 [short|long]" >&2
	exit 2
	;;
esac
