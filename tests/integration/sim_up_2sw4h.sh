#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# OpenSM brings the shipped 2-switch/4-host topology up; diags agree with it.
. "$(dirname "$0")/sim_common.sh"
fs up "$top_srcdir/sim/topologies/2sw4h.topo" || fail "fabsim up"

# ibnetdiscover: 2 switches, 4 CAs, every link (12 port lines: 4+4 on the
# switches, 1 per CA)
out=$(on h2 ibnetdiscover) || fail "ibnetdiscover"
[ "$(echo "$out" | grep -c '^Switch')" = 2 ] || fail "ibnetdiscover switches: $out"
[ "$(echo "$out" | grep -c '^Ca')" = 4 ] || fail "ibnetdiscover CAs"
[ "$(echo "$out" | grep -c '^\[')" = 12 ] || fail "ibnetdiscover links"

# ibstat: Active, with the LID OpenSM assigned
for h in h1 h2 h3 h4; do
	st=$(on $h ibstat) || fail "ibstat on $h"
	echo "$st" | grep -q "State: Active" || fail "$h not Active"
	echo "$st" | grep -q "Base lid: $(lid_of $h)\$" || fail "$h LID differs from fabsim hosts"
	echo "$st" | grep -q "SM lid: $(lid_of h1)\$" || fail "$h SM LID"
done

# PathRecord h1 -> h4 with the right SLID/DLID
l1=$(lid_of h1) l4=$(lid_of h4)
pr=$(on h3 saquery -p --slid "$l1" --dlid "$l4") || fail "saquery -p"
echo "$pr" | grep -q "slid\.*$l1\$" || fail "PathRecord slid: $pr"
echo "$pr" | grep -q "dlid\.*$l4\$" || fail "PathRecord dlid"

# NodeRecords: every CA and switch (a multi-segment RMPP answer)
n=$(on h4 saquery NodeRecord | grep -c '^NodeRecord')
[ "$n" = 6 ] || fail "NodeRecord count $n, want 6"
# PMA: counters of the switch port h2 hangs on, and of h2 itself
on h2 perfquery -x | grep -q "PortXmitPkts:\.*[1-9]" || fail "perfquery on h2"
swlid=$(echo "$out" | awk '/^Switch/ && /"sw1"/ { for (i = 1; i < NF; i++) if ($i == "lid") print $(i + 1) }')
[ -n "$swlid" ] || fail "no LID for sw1 in ibnetdiscover output"
on h1 perfquery "$swlid" 2 | grep -q "PortRcvPkts:\.*[1-9]" || fail "perfquery of sw1 port 2"
echo "PASS"
