#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# rclose beside a thread blocked in rrecv on the same rsocket, between two
# simulated hosts (tests/integration/rsocket_close): the rrecv returns -1
# with EBADF, as one on a closed fd would, and nothing touches the freed
# socket (lib/rsocket.c counts the threads that will take its lock).
. "$(dirname "$0")/sim_common.sh"
PROG=$top_builddir/tests/integration/rsocket_close
[ -x "$PROG" ] || { echo "SKIP: rsocket_close not built"; exit 77; }

fs up --gen b2b >"$FABSIM_DIR/up.log" 2>&1 || { cat "$FABSIM_DIR/up.log"; fail "fabsim up"; }
H1=198.18.0.1
on_bg h1 "$PROG" server 7801 >"$FABSIM_DIR/s.log" 2>&1
sp=$!
bg_pids="$bg_pids $sp"
wait_for "grep -q listening '$FABSIM_DIR/s.log'" 30 || { cat "$FABSIM_DIR/s.log" >&2; fail "server"; }
timeout 90 "$FABSIM" --dir "$FABSIM_DIR" run h2 -- "$PROG" client $H1 7801 >"$FABSIM_DIR/c.log" 2>&1 ||
	{ cat "$FABSIM_DIR/c.log" "$FABSIM_DIR/s.log" >&2; fail "client"; }
grep -q "rrecv EBADF" "$FABSIM_DIR/c.log" || fail "no EBADF"
echo "ok: rclose beside a blocked rrecv: EBADF"
exit 0
