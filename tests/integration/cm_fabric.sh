#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# The CM engine end to end on a simulated fabric (sim/, OpenSM, soft verbs):
# cm_fabric_connect on two hosts connects N RC QPs through the CM runtime,
# sends one message on each, disconnects all and checks TimeWait.
#   1. N connections, no faults, with a capture of the client's port: tshark
#      finds no malformed packet and every REQ carries the service ID, QPN,
#      PSN, LIDs, P_Key and MTU the client asked for (its --req-log), and
#      each SEND goes to the QPN and starts at the PSN its REP announced;
#   2. the same with 20% of CM MADs dropped on the client's link: all still
#      connect and pass TimeWait on both sides, and both sides resent;
#   3. the server killed mid-handshake: the client reports timeouts and
#      exits within a bounded time instead of hanging;
#   4. --loop-qp: the runtimes' loop threads move the QPs (auto QP, rdma_cm
#      style) on a smaller N: all connect, carry their SEND, pass TimeWait.
# Exit 77 (skip) when the simulator, OpenSM or the soft verbs do not work.
# Environment: CM_FABRIC_N (default 1000), CM_FABRIC_LOOP_QP_N (default
# 200, the N of pass 4), CM_FABRIC_TOPO (default b2b; or
# 2sw4h, or a topology file: server on the first host, client on the
# last), CM_FABRIC_KEEP=1 keeps the directory with every log.
set -u

: "${top_builddir:=$(cd "$(dirname "$0")/../.." && pwd)}"
N=${CM_FABRIC_N:-1000}
NQ=${CM_FABRIC_LOOP_QP_N:-200}
FABSIM=$top_builddir/sim/fabsim
PROG=$top_builddir/tests/integration/cm_fabric_connect

skip() {
	echo "SKIP: $*"
	exit 77
}

fail=0
bad() {
	echo "FAIL: $*"
	fail=1
}

[ -x "$FABSIM" ] || skip "$FABSIM not built"
[ -x "$PROG" ] || skip "$PROG not built"
[ -f "$top_builddir/sim/.libs/libfabsim.so" ] || skip "libfabsim.so not built"
. "$(dirname "$0")/../skip.sh"
[ -x /usr/sbin/opensm ] || skip_missing opensm opensm

dir=$(mktemp -d "${TMPDIR:-/tmp}/cm_fabric.XXXXXX") || exit 1
pids=""
cleanup() {
	for p in $pids; do
		kill "$p" 2>/dev/null
	done
	for p in $pids; do
		wait "$p" 2>/dev/null
	done
	"$FABSIM" --dir "$dir/fab" down >/dev/null 2>&1
	if [ "${CM_FABRIC_KEEP:-0}" = 1 ]; then
		echo "kept $dir"
	else
		rm -rf "$dir"
	fi
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

fab() {
	"$FABSIM" --dir "$dir/fab" "$@"
}

: "${top_srcdir:=$(cd "$(dirname "$0")/../.." && pwd)}"
case "${CM_FABRIC_TOPO:-b2b}" in
b2b) topo="--gen b2b" ;;
2sw4h) topo=$top_srcdir/sim/topologies/2sw4h.topo ;;
*) topo=$CM_FABRIC_TOPO ;;
esac
# shellcheck disable=SC2086 # $topo is "--gen b2b" or one file name
FABSIM_UP_TIMEOUT=60 fab up $topo >"$dir/up.log" 2>&1 ||
	{ cat "$dir/up.log"; skip_or_fail_in_ci "fabsim up failed"; }
# Hosts: name, LID and GID of each, as `fabsim hosts` prints them.
fab hosts >"$dir/hosts" 2>/dev/null || skip_or_fail_in_ci "fabsim hosts failed"
srv=$(awk 'NR == 1 { print $1 }' "$dir/hosts")
cli=$(awk 'END { if (NR > 1) print $1 }' "$dir/hosts")
srv_lid=$(awk 'NR == 1 { for (i = 1; i < NF; i++) if ($i == "lid") print $(i + 1) }' "$dir/hosts")
srv_gid=$(awk 'NR == 1 { for (i = 1; i < NF; i++) if ($i == "gid") print $(i + 1) }' "$dir/hosts")
[ -n "$srv" ] && [ -n "$cli" ] && [ -n "$srv_lid" ] && [ -n "$srv_gid" ] ||
	{ cat "$dir/hosts"; skip_or_fail_in_ci "fewer than two hosts with LID and GID"; }
# Soft verbs probe: a device must show up on a simulated host.
fab run "$cli" -- ibv_devinfo 2>/dev/null | grep -q PORT_ACTIVE ||
	skip_or_fail_in_ci "no active verbs device on a simulated host"
