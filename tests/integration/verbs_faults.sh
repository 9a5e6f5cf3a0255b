#!/bin/sh
# `fabsim fault` rules apply to data packets on the links they cross: with
# 10% of the packets on h1's link dropped, RC still delivers every message
# (retransmission after the QP's timeout), and the drops are counted.
. "$(dirname "$0")/verbs_lib.sh"
fab_up --gen b2b
fabsim fault add link h1:1 drop prob 0.1 || fail "fault add"
pair h1 h2 rc-lossy ibv_rc_pingpong -p "$(vt_port 31)" -n 30 || fail "RC over a lossy link"
stats=$(on h1 "$VERBS_CHECK" daemon-stats)
echo "$stats"
n=$(echo "$stats" | sed -n 's/.*drop_fault \([0-9]*\).*/\1/p')
[ "${n:-0}" -gt 0 ] || fail "no data packet was dropped by the fault rule"
fabsim fault clear
echo PASS
