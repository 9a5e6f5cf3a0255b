#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# The interop matrix, run in both VMs of tests/kernel/check.sh (same rows, same
# order, so the two scripts meet at every step).
#   RXEVM_side   A or B (A listens on the qemu socket; which VM is which)
#   RXEVM_cm     kernel: the kernel's rdma_cm with Debian's librdmacm
#                madcm:  madcm (`madcm run`), ib_cm/iw_cm/rdma_cm/rdma_ucm never loaded
#   RXEVM_peercm the other VM's
#   RXEVM_madcm  path of the madcm tool (build tree, seen through 9p)
#   RXEVM_rows   rows, comma separated, e.g. "rping,ucmatose,rdma_server" (each in both directions);
#                ROW-qp: ROW with MADCM_MAD_SEND=qp on the madcm side (CM MADs sent
#                from madcm's own UD QP, mad/umad_qp.h)
#   RXEVM_pings  rping count (default 1000)
#   RXEVM_loss   percent of packets dropped on eth0 (tc netem), default none
#   RXEVM_lossrun  set on both VMs of a loss pair (the DONE handshake, less data)
# Each step: the server side starts its program, then `nc -l` on 7100+step;
# the client side waits for that port, runs its program; both record their
# exit status.  Results: /out/results ("ROW CLIENTCM->SERVERCM ROLE ok|FAIL secs");
# on the madcm side each step's MAD capture, /out/ROW.CLIENTSERVER.pcap.
. "$(dirname "$0")/lib.sh"
T0=$(now)
SIDE=$RXEVM_side CM=$RXEVM_cm PEERCM=${RXEVM_peercm:-kernel}
OTHER=B; [ "$SIDE" = B ] && OTHER=A
RES=/out/results
: > "$RES"
rc=0
result() { # ROW DIR ROLE STATUS SECS
    echo "$1 $2 $3 $4 $5" >> "$RES"
    log "RESULT $1 $2 $3 $4 ${5}s"
    [ "$4" = ok ] || rc=1
}
if [ "$CM" = madcm ]; then
    rxe_up rdma_rxe ib_umad ib_uverbs
    # Every exchange captured on the madcm side (MADCM_TRACE, one pcap per
    # step; trace FILE below sets it); the host runs tshark over them.
    RUN=(env "MADCM_TRACE=/tmp/trace.pcap" "$RXEVM_madcm" run)
    # The bench phase measures speed: no capture (the kernel side has none).
    [ -n "${RXEVM_notrace:-}" ] && RUN=(env "$RXEVM_madcm" run)
else
    rxe_up rdma_rxe ib_umad ib_uverbs rdma_ucm
    RUN=()
fi
T1=$(now)
log "step rdma up: $(elapsed "$T0" "$T1") s; loaded: $(rdma_modules)"
gid_table
if [ "$CM" = madcm ]; then
    # madcm's promise: no kernel CM at all on this side.
    bad=
    for m in ib_cm iw_cm rdma_cm rdma_ucm; do
        [ -d /sys/module/$m ] && bad+="$m "
    done
    [ -e /dev/infiniband/rdma_cm ] && bad+="/dev/infiniband/rdma_cm "
    if [ -n "$bad" ]; then result nokernelcm - "$SIDE" FAIL 0; log "present: $bad"
    else result nokernelcm - "$SIDE" ok 0; fi
fi
if [ "$CM" = kernel ] && [ -n "$RXEVM_madcm" ]; then
    # Beside the kernel's ib_cm madcm must fail at once, saying why.
    s0=$(now)
    timeout 30 "$RXEVM_madcm" run rping -s -a "$IP" -C 1 > /tmp/ibcm.log 2>&1; r=$?
    s1=$(now)
    st=FAIL
    [ $r != 0 ] && [ $r != 124 ] && grep -q "ib_cm" /tmp/ibcm.log && st=ok
    result ibcm-loaded - "madcm(exit $r)" $st "$(elapsed "$s0" "$s1")"
    log "madcm beside ib_cm: $(head -n 2 /tmp/ibcm.log)"
fi
if [ -n "$RXEVM_loss" ]; then
    modprobe sch_netem && tc qdisc add dev eth0 root netem loss "$RXEVM_loss%" &&
        log "netem: ${RXEVM_loss}% loss on eth0" || { log "netem setup failed"; rc=1; }
fi
wait_peer "$PEER" || exit 1
T2=$(now)
log "step peer reachable: $(elapsed "$T1" "$T2") s"

