# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# Sourced by the tests that run Debian's rdmacm-utils between simulated
# hosts (rdmacm_utils.sh, rdma_xrc.sh), after sim_common.sh, with MADCM
# and out (a directory for the programs' output) set and passed=0.

# pair NAME TIMEOUT "SERVER ARGS" "CLIENT ARGS": both must exit 0.
pair() {
	name=$1 t=$2 s=$3 c=$4 t0=$(date +%s)
	# No timeout(1) around it: the PID killed on exit must be the server.
	# shellcheck disable=SC2086
	"$FABSIM" --dir "$FABSIM_DIR" run h1 -- "$MADCM" run $s >"$out/$name.s" 2>&1 &
	sp=$!
	bg_pids="$bg_pids $sp"
	(sleep "$t"; kill -9 $sp 2>/dev/null) >/dev/null 2>&1 &
	wd=$!
	# The client starts once the server listens (its id table says so).
	wait_listen $sp
	# shellcheck disable=SC2086
	# stderr apart: rping writes to both, and the two interleave mid-line.
	timeout "$t" "$FABSIM" --dir "$FABSIM_DIR" run h2 -- "$MADCM" run $c \
		>"$out/$name.c" 2>"$out/$name.c.err"
	crc=$?
	wait $sp
	src=$?
	kill $wd 2>/dev/null
	if [ $crc -ne 0 ] || [ $src -ne 0 ]; then
		echo "--- server ($s): exit $src" >&2
		tail -20 "$out/$name.s" >&2
		echo "--- client ($c): exit $crc" >&2
		tail -n 20 "$out/$name.c" "$out/$name.c.err" >&2
		fail "$name"
	fi
	passed=$((passed + 1))
	echo "ok: $name ($(($(date +%s) - t0)) s)"
}

expect() { grep -q -- "$2" "$out/$1" || { tail -20 "$out/$1" >&2; fail "$1: no '$2'"; }; }
