#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# ABI probe: madcm's public headers (include/rdma/*.h, include/infiniband/ib.h)
# against the installed librdmacm-dev headers (rdma-core's, the reference).
#
#  1. gen_probe.py scans the reference headers (CC -E, CC -dM) and writes a
#     probe printing size/alignment/offset of every struct member, every enum
#     constant and macro value, and asserting at compile time that every
#     member and function has the reference's type.  Built against both sets
#     of headers, the two outputs must be identical.
#  2. Every name madcm's headers declare beyond the reference's must be
#     listed in tests/abi/extras.txt, and none may be missing.
#  3. Every system header the reference headers pull in, ours pull in too
#     (programs rely on those includes).
#  4. The inline helpers (rdma_verbs.h, ib.h) make the same verbs calls and
#     return the same values: tests/abi/inline_trace.c over fake verbs.
#  5. Ours compile cleanly as C (gcc -Wall -Wextra -Werror) and as C++.
#
# Exits 77 (skip) when the reference headers or python3 are missing.
set -u

srcdir=${top_srcdir:-.}
builddir=${top_builddir:-.}
CC=${ABI_CC:-cc}
CXX=${ABI_CXX:-c++}
CFLAGS_PROBE="-std=gnu11 -Wall -Wextra -Werror"
ours="-I$srcdir/include"
headers="rdma/rdma_cma.h rdma/rdma_verbs.h rdma/rsocket.h infiniband/ib.h"

. "$(dirname "$0")/../skip.sh"
skip_missing python3 python3
if ! printf '#include <rdma/rdma_cma.h>\n#include <infiniband/ib.h>\n' |
	$CC -E -x c - >/dev/null 2>&1; then
	skip_or_fail_in_ci "the reference headers (Debian package librdmacm-dev) are not installed"
fi

tmp=$builddir/tests/abi/abi.tmp.$$
mkdir -p "$tmp" || exit 99
trap 'rm -rf "$tmp"' EXIT
fail=0

step() {
	echo "== $*"
}

bad() {
	echo "FAIL: $*"
	fail=1
}

gen() {
	python3 "$srcdir/tests/abi/gen_probe.py" --cc "$CC" "$@"
}

step "1. layouts, values and types (probe generated from the reference headers)"
if ! gen probe "$tmp/probe.c"; then
	echo "FAIL: cannot generate the probe"
	exit 1
fi
# -Wno-type-limits: the probe asks whether unsigned macros are negative.
if $CC $CFLAGS_PROBE -Wno-type-limits -o "$tmp/probe-ref" "$tmp/probe.c" &&
	$CC $CFLAGS_PROBE -Wno-type-limits $ours -o "$tmp/probe-ours" "$tmp/probe.c" &&
	"$tmp/probe-ref" >"$tmp/probe-ref.out" && "$tmp/probe-ours" >"$tmp/probe-ours.out"; then
	echo "$(grep -c . "$tmp/probe-ref.out") lines, $(grep -c PROBE_SAME_TYPE "$tmp/probe.c") type checks"
	if ! diff -u --label reference --label madcm "$tmp/probe-ref.out" "$tmp/probe-ours.out"; then
		bad "layouts or values differ (- reference, + madcm)"
	fi
else
	bad "the probe does not build or run against both sets of headers (a type check above?)"
fi

step "2. names beyond the reference's (tests/abi/extras.txt)"
if gen names >"$tmp/names-ref" && gen -I "$srcdir/include" names >"$tmp/names-ours"; then
	sort "$tmp/names-ref" >"$tmp/names-ref.s"
	sort "$tmp/names-ours" >"$tmp/names-ours.s"
	comm -23 "$tmp/names-ref.s" "$tmp/names-ours.s" >"$tmp/missing"
	comm -13 "$tmp/names-ref.s" "$tmp/names-ours.s" >"$tmp/extra"
	sed -e 's/#.*//' -e '/^[[:space:]]*$/d' -e 's/[[:space:]]*$//' \
		"$srcdir/tests/abi/extras.txt" | sort >"$tmp/extra-want"
	if test -s "$tmp/missing"; then
		bad "declared by the reference headers, not by madcm's:"
		sed 's/^/  /' "$tmp/missing"
	fi
	if ! diff -u --label tests/abi/extras.txt --label "madcm's headers" \
		"$tmp/extra-want" "$tmp/extra"; then
		bad "madcm's extra names differ from tests/abi/extras.txt"
	fi
else
	bad "cannot list the names of the headers"
fi

step "3. system headers pulled in"
deps() {
	# The files one public header includes, without the public headers.
	printf '#include <%s>\n' "$2" | $CC $1 -M -x c - 2>/dev/null |
		sed -e 's/^-: *//' -e 's/\\$//' | tr ' ' '\n' | sed '/^$/d' |
		grep -v -e '/rdma/rdma_cma\.h$' -e '/rdma/rdma_verbs\.h$' \
			-e '/rdma/rsocket\.h$' -e '/infiniband/ib\.h$' | sort -u
}
for h in $headers; do
	deps "" "$h" >"$tmp/deps-ref"
	deps "$ours" "$h" >"$tmp/deps-ours"
	comm -23 "$tmp/deps-ref" "$tmp/deps-ours" >"$tmp/deps-missing"
	if test -s "$tmp/deps-missing"; then
		bad "<$h>: the reference pulls in these, madcm's does not:"
		sed 's/^/  /' "$tmp/deps-missing"
	fi
done

step "4. inline helpers over fake verbs"
if $CC $CFLAGS_PROBE -o "$tmp/trace-ref" "$srcdir/tests/abi/inline_trace.c" &&
	$CC $CFLAGS_PROBE $ours -o "$tmp/trace-ours" "$srcdir/tests/abi/inline_trace.c" &&
	"$tmp/trace-ref" >"$tmp/trace-ref.out" && "$tmp/trace-ours" >"$tmp/trace-ours.out"; then
	echo "$(grep -c . "$tmp/trace-ref.out") lines of trace"
	if ! diff -u --label reference --label madcm "$tmp/trace-ref.out" "$tmp/trace-ours.out"; then
		bad "the inline helpers behave differently (- reference, + madcm)"
	fi
else
	bad "tests/abi/inline_trace.c does not build or run against both sets of headers"
fi

step "5. madcm's headers alone, as C and as C++"
for h in $headers; do
	printf '#include <%s>\n' "$h" >"$tmp/one.c"
	$CC $CFLAGS_PROBE -Wshadow -Wstrict-prototypes -Wmissing-prototypes $ours \
		-c -o "$tmp/one.o" "$tmp/one.c" || bad "<$h> does not compile alone as C"
	if command -v "$CXX" >/dev/null 2>&1; then
		$CXX -Wall -Wextra -Werror $ours -x c++ -c -o "$tmp/one.o" "$tmp/one.c" ||
			bad "<$h> does not compile as C++"
	fi
done
command -v "$CXX" >/dev/null 2>&1 || echo "(no $CXX: C++ not checked)"

if test $fail -ne 0; then
	echo "ABI check FAILED"
	exit 1
fi
echo "ABI check passed"
exit 0
