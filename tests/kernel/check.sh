#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# make check-kernel: madcm against the kernel's own rdma_cm on Soft-RoCE, in
# two qemu VMs (TCG) booting Debian's kernel, linked by a qemu socket netdev
# on 127.0.0.1.  See tests/kernel/README.md.
#
#   tests/kernel/check.sh [PHASE...]     phases: kk km pyverbs loss torture bench
#                                        (default: kk km pyverbs)
#     kk    both VMs kernel rdma_cm: rping (checks the test bed itself;
#           MADCM_KVM_KK_ROWS: other rows)
#     km    VM A madcm, VM B kernel: every row, both directions
#     loss  as km with 20% packet loss on VM B's eth0 (tc netem)
#     bench cmtime -c 300 in turns on one pair (guest/bench.sh): kernel to
#           kernel, then madcm to madcm with the CM modules unloaded, k m m k
#           k m; the madcm/kernel connection rate per round and its median
#           (MADCM_KVM_ROUNDS, MADCM_KVM_CONNS, MADCM_KVM_CAPTURE=1,
#           MADCM_KVM_UMAD_TX=sync|thread|release: MADCM_UMAD_TX of the madcm turns;
#           MADCM_KVM_MAD_SEND=umad: MADCM_MAD_SEND of the madcm turns;
#           MADCM_KVM_FLOOR=1: a third turn a round, bench/umad_handshake, the
#           handshake floor of any CM through umad, and its rate/kernel's
#           (=qp: the floor sends from a UD QP of its own, umad_handshake -Q);
#           MADCM_KVM_MIXED=1: two more turns a round, the kernel's client
#           against madcm's server and madcm's client against the kernel's
#           server, and their rates/kernel's)
#     pyverbs  one VM: rdma-core's test_rdmacm (python3-pyverbs) on madcm
#           (madcmd, no kernel CM module loaded), then on the kernel's
#           rdma_cm; the cases side by side; fails when madcm does not pass
#           a case the kernel passes (MADCM_KVM_PYVERBS_CASES: names,
#           MADCM_KVM_PYVERBS_TURNS: "madcm kernel"; skipped without pyverbs)
#     torture  VM A `madcm torture` (through torture_shim.so: no SA on RoCE)
#           against VM B's kernel rdma_cm (`rping -s -P`); prints what the
#           kernel answered per case; fails only when torture cannot run
# Environment: MADCM_KVM_DIR (default /tmp/madcm-kernel: kernel, initramfs,
# logs), MADCM_KVM_KREL (kernel release; default: the newest fetched),
# MADCM_KVM_ROWS (default "rping ucmatose rdma_server udaddy mckey rstream
# riostream ucmatose-qp"; udpong is opt-in; ROW-qp: ROW with MADCM_MAD_SEND=qp), MADCM_KVM_PINGS
# (rping -C count, default 1000; ~95 s per 1000 under TCG), MADCM_KVM_LOSS_PINGS
# (the same in the loss phase, default 50), MADCM_KVM_LOSS_ROWS (default
# the connected rows: rping ucmatose rdma_server rstream riostream),
# MADCM_KVM_TIMEOUT (seconds per VM, default 900; MADCM_KVM_LOSS_TIMEOUT,
# default 1800, in the loss phase), MADCM_KVM_FLOOD (REQs of torture's
# req-flood, default 16), top_builddir (the build tree with tools/madcm).
# Exit 0 when every row passed, 77 (skipped) when the host lacks a tool.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
D=${MADCM_KVM_DIR:-/tmp/madcm-kernel}
export MADCM_KVM_DIR=$D
B=$(cd "${top_builddir:-.}" && pwd)
MADCM=$B/tools/madcm
ROWS=${MADCM_KVM_ROWS:-rping ucmatose rdma_server udaddy mckey rstream riostream ucmatose-qp}
TMO=${MADCM_KVM_TIMEOUT:-900}
# Killed or interrupted, take our VMs down too: each runs under a
# timeout(1) of ours, which sits in a process group of its own (the signal
# to ours does not reach it) and passes a TERM on to its qemu.
trap 'pkill -TERM -P $$ -x timeout 2> /dev/null; exit 143' TERM
trap 'pkill -TERM -P $$ -x timeout 2> /dev/null; exit 130' INT
PINGS=${MADCM_KVM_PINGS:-1000}
PHASES=${*:-kk km pyverbs}
XVARS=()
mkdir -p "$D/run"
t_start=$EPOCHREALTIME
secs() { printf '%.2f' "$(echo "$2 - $1" | bc)"; }

