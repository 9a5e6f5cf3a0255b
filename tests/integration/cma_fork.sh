#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# fork() beside established connections (lib/cma_fork.c), on the
# simulated fabric with tests/integration/cma_fork: a client holding N
# connections that carry data forks children that
#   - exit (after their calls on the inherited ids failed with EBADF),
#   - exec /bin/true,
#   - without madcmd: listen, and get EBUSY at once (the port's CM is the
#     parent's), said once on stderr,
#   - with madcmd: connect and disconnect an id of their own;
# after each, every connection still echoes, no event came to the parent,
# and the server sees each parent connection's DISCONNECTED only after
# the parent said "bye" on it (cma_fork prints "early disconnect" else).
. "$(dirname "$0")/sim_common.sh"
MADCMD=$top_builddir/madcmd/madcmd
PROG=$top_builddir/tests/integration/cma_fork
[ -x "$PROG" ] || { echo "SKIP: cma_fork not built"; exit 77; }
[ -x "$MADCMD" ] || { echo "SKIP: madcmd not built"; exit 77; }
export MADCMD

fs up --gen b2b >"$FABSIM_DIR/up.log" 2>&1 || { cat "$FABSIM_DIR/up.log"; fail "fabsim up"; }
H1=198.18.0.1
N=4

# $1: a name for the logs, $2: the port, then the children.
round() {
	name=$1 port=$2
	shift 2
	on_bg h1 "$PROG" server $port >"$FABSIM_DIR/s.$name" 2>&1
	sp=$!
	bg_pids="$bg_pids $sp"
	wait_for "grep -q listening '$FABSIM_DIR/s.$name'" 30 ||
		{ cat "$FABSIM_DIR/s.$name" >&2; fail "$name: server not listening"; }
	timeout 120 "$FABSIM" --dir "$FABSIM_DIR" run h2 -- "$PROG" client $H1 $port $N "$@" \
		>"$FABSIM_DIR/c.$name" 2>&1 ||
		{ cat "$FABSIM_DIR/c.$name" "$FABSIM_DIR/s.$name" >&2; fail "$name: client"; }
	grep -q "parent ok" "$FABSIM_DIR/c.$name" || fail "$name: the parent did not end well"
	wait_for "[ \$(grep -c 'disconnected parent' '$FABSIM_DIR/s.$name') -eq $N ]" 30 ||
		{ cat "$FABSIM_DIR/s.$name" >&2; fail "$name: not $N parent disconnects"; }
	if grep -q "early disconnect" "$FABSIM_DIR/s.$name"; then
		cat "$FABSIM_DIR/c.$name" "$FABSIM_DIR/s.$name" >&2
		fail "$name: a parent connection was disconnected before the parent ended it"
	fi
	kill $sp 2>/dev/null
	wait $sp 2>/dev/null
	for c in "$@"; do
		grep -q "child $c ok" "$FABSIM_DIR/c.$name" || fail "$name: child $c"
	done
}

# Without madcmd: the CM is the parent's.
round inproc 7701 exit exec nocm exit
grep -q "child: listen EBUSY" "$FABSIM_DIR/c.inproc" || fail "inproc: no EBUSY"
n=$(grep -c "fork()ed process's parent's" "$FABSIM_DIR/c.inproc")
[ "$n" -eq 1 ] || { cat "$FABSIM_DIR/c.inproc" >&2; fail "inproc: the EBUSY said $n times, not once"; }
echo "ok: without madcmd: children exit, exec, get EBUSY; $N connections intact"

# With madcmd: a child's own connection.
fs madcmd h1 start >>"$FABSIM_DIR/up.log" 2>&1 || fail "madcmd h1"
fs madcmd h2 start >>"$FABSIM_DIR/up.log" 2>&1 || fail "madcmd h2"
round madcmd 7702 exit own exec own exit
[ "$(grep -c 'child: connected' "$FABSIM_DIR/c.madcmd")" -eq 2 ] || fail "madcmd: the children's connections"
[ "$(grep -c 'disconnected child' "$FABSIM_DIR/s.madcmd")" -eq 2 ] || fail "madcmd: the children's disconnects"
echo "ok: with madcmd: children exit, exec, connect on their own; $N connections intact"
exit 0