# cmd ROW ROLE: the argv of ROW's program in ROLE (server|client) in CMD.
cmd() {
    case "$1.$2" in
    rping.server) CMD=(rping -s -a "$IP" -C "$PINGS" -v -V) ;;
    rping.client) CMD=(rping -c -a "$PEER" -C "$PINGS" -v -V) ;;
    ucmatose.server) CMD=(ucmatose -b "$IP" -c "$UC_CONNS") ;;
    ucmatose.client) CMD=(ucmatose -s "$PEER" -b "$IP" -c "$UC_CONNS") ;;
    rdma_server.server) CMD=(rdma_server -s "$IP") ;;
    rdma_server.client) CMD=(rdma_client -s "$PEER") ;;
    rping6.server) CMD=(rping -s -a "$IP6" -C 100 -v -V) ;;
    rping6.client) CMD=(rping -c -a "$PEER6" -C 100 -v -V) ;;
    # datagram ids (RDMA_PS_UDP, SIDR): 4 ids, 10 messages each way
    udaddy.server) CMD=(udaddy -b "$IP" -c 4) ;;
    udaddy.client) CMD=(udaddy -s "$PEER" -b "$IP" -c 4) ;;
    # multicast: the "server" receives (joins first), the "client" sends
    mckey.server) CMD=(mckey -m "$MCAST" -b "$IP") ;;
    mckey.client) CMD=(mckey -m "$MCAST" -b "$IP" -s) ;;
    # rsockets (stream): rdma-core's wire format on both sides.  Under
    # loss a lost last packet costs rxe a whole retransmit timeout: less
    # data (what the loss phase proves is that they connect).
    rstream.server) CMD=(rstream -b "$IP" -S "$RS_SIZE" -C "$RS_COUNT") ;;
    rstream.client) CMD=(rstream -s "$PEER" -S "$RS_SIZE" -C "$RS_COUNT") ;;
    riostream.server) CMD=(riostream -b "$IP" -S "$RS_SIZE" -C "$RS_COUNT") ;;
    riostream.client) CMD=(riostream -s "$PEER" -S "$RS_SIZE" -C "$RS_COUNT") ;;
    # datagram rsockets: they find each other over a UDP side channel, then
    # talk over UD.  The server never exits: stopped once its client is done.
    udpong.server) CMD=(udpong -b "$IP") ;;
    udpong.client) CMD=(udpong -s "$PEER" -C "$UP_COUNT" -S 1000) ;;
    # connection rate (the bench phase): N connections in flight
    cmtime.server) CMD=(cmtime -b "$IP" -c "${RXEVM_conns:-300}") ;;
    cmtime.client) CMD=(cmtime -s "$PEER" -b "$IP" -c "${RXEVM_conns:-300}") ;;
    *) CMD=(false) ;;
    esac
}
# check ROW ROLE LOG: beyond the exit status, what the output must show.
check() {
    case "$1.$2" in
    rping.client) [ "$(grep -c '^ping data: rdma-ping-' "$3")" = "$PINGS" ] ;;
    rping6.client) [ "$(grep -c 'ping data: rdma-ping-' "$3")" = 100 ] ;;
    udaddy.*) grep -q '^data transfers complete' "$3" ;;
    cmtime.client) grep -q '^connect' "$3" ;;
    udpong.client) grep -q '^custom ' "$3" ;;
    # mckey exits 0 after RDMA_CM_EVENT_MULTICAST_ERROR: look at what it did.
    mckey.*) grep -q 'joined dgid' "$3" && grep -q '^data transfers complete' "$3" &&
        ! grep -q 'MULTICAST_ERROR' "$3" ;;
    *) true ;;
    esac
}
TMO=${RXEVM_timeout:-300}
if [ -n "${RXEVM_lossrun:-}" ]; then RS_SIZE=4096 RS_COUNT=20 UC_CONNS=10 UP_COUNT=20; else RS_SIZE=65536 RS_COUNT=200 UC_CONNS=50 UP_COUNT=200; fi
MCAST=${RXEVM_mcast:-230.168.1.5}
# Datagram rows hang on a lost message: a shorter bound.
row_tmo() { case $1 in udaddy | mckey | udpong) echo "${RXEVM_dgram_timeout:-60}" ;; cmtime) echo 30 ;; *) echo "$TMO" ;; esac; }
# cmtime's server never exits by itself: its bound is its normal end.
# Under loss a server may wait for good for a DREQ that was lost: the
# kernel's client does not resend it once its program destroyed the id
# (the capture then ends at the RTU); the client, done and checked, says
# so (DONE below) and the server is stopped 30 s later (143).
server_ok() {
    [ "$1" = 0 ] || { [ "$2" = cmtime ] && [ "$1" = 124 ]; } ||
        { [ "$2" = udpong ] && [ "$1" = 143 ]; } ||
        { [ -n "${RXEVM_lossrun:-}" ] && [ "$1" = 143 ]; }
}
PINGS=${RXEVM_pings:-1000}
step=0
for rowname in ${RXEVM_rows//,/ }; do
    row=${rowname%-qp} QPENV=()
    [ "$row" != "$rowname" ] && [ "$CM" = madcm ] && QPENV=(MADCM_MAD_SEND=qp)
    for client in A B; do
        step=$((step + 1))
        port=$((7100 + step))
        server=B; [ $client = B ] && server=A
        if [ "$SIDE" = "$client" ]; then dir="$CM->$PEERCM"; else dir="$PEERCM->$CM"; fi
        L=/tmp/$rowname.$client$server.log
        [ "$CM" = madcm ] && [ -z "${RXEVM_notrace:-}" ] && RUN[1]=MADCM_TRACE=/tmp/$rowname.$client$server.pcap
        RUNX=("${RUN[@]}")
        [ ${#QPENV[@]} -gt 0 ] && RUNX=(env "${QPENV[@]}" "${RUN[@]:1}")
        diag_wrap "/tmp/$rowname.$client$server.$SIDE" # MADCM_KVM_STRACE (lib.sh)
        if [ "$SIDE" = "$server" ]; then
            cmd "$row" server
            s0=$(now)
            timeout "$(row_tmo "$row")" "${RUNX[@]}" "${ST[@]}" "${CMD[@]}" > "$L" 2> "$L.err" &
            pid=$!
            sleep "${RXEVM_settle:-1.5}"   # let it listen
            if [ "$row" = udpong ]; then
                # its UDP port (7174, 0x1C06) bound: a datagram sent sooner is refused
                for _ in $(seq 1 100); do
                    grep -q ':1C06 ' /proc/net/udp && break
                    sleep 0.3
                done
            fi
            $NC -l -p $port < /dev/null > /dev/null 2>&1   # the client is ready
            watch=
            if [ "$row" = udpong ]; then
                # DONE: the client ended well; the server, which never exits, stops.
                ( $NC -l -p $((port + 500)) < /dev/null > /dev/null 2>&1 &&
                    sleep 1 && kill $pid 2> /dev/null ) &
                watch=$!
            elif [ -n "${RXEVM_lossrun:-}" ]; then
                # DONE: the client ended well; a server still waiting gets 30 s.
                ( $NC -l -p $((port + 500)) < /dev/null > /dev/null 2>&1 &&
                    sleep 30 && kill $pid 2> /dev/null ) &
                watch=$!
            fi
            wait $pid; r=$?
            [ -n "$watch" ] && kill $watch 2> /dev/null
            s1=$(now)
            st=ok; server_ok $r "$row" && check "$row" server "$L" || st=FAIL
            result "$rowname" "$dir" "server($CM)" $st "$(elapsed "$s0" "$s1")"
            [ $st = ok ] || tail -n 5 "$L.err" "$L"
        else
            until $NC "$PEER" $port < /dev/null > /dev/null 2>&1; do sleep 0.2; done
            cmd "$row" client
            s0=$(now)
            timeout "$(row_tmo "$row")" "${RUNX[@]}" "${ST[@]}" "${CMD[@]}" > "$L" 2> "$L.err"; r=$?
            s1=$(now)
            st=ok; [ $r = 0 ] && check "$row" client "$L" || st=FAIL
            result "$rowname" "$dir" "client($CM)" $st "$(elapsed "$s0" "$s1")"
            if { [ -n "${RXEVM_lossrun:-}" ] || [ "$row" = udpong ]; } && [ $st = ok ]; then
                for _ in 1 2 3 4 5; do   # DONE (see server_ok)
                    $NC "$PEER" $((port + 500)) < /dev/null > /dev/null 2>&1 && break
                    sleep 1
                done
            fi
            [ $st = ok ] || tail -n 5 "$L.err" "$L"
        fi
        cp "$L" "$L.err" /out/ 2> /dev/null
        [ -f "/tmp/$rowname.$client$server.pcap" ] && cp "/tmp/$rowname.$client$server.pcap" /out/
        cp "/tmp/$rowname.$client$server.$SIDE".{strace,tt,stack,perf} /out/ 2> /dev/null
    done
done
log "matrix done in $(elapsed "$T2" "$(now)") s (rc $rc)"
echo $rc > /out/matrix.rc
exit $rc
