#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# With OpenSM stopped, a query fails with "timed out" after exactly the
# configured retries (the MADCM_TRACE capture holds 1 + N copies of the
# request, all with one TID); after OpenSM restarts, queries work again.
. "$(dirname "$0")/sa_lib.sh"
set -- $HOSTS
src=$(lid_of "$1") dst=$(lid_of "$3")
on "$2" "$MADCM" path "$src" "$dst" >/dev/null || fail "query before stopping the SM"
fs sm stop || fail "fabsim sm stop"
start=$(date +%s%N)
MADCM_TRACE=$FAB/t.pcap on "$2" "$MADCM" path --timeout 300 --retries 3 "$src" "$dst" \
	>/dev/null 2>"$FAB/err.txt" && fail "query succeeded without an SM"
ms=$(( ($(date +%s%N) - start) / 1000000 ))
grep -q "timed out" "$FAB/err.txt" || fail "not a timeout: $(cat "$FAB/err.txt")"
"$MADCM" trace "$FAB/t.pcap" >"$FAB/t.txt" || fail "madcm trace"
sends=$(grep -c "^frame" "$FAB/t.txt")
tids=$(grep "transaction_id" "$FAB/t.txt" | sort -u | wc -l)
[ "$sends" -eq 4 ] || fail "expected 4 sends (1 + 3 retries), saw $sends"
[ "$tids" -eq 1 ] || fail "retries must reuse the TID, saw $tids TIDs"
[ "$ms" -ge 1100 ] || fail "gave up after $ms ms, before 4 x 300 ms"
fs sm start >/dev/null || fail "fabsim sm start"
ok=0
for i in 1 2 3 4 5 6 7 8 9 10; do
	if on "$2" "$MADCM" path "$src" "$dst" >/dev/null 2>&1; then ok=1; break; fi
	sleep 1
done
[ $ok = 1 ] || fail "no path after OpenSM restarted"
echo "PASS: ETIMEDOUT after 1 + 3 tries in $ms ms; OK after restart"
