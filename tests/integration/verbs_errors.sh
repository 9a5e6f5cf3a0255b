#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# Failures as hardware has them: missing RTR attributes (EINVAL), wrong
# destination QPN, wrong PSN, peer QP in RESET, RNR, remote write without
# access rights, bad lkey, flush on ERR, posts to a queue of 0 WRs, a
# signal in ibv_get_cq_event (EINTR unless SA_RESTART)
# (verbs_check loopback); and a link taken down in the middle of a
# transfer: IBV_WC_RETRY_EXC_ERR, and IBV_EVENT_PORT_ERR on the async fd.
. "$(dirname "$0")/verbs_lib.sh"
fab_up --gen b2b
on h1 "$VERBS_CHECK" loopback || fail "loopback checks"

stream_start
fabsim link h1 1 down
wait "$cpid"
crc=$?
cat "$vt_dir/cli.out"
[ $crc -eq 0 ] || fail "link down did not end in RETRY_EXC_ERR"
grep -q "transport retry counter exceeded" "$vt_dir/cli.out" || fail "wrong status"
grep -q "async event port error" "$vt_dir/cli.out" || fail "no IBV_EVENT_PORT_ERR"
echo PASS
