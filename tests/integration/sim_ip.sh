#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# `fabsim up --ip`: each host in a network namespace of its own, with its
# addresses from DIR/hosts on eth0 and lo up, the namespaces bridged in
# the fabric's own one.  Programs that bootstrap over TCP then run
# unmodified between hosts: ping (IPv4, IPv6), ibv_rc_pingpong over a
# host's loopback, perftest (TCP exchange to the server's IP), qperf (its
# TCP control channel, rc_lat; and its RDMA CM mode on madcm, rc_lat
# and rc_bw, in-process and through madcmd).  Verbs cut-through works
# between the namespaces.  `fabsim down` stops the namespaces' holders.
# Needs root (network namespaces): skipped without.
. "$(dirname "$0")/sim_common.sh"
skip_missing ping iputils-ping
skip_missing ib_send_lat perftest
skip_missing ib_write_bw perftest
skip_missing qperf qperf
skip_missing ibv_rc_pingpong ibverbs-utils

fs up --ip --gen b2b >"$FABSIM_DIR/up.log" 2>&1 || { cat "$FABSIM_DIR/up.log"; fail "fabsim up"; }
if [ ! -f "$FABSIM_DIR/net/hosts" ]; then
	cat "$FABSIM_DIR/up.log"
	skip_env "no network namespaces here (not root?)"
fi
grep -q "without IP" "$FABSIM_DIR/up.log" && fail "up said 'without IP' with namespaces made"
H1=198.18.0.1
H2=198.18.0.2
H1_6=2001:db8::1
out=$FABSIM_DIR/out
mkdir -p "$out"

# The addresses are the address file's, on eth0 of each host's namespace.
for h in h1 h2; do
	a4=$(awk -v h=$h '$2 == h { print $3 }' "$FABSIM_DIR/net/hosts")
	a6=$(awk -v h=$h '$2 == h { print $4 }' "$FABSIM_DIR/net/hosts")
	grep -q "^$a4 " "$FABSIM_DIR/hosts" || fail "$h: $a4 not in the address file"
	grep -q "^$a6 " "$FABSIM_DIR/hosts" || fail "$h: $a6 not in the address file"
	on $h ip -o addr show dev eth0 >"$out/$h.addr" || fail "$h: no eth0"
	grep -q " $a4/15 " "$out/$h.addr" || { cat "$out/$h.addr"; fail "$h: no $a4 on eth0"; }
	grep -q " $a6/64 " "$out/$h.addr" || { cat "$out/$h.addr"; fail "$h: no $a6 on eth0"; }
	# nothing but the file's addresses (no link-local ones)
	[ "$(grep -c ' inet' "$out/$h.addr")" -eq 2 ] || { cat "$out/$h.addr"; fail "$h: other addresses"; }
done
[ "$H1" = "$(awk '$2 == "h1" { print $3 }' "$FABSIM_DIR/net/hosts")" ] || fail "h1 is not $H1"
# a host's namespace is not the machine's
[ "$(on h1 readlink /proc/self/ns/net)" != "$(readlink /proc/self/ns/net)" ] ||
	fail "h1 runs in the machine's network namespace"

on h2 ping -c 2 -W 5 $H1 >"$out/ping4" 2>&1 || { cat "$out/ping4"; fail "ping h2 -> $H1"; }
on h2 ping -6 -c 2 -W 5 $H1_6 >"$out/ping6" 2>&1 || { cat "$out/ping6"; fail "ping h2 -> $H1_6"; }
on h1 ping -c 1 -W 5 127.0.0.1 >"$out/ping_lo" 2>&1 || { cat "$out/ping_lo"; fail "lo of h1"; }
echo "ok: ping"

port=$((20000 + ($$ * 7) % 12000))
# Usage: pair NAME SERVER_ARGS -- CLIENT_ARGS: server on h1, client on h2.
pair() {
	name=$1
	shift
	s=""
	while [ "$1" != -- ]; do s="$s $1"; shift; done
	shift
	# shellcheck disable=SC2086
	on_bg h1 $s >"$out/$name.s" 2>&1
	sp=$!
	bg_pids="$bg_pids $sp"
	# its TCP port: the word after -p (perftest) or -lp (qperf)
	lport=$(echo "$s" | awk '{ for (i = 1; i < NF; i++) if ($i == "-p" || $i == "-lp") print $(i + 1) }')
	wait_tcp_listen $sp "$lport" h1
	timeout 120 "$FABSIM" --dir "$FABSIM_DIR" run h2 -- "$@" >"$out/$name.c" 2>&1
	crc=$?
	if [ "$name" = qperf ]; then kill $sp 2>/dev/null; fi # the server never exits
	wait $sp
	src=$?
	[ "$name" = qperf ] && src=0
	if [ $crc -ne 0 ] || [ $src -ne 0 ]; then
		echo "--- server: exit $src" >&2
		tail -20 "$out/$name.s" >&2
		echo "--- client: exit $crc" >&2
		tail -20 "$out/$name.c" >&2
		fail "$name"
	fi
	echo "ok: $name"
}

