#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# The pyverbs phase (tests/kernel/check.sh pyverbs), in one VM: rdma-core's
# own librdmacm tests (python3-pyverbs, /usr/share/doc/rdma-core/tests,
# test_rdmacm) on rxe0, first on madcm (madcmd on rxe0, ib_cm, iw_cm,
# rdma_cm and rdma_ucm never loaded), then on the kernel's rdma_cm
# (rdma_ucm loaded, Debian's librdmacm).  Each case forks a passive and
# an active process that meet on this VM's own address, so one VM is
# enough; on madcm both are madcmd's programs.
#   RXEVM_madcm    the madcm tool (build tree, through 9p)
#   RXEVM_madcmd   the madcmd daemon (build tree)
#   RXEVM_cases    test names (e.g. test_rdmacm_async_traffic), comma
#                  separated; default all of test_rdmacm
#   RXEVM_pvturns  which turns, comma separated (default madcm,kernel)
# Results: /out/pyverbs.CM.results ("NAME PASS|FAIL|ERROR|SKIP SECS [why]"),
# /out/pyverbs.CM.log (unittest -v), /out/madcmd.log.
. "$(dirname "$0")/lib.sh"
T0=$(now)
rxe_up rdma_rxe ib_umad ib_uverbs
log "step rdma up: $(elapsed "$T0" "$(now)") s; loaded: $(rdma_modules)"
gid_table
PY=/usr/bin/python3 # Debian's, with pyverbs (not a pyenv's on the host's PATH)
# kernel_cm: the kernel CM modules loaded, and rdma_cm's device.
kernel_cm() {
    local m out=
    for m in ib_cm iw_cm rdma_cm rdma_ucm; do [ -d /sys/module/$m ] && out+="$m "; done
    [ -e /dev/infiniband/rdma_cm ] && out+="/dev/infiniband/rdma_cm "
    echo "$out"
}
# The tests, unpacked as shipped (some gzipped), test_rdmacm the only test
# module: tests/__init__.py imports every test_*.py it finds.
W=$(mktemp -d /tmp/pyverbs.XXXXXX)
mkdir "$W/tests"
for f in /usr/share/doc/rdma-core/tests/*; do
    b=${f##*/}
    case $b in test_*) [ "$b" = test_rdmacm.py ] || [ "$b" = test_rdmacm.py.gz ] || continue ;; esac
    case $b in *.gz) gunzip -c "$f" > "$W/tests/${b%.gz}" ;; *) cp "$f" "$W/tests/" ;; esac
done
cp "$(dirname "$0")/pyverbs_run.py" "$W/tests/"
NAMES=()
for c in ${RXEVM_cases//,/ }; do NAMES+=("tests.test_rdmacm.CMTestCase.$c"); done
rc=0
# turn CM: run the cases, under `madcm run` for madcm.
turn() {
    local cm=$1 s r pre=()
    [ "$cm" = madcm ] && pre=("$RXEVM_madcm" run)
    s=$(now)
    (cd "$W/tests" && timeout "${RXEVM_pvtimeout:-1200}" "${pre[@]}" "$PY" pyverbs_run.py \
        "/out/pyverbs.$cm.results" -v "${NAMES[@]}") > "/out/pyverbs.$cm.log" 2>&1
    r=$?
    log "step pyverbs $cm: $(elapsed "$s" "$(now)") s, exit $r"
    # The run ended early (a crash, the bound): the cases not reported.
    [ $r = 0 ] || [ $r = 1 ] || echo "run exit $r" >> "/out/pyverbs.$cm.results"
}
TURNS=${RXEVM_pvturns:-madcm,kernel}
for t in ${TURNS//,/ }; do
    case $t in
    madcm)
        bad=$(kernel_cm)
        if [ -n "$bad" ]; then
            log "madcm turn: kernel CM present: $bad"
            echo "nokernelcm FAIL 0 $bad" > /out/pyverbs.madcm.results
            rc=1; continue
        fi
        mkdir -p /run/madcm
        "$RXEVM_madcmd" -f -l stderr -v > /out/madcmd.log 2>&1 &
        d=$!
        for _ in $(seq 1 100); do [ -S /run/madcm/madcmd.sock ] && break; sleep 0.1; done
        [ -S /run/madcm/madcmd.sock ] || log "madcmd: no socket"
        turn madcm
        kill -TERM $d; wait $d
        log "madcmd exit $?"
        # Nothing of the madcm turn loaded the kernel's CM.
        bad=$(kernel_cm)
        [ -z "$bad" ] || { log "after the madcm turn: $bad"; echo "nokernelcm FAIL 0 $bad" >> /out/pyverbs.madcm.results; rc=1; }
        ;;
    kernel)
        modprobe rdma_ucm || log "modprobe rdma_ucm failed"
        turn kernel
        ;;
    esac
done
echo $rc > /out/pyverbs.rc
log "pyverbs done in $(elapsed "$T0" "$(now)") s"
exit $rc
