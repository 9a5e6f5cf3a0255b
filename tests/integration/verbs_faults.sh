#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# `fabsim fault` rules apply to data packets on the links they cross: with
# 5% of the packets on h1's link dropped, RC still delivers every message
# (NAK or timeout, then retransmission), and the drops are counted.  (One
# packet per message: at 10% loss a 4-packet message plus its ACK fails
# 8 tries in a row often enough to exhaust retry_cnt 7, on hardware too.)
. "$(dirname "$0")/verbs_lib.sh"
fab_up --gen b2b
fabsim fault add link h1:1 drop prob 0.05 || fail "fault add"
# What RC promises is checked, not the exit status alone: the server's last
# SEND can fail after it arrived, when the client's ACK for it is among the
# 5% lost and the client has already destroyed its QP (it has all it
# waited for), so that no one answers the resends: "transport retry counter
# exceeded" on the server, as on hardware.  The client then has every
# message, which it cannot have had if an earlier SEND failed (each reply
# waits for the message before it).
if ! pair h1 h2 rc-lossy ibv_rc_pingpong -p "$(vt_port 31)" -n 60 -s 1024; then
	[ "$crc" -eq 0 ] && grep -q "^60 iters in" "$vt_dir/rc-lossy.cli" ||
		fail "RC over a lossy link: the client did not get its 60 messages"
	grep -q "transport retry counter exceeded" "$vt_dir/rc-lossy.srv" ||
		fail "RC over a lossy link: the server failed otherwise"
	echo "(the server's last SEND lost its ACK after the client left: allowed)"
fi
stats=$(on h1 "$VERBS_CHECK" daemon-stats)
echo "$stats"
n=$(echo "$stats" | sed -n 's/.*drop_fault \([0-9]*\).*/\1/p')
[ "${n:-0}" -gt 0 ] || fail "no data packet was dropped by the fault rule"
fabsim fault clear

# Every data packet on h1's link duplicated: a READ response arrives twice,
# the second copy when the SEND posted behind the READ heads the send
# queue.  It must be dropped as a duplicate; checking it against the SEND's
# buffer (no LOCAL_WRITE, as rping's) failed the SEND with LOC_PROT_ERR.
fabsim fault add link h1:1 dup prob 1 || fail "fault add dup"
info=$vt_dir/dup.info
bg_on h2 "$VERBS_CHECK" server "$info" 50 >"$vt_dir/dup.srv" 2>&1
spid=$!
on h1 "$VERBS_CHECK" read-send "$info" 50 >"$vt_dir/dup.cli" 2>&1 ||
	{ cat "$vt_dir/dup.cli" "$vt_dir/dup.srv"; fail "READ then SEND with duplicated packets"; }
wait "$spid" || { cat "$vt_dir/dup.srv"; fail "server of the duplicated READs"; }
cat "$vt_dir/dup.cli" "$vt_dir/dup.srv"
fabsim fault clear
echo PASS
