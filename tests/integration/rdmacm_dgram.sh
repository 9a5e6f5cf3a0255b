#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# Datagram ids and multicast: Debian's unmodified udaddy and mckey under
# `madcm run` on a simulated star of three hosts with OpenSM:
#   udaddy -c 4 (SIDR for RDMA_PS_UDP, 10 messages each way per
#   connection), udaddy -P ipoib (RDMA_PS_IPOIB: the broadcast group's
#   Q_Key);
#   mckey: two receivers and one sender in an IPv4 group (the MGID the
#   kernel maps 230.168.1.5 to: ff12:4001:ffff::6a8:105), an IPv6 group
#   with a send-only sender (-o), an unmapped AF_IB group (-M); after they
#   exit, the SA lists no group but IPoIB's broadcast group;
#   a link going down and up under a bound id: ADDR_CHANGE each time;
#   OpenSM restarted under a joined receiver: it joins again (client
#   reregister) and receives; udaddy with 20% of CM MADs lost;
#   a capture: SIDR_REQ service ID 0x1110000 + port, nothing malformed.
. "$(dirname "$0")/sim_common.sh"
. "$(dirname "$0")/tshark_payload.sh"
MADCM=$top_builddir/tools/madcm
skip_missing udaddy rdmacm-utils
[ -f "$top_builddir/lib/.libs/librdmacm.so.1" ] || { echo "SKIP: librdmacm.so.1 not built"; exit 77; }

fs up --gen star:3 >"$FABSIM_DIR/up.log" 2>&1 || { cat "$FABSIM_DIR/up.log"; fail "fabsim up"; }
out=$FABSIM_DIR/out
mkdir -p "$out"
passed=0

bg() { # bg NAME HOST ARGS...: a madcm run in the background, killed after 120 s
	_n=$1 _h=$2
	shift 2
	# No timeout(1): the PID killed on exit must be the program itself.
	"$FABSIM" --dir "$FABSIM_DIR" run "$_h" -- "$MADCM" run "$@" >"$out/$_n" 2>&1 &
	last=$!
	bg_pids="$bg_pids $last"
	(sleep 120; kill -9 $last 2>/dev/null) >/dev/null 2>&1 &
	bg_pids="$bg_pids $!"
}
fg() { # fg NAME HOST ARGS...: must exit 0
	_n=$1 _h=$2
	shift 2
	timeout 120 "$FABSIM" --dir "$FABSIM_DIR" run "$_h" -- "$MADCM" run "$@" \
		>"$out/$_n" 2>&1 || { tail -20 "$out/$_n" >&2; fail "$_n: $*"; }
}
waitok() { # waitok NAME PID
	wait "$2" || { tail -20 "$out/$1" >&2; fail "$1 exited non-zero"; }
	grep -q "return status 0" "$out/$1" || { tail -20 "$out/$1" >&2; fail "$1: no success"; }
	passed=$((passed + 1))
	echo "ok: $1"
}

# mc_send NAME HOST "RECEIVER_PIDS" ARGS...: a multicast sender (fg), sent
# once more if a receiver still waits 15 s later.  OpenSM programs the
# switches' MFTs for a new member after it answers the join, so a burst
# sent at once can beat it and be dropped (as on a real fabric); mckey
# sends all its messages in one burst and never again.
mc_send() {
	_mn=$1 _mh=$2 _mp=$3
	shift 3
	fg "$_mn" "$_mh" "$@"
	for _ in $(seq 1 30); do
		_left=
		# Running, not a zombie waiting for waitok's wait.
		for _p in $_mp; do
			[ "$(sed 's/.*) //' "/proc/$_p/stat" 2>/dev/null | cut -c1)" = Z ] ||
				{ [ -e "/proc/$_p" ] && _left=1; }
		done
		[ -z "$_left" ] && return 0
		sleep 0.5
	done
	echo "note: $_mn's burst beat OpenSM's MFT update; sending again"
	fg "$_mn.again" "$_mh" "$@"
}

udaddy_pair() { # NAME ARGS...
	name=$1
	shift
	bg "$name.s" h1 udaddy "$@"
	sp=$last
	wait_listen $sp
	fg "$name.c" h2 udaddy -s 198.18.0.1 "$@"
	waitok "$name.s" $sp
	grep -q "data transfers complete" "$out/$name.c" || fail "$name: client incomplete"
}

udaddy_pair udaddy -c 4
udaddy_pair udaddy-ipoib -P ipoib

# Multicast, IPv4: two receivers, one sender; every receiver gets all.
bg mc4.r1 h1 stdbuf -oL mckey -m 230.168.1.5
r1=$last
bg mc4.r2 h2 stdbuf -oL mckey -m 230.168.1.5
r2=$last
wait_for "grep -q 'joined dgid' '$out/mc4.r1' && grep -q 'joined dgid' '$out/mc4.r2'" 20 ||
	fail "receivers did not join"
mc_send mc4.s h3 "$r1 $r2" mckey -m 230.168.1.5 -s
waitok mc4.r1 $r1
waitok mc4.r2 $r2
grep -q "joined dgid: ff12:4001:ffff::6a8:105" "$out/mc4.s" ||
	{ cat "$out/mc4.s" >&2; fail "230.168.1.5 is not ff12:4001:ffff::6a8:105"; }

