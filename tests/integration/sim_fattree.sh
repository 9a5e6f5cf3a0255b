#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# A generated two-level fat tree of 32-port switches: 512 hosts + 48
# switches = 560 nodes.  OpenSM reaches SUBNET UP; SA and discovery see all.
. "$(dirname "$0")/sim_common.sh"
start=$(date +%s)
fs up --gen fattree:32 >/dev/null || fail "fabsim up fattree:32"
echo "SUBNET UP after $(( $(date +%s) - start ))s"
n=$(on h100 saquery NodeRecord | grep -c '^NodeRecord')
[ "$n" = 560 ] || fail "NodeRecord count $n, want 560"
out=$(on h7 ibnetdiscover) || fail "ibnetdiscover"
[ "$(echo "$out" | grep -c '^Switch')" = 48 ] || fail "switch count"
[ "$(echo "$out" | grep -c '^Ca')" = 512 ] || fail "CA count"
l1=$(lid_of h1) l2=$(lid_of h512)
on h300 saquery -p --slid "$l1" --dlid "$l2" | grep -q "dlid\.*$l2\$" || fail "PathRecord h1->h512"
echo "PASS"