echo "fabric: server $srv lid $srv_lid gid $srv_gid, client $cli"

now() {
	date +%s
}

# start_server NAME ARGS...: server in the background, wait until it listens
start_server() {
	name=$1
	shift
	fab run "$srv" -- "$PROG" server "$@" >"$dir/$name.server" 2>&1 &
	spid=$!
	pids="$pids $spid"
	i=0
	until grep -q "listening" "$dir/$name.server" 2>/dev/null; do
		if ! kill -0 "$spid" 2>/dev/null; then
			cat "$dir/$name.server"
			return 1
		fi
		i=$((i + 1))
		[ $i -lt 200 ] || return 1
		sleep 0.05
	done
}

# run_client NAME ARGS...: client in the foreground, exit status in $crc
run_client() {
	name=$1
	shift
	fab run "$cli" -- "$PROG" client --dgid "$srv_gid" --dlid "$srv_lid" "$@" \
		>"$dir/$name.client" 2>"$dir/$name.client.err"
	crc=$?
	cat "$dir/$name.client"
}

wait_server() {
	wait "$spid"
	src=$?
	pids=$(echo "$pids" | sed "s/ $spid\$//; s/ $spid / /")
	cat "$dir/$1.server"
}

# ---- 1. N connections, capture, REQ fields ----
echo "== 1. $N connections, capture of $cli"
fab capture "$cli" "$dir/cap.pcap" >/dev/null || bad "fabsim capture failed"
start_server plain --n "$N" --idle 30 || bad "server did not start"
run_client plain --n "$N" --req-log "$dir/req.log"
wait_server plain
fab capture "$cli" off >/dev/null
[ "$crc" = 0 ] || bad "client exit $crc (want 0)"
[ "$src" = 0 ] || bad "server exit $src (want 0)"
grep -q "established $N sent_ok $N send_errors 0" "$dir/plain.client" ||
	bad "not all $N connections carried their SEND"
grep -q "timewait entered $N (state checked $N, dreq_errors 0) exited $N" "$dir/plain.client" ||
	bad "not every connection passed through TimeWait"
grep -q "recv_ok $N recv_bad 0 timewait $N" "$dir/plain.server" ||
	bad "server did not receive $N good payloads / see $N TimeWaits"

if command -v tshark >/dev/null 2>&1; then
	tshark -r "$dir/cap.pcap" >/dev/null 2>"$dir/tshark.err" ||
		{ cat "$dir/tshark.err"; bad "tshark cannot read the capture"; }
	nmal=$(tshark -r "$dir/cap.pcap" -Y "_ws.malformed" 2>/dev/null | wc -l)
	[ "$nmal" = 0 ] || bad "$nmal malformed packets in the capture"
	# Every REQ on the wire as the client logged it (retries are copies).
	tshark -r "$dir/cap.pcap" -Y "infiniband.cm.req" -T fields -E separator=' ' \
		-e infiniband.cm.req.serviceid -e infiniband.cm.req.localqpn \
		-e infiniband.cm.req.startpsn -e infiniband.cm.req.prim_locallid \
		-e infiniband.cm.req.prim_remotelid -e infiniband.cm.req.pkey \
		-e infiniband.cm.req.pppmtu 2>/dev/null |
		while read -r sid qpn psn slid dlid pkey mtu; do
			printf 'req service_id=0x%016x qpn=0x%06x psn=0x%06x slid=%d dlid=%d pkey=0x%04x mtu=%d\n' \
				"$sid" "$qpn" "$psn" "$slid" "$dlid" "$pkey" "$mtu"
		done | sort -u >"$dir/req.wire"
	sort -u "$dir/req.log" >"$dir/req.want"
	nreq=$(wc -l <"$dir/req.wire")
	if [ "$nreq" != "$N" ] || ! cmp -s "$dir/req.want" "$dir/req.wire"; then
		diff "$dir/req.want" "$dir/req.wire" | head -5
		bad "REQ fields on the wire ($nreq REQs) differ from what was asked ($N)"
	else
		echo "capture: $nreq REQs match (service ID, QPN, PSN, LIDs, P_Key, MTU), no malformed packets"
	fi
	# The SENDs went where the CM said: to the QPs the REPs named, starting
	# at the PSNs the REPs carried (a starting PSN is what its sender
	# expects to receive, as in the kernel's cm.c; RC SEND Only is BTH
	# opcode 4).
	tshark -r "$dir/cap.pcap" -Y "infiniband.bth.opcode == 4" -T fields -E separator=' ' \
		-e infiniband.bth.destqp -e infiniband.bth.psn 2>/dev/null >"$dir/sends"
	tshark -r "$dir/cap.pcap" -Y "infiniband.cm.rep" -T fields -E separator=' ' \
		-e infiniband.cm.rep.localqpn -e infiniband.cm.rep.startpsn 2>/dev/null |
		sort -u >"$dir/reps"
	awk '{ print $1 }' "$dir/reps" | sort -u >"$dir/rep.qpns"
	awk '{ printf "0x%06x\n", $2 }' "$dir/reps" | sort -u >"$dir/rep.psns"
	awk '{ print $1 }' "$dir/sends" | sort -u >"$dir/send.qpns"
	awk '{ printf "0x%06x\n", $2 }' "$dir/sends" | sort -u >"$dir/send.psns"
	nsend=$(wc -l <"$dir/send.qpns")
	if [ "$nsend" != "$N" ] || ! cmp -s "$dir/rep.qpns" "$dir/send.qpns" ||
		! cmp -s "$dir/rep.psns" "$dir/send.psns"; then
		bad "SENDs on the wire ($nsend QPs) do not match the QPNs / PSNs of the REPs"
	else
		echo "capture: $nsend SENDs to the QPs the REPs named, at the PSNs the REPs carried"
	fi
