#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# Two threads on one rsocket, between two simulated hosts
# (tests/integration/rsocket_duplex): a thread sends 4 MiB while another
# receives the echo, which the server sends back from a second thread of
# its own as it receives; the client's receiver blocks in rrecv, then in
# rpoll.  Each end has a thread blocked sending (no credits) beside one
# blocked receiving, so data flows both ways with both waits at each end:
# both must go on (lib/rsocket.c rs_wait, rpoll).  Each client is bounded
# by a generous timeout.
. "$(dirname "$0")/sim_common.sh"
PROG=$top_builddir/tests/integration/rsocket_duplex
[ -x "$PROG" ] || { echo "SKIP: rsocket_duplex not built"; exit 77; }

fs up --gen b2b >"$FABSIM_DIR/up.log" 2>&1 || { cat "$FABSIM_DIR/up.log"; fail "fabsim up"; }
H1=198.18.0.1
on_bg h1 "$PROG" server 7821 >"$FABSIM_DIR/s.log" 2>&1
bg_pids="$bg_pids $!"
wait_for "grep -q listening '$FABSIM_DIR/s.log'" 30 || { cat "$FABSIM_DIR/s.log" >&2; fail "server"; }
for mode in recv poll; do
	timeout 120 "$FABSIM" --dir "$FABSIM_DIR" run h2 -- "$PROG" client $H1 7821 $mode \
		>"$FABSIM_DIR/c.log" 2>&1 ||
		{ cat "$FABSIM_DIR/c.log" "$FABSIM_DIR/s.log" >&2; fail "client ($mode)"; }
	grep -q "echo ok" "$FABSIM_DIR/c.log" || fail "client ($mode): no echo"
	echo "ok: rsend beside a blocked r$mode, both ends"
done
exit 0
