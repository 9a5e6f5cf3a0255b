#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# The bench phase of tests/kernel/check.sh, run by both VMs of one pair:
# cmtime kernel-to-kernel and madcm-to-madcm on the same two VMs, in turns,
# the kernel's CM modules loaded for a kernel turn and unloaded for a madcm
# turn (so a madcm turn runs with no ib_cm, iw_cm, rdma_cm or rdma_ucm, as
# on the hosts madcm is for).  The turns go k m m k k m ... (ABBA): the
# host's speed drifts over minutes, and each kernel turn has a madcm turn
# beside it, before or after, to be compared with.
#   RXEVM_side    A (cmtime's client) or B (its server)
#   RXEVM_rounds  rounds of two turns (default 5: k m m k k m m k k m)
#   RXEVM_conns   connections in flight (cmtime -c, default 300)
#   RXEVM_umadtx  MADCM_UMAD_TX for the madcm turns (sync: no umad writer
#                 thread, as before it existed; thread; release)
#   RXEVM_madsend MADCM_MAD_SEND for the madcm turns (umad: every MAD a
#                 umad write, no UD QP of madcm's own)
#   RXEVM_floor   1: a third turn a round, the handshake floor: bench/
#                 umad_handshake's REQ, REP and RTU through umad with the QP
#                 moves and nothing else (the server's QPs with their own
#                 CQs, as rdma_create_qp makes them for cmtime; no CM
#                 modules, as a madcm turn), the fastest a CM through umad
#                 can make the connect step;
#                 rounds then go k m f, f m k, ...; qp: the same with its
#                 MADs sent from a UD QP of its own (umad_handshake -Q)
#   RXEVM_mixed   1: two more turns a round, each CM against the other:
#                 kcli (the kernel's client on A, madcm's server on B) and
#                 mcli (madcm's client, the kernel's server): which side
#                 keeps madcm's rate below the kernel's
#   RXEVM_capture 1: dumpcap eth0's RoCE packets during every client run
#                 (/out/bench.N.CM.SIDE.pcap; costs CPU: times then move)
#   RXEVM_strace  a diagnostic wrapped around both programs (diag_wrap in
#                 lib.sh: 1, tt, perf, record or a system call's name),
#                 output at /out/bench.N.CM.SIDE.*
# Results: /out/bench.N.CM.log (A: cmtime's client output), and one line per
# turn in /out/results ("turn N CM SIDE busy% ..."), busy% being this VM's
# CPU time not idle over the client's run.
. "$(dirname "$0")/lib.sh"
SIDE=$RXEVM_side
N=${RXEVM_conns:-300}
ROUNDS=${RXEVM_rounds:-5}
RES=/out/results
: > "$RES"
rc=0
rxe_up rdma_rxe ib_umad ib_uverbs
log "step rdma up: $(rdma_modules)"
wait_peer "$PEER" || exit 1

