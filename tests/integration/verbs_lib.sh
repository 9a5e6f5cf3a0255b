# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# Sourced by tests/integration/verbs_*.sh: a private fabric for one test.
# Everything started here is stopped at exit, by PID; exit 77 (skip) when
# the fabric cannot start (no opensm, fabsim not built).
. "$(dirname "$0")/../skip.sh"
: "${top_builddir:=$(cd "$(dirname "$0")/../.." && pwd)}"
FABSIM=$top_builddir/sim/fabsim
VERBS_CHECK=$top_builddir/tests/integration/verbs_check
[ -x "$FABSIM" ] || { echo "SKIP: $FABSIM not built"; exit 77; }
[ -x "$VERBS_CHECK" ] || { echo "SKIP: $VERBS_CHECK not built"; exit 77; }

vt_dir=$(mktemp -d "${TMPDIR:-/tmp}/verbs-test.XXXXXX") || exit 99
vt_pids=
vt_cleanup() {
	for p in $vt_pids; do kill "$p" 2>/dev/null; done
	"$FABSIM" --dir "$vt_dir/fab" down >/dev/null 2>&1
	rm -rf "$vt_dir"
}
trap vt_cleanup EXIT
trap 'exit 99' INT TERM

# A TCP port for the pingpong programs, distinct per test process, and
# below the ephemeral range (32768 up): a client's own end of an earlier
# connection, in TIME_WAIT there, made a server fail to listen.
vt_port() {
	echo $((20000 + ($$ * 7 + ${1:-0}) % 12000))
}

fab_up() {
	if ! "$FABSIM" --dir "$vt_dir/fab" up "$@" >"$vt_dir/up.log" 2>&1; then
		cat "$vt_dir/up.log"
		skip_or_fail_in_ci "the fabric did not come up"
	fi
}

on() {
	h=$1
	shift
	"$FABSIM" --dir "$vt_dir/fab" run "$h" -- "$@"
}

# Run in the background on a host; its PID is in $! and killed at exit.
bg_on() {
	h=$1
	shift
	"$FABSIM" --dir "$vt_dir/fab" run "$h" -- "$@" &
	vt_pids="$vt_pids $!"
}

fabsim() {
	"$FABSIM" --dir "$vt_dir/fab" "$@"
}

# Wait up to SECONDS (default 30) until HOST's port is Active again: after
# a rule dropped its SMPs, OpenSM may have dropped the port and brings it
# back through Init on a later sweep.
wait_active() {
	i=0
	until fabsim hosts | grep -q "^$1 .* state Active "; do
		i=$((i + 1))
		[ $i -le $((${2:-30} * 5)) ] || return 1
		sleep 0.2
	done
}

fail() {
	echo "FAIL: $*"
	exit 1
}

# wait_tcp_listen PID PORT (the hosts share the machine's network namespace)
. "$(dirname "$0")/tcp_wait.sh"

# Server on host A, client on host B, exchanging over TCP on loopback; the
# client starts once the server listens on the port given with -p.
# Usage: pair HOST_A HOST_B NAME CMD ARGS...   (client gets 127.0.0.1 last)
pair() {
	a=$1 b=$2 name=$3
	shift 3
	bg_on "$a" "$@" >"$vt_dir/$name.srv" 2>&1
	spid=$!
	lport=$(echo "$@" | awk '{ for (i = 1; i < NF; i++) if ($i == "-p") print $(i + 1) }')
	wait_tcp_listen $spid "$lport"
	timeout 300 "$FABSIM" --dir "$vt_dir/fab" run "$b" -- "$@" 127.0.0.1 >"$vt_dir/$name.cli" 2>&1
	crc=$?
	# The server ends within a minute of its client (a lost last ACK ends
	# in its retry counter); one that waits on is stopped, and fails.
	i=0
	while kill -0 "$spid" 2>/dev/null && [ $i -lt 600 ]; do
		i=$((i + 1))
		sleep 0.2
	done
	if kill -0 "$spid" 2>/dev/null; then
		echo "-- $name: the server still runs 120 s after its client ended: stopped"
		kill "$spid" 2>/dev/null
	fi
	wait "$spid"
	src=$?
	echo "== $name: client $crc, server $src"
	grep -v "address:" "$vt_dir/$name.cli" | tail -n 5
	if [ $crc -ne 0 ] || [ $src -ne 0 ]; then
		echo "-- server output:"
		cat "$vt_dir/$name.srv"
		return 1
	fi
	return 0
}

# An RC stream from h1 (verbs_check client) to h2 (verbs_check server)
# that runs until a completion fails; returns once SENDs flow, with the
# client's PID in $cpid and its output in $vt_dir/cli.out.
stream_start() {
	info=$vt_dir/pair.info
	bg_on h2 "$VERBS_CHECK" server "$info" >"$vt_dir/srv.out" 2>&1
	bg_on h1 "$VERBS_CHECK" client "$info" >"$vt_dir/cli.out" 2>&1
	cpid=$!
	i=0
	until grep -q streaming "$vt_dir/cli.out" 2>/dev/null; do
		i=$((i + 1))
		[ $i -lt 300 ] || { cat "$vt_dir/cli.out" "$vt_dir/srv.out"; fail "no traffic"; }
		sleep 0.1
	done
}
