# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# shellcheck shell=sh
# bench/bench_fabric.sh: sourced (". bench_fabric.sh") by the bench scripts
# that run Debian's programs under `madcm run` on a fabric of their own
# (rsocket_bench.sh, cmtime_instr.sh).
#
#   bench_paths NAME      B, the build directory ($top_builddir, else the
#                         current one when it holds the fabric, else the
#                         tree the calling script is in: an in-tree build),
#                         and FABSIM and MADCM unless already set; fails,
#                         naming NAME, when either is not built
#   bench_fabric_up NAME  $work, a temporary directory holding a b2b fabric
#                         in $work/fab, stopped and removed at exit, when
#                         every PID in $pids (the caller's to fill) is sent
#                         SIGTERM (timeout(1) passes it on to its program)

bench_paths() {
	if [ -n "${top_builddir:-}" ]; then
		B=$top_builddir
	elif [ -x sim/fabsim ]; then
		B=$(pwd)
	else
		B=$(cd "$(dirname "$0")/.." && pwd)
	fi
	FABSIM=${FABSIM:-$B/sim/fabsim}
	MADCM=${MADCM:-$B/tools/madcm}
	if [ ! -x "$FABSIM" ] || [ ! -x "$MADCM" ]; then
		echo "$1: build $FABSIM and $MADCM first"
		exit 1
	fi
}

bench_cleanup() {
	for p in $pids; do kill "$p" 2>/dev/null; done
	"$FABSIM" --dir "$work/fab" down >/dev/null 2>&1
	rm -rf "$work"
}

bench_fabric_up() {
	work=$(mktemp -d "${TMPDIR:-/tmp}/$1.XXXXXX") || exit 1
	pids=""
	trap bench_cleanup EXIT
	# A signal (a reader such as head gone: SIGPIPE) still stops the fabric.
	trap 'exit 1' HUP INT PIPE TERM
	"$FABSIM" --dir "$work/fab" up --gen b2b >"$work/up.log" 2>&1 || {
		cat "$work/up.log"
		exit 1
	}
}
