#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# Debian's unmodified rdmacm-utils binaries on madcm's librdmacm.so.1
# (`madcm run`), between two simulated hosts with OpenSM:
#   rping (data validated, -v output counted), rping -q (the application
#   moves its own QP with rdma_init_qp_attr, CONNECT_RESPONSE then
#   rdma_establish), ucmatose -c 100, ucmatose -m (rdma_migrate_id),
#   ucmatose -f gid (AF_IB), ucmatose over IPv6, rdma_server/rdma_client
#   (rdma_create_ep / rdma_get_request);
# each again with 20% of CM MADs dropped on the fabric (they still pass);
# a capture of an rping handshake decoded by tshark: nothing malformed,
# the REQ carries service ID 0x1060000 + port and the IP CM header with
# both addresses.
. "$(dirname "$0")/sim_common.sh"
. "$(dirname "$0")/tshark_payload.sh"
. "$(dirname "$0")/rdmacm_pair.sh"
MADCM=$top_builddir/tools/madcm
skip_missing rping rdmacm-utils
[ -f "$top_builddir/lib/.libs/librdmacm.so.1" ] || { echo "SKIP: librdmacm.so.1 not built"; exit 77; }

fs up --gen b2b >"$FABSIM_DIR/up.log" 2>&1 || { cat "$FABSIM_DIR/up.log"; fail "fabsim up"; }
H1=198.18.0.1
H1_6=2001:db8::1
G1=$(fs hosts | awk '$1 == "h1" { for (i = 1; i < NF; i++) if ($i == "gid") print $(i + 1); exit }')
[ -n "$G1" ] || fail "no GID for h1"
out=$FABSIM_DIR/out
mkdir -p "$out"
passed=0


# cases SUFFIX PINGS SECONDS: SECONDS bounds each ucmatose pair.  Lossy, a
# server's DREQ whose DREP was lost is resent until its timeout (16 tries,
# about 103 s, as the kernel's CM does), the client having exited: an
# in-process CM leaves no one to answer the resends (madcmd does).
cases() {
	sfx=$1 count=$2 ut=$3
	pair "rping$sfx" 120 "rping -s -a $H1 -V -C $count" "rping -c -a $H1 -V -v -C $count"
	# Distinct pings (stderr lines may share a line with one of them).
	n=$(grep -o 'ping data: rdma-ping-[0-9]*' "$out/rping$sfx.c" | sort -u | wc -l)
	[ "$n" -eq "$count" ] || fail "rping$sfx: $n of $count pings printed"
	expect "rping$sfx.s" "server DISCONNECT EVENT"
	pair "rping-q$sfx" 120 "rping -s -q -a $H1 -V -C 20" "rping -c -q -a $H1 -V -C 20"
	pair "ucmatose$sfx" "$ut" "ucmatose -c 100" "ucmatose -s $H1 -c 100"
	expect "ucmatose$sfx.s" "return status 0"
	expect "ucmatose$sfx.c" "return status 0"
	pair "ucmatose-m$sfx" "$ut" "ucmatose -c 4 -m" "ucmatose -s $H1 -c 4 -m"
	pair "ucmatose-gid$sfx" "$ut" "ucmatose -f gid -b $G1" "ucmatose -f gid -s $G1"
	pair "ucmatose-ipv6$sfx" "$ut" "ucmatose -b $H1_6" "ucmatose -s $H1_6"
	pair "rdma_server$sfx" 120 "rdma_server" "rdma_client -s $H1"
	expect "rdma_server$sfx.s" "rdma_server: end 0"
}

cases "" 1000 180

# The umad write queues (mad/umad_tx.h) asked for on these IB ports: the
# writer thread (by default on the RoCE ports of hosts with more than one
# CPU), and writes after the loop's release.
# The ucmatose runs are captured at h1: the last MADs a program sends before
# it returns from main (the DREPs to its peer's DREQs) leave even from a
# queue, so each of the 100 DREQs is sent once and answered.  Before
# 2026-12-04 a quarter of the runs with the writer thread lost DREPs at
# exit, and the peer resent its DREQs until their timeout (103 s): eight
# runs of half a second each catch that nine times in ten.
cm_count() { "$MADCM" decode --json "$1" 2>/dev/null | grep -c "\"attribute\":\"$2\""; }
for tx in thread release; do
	MADCM_UMAD_TX=$tx
	export MADCM_UMAD_TX
	pair "rping-$tx" 120 "rping -s -a $H1 -V -C 200" "rping -c -a $H1 -V -v -C 200"
	for i in 1 2 3 4 5 6 7 8; do
		fs capture h1 "$FABSIM_DIR/ucmatose-$tx.pcap" >/dev/null || fail "capture"
		pair "ucmatose-$tx-$i" 180 "ucmatose -c 100" "ucmatose -s $H1 -c 100"
		sleep 0.2
		fs capture h1 off >/dev/null
		expect "ucmatose-$tx-$i.c" "return status 0"
		for m in DisconnectRequest DisconnectReply; do
			n=$(cm_count "$FABSIM_DIR/ucmatose-$tx.pcap" $m)
			[ "$n" -eq 100 ] || fail "ucmatose-$tx-$i: $n ${m}s at h1, not 100"
		done
	done
