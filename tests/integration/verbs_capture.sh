#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# `fabsim capture` shows the data path: RC SEND segments and ACKs, RDMA
# READ request/response and atomics, decoded by tshark without malformed
# packets.
. "$(dirname "$0")/verbs_lib.sh"
. "$(dirname "$0")/tshark_payload.sh"
skip_missing tshark tshark
fab_up --gen b2b
cap=$vt_dir/h1.pcap
fabsim capture h1 "$cap" || fail "capture"
pair h1 h2 rc ibv_rc_pingpong -p "$(vt_port 21)" -n 3 || fail "rc_pingpong"
pair h1 h2 read ib_read_lat -p "$(vt_port 22)" -n 5 || fail "ib_read_lat"
pair h1 h2 atomic ib_atomic_lat -p "$(vt_port 23)" -n 5 || fail "ib_atomic_lat"
fabsim capture h1 off
tshark -r "$cap" 2>/dev/null >"$vt_dir/decoded"
sed -n '1,8p' "$vt_dir/decoded"
for op in "RC Send First" "RC Send Last" "RC Acknowledge" \
	"RC RDMA Read Request" "RC RDMA Read Response Only" \
	"RC Fetch Add" "RC Atomic Acknowledge"; do
	n=$(grep -c "$op" "$vt_dir/decoded")
	echo "$op: $n"
	[ "$n" -gt 0 ] || fail "no '$op' in the capture"
done
# shellcheck disable=SC2046
bad=$(tshark $(tshark_no_payload_guess "$cap") -r "$cap" -Y "_ws.malformed" 2>/dev/null | wc -l)
[ "$bad" -eq 0 ] || fail "$bad malformed packets"
echo PASS