# cpu_ticks: "busy total" jiffies of all CPUs from /proc/stat (no fork).
cpu_ticks() {
    local cpu u n s i w q sq st rest
    read -r cpu u n s i w q sq st rest < /proc/stat
    echo "$((u + n + s + q + sq + st)) $((u + n + s + i + w + q + sq + st))"
}
# cap_start / cap_stop: dumpcap over one turn's client run (RXEVM_capture).
cap_start() { [ ${#CAP[@]} -gt 0 ] && { "${CAP[@]}" 2> /dev/null & cap=$!; sleep 1; }; }
cap_stop() {
    [ ${#CAP[@]} -gt 0 ] || return 0
    kill "$cap"
    bounded_wait "$cap" dumpcap
    cp "/tmp/bench.$t.$cm.$SIDE.pcap" /out/
}
# bounded_wait PID WHAT: wait for PID for 10 s, then say so and kill it.
bounded_wait() {
    local i
    for i in $(seq 100); do kill -0 "$1" 2> /dev/null || break; sleep 0.1; done
    if kill -0 "$1" 2> /dev/null; then
        log "turn $t: $2 (pid $1) still there 10 s after TERM: $(tr '\0' ' ' < "/proc/$1/cmdline") state $(awk '/^State/ { print $2 }' "/proc/$1/status") wchan $(cat "/proc/$1/wchan" 2> /dev/null)"
        for k in "/proc/$1"/task/*/stack; do log "  $k: $(tr '\n' ' ' < "$k" 2> /dev/null)"; done
        kill -9 "$1" 2> /dev/null
    fi
    wait "$1" 2> /dev/null
}
# sync_peer PORT: both sides meet (B listens, A connects).
sync_peer() {
    if [ "$SIDE" = B ]; then $NC -l -p "$1" < /dev/null > /dev/null 2>&1
    else until $NC "$PEER" "$1" < /dev/null > /dev/null 2>&1; do sleep 0.1; done; fi
}

# The host's files reach the guest over 9p (cache=loose): a library's pages
# are read from the host the first time a program touches them, and the
# first turn to run a CM's user-space code would pay for it inside its
# timed steps.  Read both CMs' libraries once before any turn.
B_LIBS=${RXEVM_madcm%/tools/madcm}
cat "$B_LIBS"/lib/.libs/librdmacm.so.1* \
    /usr/lib/x86_64-linux-gnu/librdmacm.so.1* /usr/lib/x86_64-linux-gnu/libibverbs.so.1* \
    /usr/lib/x86_64-linux-gnu/libibumad.so.3* /usr/lib/x86_64-linux-gnu/libibverbs/librxe* \
    "$(command -v cmtime)" > /dev/null 2>&1

# A round's turns, in this order in odd rounds and the reverse in even ones.
round=(kernel madcm)
[ -n "${RXEVM_floor:-}" ] && round+=(floor)
[ -n "${RXEVM_mixed:-}" ] && round+=(kcli mcli)
turns=()
for r in $(seq 1 "$ROUNDS"); do
    if [ $((r % 2)) = 1 ]; then
        turns+=("${round[@]}")
    else
        for ((i = ${#round[@]} - 1; i >= 0; i--)); do turns+=("${round[i]}"); done
    fi
done
FLOOR=$B_LIBS/bench/umad_handshake
t=0
for cm in "${turns[@]}"; do
    t=$((t + 1))
    port=$((7300 + 2 * t))
    RUN=()
    PROG=(cmtime)
    # The CM this side runs: a mixed turn has the kernel's on one side, madcm on the other.
    my=$cm
    case $cm in
    kcli) if [ "$SIDE" = A ]; then my=kernel; else my=madcm; fi ;;
    mcli) if [ "$SIDE" = A ]; then my=madcm; else my=kernel; fi ;;
    esac
    if [ "$my" = kernel ]; then
        modprobe rdma_ucm || { log "modprobe rdma_ucm failed"; rc=1; }
    else
        # The kernel's CM must be gone before madcm (or the floor) opens the port's CM class.
        modprobe -r rdma_ucm rdma_cm iw_cm ib_cm 2> /dev/null
        for m in ib_cm iw_cm rdma_cm rdma_ucm; do
            [ -d /sys/module/$m ] && { log "turn $t: $m still loaded"; rc=1; }
        done
    fi
    if [ "$my" = madcm ]; then
        RUN=(env ${RXEVM_umadtx:+MADCM_UMAD_TX=$RXEVM_umadtx}
            ${RXEVM_madsend:+MADCM_MAD_SEND=$RXEVM_madsend} "$RXEVM_madcm" run)
    elif [ "$cm" = floor ]; then
        PROG=("$FLOOR" "$([ "$SIDE" = B ] && echo server || echo client)" -d rxe0)
        [ "$RXEVM_floor" = qp ] && PROG+=(-Q)
    fi
    L=/out/bench.$t.$cm.log
    diag_wrap "/out/bench.$t.$cm.$SIDE" # MADCM_KVM_STRACE (lib.sh)
    CAP=()
    [ -n "${RXEVM_capture:-}" ] &&
        CAP=(dumpcap -q -i eth0 -f 'udp port 4791' -w "/tmp/bench.$t.$cm.$SIDE.pcap")
    if [ "$SIDE" = B ]; then
        "${RUN[@]}" "${ST[@]}" "${PROG[@]}" -b "$IP" -c "$N" > /tmp/server.log 2>&1 &
        pid=$!
        sleep "${RXEVM_settle:-1}" # let it listen
        cap_start
        c0=$(cpu_ticks)
        sync_peer "$port"       # the server is listening
        sync_peer $((port + 1)) # the client is done
        c1=$(cpu_ticks)
        # cmtime's server never exits by itself (under strace, $pid is strace's).
        pkill -x cmtime 2> /dev/null
        pkill -x umad_handshake 2> /dev/null
        bounded_wait "$pid" "cmtime server"
        cap_stop
    else
        cap_start
        sync_peer "$port"
        c0=$(cpu_ticks)
        s0=$(now)
        timeout 60 "${RUN[@]}" "${ST[@]}" "${PROG[@]}" -s "$PEER" -b "$IP" -c "$N" > "$L" 2>&1 || {
            log "turn $t: cmtime client ($cm) failed"
            rc=1
        }
        s1=$(now)
        c1=$(cpu_ticks)
        sync_peer $((port + 1))
        cap_stop
        grep -q '^connect' "$L" || rc=1
    fi
    read -r b0 a0 <<< "$c0"
    read -r b1 a1 <<< "$c1"
    busy=$(((b1 - b0) * 100 / (a1 - a0 > 0 ? a1 - a0 : 1)))
    echo "turn $t $cm $SIDE busy ${busy}%" >> "$RES"
    log "turn $t $cm: busy ${busy}%${s1:+, client $(elapsed "$s0" "$s1") s}"
done
[ "$SIDE" = B ] && cp /tmp/server.log /out/ 2> /dev/null
echo $rc > /out/matrix.rc
exit $rc
