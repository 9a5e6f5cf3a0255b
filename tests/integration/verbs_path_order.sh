#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# One QP's packets arrive in order while the fabric generation changes
# underneath (issue 45): a `fabsim fault` rule that matches no data packet
# is added and cleared over and over during RC traffic (SENDs, RDMA WRITEs
# and READs, 8 in flight, both ways), so each destination's packets switch
# between cut-through and fabsimd hundreds of times.  A real fabric never
# reorders one QP's packets: no PSN sequence-error NAK may be sent or
# received (FABSIM_VERBS_STATS=1 counts them per QP), and every operation
# completes (a reordering costs a go-back-N resend, counted against
# retry_cnt: RETRY_EXC_ERR after a few, as CI saw in madcmd.sh).
. "$(dirname "$0")/verbs_lib.sh"
fab_up --gen b2b
N=${VERBS_PATH_ORDER_N:-6000}
info=$vt_dir/order.info
bg_on h2 env FABSIM_VERBS_STATS=1 "$VERBS_CHECK" server "$info" "$N" >"$vt_dir/srv" 2>&1
spid=$!
bg_on h1 env FABSIM_VERBS_STATS=1 "$VERBS_CHECK" stream "$info" "$N" >"$vt_dir/cli" 2>&1
cpid=$!
# Path switches until the client is done (a rule on a class no data
# packet has: nothing is dropped, but routes go through fabsimd).
(
	while kill -0 "$cpid" 2>/dev/null; do
		fabsim fault add class 0x99 drop >/dev/null 2>&1
		fabsim fault clear >/dev/null 2>&1
	done
) &
tpid=$!
vt_pids="$vt_pids $tpid"
wait "$cpid"
crc=$?
wait "$tpid"
wait "$spid"
srv_rc=$?
cat "$vt_dir/cli" "$vt_dir/srv"
[ "$crc" -eq 0 ] && grep -q "^stream: .* all successful" "$vt_dir/cli" ||
	fail "RC traffic across path switches: an operation failed"
[ "$srv_rc" -eq 0 ] && grep -q "^server: $N received" "$vt_dir/srv" ||
	fail "the server did not get its $N messages"
for f in cli srv; do
	line=$(grep "^fabsim verbs [0-9]* qps:" "$vt_dir/$f")
	[ -n "$line" ] || fail "no per-QP statistics from the $f (FABSIM_VERBS_STATS)"
	echo "$line" | grep -q "nak tx seq 0 .*nak rx seq 0 " ||
		fail "$f: PSN sequence NAKs (packets of one QP out of order): $line"
done
# The test is only worth something if paths did switch.
g=$(sed -n 's/^fabsim verbs [0-9]*: .* granted \([0-9]*\) .*/\1/p' "$vt_dir/cli")
[ "${g:-0}" -ge 10 ] || fail "too few path changes to test anything (grants: ${g:-none})"
echo PASS
