#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# tshark decodes a MADCM_TRACE capture (GetTable with RMPP segments and our
# ACKs, MCMemberRecord, ServiceRecord) with no malformed packet, and
# `madcm trace` reads it too.
. "$(dirname "$0")/sa_lib.sh"
skip_missing tshark tshark
set -- $HOSTS
T=$FAB/trace.pcap
export MADCM_TRACE=$T
on "$1" "$MADCM" path --numb-path 1 "$(lid_of "$1")" "$(lid_of "$3")" >/dev/null || fail "path"
unset MADCM_TRACE
# A GetTable of all paths from this port: several RMPP segments.
MADCM_TRACE=$FAB/table.pcap on "$1" "$MADCM" path --json "$(lid_of "$1")" "$(lid_of "$4")" >/dev/null || fail "table"
MADCM_TRACE=$FAB/mc.pcap on "$1" "$MADCM" mcast join ff12:1234:1::42 >/dev/null || fail "mcast"
MADCM_TRACE=$FAB/mc2.pcap on "$1" "$MADCM" mcast leave ff12:1234:1::42 >/dev/null || fail "leave"
for f in "$T" "$FAB/table.pcap" "$FAB/mc.pcap" "$FAB/mc2.pcap"; do
	n=$(tshark -r "$f" 2>"$FAB/tshark.err" | wc -l)
	[ "$n" -ge 2 ] || fail "$f: tshark saw $n packets ($(cat "$FAB/tshark.err"))"
	tshark -r "$f" -V 2>&1 | grep -i -q "malformed" && fail "$f: malformed packet in tshark's view"
	tshark -r "$f" -V 2>/dev/null | grep -q -i "subn\|SubnAdm\|infiniband" || fail "$f: not dissected as InfiniBand"
	"$MADCM" trace "$f" >/dev/null || fail "madcm trace $f"
done
echo "PASS: tshark decodes the traces, nothing malformed"
