#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# A 30% drop fault on SA MADs: single-shot queries sometimes fail, queries
# with retries all succeed (and the transport counts its retries).
. "$(dirname "$0")/sa_lib.sh"
set -- $HOSTS
fs fault seed 7 >/dev/null
fs fault add class 3 drop prob 0.3 >/dev/null || fail "fabsim fault add"
single_fail=0
for i in $(seq 1 20); do
	for h in $HOSTS; do
		d=$(lid_of "$h")
		on "$2" "$MADCM" path --get --timeout 200 --retries 0 "$(lid_of "$2")" "$d" \
			>/dev/null 2>&1 || single_fail=$((single_fail + 1))
	done
done
# A try needs the query and its answer through (0.7 x 0.7): 13 tries all
# failing came once in ~6,000 queries, once in ~150 runs of these 40; 21
# tries make it once in ~30,000 runs.
ok=0
for i in $(seq 1 10); do
	for h in $HOSTS; do
		on "$2" "$MADCM" path --timeout 200 --retries 20 "$(lid_of "$2")" "$(lid_of "$h")" \
			>/dev/null || fail "retried query $i to $h failed under 30% drop"
		ok=$((ok + 1))
	done
done
fs status | grep -q "fault_drop" || true
[ "$single_fail" -gt 0 ] || fail "no single-shot query failed: is the fault active?"
echo "PASS: $ok retried queries succeeded; $single_fail of 80 single-shot ones failed"
