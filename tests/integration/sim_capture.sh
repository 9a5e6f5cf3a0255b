#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# tshark decodes a capture of SA PathRecord queries and CM MADs with no
# malformed packets.
. "$(dirname "$0")/sim_common.sh"
skip_missing tshark tshark
fs up --gen star:4 >/dev/null || fail "fabsim up"
cap=$FABSIM_DIR/h2.pcap
fs capture h2 "$cap" >/dev/null || fail "capture start"
l2=$(lid_of h2) l3=$(lid_of h3)
on h2 saquery -p --slid "$l2" --dlid "$l3" >/dev/null || fail "saquery -p"
on h2 saquery -p >/dev/null || fail "saquery -p (all)"
on_bg h3 "$PINGPONG" server 5 >"$FABSIM_DIR/pp.s" 2>&1
sp=$!
bg_pids="$bg_pids $sp"
wait_for "! kill -0 $sp || grep -q 'server lid' '$FABSIM_DIR/pp.s'" 60 || fail "the MAD server did not start"
on h2 "$PINGPONG" client "$l3" 5 >/dev/null || fail "ping-pong"
fs capture h2 off >/dev/null
out=$(tshark -r "$cap" -V 2>&1) || fail "tshark failed: $out"
pk=$(tshark -r "$cap" 2>/dev/null | wc -l)
[ "$pk" -ge 10 ] || fail "only $pk packets captured"
echo "$out" | grep -qi "malformed" && fail "tshark reports malformed packets: $(echo "$out" | grep -i -m3 -B5 malformed)"
echo "$out" | grep -q "PathRecord" || fail "no PathRecord decoded"
echo "$out" | grep -qi "ComMgt\|CM.*Management\|Communication" || fail "no CM MAD decoded"
echo "PASS ($pk packets)"
