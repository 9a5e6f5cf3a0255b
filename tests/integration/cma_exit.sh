#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# A program that returns from main with connections it never destroyed,
# in-process on madcm's librdmacm.so.1: its peer gets DISCONNECTED for each
# at once, as a kernel rdma_cm peer does when the process's rdma_cm file is
# closed (lib/cma_exit.c).  Also with the umad writer thread, whose queued
# DREQs must leave before the process does (mad/umad_real.c).  A multicast
# join never left is left at the SA the same way: OpenSM's group table is
# back to the IPoIB broadcast group alone.
. "$(dirname "$0")/sim_common.sh"
MADCM=$top_builddir/tools/madcm
HOLD=$top_builddir/tests/integration/madcmd_hold
[ -x "$HOLD" ] || { echo "SKIP: madcmd_hold not built"; exit 77; }

fs up --gen b2b >"$FABSIM_DIR/up.log" 2>&1 || { cat "$FABSIM_DIR/up.log"; fail "fabsim up"; }
H1=198.18.0.1
N=20
port=7600
for tx in sync thread; do
	port=$((port + 1))
	# The server waits for N DISCONNECTED (60 s bound): with no DREQ it fails.
	MADCM_UMAD_TX=$tx on_bg h1 "$MADCM" run "$HOLD" server $port $N >"$FABSIM_DIR/s.$tx" 2>&1
	sp=$!
	bg_pids="$bg_pids $sp"
	wait_for "grep -q listening '$FABSIM_DIR/s.$tx'" 30 || fail "$tx: server not listening"
	MADCM_UMAD_TX=$tx timeout 60 "$FABSIM" --dir "$FABSIM_DIR" run h2 -- \
		"$MADCM" run "$HOLD" client $H1 $port $N exit >"$FABSIM_DIR/c.$tx" 2>&1 ||
		{ cat "$FABSIM_DIR/c.$tx" >&2; fail "$tx: client"; }
	grep -q "connected $N" "$FABSIM_DIR/c.$tx" || fail "$tx: client did not connect"
	wait $sp || { cat "$FABSIM_DIR/s.$tx" >&2; fail "$tx: server saw no disconnects"; }
	grep -q "disconnected $N" "$FABSIM_DIR/s.$tx" || fail "$tx: not $N disconnects"
	echo "ok: $tx: $N connections left at exit, the peer got $N DISCONNECTED"
done

groups() { on h1 saquery -g 2>/dev/null | grep -c 'MGID\.'; }
before=$(groups)
for tx in sync thread; do
	MADCM_UMAD_TX=$tx timeout 60 "$FABSIM" --dir "$FABSIM_DIR" run h1 -- \
		"$MADCM" run "$HOLD" join $H1 230.1.2.3 >"$FABSIM_DIR/j.$tx" 2>&1 ||
		{ cat "$FABSIM_DIR/j.$tx" >&2; fail "$tx: join"; }
	grep -q joined "$FABSIM_DIR/j.$tx" || fail "$tx: not joined"
	wait_for "[ \$('$FABSIM' --dir '$FABSIM_DIR' run h1 -- saquery -g 2>/dev/null | grep -c 'MGID\.') -eq $before ]" 10 ||
		{ on h1 saquery -g >&2; fail "$tx: the group outlived the process ($(groups) groups, $before before)"; }
	echo "ok: $tx: a join never left was left at exit (the SA has its $before group(s) again)"
done
exit 0
