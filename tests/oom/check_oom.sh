#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# tests/oom/check_oom.sh: `make check-oom`.  Every unit test of lib/ cm/
# sa/ mad/ madcmd/ is run with its Nth allocation failing, N = 1, 2, 3, ...
# until a run completes with no failure injected (tests/oom/oom_alloc.c),
# in a build of its own with AddressSanitizer and LeakSanitizer.
#
# A run is good when the program exits with CMocka's status (0, or the
# number of failed tests: a test's assertion fails when an allocation it
# relied on failed), and bad on a sanitizer report (memory error, leak), a
# signal (CMocka turns one into "Test failed with exception"), or a hang
# (OOM_TIMEOUT seconds).  Bad runs are listed at the end; their logs are
# kept in $OOM_DIR/logs/TEST-N.log.
#
# Usage (from a build directory): tests/oom/check_oom.sh [TEST...]
# Environment:
#   top_srcdir        the sources (set by make)
#   OOM_DIR           the OOM build directory (default ./oom)
#   OOM_TESTS         the tests (default: the arguments)
#   OOM_MAX           highest N for a test (default 1000000)
#   OOM_DENSE         every N up to this one (default 2000), then a sample:
#   OOM_SAMPLE        N grows by N/OOM_SAMPLE (default 200)
#   OOM_JOBS          tests run at once (default: the number of CPUs)
#   OOM_TIMEOUT       seconds a run may take (default 60)
#   OOM_PERSIST=1     every allocation from the Nth on fails (SQLite's
#                     "persistent" mode), not only the Nth
#   OOM_KEEP_GOING=0  stop at the first bad run
#   OOM_STRICT_LEAKS=1 count as bad a leak in a run where a test failed
#
# A leak in a run where a CMocka test failed may be the test's own: an
# assertion ends the test before it frees what the calls it made returned.
# Such leaks are listed apart, one line for each place that allocated
# (OOM_STRICT_LEAKS=1 counts them as bad); a leak in a run where every
# test passed (the code absorbed the failure) is bad.
set -u

top_srcdir=$(cd "${top_srcdir:-$(dirname "$0")/../..}" && pwd)
OOM_DIR=${OOM_DIR:-oom}
OOM_MAX=${OOM_MAX:-1000000}
OOM_DENSE=${OOM_DENSE:-2000}
OOM_SAMPLE=${OOM_SAMPLE:-200}
OOM_TIMEOUT=${OOM_TIMEOUT:-60}
OOM_PERSIST=${OOM_PERSIST:-0}
OOM_KEEP_GOING=${OOM_KEEP_GOING:-1}
OOM_STRICT_LEAKS=${OOM_STRICT_LEAKS:-0}
tests=${OOM_TESTS:-$*}
jobs=$(nproc 2>/dev/null || echo 2)
OOM_JOBS=${OOM_JOBS:-$jobs}

if [ -z "$tests" ]; then
	echo "check_oom.sh: no tests given" >&2
	exit 2
fi

# The build: static (madcm's archives are linked into the tests), no LTO,
# ASan with leak detection.  Configured once; `make` keeps it up to date.
asan="-O1 -g -fsanitize=address -fno-omit-frame-pointer"
libs="libmadcm.la lib/libcma.la lib/libmadcm_addr.la libmadcmd_core.la"
archives=".libs/libmadcm.a lib/.libs/libcma.a lib/.libs/libmadcm_addr.a .libs/libmadcmd_core.a"
rename=""
for f in malloc calloc realloc aligned_alloc strdup strndup; do
	rename="$rename --redefine-sym $f=__wrap_$f"
done
mkdir -p "$OOM_DIR/logs" || exit 1
OOM_DIR=$(cd "$OOM_DIR" && pwd)
cd "$OOM_DIR" || exit 1
if [ ! -f Makefile ]; then
	"$top_srcdir/configure" --disable-shared --enable-static --disable-lto \
		CFLAGS="$asan" LDFLAGS="-fsanitize=address" >configure.log 2>&1 ||
		{
			tail -20 configure.log
			exit 1
		}
fi
# shellcheck disable=SC2086
${CC:-cc} $asan -c -o oom_alloc.o "$top_srcdir/tests/oom/oom_alloc.c" || exit 1
# madcm's archives call the counting allocator (oom_alloc.c), the tests
# and their fakes the real one; then every test is linked again, with the
# allocator (an object named in LDFLAGS is always linked).
fail() {
	tail -40 make.log
	exit 1
}
# shellcheck disable=SC2086
make -j"$jobs" $libs >make.log 2>&1 || fail
for a in $archives; do
	# shellcheck disable=SC2086
	${OBJCOPY:-objcopy} $rename "$a" || exit 1
done
# shellcheck disable=SC2086
rm -f $tests
# shellcheck disable=SC2086
make -j"$jobs" $tests LDFLAGS="-fsanitize=address $OOM_DIR/oom_alloc.o" >>make.log 2>&1 || fail

# ASan's own checks; leaks are reported at exit.  abort_on_error would
# turn a report into SIGABRT, which CMocka would catch: exitcode instead.
# ASan keeps SIGSEGV from CMocka's handler, to print where it happened.
export ASAN_OPTIONS="detect_leaks=1:exitcode=99:abort_on_error=0:allow_user_segv_handler=0${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
export MADCM_OOM_PERSIST="$OOM_PERSIST"

