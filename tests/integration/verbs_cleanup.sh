#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# Resources are freed: a process that exits (or is killed) with live QPs
# leaves nothing in the daemon; 10,000 QPs created and destroyed run
# valgrind-clean.  QPNs are not reused soon (a CM refuses a QPN still in
# its TimeWait): 2000 QPs created and destroyed one after another get 2000
# numbers, and the QPN blocks they used went back to the daemon.
. "$(dirname "$0")/verbs_lib.sh"
fab_up --gen b2b
stats() { on h1 "$VERBS_CHECK" daemon-stats; }

stats | grep -q "conns 0 qpn_blocks 0" || { stats; fail "daemon not empty at start"; }
on h1 "$VERBS_CHECK" hold 1000 || fail "hold"
stats
stats | grep -q "conns 0 qpn_blocks 0" || fail "exit with live QPs left state behind"

bg_on h2 "$VERBS_CHECK" hold 300 30
hpid=$!
i=0
until stats | grep -q "conns 1 "; do
	i=$((i + 1))
	[ $i -lt 100 ] || fail "holder never showed up"
	sleep 0.1
done
stats
kill -9 "$hpid"
wait "$hpid" 2>/dev/null
# The daemon frees its state once it sees the connection close.
i=0
until stats | grep -q "conns 0 qpn_blocks 0"; do
	i=$((i + 1))
	[ $i -le 300 ] || { stats; fail "killed process left state behind"; }
	sleep 0.2
done
stats

on h1 "$VERBS_CHECK" qpn-unique 2000 || fail "a QPN was reused within 2000 QPs"
stats | grep -q "conns 0 qpn_blocks 0" || { stats; fail "qpn-unique left state behind"; }

# Not in a sanitizer build (tests/sanitize_run.sh): the sanitizers check it.
if [ -z "${MADCM_SANITIZED:-}" ] && have_tool valgrind valgrind; then
	on h1 valgrind -q --error-exitcode=3 --leak-check=full --show-possibly-lost=no \
		--errors-for-leak-kinds=definite "$VERBS_CHECK" churn 10000 ||
		fail "valgrind found errors"
else
	on h1 "$VERBS_CHECK" churn 10000 || fail "churn"
fi
echo PASS