miss=
for c in qemu-system-x86_64 dpkg-deb apt-get cpio depmod rping ucmatose rdma_server bc; do
    command -v $c > /dev/null || miss+="$c "
done
file -L /bin/busybox 2> /dev/null | grep -q 'statically linked' || miss+="busybox-static "
if [ -n "$miss" ]; then
    echo "check-kernel: SKIP, missing: $miss(apt-get install qemu-system-x86 busybox-static kmod cpio rdmacm-utils bc)"
    # in CI (CI=true) a missing package fails the run (tests/skip.sh)
    [ "${CI:-}" = true ] && { echo "check-kernel: FAIL: CI=true, and a package could provide these" >&2; exit 1; }
    exit 77
fi
[ -x "$MADCM" ] || { echo "check-kernel: no $MADCM (run make first)"; exit 1; }

t0=$EPOCHREALTIME
KREL=${MADCM_KVM_KREL:-$("$HERE/fetch-kernel.sh" | tail -1)} || exit 1
echo "check-kernel: kernel $KREL (fetch/unpack $(secs "$t0" "$EPOCHREALTIME") s)"
export RXEVM_KREL=$KREL

# stamp: prefix every line with the host's wall clock.
stamp() { while IFS= read -r l; do printf '%s %s\n' "$EPOCHREALTIME" "$l"; done; }
# ready LOG START: seconds from START to the guest's "ready" line.
ready() {
    local t
    t=$(grep -a -m1 'rxevm: ready' "$1" | cut -d' ' -f1)
    [ -n "$t" ] && secs "$2" "$t" || echo "?"
}

# pair NAME CM_A CM_B ROWS [LOSS]: VM A (10.77.0.1, fd77::1) listens on the
# socket, VM B (10.77.0.2, fd77::2) connects; both run guest/matrix.sh.
pair() {
    local name=$1 cma=$2 cmb=$3 rows=$4 loss=${5:-} port=$((47100 + $$ % 800)) R a b s
    R=$D/run/$name
    rm -rf "$R"; mkdir -p "$R/A" "$R/B"
    s=$EPOCHREALTIME
    timeout "$TMO" "$HERE/vm.sh" --name "${name}A" ${PIN:+--pin 0} ${MADCM_KVM_SMP:+--smp $MADCM_KVM_SMP} --ip 10.77.0.1/24 --ip6 fd77::1/64 \
        --listen $port --out "$R/A" --script "$HERE/guest/${SCRIPT:-matrix.sh}" \
        --var shim="$D/torture_shim.so" --var flood="${MADCM_KVM_FLOOD:-16}" \
        --var side=A --var cm="$cma" --var peercm="$cmb" --var peer=10.77.0.2 \
        --var peer6=fd77::2 --var madcm="$MADCM" --var "rows=${rows// /,}" \
        --var pings="$PINGS" --var conns="${RXEVM_conns:-300}" ${loss:+--var lossrun=$loss} "${XVARS[@]}" \
        ${NOTRACE:+--var notrace=1} ${MADCM_KVM_STRACE:+--var strace=$MADCM_KVM_STRACE} < /dev/null 2>&1 | stamp > "$R/A.log" &
    a=$!
    # B connects: A's qemu must be listening first.
    for _ in $(seq 1 50); do grep -q . "$R/A.log" 2> /dev/null && break; sleep 0.1; done
    sleep 0.3
    timeout "$TMO" "$HERE/vm.sh" --name "${name}B" ${PIN:+--pin 1} ${MADCM_KVM_SMP:+--smp $MADCM_KVM_SMP} --ip 10.77.0.2/24 --ip6 fd77::2/64 \
        --connect $port --out "$R/B" --script "$HERE/guest/${SCRIPT:-matrix.sh}" \
        --var side=B --var cm="$cmb" --var peercm="$cma" --var peer=10.77.0.1 \
        --var peer6=fd77::1 --var madcm="$MADCM" --var "rows=${rows// /,}" \
        --var pings="$PINGS" --var conns="${RXEVM_conns:-300}" ${loss:+--var loss=$loss --var lossrun=$loss} "${XVARS[@]}" \
        ${NOTRACE:+--var notrace=1} ${MADCM_KVM_STRACE:+--var strace=$MADCM_KVM_STRACE} < /dev/null 2>&1 | stamp > "$R/B.log" &
    b=$!
    wait $b; wait $a
    echo "== $name: A=$cma B=$cmb${loss:+ (B: ${loss}% loss)}; pair took $(secs "$s" "$EPOCHREALTIME") s," \
        "boot to ready: A $(ready "$R/A.log" "$s") s, B $(ready "$R/B.log" "$s") s"
    grep -a -h '\] step ' "$R/A.log" "$R/B.log" | cut -d' ' -f2- | sed 's/^/   /'
    cat "$R/A/results" "$R/B/results" 2> /dev/null | sort -s -k1,1 | sed 's/^/   /'
    captures "$R" || return 1
    [ "$(cat "$R/A/matrix.rc" 2> /dev/null)" = 0 ] && [ "$(cat "$R/B/matrix.rc" 2> /dev/null)" = 0 ] || {
        echo "   FAILED (logs: $R/A.log $R/B.log)"
        return 1
    }
}