# IPv6 group, the sender a send-only full member (no QP attach).
bg mc6.r h1 stdbuf -oL mckey -m ff0e::1:2
r1=$last
wait_for "grep -q 'joined dgid' '$out/mc6.r'" 20 || fail "IPv6 receiver did not join"
mc_send mc6.s h3 "$r1" mckey -m ff0e::1:2 -s -o
waitok mc6.r $r1

# An unmapped AF_IB group given by MGID.
bg mcib.r h1 stdbuf -oL mckey -M ff12:4001:ffff::1234 -b 198.18.0.1
r1=$last
wait_for "grep -q 'joined dgid' '$out/mcib.r'" 20 || fail "AF_IB receiver did not join"
mc_send mcib.s h3 "$r1" mckey -M ff12:4001:ffff::1234 -b 198.18.0.3 -s
waitok mcib.r $r1

# Every member left: only IPoIB's broadcast group remains at the SA.
groups=$(on h1 saquery -g 2>/dev/null | grep -c 'MGID\.')
[ "$groups" -eq 1 ] || { on h1 saquery -g >&2; fail "$groups groups at the SA after all left"; }
passed=$((passed + 1))
echo "ok: groups left at the SA"

# A link going down under a bound id: ADDR_CHANGE (and again when it is back).
"$FABSIM" --dir "$FABSIM_DIR" run h1 -- "$top_builddir/tests/integration/rdmacm_watch" \
	198.18.0.1 9999 2 >"$out/watch" 2>&1 &
wp=$!
bg_pids="$bg_pids $wp"
wait_for "grep -q bound '$out/watch'" 20 || { cat "$out/watch" >&2; fail "rdmacm_watch did not bind"; }
fs link h1 1 down >/dev/null || fail "link down"
wait_for "grep -q ADDR_CHANGE '$out/watch'" 20 || { cat "$out/watch" >&2; fail "no ADDR_CHANGE on link down"; }
fs link h1 1 up >/dev/null || fail "link up"
wait $wp || { cat "$out/watch" >&2; fail "rdmacm_watch"; }
[ "$(grep -c 'event RDMA_CM_EVENT_ADDR_CHANGE status 0' "$out/watch")" -eq 2 ] ||
	{ cat "$out/watch" >&2; fail "ADDR_CHANGE down and up"; }
passed=$((passed + 1))
echo "ok: ADDR_CHANGE on link down and up"

# OpenSM restarts under a joined receiver: the new SM knows no group, and
# asks every port's clients to register again (PortInfo ClientReregister:
# IBV_EVENT_CLIENT_REREGISTER), so the library joins again and the
# receiver gets what a sender joining afterwards sends.
bg mc-rejoin.r h1 stdbuf -oL mckey -m 230.168.1.7 -b 198.18.0.1
rp=$last
wait_for "grep -q 'joined dgid' '$out/mc-rejoin.r'" 20 || { cat "$out/mc-rejoin.r" >&2; fail "mc-rejoin: no join"; }
fs sm stop >/dev/null || fail "sm stop"
fs sm start >/dev/null || fail "sm start"
wait_for "'$FABSIM' --dir '$FABSIM_DIR' run h2 -- saquery -g 2>/dev/null | grep -q ff12:4001:ffff::6a8:107" 30 ||
	fail "mc-rejoin: the receiver did not join again after the SM restart"
fg mc-rejoin.s h2 mckey -m 230.168.1.7 -b 198.18.0.2 -s
waitok mc-rejoin.r $rp

# udaddy with 20% of CM MADs lost: a lost SIDR_REQ is retried, and a lost
# SIDR_REP is answered again from the answer madcm keeps for duplicates
# (cm/engine.h, CM_ST_SIDR_REP_SENT), so udaddy still sees 4 requests.
if [ "${MADCM_QUICK_CHECK:-0}" != 1 ]; then
	fs fault seed 11 >/dev/null
	fs fault add class 7 drop prob 0.2 >/dev/null || fail "fault add"
	udaddy_pair udaddy-lossy -c 4
	hits=$(fs fault list | awk '/class 7/ { for (i = 1; i < NF; i++) if ($i == "hits") print $(i + 1) }')
	echo "lossy udaddy: ${hits:-0} CM MADs dropped"
	fs fault clear >/dev/null 2>&1 || fs fault del 0 >/dev/null
fi

if command -v tshark >/dev/null 2>&1; then
	fs capture h1 "$FABSIM_DIR/ud.pcap" >/dev/null || fail "capture"
	udaddy_pair capture
	sleep 0.3
	fs capture h1 off >/dev/null
	# shellcheck disable=SC2046
	bad=$(tshark $(tshark_no_payload_guess "$FABSIM_DIR/ud.pcap") -n -r "$FABSIM_DIR/ud.pcap" \
		-Y '_ws.malformed' 2>/dev/null)
	[ -z "$bad" ] || { echo "$bad" >&2; fail "tshark: malformed packets"; }
	tshark -n -r "$FABSIM_DIR/ud.pcap" 2>/dev/null | grep -Eq "CM: ServiceIDResReq *$" ||
		fail "capture: no SIDR_REQ"
	sid=$("$MADCM" decode "$FABSIM_DIR/ud.pcap" 2>/dev/null |
		awk '/SIDR_REQ/ { s = 1 } s && /service_id/ { print $2; exit }')
	[ "$sid" = "0x0000000001111c06" ] || fail "SIDR_REQ service ID '$sid' (want 0x1110000 + 7174)"
	echo "ok: capture (SIDR_REQ $sid)"
fi

echo "PASS: $passed datagram and multicast runs on madcm"
exit 0