# ibv_rc_pingpong over h1's own loopback: both ends on h1
on_bg h1 ibv_rc_pingpong -p $port -n 100 >"$out/lo.s" 2>&1
sp=$!
bg_pids="$bg_pids $sp"
wait_tcp_listen $sp $port h1
timeout 120 "$FABSIM" --dir "$FABSIM_DIR" run h1 -- ibv_rc_pingpong -p $port -n 100 127.0.0.1 \
	>"$out/lo.c" 2>&1 || { cat "$out/lo.c"; fail "ibv_rc_pingpong on h1's loopback"; }
wait $sp || { cat "$out/lo.s"; fail "ibv_rc_pingpong server on h1"; }
echo "ok: ibv_rc_pingpong on 127.0.0.1"

pair send_lat ib_send_lat -p $((port + 1)) -n 200 -- ib_send_lat -p $((port + 1)) -n 200 $H1
grep -q "^ *2 *200 " "$out/send_lat.c" || { cat "$out/send_lat.c"; fail "send_lat: no result row"; }
export FABSIM_VERBS_STATS=1
pair write_bw ib_write_bw -p $((port + 2)) -n 200 -- ib_write_bw -p $((port + 2)) -n 200 $H1
unset FABSIM_VERBS_STATS
grep -q "^ *65536 *200 " "$out/write_bw.c" || { cat "$out/write_bw.c"; fail "write_bw: no result row"; }
# cut-through between namespaces: its listeners are paths (DIR/direct)
grep -q "direct tx [1-9]" "$out/write_bw.c" || { cat "$out/write_bw.c"; fail "write_bw: no cut-through"; }
pair qperf qperf -lp $((port + 3)) -- qperf -lp $((port + 3)) -t 1 $H1 rc_lat
grep -q "latency  *=" "$out/qperf.c" || { cat "$out/qperf.c"; fail "qperf: no latency"; }

# qperf in its RDMA CM mode (-cm1) on madcm's librdmacm: the server's
# child for each test binds, tells the client the port over TCP and only
# then listens (Debian's qperf 0.4.11): a listen that was not at once
# REJected the client's REQ (2-3 connects in 10), and on a loaded host a
# REQ could still come before the listen (1 run in 10 of check-repeat)
# until such a REQ waited for it (cm/held.c).  10 rc_lat and 3 rc_bw
# (QPs of 0 receive / 0 send WRs) in a row, in-process, then through
# madcmd.
MADCM=$top_builddir/tools/madcm
[ -f "$top_builddir/lib/.libs/librdmacm.so.1" ] || fail "librdmacm.so.1 not built"
qperf_cm() {
	mode=$1 qp=$((port + $2)) n=0
	"$FABSIM" --dir "$FABSIM_DIR" run h1 -- "$MADCM" run qperf -lp $qp >"$out/qperf_cm.$mode.s" 2>&1 &
	sp=$!
	bg_pids="$bg_pids $sp"
	wait_tcp_listen $sp $qp h1
	for t in rc_lat rc_lat rc_lat rc_lat rc_lat rc_lat rc_lat rc_lat rc_lat rc_lat rc_bw rc_bw rc_bw; do
		n=$((n + 1))
		if ! timeout 120 "$FABSIM" --dir "$FABSIM_DIR" run h2 -- "$MADCM" run \
			qperf -lp $qp -cm1 -t 1 $H1 $t >"$out/qperf_cm.$mode.c" 2>&1 ||
			! grep -Eq "(latency|bw)  *=" "$out/qperf_cm.$mode.c"; then
			cat "$out/qperf_cm.$mode.c"
			echo "--- server"
			tail -20 "$out/qperf_cm.$mode.s"
			kill $sp
			fail "qperf -cm1 $t ($mode), test $n"
		fi
	done
	kill $sp
	wait $sp 2>/dev/null
	echo "ok: qperf -cm1 rc_lat x10, rc_bw x3 ($mode)"
}
qperf_cm in-process 4
fs madcmd h1 start >/dev/null || fail "madcmd h1"
fs madcmd h2 start >/dev/null || fail "madcmd h2"
qperf_cm madcmd 5
fs madcmd h1 stop >/dev/null
fs madcmd h2 stop >/dev/null

# down stops the namespaces' holders
holders=$(cat "$FABSIM_DIR"/net/*.pid)
fs down || fail "fabsim down"
# (killed by down, each gone once it handled the signal)
for p in $holders; do
	wait_for "! kill -0 $p" 30 || fail "holder $p still runs 30 s after down"
done
[ ! -d "$FABSIM_DIR/net" ] || fail "$FABSIM_DIR/net left after down"
echo PASS
