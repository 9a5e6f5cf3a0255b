#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# The torture phase of tests/kernel/check.sh: `madcm torture` on VM A (only
# rdma_rxe and ib_umad: torture owns rxe0's CM class, nothing else of madcm
# runs) against the kernel's rdma_cm on VM B, where Debian's `rping -s -P`
# listens on 0x1061C06 (port 7174).
#   RXEVM_side    A (torture) or B (target)
#   RXEVM_madcm   path of the madcm tool
#   RXEVM_shim    path of torture_shim.so (built by check.sh from
#                 tests/kernel/torture_shim.c: the path without an SA and the
#                 GRH that RoCE needs, see there)
#   RXEVM_flood   REQs of req-flood (default 16)
# Sync: B listens on 7200+N while rping runs (N: rping's exits so far), A
# connects to 7102 when done.  A runs torture once per case (--case), so
# that a case which ends rping (it exits on a REJ) leaves the next ones a
# listener.  Results: /out/results ("torture - ROLE ok|FAIL secs"),
# /out/torture/{order,CASE.json,CASE.err,rping-exits} (A), /out/rping.log (B).
. "$(dirname "$0")/lib.sh"
T0=$(now)
RES=/out/results
: > "$RES"
# gid_index ADDR: the index of rxe0's RoCE v2 GID ::ffff:ADDR.
gid_index() {
    local d=/sys/class/infiniband/rxe0/ports/1 i v t a b c e want
    IFS=. read -r a b c e <<< "$1"
    printf -v want '0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x' "$a" "$b" "$c" "$e"
    for i in $(seq 0 15); do
        read -r v < "$d/gids/$i" 2> /dev/null || continue
        read -r t < "$d/gid_attrs/types/$i" 2> /dev/null
        [ "$v" = "$want" ] && [ "$t" = "RoCE v2" ] && { echo "$i"; return 0; }
    done
    return 1
}
if [ "$RXEVM_side" = A ]; then
    rxe_up rdma_rxe ib_umad
else
    rxe_up rdma_rxe ib_umad ib_uverbs rdma_ucm
fi
T1=$(now)
log "step rdma up: $(elapsed "$T0" "$T1") s; loaded: $(rdma_modules)"
gid_table
wait_peer "$PEER" || exit 1
rc=0
if [ "$RXEVM_side" = B ]; then
    # rping exits on any REJECTED event (a REJ from torture): restart it, and
    # tell A how often it did by the port B listens on, 7200 + exits, open
    # only while rping runs (re-armed every second).
    s0=$(now)
    (
        n=0
        while [ ! -e /tmp/stop ]; do
            rping -s -P -a "$IP" -v >> /tmp/rping.log 2>&1 &
            rp=$!
            sleep 1
            while kill -0 $rp 2> /dev/null && [ ! -e /tmp/stop ]; do
                timeout 1 $NC -l -p $((7200 + n)) < /dev/null > /dev/null 2>&1
            done
            if [ -e /tmp/stop ]; then kill $rp 2> /dev/null; wait $rp; break; fi
            wait $rp; r=$?
            n=$((n + 1))
            log "rping -s -P exited ($r), restart $n"
        done
        echo $n > /tmp/rping.exits
    ) &
    sup=$!
    $NC -l -p 7102 < /dev/null > /dev/null 2>&1   # A is done
    touch /tmp/stop
    wait $sup
    n=$(cat /tmp/rping.exits)
    s1=$(now)
    echo "torture - target(rping,$n-exits) ok $(elapsed "$s0" "$s1")" >> "$RES"
    log "RESULT torture - target(rping, exited $n times) ok"
    cp /tmp/rping.log /out/
else
    idx=$(gid_index "$IP") || { log "no RoCE v2 GID for $IP"; exit 1; }
    peer_gid=::ffff:$PEER
    export MADCM_TT_SGID=::ffff:$IP MADCM_TT_SGID_INDEX=$idx MADCM_TT_DGID=$peer_gid \
        MADCM_TT_SRC_IP=$IP
    O=/out/torture
    mkdir -p $O
    "$RXEVM_madcm" torture --list | grep -v '^ ' > $O/order
    # probe: wait until rping listens; k = its exits so far (see B).
    k=0
    probe() {
        local i
        for i in $(seq 1 300); do
            $NC "$PEER" $((7200 + k)) < /dev/null > /dev/null 2>&1 && return 0
            if $NC "$PEER" $((7201 + k)) < /dev/null > /dev/null 2>&1; then
                k=$((k + 1)); return 1
            fi
            sleep 0.2
        done
        log "rping on $PEER gone"; return 0
    }
    probe
    s0=$(now)
    bad=0
    # One run per case: a case that ends rping does not spoil the next.
    while read -r c; do
        LD_PRELOAD=$RXEVM_shim timeout 120 "$RXEVM_madcm" torture --json --case "$c" \
            --dst-ip "$PEER" --flood "${RXEVM_flood:-16}" "$peer_gid" > $O/$c.json 2> $O/$c.err
        r=$?
        [ $r = 0 ] || [ $r = 1 ] || bad=$((bad + 1))
        sleep 1.2   # past B's one-second listen window
        probe || { echo "$c" >> $O/rping-exits; log "rping exited in case $c"; }
        log "case $c: exit $r"
    done < $O/order
    s1=$(now)
    $NC "$PEER" 7102 < /dev/null > /dev/null 2>&1
    st=ok; [ $bad = 0 ] || st=FAIL
    echo "torture - torture($bad-unrun) $st $(elapsed "$s0" "$s1")" >> "$RES"
    log "RESULT torture - torture $st $(elapsed "$s0" "$s1")s"
    [ $st = ok ] || rc=1
fi
log "torture done in $(elapsed "$T0" "$(now)") s (rc $rc)"
echo $rc > /out/matrix.rc
exit $rc
