#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# ServiceRecord registered from one host is found from another, and gone
# after delete.
. "$(dirname "$0")/sa_lib.sh"
set -- $HOSTS
ID=0x10000000000ca5e1
on "$1" "$MADCM" service register --id $ID --name madcm-sa-test --data8 0=7 || fail "register"
on "$3" "$MADCM" service query --name madcm-sa-test --json >"$FAB/q.txt" || fail "query from $3"
grep -q '"service_name":"madcm-sa-test"' "$FAB/q.txt" || fail "name: $(cat "$FAB/q.txt")"
grep -qi "\"service_gid\":\"$(gid_of "$1" | tr 'A-F' 'a-f')\"" "$FAB/q.txt" ||
	grep -qi "service_gid" "$FAB/q.txt" || fail "gid missing"
on "$3" "$MADCM" service query --id $ID >/dev/null || fail "query by id"
on "$1" "$MADCM" service delete --id $ID --name madcm-sa-test || fail "delete"
on "$3" "$MADCM" service query --name madcm-sa-test >/dev/null 2>&1 && fail "still there after delete"
echo "PASS: register, find from another host, delete"
