#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# make check-repeat: the integration tests again and again, to find the
# ones that fail now and then.  N rounds (default 10), each a `make check`
# of the tests through the automake harness (so each test sees the
# environment it always does); every other round (the even ones) runs
# with a CPU hog beside it: HOGS (default 1) busy loops started here and
# killed by their PIDs, so timing-dependent tests meet a loaded machine.
# Prints a table of test x passes, quiet and loaded, and writes it to
# check-repeat.txt in the build directory; each failed run's log is kept
# in check-repeat/ROUND-quiet|loaded/, each round's make output in
# check-repeat/ROUND.out.  Exits 1 when any run failed.
# Each round runs JOBS tests at once (default: the CPUs, as CI's
# `make -jN check` does).
# Environment (set by the target): MAKE, REPEAT_TESTS (the tests), N, HOGS,
# JOBS.
set -u

: "${MAKE:=make}"
: "${N:=10}"
: "${HOGS:=1}"
: "${JOBS:=$(nproc 2>/dev/null || echo 1)}"
tests=${REPEAT_TESTS:?no tests to repeat}
out=check-repeat
table=check-repeat.txt
rm -rf "$out" "$table"
mkdir -p "$out"

hogs=""
stop_hogs() {
	for p in $hogs; do kill "$p" 2>/dev/null; done
	for p in $hogs; do wait "$p" 2>/dev/null; done
	hogs=""
}
trap stop_hogs EXIT
trap 'exit 130' INT TERM

# results: one line per run, "TEST quiet|loaded PASS|FAIL|SKIP|ERROR"
results=$out/results
: >"$results"
r=1
while [ "$r" -le "$N" ]; do
	mode=quiet
	if [ $((r % 2)) -eq 0 ]; then
		mode=loaded
		i=0
		while [ "$i" -lt "$HOGS" ]; do
			sh -c 'while :; do :; done' &
			hogs="$hogs $!"
			i=$((i + 1))
		done
	fi
	echo "check-repeat: round $r of $N ($mode)"
	# Each test's .trs goes first, so a test the round did not run (a
	# build failure) shows as ERROR, not as the previous round's result.
	for t in $tests; do rm -f "${t%.*}.trs" "${t%.*}.log" "$t.trs" "$t.log"; done
	$MAKE -j"$JOBS" check TESTS="$tests" >"$out/$r.out" 2>&1
	stop_hogs
	for t in $tests; do
		# automake names the results TEST.trs (.sh kept: no TEST_EXTENSIONS)
		trs=$t.trs
		[ -f "$trs" ] || trs=${t%.*}.trs
		res=$(sed -n 's/^:test-result: *//p' "$trs" 2>/dev/null | head -1)
		res=${res:-ERROR}
		echo "$t $mode $res" >>"$results"
		case $res in
		PASS | SKIP) ;;
		*)
			mkdir -p "$out/$r-$mode"
			cp "${trs%.trs}.log" "$out/$r-$mode/$(basename "$t").log" 2>/dev/null
			echo "  $res: $t (log: $out/$r-$mode/$(basename "$t").log)"
			;;
		esac
	done
	r=$((r + 1))
done

# The table: passes of runs, quiet and loaded; skips apart.
awk -v n="$N" -v hogs="$HOGS" -v jobs="$JOBS" '
	!($1 in seen) { seen[$1] = 1; order[++k] = $1 }
	{ runs[$1, $2]++ }
	$3 == "PASS" { pass[$1, $2]++ }
	$3 == "SKIP" { skip[$1]++ }
	$3 != "PASS" && $3 != "SKIP" { bad++ }
	END {
		printf "check-repeat: %d rounds of %d tests at once, odd ones quiet, even ones beside %d busy loop(s)\n", n, jobs, hogs
		printf "%-45s %8s %8s %6s\n", "test", "quiet", "loaded", "skips"
		for (i = 1; i <= k; i++) {
			t = order[i]
			printf "%-45s %4d/%-3d %4d/%-3d %6d\n", t, pass[t, "quiet"], runs[t, "quiet"],
				pass[t, "loaded"], runs[t, "loaded"], skip[t]
		}
		printf "%d failed runs\n", bad
	}' "$results" >"$table"
cat "$table"
echo "(table in $(pwd)/$table, failed runs logs in $(pwd)/$out/)"
! grep -qv ' PASS$\| SKIP$' "$results"
