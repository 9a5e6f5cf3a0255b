#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# fuzz_madcmd twice on its corpus and the same generated inputs: the hash
# of what the daemon sent (FUZZ_MADCMD_TRACE) must be the same both times,
# as libFuzzer needs one input to take one path (tests/fuzz/fuzz_random.h).
set -eu
top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}
top_builddir=${top_builddir:-.}
target=$top_builddir/tests/fuzz/fuzz_madcmd
run() {
	FUZZ_ITERATIONS=5000 FUZZ_MADCMD_TRACE=1 "$target" \
		"$top_srcdir"/tests/fuzz/corpus/fuzz_madcmd/* | grep '^fuzz_madcmd: trace '
}
a=$(run)
b=$(run)
echo "first:  $a"
echo "second: $b"
if [ "$a" != "$b" ]; then
	echo "FAIL: two runs of one corpus differ" >&2
	exit 1
fi
