# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# Sourced by the guest scripts (tests/kernel/guest/*.sh).  Every fork costs
# ~20 ms under TCG: use bash builtins where a loop would fork.
IP=${RXEVM_ip%/*}
IP6=${RXEVM_ip6%/*}
PEER=${RXEVM_peer:-}
PEER6=${RXEVM_peer6:-}
BB=/run/rxevm/busybox
# Debian here has no iputils-ping; the static busybox carried by stage 2 has one.
PING="$BB ping"
NC="$BB nc"
now() { local u r; read -r u r < /proc/uptime; echo "$u"; }
log() { local u r; read -r u r < /proc/uptime; echo "[$u] $*"; }
# Seconds between two `now` values, to the hundredth (no fork).
elapsed() {
    local a=${1/./} b=${2/./}
    local d=$((10#$b - 10#$a))
    printf '%d.%02d' $((d / 100)) $((d % 100))
}
# rxe_up [MODULES...]: load the modules, create rxe0 on eth0, wait for ACTIVE.
rxe_up() {
    local m i st
    for m in "$@"; do modprobe "$m" || log "modprobe $m failed"; done
    rdma link add rxe0 type rxe netdev eth0 || { log "rdma link add failed"; return 1; }
    for i in $(seq 1 100); do
        read -r st < /sys/class/infiniband/rxe0/ports/1/state 2>/dev/null
        [[ $st == *ACTIVE* ]] && break
        sleep 0.1
    done
    log "rxe0 port state: $st"
}
# Modules of the RDMA stack that are loaded (one read of /proc/modules).
rdma_modules() {
    local m r out=
    while read -r m r; do
        case "$m" in ib_* | rdma_* | iw_*) out+="$m " ;; esac
    done < /proc/modules
    echo "$out"
}
# wait_peer ADDR: until the peer answers ping (the other VM may still be booting).
wait_peer() {
    local i
    for i in $(seq 1 600); do
        $PING -c1 -W1 "$1" > /dev/null 2>&1 && { log "peer $1 reachable"; return 0; }
        sleep 0.5
    done
    log "peer $1 unreachable"
    return 1
}
# gid_table: index, type and value of the non-zero GIDs among the first 16 of
# rxe0 port 1 (the table has 1024 entries; reading them all costs seconds).
gid_table() {
    local d=/sys/class/infiniband/rxe0/ports/1 i v t
    for i in $(seq 0 15); do
        read -r v < "$d/gids/$i" 2> /dev/null || continue
        [ "$v" = 0000:0000:0000:0000:0000:0000:0000:0000 ] && continue
        read -r t < "$d/gid_attrs/types/$i" 2> /dev/null
        echo "  gid[$i] $t $v"
    done
}
# diag_wrap BASE: in ST, the command that wraps a program for the
# diagnostic RXEVM_strace asks for (MADCM_KVM_STRACE on the host), its
# output at BASE.SUFFIX; ST is empty without one.
#   1       strace -f -c: system calls counted              BASE.strace
#   tt      strace -f -tt -T: every call, timed              BASE.tt
#   perf    perf stat: context switches, system calls (no
#           ptrace, so the timing is kept)                   BASE.strace
#   record  perf record -g (perf report --kallsyms
#           BASE.kallsyms on the host: this VM's symbols
#           when the program ran; modules move when
#           reloaded, and the other VM's are elsewhere)      BASE.perf
#   recordall  the same with -a: every task of the VM        BASE.perf
#   sched   perf record -a of every context switch, wake-up and
#           write(2) of the VM (a timeline: which task runs, who
#           wakes whom, when the vCPU idles; the writes mark the
#           umad sends and the ucma commands)                 BASE.perf
#   schedsys  the same and every system call (heavier: perf
#           then fills the idle time)                         BASE.perf
#   NAME    strace -k: every call of system call NAME with
#           its user stack                                   BASE.stack
# strace slows the guest so much that its timings mean nothing.
diag_wrap() {
    ST=()
    case ${RXEVM_strace:-} in
    '') ;;
    1) ST=(strace -f -c -o "$1.strace") ;;
    tt) ST=(strace -f -tt -T -o "$1.tt") ;;
    record | recordall)
        # recordall: every CPU and every task (kworkers, softirqs) for the
        # program's run, where record samples the program's own threads.
        local all=()
        [ "$RXEVM_strace" = recordall ] && all=(-a)
        ST=(perf record "${all[@]}" -F 2000 -g -o "$1.perf")
        cat /proc/kallsyms > "$1.kallsyms" ;;
    sched | schedsys)
        mountpoint -q /sys/kernel/tracing || mount -t tracefs nodev /sys/kernel/tracing 2> /dev/null
        # sched: writes of 100-400 bytes (a umad MAD is 320, a ucma
        # command about as much) and of 32 (rxe's doorbell after a post,
        # as MADCM_MAD_SEND=qp posts its MADs), not perf's own.
        local ev=(-e sched:sched_switch -e sched:sched_wakeup)
        if [ "$RXEVM_strace" = schedsys ]; then
            ev+=(-e raw_syscalls:sys_enter -e raw_syscalls:sys_exit)
        else
            ev+=(-e syscalls:sys_enter_write --filter '(count >= 100 && count <= 400) || count == 32')
        fi
        ST=(perf record -a -m 4M "${ev[@]}" -o "$1.perf") ;;
    perf) mountpoint -q /sys/kernel/tracing || mount -t tracefs nodev /sys/kernel/tracing 2> /dev/null
        ST=(perf stat -e task-clock,context-switches,raw_syscalls:sys_enter,syscalls:sys_enter_futex,syscalls:sys_enter_poll -o "$1.strace") ;;
    *) ST=(strace -f -k -e "trace=$RXEVM_strace" -o "$1.stack") ;;
    esac
}
