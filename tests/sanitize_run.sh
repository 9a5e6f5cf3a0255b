#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# LOG_COMPILER of a sanitizer build (configure --enable-sanitize, see
# tests/sanitize.inc): runs one test with the sanitizers' reports written
# to files in a private directory (log_path) instead of the stderr of
# whichever process hit them (often a daemon's log that the test then
# deletes), and fails the test when any report was written.
#   ASan: abort at the first error; leaks checked at exit, reported
#     without changing the exit status (exitcode=0, which only leaks use
#     when errors abort): a third-party program's leaks at exit (below)
#     must not fail what it ran for.  The runtime
#     order check is off (verify_asan_link_order=0): fabsim run preloads
#     libfabsim.so, uninstrumented, in front of instrumented programs; it
#     interposes only libibumad's and libibverbs' calls, never the
#     allocator or libc the check is about.  Uninstrumented programs get
#     the runtime preloaded first by `madcm run` (tools/cmd_run.c).
#   UBSan: stop at the first error, with its stack.
#   TSan: every race reported (the test goes on), suppressions only for
#     third-party libraries (tests/tsan.supp).
#   LSan: a leak counts when a frame of its allocation's stack is
#     madcm's code (compiled with -g, so shown with file:line); leaks whose
#     frames are all in system modules (/usr, /lib: sed or awk started by a
#     program that `madcm run` gave the runtime to) are third-party and
#     only listed.  tests/lsan.supp for third-party leaks through our code.
d=$(mktemp -d "${TMPDIR:-/tmp}/madcm-san.XXXXXX") || exit 99
src=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
ASAN_OPTIONS="abort_on_error=1:exitcode=0:detect_leaks=1:verify_asan_link_order=0:log_path=$d/asan${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:log_path=$d/ubsan${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"
TSAN_OPTIONS="second_deadlock_stack=1:log_path=$d/tsan:suppressions=$src/tests/tsan.supp${TSAN_OPTIONS:+:$TSAN_OPTIONS}"
LSAN_OPTIONS="suppressions=$src/tests/lsan.supp${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
# Tests leave valgrind out: it cannot run an instrumented program.
MADCM_SANITIZED=1
export ASAN_OPTIONS UBSAN_OPTIONS TSAN_OPTIONS LSAN_OPTIONS MADCM_SANITIZED
"$@"
rc=$?
# A LeakSanitizer report whose every leak is third-party (above) is moved
# aside: its name and first leak go to the log, it does not fail the test.
third_party_leaks() {
	grep -q "ERROR: LeakSanitizer" "$1" || return 1
	awk '
		/^(Direct|Indirect) leak/ { nleak++; ours[nleak] = 0; next }
		/^ *#[0-9]+ / && nleak {
			if ($0 ~ /libsanitizer\/|__interceptor_/) next
			if ($0 !~ /\((\/usr\/|\/lib)/) ours[nleak] = 1
		}
		END { for (i = 1; i <= nleak; i++) if (ours[i]) exit 1; exit nleak == 0 }
	' "$1"
}
# LSan in a forked child still lists the parent's threads, which the child
# does not have, and warns that it could not suspend them: only that
# warning, with no leak after it, is no report.
for f in $(find "$d" -type f -size +0c | sort); do
	if ! grep -qvE '^==[0-9]+==Running thread [0-9]+ was not suspended\. False leaks are possible\.$' "$f"; then
		rm -f "$f"
		continue
	fi
	if third_party_leaks "$f"; then
		echo "sanitizer: third-party leak ignored ($(basename "$f")):" \
			"$(grep -m1 -E '^ *#1 ' "$f" | sed 's/^ *//')"
		rm -f "$f"
	fi
done
reports=$(find "$d" -type f -size +0c | sort)
if [ -n "$reports" ]; then
	for f in $reports; do
		echo "=== sanitizer report $(basename "$f")"
		cat "$f"
	done
	echo "FAIL: sanitizer reports (above) while the test ran (exit $rc)"
	rc=1
fi
rm -rf "$d"
exit $rc