# One run: sets $rc, $allocs, $injected; the log in $log.
run_one() {
	rm -f "$count"
	MADCM_OOM_FAIL_AT=$1 MADCM_OOM_REPORT="$count" \
		timeout -k 5 "$OOM_TIMEOUT" "./$t" >"$log" 2>&1 </dev/null
	rc=$?
	allocs=-1
	injected=-1
	# shellcheck disable=SC2034
	[ -f "$count" ] && read -r _ allocs _ injected <"$count"
}

# Where each leaked block was allocated: the first two functions below the
# allocator (one line a block).
leak_sites() {
	awk '/allocated from:/ { want = 2; site = ""; next }
		want && /#[0-9]+ 0x/ {
			fn = $4
			if (fn ~ /^(__interceptor_|__wrap_|zalloc$|malloc$|calloc$)/) next
			site = site fn " "
			if (--want == 0) print site
		}' "$log" | sort -u
}

# Why run N=$1 is bad, or nothing.
verdict() {
	if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
		echo "timeout (${OOM_TIMEOUT}s)"
	elif grep -q "LeakSanitizer" "$log"; then
		if [ "$OOM_STRICT_LEAKS" = 1 ] || ! grep -q '^\[  \(FAILED\|ERROR\) ' "$log"; then
			echo "leak: $(leak_sites | head -1)"
		else
			leak_sites | sed "s|^|$t N=$1: |" >>"$suspects"
		fi
	elif grep -q "ERROR: AddressSanitizer" "$log"; then
		echo "$(grep -m1 'ERROR: AddressSanitizer' "$log" | sed 's/.*AddressSanitizer: //;s/ on .*//') at $(grep '#[0-9]* 0x.* \.\./' "$log" | grep -v 'sysdeps\|libsanitizer' | head -2 | sed 's/.* in //' | tr '\n' ' ')"
	elif grep -q "Test failed with exception" "$log"; then
		echo "$(grep -m1 'Test failed with exception' "$log" | sed 's/.*exception: //')"
	elif [ "$rc" -ge 99 ]; then
		echo "exit status $rc"
	fi
}

# One test, N = 1, 2, ... (then sampled); its lines go to its own files.
check_test() {
	t=$1
	name=$(basename "$t")
	report="$OOM_DIR/report-$name.txt"
	suspects="$OOM_DIR/leaks-$name.txt"
	: >"$report"
	: >"$suspects"
	log="$OOM_DIR/logs/$name-0.log"
	count="$OOM_DIR/count-$name"
	run_one 0
	total=$allocs
	if [ "$rc" -ne 0 ] || [ "$total" -lt 0 ]; then
		echo "$t: fails with no allocation failing (status $rc)" | tee -a "$report"
		return
	fi
	n=1
	runs=1
	while [ "$n" -le "$OOM_MAX" ]; do
		log="$OOM_DIR/logs/$name-$n.log"
		run_one "$n"
		runs=$((runs + 1))
		why=$(verdict "$n")
		if [ -n "$why" ]; then
			echo "$t N=$n: $why" | tee -a "$report"
			[ "$OOM_KEEP_GOING" = 1 ] || break
		else
			rm -f "$log"
		fi
		# Past the last allocation: nothing was injected, the test passes.
		if [ "$injected" = 0 ]; then
			[ "$rc" -eq 0 ] ||
				echo "$t N=$n: fails with nothing injected (status $rc)" | tee -a "$report"
			break
		fi
		# Past OOM_DENSE, a sample: N grows by 1/OOM_SAMPLE of itself.
		if [ "$n" -ge "$OOM_DENSE" ]; then
			n=$((n + n / OOM_SAMPLE))
		else
			n=$((n + 1))
		fi
	done
	echo "$t: $total allocations, $runs runs, $(wc -l <"$report") bad"
}

# At most OOM_JOBS tests at once.  Counted by PID: `jobs -p` in a command
# substitution lists the jobs of the subshell's copy, never updated there,
# so a finished test would hold its place for good.
running=""
for t in $tests; do
	while :; do
		alive=""
		for p in $running; do
			! kill -0 "$p" 2>/dev/null || alive="$alive $p"
		done
		running=$alive
		[ "$(echo $running | wc -w)" -ge "$OOM_JOBS" ] || break
		sleep 1
	done
	check_test "$t" &
	running="$running $!"
done
wait
cat "$OOM_DIR"/report-*.txt >"$OOM_DIR/report.txt"
bad=$(wc -l <"$OOM_DIR/report.txt")

cat "$OOM_DIR"/leaks-*.txt | sort -k3 -u | sort >"$OOM_DIR/leaks-in-failed-tests.txt"
if [ -s "$OOM_DIR/leaks-in-failed-tests.txt" ]; then
	echo "leaks in runs where a test failed (the test's own, or the code's: look whether"
	echo "the call that allocated returned an error), one line for each place:"
	cat "$OOM_DIR/leaks-in-failed-tests.txt"
fi
echo "check-oom: $bad bad runs (list in $OOM_DIR/report.txt)"
[ "$bad" -eq 0 ]
