#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# `madcm path` between every pair of hosts of 2sw4h agrees with
# `saquery -p` (SLID, DLID, MTU, rate, SL, P_Key, packet lifetime: the
# whole record, since both print the same block), by LID, by GID, and by
# name through an address file; --json carries the same values.
. "$(dirname "$0")/sa_lib.sh"

pairs=0
for a in $HOSTS; do
	for b in $HOSTS; do
		[ "$a" = "$b" ] && continue
		la=$(lid_of "$a") lb=$(lid_of "$b")
		on "$a" saquery -p --src-to-dst "$la:$lb" >"$FAB/sq.txt" 2>/dev/null ||
			fail "saquery -p $la:$lb on $a"
		on "$a" "$MADCM" path "$la" "$lb" >"$FAB/m.txt" || fail "madcm path $la $lb on $a"
		diff -u "$FAB/sq.txt" "$FAB/m.txt" || fail "$a -> $b by LID differs from saquery"
		on "$a" "$MADCM" path "$(gid_of "$a")" "$(gid_of "$b")" >"$FAB/mg.txt" ||
			fail "madcm path by GID $a -> $b"
		for f in dlid slid mtu rate sl pkey pkt_life; do
			x=$(grep "	$f\." "$FAB/sq.txt") y=$(grep "	$f\." "$FAB/mg.txt")
			[ "$x" = "$y" ] || fail "$a -> $b by GID: '$x' vs '$y'"
		done
		pairs=$((pairs + 1))
	done
done
[ "$pairs" -ge 12 ] || fail "only $pairs pairs"

# Names from an address file (--hosts, then MADCM_HOSTS).
for h in $HOSTS; do echo "$h $(gid_of "$h")  # comment"; done >"$FAB/hosts"
set -- $HOSTS
on "$1" "$MADCM" path --hosts "$FAB/hosts" "$1" "$3" >"$FAB/n.txt" || fail "by name"
grep -q "dlid\.*$(lid_of "$3")\$" "$FAB/n.txt" || fail "by name: wrong dlid"
MADCM_HOSTS=$FAB/hosts on "$1" "$MADCM" path "$3" >/dev/null || fail "MADCM_HOSTS"
on "$1" "$MADCM" path --hosts "$FAB/hosts" nosuchhost 2>/dev/null && fail "unknown name accepted"

# JSON: IBA field names, same values.
on "$1" "$MADCM" path --json "$(lid_of "$1")" "$(lid_of "$4")" >"$FAB/j.txt" || fail "--json"
grep -q "\"dlid\":$(lid_of "$4")," "$FAB/j.txt" || fail "json dlid: $(cat "$FAB/j.txt")"
grep -q '"packet_life_time":' "$FAB/j.txt" || fail "json packet_life_time"
echo "PASS: $pairs pairs agree with saquery -p"
