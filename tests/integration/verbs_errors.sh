#!/bin/sh
# Failures as hardware has them: missing RTR attributes (EINVAL), wrong
# destination QPN, wrong PSN, peer QP in RESET, RNR, remote write without
# access rights, bad lkey, flush on ERR (verbs_check loopback); and a link
# taken down in the middle of a transfer: IBV_WC_RETRY_EXC_ERR, and
# IBV_EVENT_PORT_ERR on the async fd.
. "$(dirname "$0")/verbs_lib.sh"
fab_up --gen b2b
on h1 "$VERBS_CHECK" loopback || fail "loopback checks"

info=$vt_dir/pair.info
bg_on h2 "$VERBS_CHECK" server "$info" >"$vt_dir/srv.out" 2>&1
bg_on h1 "$VERBS_CHECK" client "$info" >"$vt_dir/cli.out" 2>&1
cpid=$!
i=0
until grep -q streaming "$vt_dir/cli.out" 2>/dev/null; do
	i=$((i + 1))
	[ $i -lt 300 ] || { cat "$vt_dir/cli.out" "$vt_dir/srv.out"; fail "no traffic"; }
	sleep 0.1
done
fabsim link h1 1 down
wait "$cpid"
crc=$?
cat "$vt_dir/cli.out"
[ $crc -eq 0 ] || fail "link down did not end in RETRY_EXC_ERR"
grep -q "transport retry counter exceeded" "$vt_dir/cli.out" || fail "wrong status"
grep -q "async event port error" "$vt_dir/cli.out" || fail "no IBV_EVENT_PORT_ERR"
echo PASS
