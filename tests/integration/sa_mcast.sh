#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# Multicast: create from one host, join from a second, leave from both:
# OpenSM's group table (saquery -g) is as it was.
. "$(dirname "$0")/sa_lib.sh"
set -- $HOSTS
MGID=ff12:1234:1:0:0:0:1234:5678
norm() { grep -v -i "^$" | sort; }
on "$1" saquery -g 2>/dev/null | norm >"$FAB/before.txt"
on "$1" "$MADCM" mcast join "$MGID" >"$FAB/j1.txt" || fail "create/join from $1"
grep -q -i "mlid" "$FAB/j1.txt" || fail "no MLID in the answer"
on "$3" "$MADCM" mcast join "$MGID" --state full >/dev/null || fail "join from $3"
on "$2" "$MADCM" mcast join "$MGID" --state sendonly >/dev/null || fail "send-only join from $2"
# OpenSM shows an unprivileged requester one record per group (no port GIDs).
count() { on "$1" "$MADCM" mcast show "$MGID" --json 2>/dev/null | grep -c '"mgid"'; }
[ "$(count "$1")" -ge 1 ] || fail "group not found after the joins"
on "$1" saquery -g 2>/dev/null | norm >"$FAB/during.txt"
cmp -s "$FAB/before.txt" "$FAB/during.txt" && fail "saquery -g does not show the group"
on "$2" "$MADCM" mcast leave "$MGID" --state sendonly || fail "leave from $2"
on "$3" "$MADCM" mcast leave "$MGID" || fail "leave from $3"
[ "$(count "$1")" -ge 1 ] || fail "group gone while $1 is still a member"
on "$1" "$MADCM" mcast leave "$MGID" || fail "leave from $1"
[ "$(count "$1")" -eq 0 ] || fail "group still there after every member left"
on "$1" saquery -g 2>/dev/null | norm >"$FAB/after.txt"
diff -u "$FAB/before.txt" "$FAB/after.txt" || fail "group table differs after leaving"
echo "PASS: create, join, leave; saquery -g as before"
