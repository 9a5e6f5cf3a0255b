#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# One entry point for newcomers and CI.
#   scripts/dev.sh demo   install what is missing, build, run the demo
#   scripts/dev.sh test   install what is missing, build, run every test:
#                         make check (-Werror), unit tests and some
#                         integration tests again under ASan+UBSan, the
#                         threaded tests under TSan, fuzz targets (clang),
#                         make distcheck
# Builds go to build/ (and build-asan/, build-tsan/) beside the sources.
set -eu

top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
jobs=$(nproc 2>/dev/null || echo 2)

# Debian packages: build tools, the libraries madcm links, the programs the
# simulated fabric runs (OpenSM, diags, verbs utils, perftest, rdmacm utils),
# and the test tools (CMocka, tshark, clang/libFuzzer, valgrind, socat,
# python3, ibsim for the comparison benchmark, python3-pyverbs for
# librdmacm loaded by a Python binding, redis and qperf for programs run
# unmodified).  A test that lacks one of them skips, but fails in CI
# (CI=true; tests/skip.sh).
PKGS="autoconf automake libtool pkg-config make gcc libc6-dev
libibverbs-dev libibumad-dev libibmad-dev librdmacm-dev libcmocka-dev
opensm infiniband-diags ibverbs-utils rdmacm-utils perftest
tshark clang clang-format libclang-rt-14-dev valgrind ibsim-utils iproute2 procps spin
netcat-openbsd socat python3
redis-server redis-tools
qperf iputils-ping
python3-pyverbs gnuplot-nox"

install_missing() {
	missing=""
	for p in $PKGS; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
			missing="$missing $p"
	done
	[ -z "$missing" ] && return 0
	if [ "$(id -u)" -ne 0 ]; then
		echo "missing Debian packages; as root run:" >&2
		echo "  apt-get update && apt-get install -y$missing" >&2
		exit 1
	fi
	echo "installing:$missing"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq $missing >/dev/null
}

build() {
	dir=$1
	shift
	[ -x configure ] && [ configure -nt configure.ac ] || autoreconf -fi
	mkdir -p "$dir"
	(cd "$dir" && { [ -f Makefile ] || ../configure "$@"; } && make -j"$jobs")
}

# Add one stage's automake counts (from DIR/test-suite.log) to the totals
# printed at the end, so CI shows one closing "N passed, N failed" line.
passed=0
failed=0
tally() {
	p=$(sed -n 's/^# PASS: *//p' "$1/test-suite.log" | head -1)
	f=$(sed -n 's/^# FAIL: *//p' "$1/test-suite.log" | head -1)
	e=$(sed -n 's/^# ERROR: *//p' "$1/test-suite.log" | head -1)
	passed=$((passed + ${p:-0}))
	failed=$((failed + ${f:-0} + ${e:-0}))
}

case "${1:-}" in
demo)
	install_missing
	build build --enable-werror
	exec sh scripts/demo.sh build
	;;
test)
	install_missing
	build build --enable-werror
	echo "== clang-format"
	(cd build && make format-check)
	(cd build && make -j"$jobs" check) || { cat build/test-suite.log 2>/dev/null | tail -100; exit 1; }
	tally build
	echo "== unit tests and some integration tests under AddressSanitizer + UndefinedBehaviorSanitizer"
	# No link-time optimisation here: the unit tests link the code statically, and it would only slow the build.
	# madcm's code instrumented, sim/ not (configure.ac); the tests: tests/sanitize.inc.
	build build-asan --enable-werror --disable-lto --enable-debug --enable-sanitize=address,undefined CFLAGS="-O1 -g"
	(cd build-asan && make -j"$jobs" check-asan-ci) ||
		{ cat build-asan/test-suite.log 2>/dev/null | tail -100; exit 1; }
	tally build-asan
	echo "== threaded unit tests and two threaded integration tests under ThreadSanitizer"
	# The rest of make check-tsan (rdmacm_utils.sh, madcmd.sh) is in check-long.
	build build-tsan --enable-werror --disable-lto --enable-debug --enable-sanitize=thread CFLAGS="-O1 -g"
	(cd build-tsan && make -j"$jobs" check-tsan-ci) ||
		{ cat build-tsan/test-suite.log 2>/dev/null | tail -100; exit 1; }
	tally build-tsan
	if command -v clang >/dev/null; then
		echo "== fuzz targets (libFuzzer)"
		(cd build && make -j"$jobs" fuzz-run FUZZ_RUNS="${FUZZ_RUNS:-200000}")
	fi
	echo "== make distcheck (the tarball; its tests: unit, fuzz, one integration test per area)"
	(cd build && make -j"$jobs" distcheck-quick DISTCHECK_CONFIGURE_FLAGS='--enable-werror --enable-quick-check') ||
		exit 1
	echo "all test stages passed (make check, ASan+UBSan tests, TSan tests, libFuzzer, distcheck)"
	echo "tests: $passed passed, $failed failed"
	;;
*)
	echo "usage: $0 demo|test" >&2
	exit 2
	;;
esac
