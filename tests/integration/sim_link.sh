#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# A link taken down: the switch traps (128) to OpenSM, which resweeps and
# the path vanishes from SA; bringing it up brings the path back.  The
# sweep interval is 30 s, so seeing it within 10 s proves the trap path.
. "$(dirname "$0")/sim_common.sh"
FABSIM_SWEEP=30 fs up --gen star:4 >/dev/null || fail "fabsim up"
# h1 runs the SM: take h3's link (sw-1 port 3) and ask from h2
l2=$(lid_of h2) l3=$(lid_of h3)
path() { on h2 saquery -p --slid "$l2" --dlid "$l3" 2>/dev/null | grep -q "dlid\.*$l3\$"; }
path || fail "no path h2->h3 at start"
fs link sw-1 3 down >/dev/null || fail "link down"
on h3 ibstat | grep -q "State: Down" || fail "h3 port not Down"
i=0
while path; do
	i=$((i + 1)); [ $i -lt 50 ] || fail "path h2->h3 still in SA 10s after link down"
	sleep 0.2
done
grep -q "num:128" "$FABSIM_DIR/opensm.log" || fail "OpenSM saw no trap 128"
fs link sw-1 3 up >/dev/null || fail "link up"
i=0
until path; do
	i=$((i + 1)); [ $i -lt 50 ] || fail "path h2->h3 not back 10s after link up"
	sleep 0.2
done
on h3 ibstat | grep -q "State: Active" || fail "h3 not Active again"
echo "PASS"