done
unset MADCM_UMAD_TX

# The same with 20% of CM MADs (class 0x07) lost anywhere on the fabric.
if [ "${MADCM_QUICK_CHECK:-0}" != 1 ]; then
	fs fault seed 7 >/dev/null
	fs fault add class 7 drop prob 0.2 >/dev/null || fail "fault add"
	cases "-lossy" 200 240
	hits=$(fs fault list | awk '/class 7/ { for (i = 1; i < NF; i++) if ($i == "hits") print $(i + 1) }')
	[ "${hits:-0}" -gt 0 ] || fail "the loss rule dropped nothing"
	echo "lossy runs: $hits CM MADs dropped"
	fs fault clear >/dev/null 2>&1 || fs fault del 0 >/dev/null
fi

# An address the client's sources do not know: found at the SA, where the
# listener registered it (madcm-hosts(5)); an unknown one ends in ADDR_ERROR.
grep -v -e '198\.18\.0\.1 ' -e '^h1 ' -e '2001:db8::1 ' "$FABSIM_DIR/hosts" >"$FABSIM_DIR/partial"
"$FABSIM" --dir "$FABSIM_DIR" run h1 -- "$MADCM" run rping -s -a $H1 -C 3 >"$out/sa.s" 2>&1 &
sp=$!
bg_pids="$bg_pids $sp"
wait_for "'$FABSIM' --dir '$FABSIM_DIR' run h1 -- saquery -S 2>/dev/null | grep -q 'madcm:ip:$H1'" 10 ||
	fail "no ServiceRecord for $H1"
MADCM_ADDR_FILE=$FABSIM_DIR/partial timeout 60 "$FABSIM" --dir "$FABSIM_DIR" run h2 -- \
	"$MADCM" run rping -c -a $H1 -C 3 -v >"$out/sa.c" 2>&1 || { cat "$out/sa.c" >&2; fail "rping by SA"; }
wait $sp || { cat "$out/sa.s" "$out/sa.c" >&2; fail "rping server (SA)"; }
passed=$((passed + 1))
echo "ok: address resolved through the SA"
MADCM_ADDR_FILE=$FABSIM_DIR/partial timeout 60 "$FABSIM" --dir "$FABSIM_DIR" run h2 -- \
	"$MADCM" run rping -c -a 198.18.0.99 -C 1 >"$out/unknown.c" 2>&1 && fail "unknown address connected"
grep -q "RDMA_CM_EVENT_ADDR_ERROR, error -110" "$out/unknown.c" ||
	{ cat "$out/unknown.c" >&2; fail "unknown address: no ADDR_ERROR -110"; }
passed=$((passed + 1))
echo "ok: unknown address -> ADDR_ERROR -ETIMEDOUT"

# Not here: a server killed mid-run.  rping's client spends half its time
# waiting for the server with nothing of its own in flight; with the
# kernel's rdma_cm the dead server's kernel sends the DREQ that ends that
# wait, but no process is left to do it for a madcm server killed with
# SIGKILL (madcmd, the per-host daemon, will).  Only a client with a
# request in flight notices (RETRY_EXC), so such a test passes by luck.

# A capture of one rping handshake, decoded by tshark.
if command -v tshark >/dev/null 2>&1; then
	fs capture h1 "$FABSIM_DIR/rping.pcap" >/dev/null || fail "capture"
	pair capture 60 "rping -s -a $H1 -C 2" "rping -c -a $H1 -C 2"
	sleep 0.5
	fs capture h1 off >/dev/null
	tshark -n -r "$FABSIM_DIR/rping.pcap" -Y 'infiniband.mad.attributeid == 0x0010' -V \
		>"$out/req.txt" 2>/dev/null || fail "tshark could not read the capture"
	# shellcheck disable=SC2046
	bad=$(tshark $(tshark_no_payload_guess "$FABSIM_DIR/rping.pcap") -n -r "$FABSIM_DIR/rping.pcap" \
		-Y '_ws.malformed' 2>/dev/null)
	[ -z "$bad" ] || { echo "$bad" >&2; fail "tshark: malformed packets"; }
	sid=$(tshark -n -r "$FABSIM_DIR/rping.pcap" -Y 'infiniband.mad.attributeid == 0x0010' \
		-T fields -e infiniband.cm.req.serviceid 2>/dev/null | head -1)
	[ "$sid" = "0x0000000001061c06" ] || fail "REQ service ID $sid (want 0x1060000 + 7174)"
	grep -q "IP CM Source IP: 198.18.0.2" "$out/req.txt" || fail "REQ: no IP CM source address"
	grep -q "IP CM Destination IP: $H1" "$out/req.txt" || fail "REQ: no IP CM destination"
	for m in ConnectRequest ConnectReply ReadyToUse DisconnectRequest DisconnectReply; do
		tshark -n -r "$FABSIM_DIR/rping.pcap" 2>/dev/null | grep -q "CM: $m" ||
			fail "capture: no $m"
	done
	echo "ok: capture (tshark: REQ $sid, IP CM header 198.18.0.2 -> $H1)"
else
	echo "tshark not installed: capture check skipped"
fi

echo "PASS: $passed rdmacm-utils runs on madcm"
exit 0