else
	echo "note: tshark not installed, capture not checked"
fi

# ---- 2. 20% of CM MADs dropped on the client's link ----
echo "== 2. $N connections, 20% CM MAD drop on $cli:1"
fab fault seed 7 >/dev/null
fab fault add link "$cli:1" class 0x07 drop prob 0.2 >/dev/null || bad "fabsim fault add failed"
# A short packet life time keeps retries and TimeWait short (the SA's is ~1 s).
start_server drop --n "$N" --idle 30 || bad "server did not start"
run_client drop --n "$N" --plt 14
wait_server drop
fab status | grep -E "fault_drop|class 0x07"
[ "$crc" = 0 ] || bad "client exit $crc with drops (want 0: all connected)"
[ "$src" = 0 ] || bad "server exit $src with drops (want 0)"
grep -q "established $N sent_ok $N" "$dir/drop.client" || bad "not all $N connected with 20% drop"
fab status | awk '$1 == "fault_drop" && $2 > 0 { ok = 1 } END { exit !ok }' ||
	bad "the fault dropped nothing"
grep -Eq "^client: retried [1-9]" "$dir/drop.client" || bad "the client retried nothing"
grep -Eq "^server: retried [1-9]" "$dir/drop.server" || bad "the server retried nothing"
grep -q "timewait $N " "$dir/drop.server" || bad "server: not all $N through TimeWait with drops"
fab fault clear >/dev/null

# ---- 3. server killed mid-handshake ----
half=$((N / 10 > 1 ? N / 10 : 1))
echo "== 3. server dies at REQ $half of $((2 * half)): client must report timeouts"
start_server kill --n "$((2 * half))" --die-after "$half" || bad "server did not start"
t0=$(now)
run_client kill --n "$((2 * half))" --plt 12 --cm-retries 3 --deadline 60
t1=$(now)
wait_server kill
[ "$crc" = 3 ] || bad "client exit $crc after the server died (want 3: timeouts)"
grep -Eq "timeouts [1-9]" "$dir/kill.client" || bad "client reported no timeout"
[ $((t1 - t0)) -le 45 ] || bad "client took $((t1 - t0)) s to give up"
echo "client gave up after $((t1 - t0)) s"

# ---- 4. auto QP: the loop threads move the QPs ----
echo "== 4. $NQ connections, QPs moved by the runtimes' loop threads (--loop-qp)"
start_server loopqp --n "$NQ" --idle 30 --loop-qp || bad "server did not start"
run_client loopqp --n "$NQ" --loop-qp
wait_server loopqp
[ "$crc" = 0 ] || bad "--loop-qp: client exit $crc (want 0)"
[ "$src" = 0 ] || bad "--loop-qp: server exit $src (want 0)"
grep -q "established $NQ sent_ok $NQ send_errors 0" "$dir/loopqp.client" ||
	bad "--loop-qp: not all $NQ connections carried their SEND"
grep -q "timewait entered $NQ (state checked $NQ, dreq_errors 0) exited $NQ" \
	"$dir/loopqp.client" || bad "--loop-qp: not every connection passed through TimeWait"
grep -q "recv_ok $NQ recv_bad 0 timewait $NQ" "$dir/loopqp.server" ||
	bad "--loop-qp: server did not receive $NQ good payloads / see $NQ TimeWaits"

[ "$fail" = 0 ] && echo "PASS" || echo "FAILED (logs in $dir, CM_FABRIC_KEEP=1 keeps them)"
exit "$fail"