# captures DIR: tshark over the madcm side's MADCM_TRACE captures of a pair
# (one per step): each must hold MADs, none malformed or flagged by tshark's
# expert info (the bench's floor turns aside).  Skipped without tshark.
captures() {
    local f n bad rc=0 line=
    command -v tshark > /dev/null || { echo "   captures: tshark not installed, not checked"; return 0; }
    for f in "$1"/A/*.pcap "$1"/B/*.pcap; do
        [ -f "$f" ] || continue
        # The bench's floor turns send bare MADs with CM headers, not CM messages.
        case $f in *.floor.*.pcap) continue ;; esac
        # udpong's rsockets find each other over UDP: on RoCE no MAD at all.
        case $(basename "$f") in udpong.*.pcap) [ "$(tshark -n -r "$f" 2> /dev/null | wc -l)" = 0 ] && continue ;; esac
        n=$(tshark -n -r "$f" 2> /dev/null | wc -l)
        bad=$(tshark -n -r "$f" -Y '_ws.malformed || _ws.expert' 2> /dev/null | wc -l)
        line+=" $(basename "$f" .pcap) $n"
        if [ "$n" = 0 ] || [ "$bad" != 0 ]; then
            echo "   capture $f: $n MADs, $bad malformed or flagged by tshark"
            tshark -n -r "$f" -Y '_ws.malformed || _ws.expert' 2> /dev/null | head -n 5 | sed 's/^/     /'
            rc=1
        fi
    done
    [ -n "$line" ] && echo "   captures (MADs, tshark:$([ $rc = 0 ] && echo ' nothing malformed' || echo ' FAILED')):$line"
    return $rc
}

# torture_table DIR: one line per case (A's /out/torture), what the target
# answered; "rping exited" marks a case after which B had to restart rping.
torture_table() {
    command -v python3 > /dev/null || { cat "$1"/*.json; return; }
    python3 -c '
import json, os, sys
d = sys.argv[1]
order = open(os.path.join(d, "order")).read().split()
ex = os.path.join(d, "rping-exits")
exits = open(ex).read().split() if os.path.exists(ex) else []
count = {}
for n in order:
    try:
        j = json.load(open(os.path.join(d, n + ".json")))
        c = j["cases"][0]
        res, got = c["result"], c["got"]
    except Exception:
        res, got = "not-run", open(os.path.join(d, n + ".err")).read().strip()[:200]
    count[res] = count.get(res, 0) + 1
    print("   %-20s %-12s %s%s" % (n, res, got, "  [rping exited]" if n in exits else ""))
print("   " + ", ".join("%d %s" % (v, k) for k, v in count.items()))
' "$1"
}
torture() {
    cc -O2 -shared -fPIC -o "$D/torture_shim.so" "$HERE/torture_shim.c" -ldl || {
        echo "== torture: cannot build torture_shim.so (cc, libibumad-dev)"
        return 1
    }
    SCRIPT=torture.sh pair torture madcm kernel torture
    local r=$?
    [ -s "$D/run/torture/A/torture/order" ] && torture_table "$D/run/torture/A/torture"
    return $r
}

# median_of "V1 V2 ...": the median of the values.
median_of() {
    echo "$1" | tr ' ' '\n' | grep . | sort -n |
        awk '{ v[NR] = $1 } END { print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) }'
}
# bench_line LOG: cmtime's connect step of a client log as "total_ms us/conn".
bench_line() { awk -F'[: ]+' '/^connect +:/ { print $2, $5 }' "$1" 2> /dev/null | head -1; }
# bench: cmtime kernel-to-kernel and madcm-to-madcm in turns on one VM pair
# (guest/bench.sh: the CM modules loaded for a kernel turn, unloaded for a
# madcm turn; turns k m m k k m ...), then per round the ratio of the two
# turns' connection rates, and their median.
bench() {
    local n=${MADCM_KVM_CONNS:-300} rounds=${MADCM_KVM_ROUNDS:-5} R=$D/run/bench t f cm k m
    local ratios= fratios= kratios= mratios= sk=0 sm=0 sf=0 nr=0 nf=0 per=2 fl kc mc
    [ -n "${MADCM_KVM_FLOOR:-}" ] && per=$((per + 1))
    [ -n "${MADCM_KVM_MIXED:-}" ] && per=$((per + 2))
    # Speed: no MADCM_TRACE capture on the madcm side (NOTRACE).
    XVARS=(--var rounds="$rounds" ${MADCM_KVM_CAPTURE:+--var capture=1}
        ${MADCM_KVM_UMAD_TX:+--var umadtx=$MADCM_KVM_UMAD_TX}
        ${MADCM_KVM_MAD_SEND:+--var madsend=$MADCM_KVM_MAD_SEND}
        ${MADCM_KVM_FLOOR:+--var floor=$MADCM_KVM_FLOOR} ${MADCM_KVM_MIXED:+--var mixed=1})
    # Each VM on a host CPU of its own when there are two (MADCM_KVM_PIN=0:
    # not), so that the two vCPU threads never share one.  Not with
    # MADCM_KVM_SMP above 1: a VM's vCPUs would all share its one CPU.
    local pin=${MADCM_KVM_PIN:-1}
    [ "$(nproc)" -ge 2 ] && [ "${MADCM_KVM_SMP:-1}" -le 1 ] || pin=0
    [ "$pin" = 0 ] && pin=
    PIN=$pin NOTRACE=1 SCRIPT=bench.sh pair bench madcm madcm cmtime
    local r=$?
    XVARS=()
    echo "== bench: cmtime -c $n, client A, turn by turn (steps: total ms)"
    for f in $(ls "$R"/A/bench.*.log 2> /dev/null | sort -t. -k2,2n); do
        t=${f#"$R"/A/bench.}; cm=${t#*.}; cm=${cm%.log}; t=${t%%.*}
        printf '   turn %s %-6s ' "$t" "$cm"
        grep -a -h -E '^(create id|resolve addr|resolve route|create qp|connect|disconnect|destroy) *:' "$f" |
            awk -F' *: *' '{ split($2, v, " +"); printf "%s%s %s", (NR > 1 ? "; " : ""), $1, v[1] } END { printf "" }'
        printf '; busy A %s B %s\n' "$(awk -v t="$t" '$2 == t { print $6 }' "$R/A/results")" \
            "$(awk -v t="$t" '$2 == t { print $6 }' "$R/B/results")"
    done
    # Round i holds turns per*(i-1)+1 .. per*i, one of each CM (and the floor).
    for t in $(seq 1 "$per" $((per * rounds))); do
        k= m= fl= kc= mc=
        for j in $(seq 0 $((per - 1))); do
            for f in "$R"/A/bench.$((t + j)).*.log; do
                case $f in
                *.kernel.log) k=$(bench_line "$f" | cut -d' ' -f1) ;;
                *.madcm.log) m=$(bench_line "$f" | cut -d' ' -f1) ;;
                *.floor.log) fl=$(bench_line "$f" | cut -d' ' -f1) ;;
                *.kcli.log) kc=$(bench_line "$f" | cut -d' ' -f1) ;;
                *.mcli.log) mc=$(bench_line "$f" | cut -d' ' -f1) ;;
                esac
            done
        done
        [ -n "$k" ] && [ -n "$m" ] || continue
        ratios+="$(echo "scale=2; $k / $m" | bc) "
        sk=$(echo "$sk + $k" | bc); sm=$(echo "$sm + $m" | bc); nr=$((nr + 1))
        [ -n "$kc" ] && kratios+="$(echo "scale=2; $k / $kc" | bc) "
        [ -n "$mc" ] && mratios+="$(echo "scale=2; $k / $mc" | bc) "
        [ -n "$fl" ] || continue
        fratios+="$(echo "scale=2; $k / $fl" | bc) "
        sf=$(echo "$sf + $fl" | bc); nf=$((nf + 1))
    done
    if [ -n "$ratios" ]; then
        echo "   connections/s over the $nr rounds: kernel $(echo "$n * 1000 * $nr / $sk" | bc)," \
            "madcm $(echo "$n * 1000 * $nr / $sm" | bc)"
        echo "   madcm/kernel connection rate, round by round: $ratios(median" \
            "$(median_of "$ratios"))"
        # The handshake floor: REQ, REP, RTU through umad and the QP moves, no CM.
        [ -n "$fratios" ] && echo "   handshake floor (umad_handshake)/kernel connection rate, round by" \
            "round: $fratios(median $(median_of "$fratios")); floor $(echo "$n * 1000 * $nf / $sf" | bc) conn/s"
        # Mixed turns: madcm on one side only, the kernel's CM on the other.
        [ -n "$kratios" ] && echo "   kernel client, madcm server (kcli)/kernel connection rate, round by" \
            "round: $kratios(median $(median_of "$kratios"))"
        [ -n "$mratios" ] && echo "   madcm client, kernel server (mcli)/kernel connection rate, round by" \
            "round: $mratios(median $(median_of "$mratios"))"
    else
        echo "   no round has both turns (logs: $R)"
        r=1
    fi
    # MADCM_KVM_STRACE=1 or perf: system calls per program, counted (times
    # are then strace's, not the bench's).
    for f in "$R"/[AB]/*.strace; do
        [ -f "$f" ] || continue
        printf '   strace %s: ' "${f#"$D"/run/}"
        if grep -q 'Performance counter stats' "$f"; then
            awk '$1 ~ /^[0-9.,]+$/ { printf "%s %s ", $2, $1 }' "$f"
        else
            awk '$NF == "total" { print "total", $4; next } $1 ~ /^[0-9.]+$/ { print $NF, $4 }' "$f" |
                sort -k2,2nr | head -n 9 | tr '\n' ' '
        fi
        echo
    done
    return $r
}

# pyverbs: rdma-core's own test_rdmacm (python3-pyverbs) in one VM, on
# madcm (madcmd on rxe0, no kernel CM module ever loaded) and then on the
# kernel's rdma_cm (guest/pyverbs.sh); the cases side by side
# (pyverbs_table.py), also in run/pyverbs/table.  Fails when a case that
# passes on the kernel does not pass on madcm.
pyverbs() {
    local R=$D/run/pyverbs s r turns=${MADCM_KVM_PYVERBS_TURNS:-madcm kernel}
    if ! [ -d /usr/share/doc/rdma-core/tests ] || ! /usr/bin/python3 -c 'import pyverbs' 2> /dev/null; then
        echo "== pyverbs: SKIP, no python3-pyverbs (apt-get install python3-pyverbs)"
        return 0
    fi
    rm -rf "$R"; mkdir -p "$R"
    s=$EPOCHREALTIME
    timeout "$TMO" "$HERE/vm.sh" --name pyverbs --ip 10.77.0.1/24 --ip6 fd77::1/64 \
        --out "$R" --script "$HERE/guest/pyverbs.sh" --var madcm="$MADCM" --var madcmd="$B/madcmd/madcmd" \
        --var "pvturns=${turns// /,}" ${MADCM_KVM_PYVERBS_CASES:+--var "cases=${MADCM_KVM_PYVERBS_CASES// /,}"} \
        < /dev/null 2>&1 | stamp > "$R/vm.log"
    echo "== pyverbs: rdma-core's test_rdmacm on rxe0 in one VM, turns: $turns;" \
        "took $(secs "$s" "$EPOCHREALTIME") s"
    grep -a -h '\] step ' "$R/vm.log" | cut -d' ' -f2- | sed 's/^/   /'
    /usr/bin/python3 "$HERE/pyverbs_table.py" "$R" "$turns" > "$R/table"
    r=$?
    cat "$R/table"
    [ "$r" = 0 ] || echo "   (logs: $R/vm.log, $R/pyverbs.{madcm,kernel}.log, $R/madcmd.log)"
    return "$r"
}

rc=0
for ph in $PHASES; do
    case $ph in
    kk) pair kk kernel kernel "${MADCM_KVM_KK_ROWS:-rping}" || rc=1 ;;
    km) pair km madcm kernel "$ROWS" || rc=1 ;;
    torture) torture || rc=1 ;;
    pyverbs) pyverbs || rc=1 ;;
    bench) RXEVM_conns=${MADCM_KVM_CONNS:-300} bench || rc=1 ;;
    # Datagram rows are left out under loss: a SIDR_REP lost is not sent
    # again by the kernel (its duplicate REQ finds udaddy done), nor is a
    # lost datagram, so they cannot finish by design.
    loss) PINGS=${MADCM_KVM_LOSS_PINGS:-50} TMO=${MADCM_KVM_LOSS_TIMEOUT:-1800} \
        pair loss madcm kernel "${MADCM_KVM_LOSS_ROWS:-rping ucmatose rdma_server rstream riostream}" 20 || rc=1 ;;
    *) echo "unknown phase $ph"; rc=1 ;;
    esac
done
echo "check-kernel: $([ $rc = 0 ] && echo PASS || echo FAIL) in $(secs "$t_start" "$EPOCHREALTIME") s"
exit $rc
