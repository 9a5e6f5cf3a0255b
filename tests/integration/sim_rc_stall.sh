#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# A software HCA waits for a CPU: an RC responder whose process is not
# running cannot ACK, as hardware would.  rping's server and client on one
# simulated host (a PathRecord to itself: PacketLifeTime 0, so rdma_cm's
# ACK timeout is 16 us, retry_cnt 7), through madcmd, keep pinging while the server is
# stopped (SIGSTOP) for 150 ms.  The simulator's ACK timeout floor (64 ms,
# sim/verbs_datapath.c) makes that a resend, not IBV_WC_RETRY_EXC_ERR;
# with the old 1 ms floor the whole retry budget was 8 ms, which a loaded
# host's scheduler exceeded now and then (madcmd.sh's same-host pair).
. "$(dirname "$0")/sim_common.sh"
MADCM=$top_builddir/tools/madcm
skip_missing rping rdmacm-utils
MADCMD=$top_builddir/madcmd/madcmd
[ -x "$MADCMD" ] || { echo "SKIP: madcmd not built"; exit 77; }
export MADCMD
fs up --gen b2b >"$FABSIM_DIR/up.log" 2>&1 || { cat "$FABSIM_DIR/up.log"; fail "fabsim up"; }
# Two programs on one port: through madcmd (one CM agent per port).
fs madcmd h1 start >/dev/null || fail "madcmd h1"
H1=198.18.0.1
P=7190
on_bg h1 "$MADCM" run rping -s -a $H1 -p $P -C 3000 -v >"$FABSIM_DIR/s.out" 2>&1
sp=$!
bg_pids="$bg_pids $sp"
wait_listen "$sp" $P
on_bg h1 "$MADCM" run rping -c -a $H1 -p $P -C 3000 -v >"$FABSIM_DIR/c.out" 2>"$FABSIM_DIR/c.err"
cp=$!
bg_pids="$bg_pids $cp"
wait_for "[ \$(grep -c 'ping data' '$FABSIM_DIR/c.out') -ge 20 ]" 60 ||
	{ cat "$FABSIM_DIR/c.out" "$FABSIM_DIR/s.out"; fail "rping did not start"; }
pids=$(pgrep -f "rping -s -a $H1 -p $P")
[ -n "$pids" ] || { ps -eo pid,args | grep rping; cat "$FABSIM_DIR/s.out"; fail "no rping server process"; }
kill -STOP $pids
sleep 0.15
kill -CONT $pids
wait "$cp" || { tail "$FABSIM_DIR/c.out" "$FABSIM_DIR/c.err" "$FABSIM_DIR/s.out"; fail "rping client failed"; }
wait "$sp" || { cat "$FABSIM_DIR/s.out"; fail "rping server failed"; }
n=$(grep -o 'ping data: rdma-ping-[0-9]*' "$FABSIM_DIR/c.out" | sort -u | wc -l)
[ "$n" -eq 3000 ] || { cat "$FABSIM_DIR/c.err"; grep -v "^ping data: rdma-ping-[0-9]*: " "$FABSIM_DIR/c.out" | head; fail "$n of 3000 pings"; }
echo "ok: 3000 pings on one host, the server stopped for 150 ms among them"
