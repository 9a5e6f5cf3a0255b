#!/bin/sh
# The CM engine on the simulated fabric (fabsimd + OpenSM, two hosts back
# to back), over the real MAD transport, with the soft verbs when present:
#   1. 1000 RC connections: REQ/REP/RTU, QPs to RTS with the engine's
#      attributes, one message each, disconnect, every one through TimeWait;
#   2. the same with 20% of all CM MADs dropped by the fabric;
#   3. the passive process vanishes mid-handshake: the active side reports
#      timeouts (exit 3) instead of hanging;
#   4. (printed) connect latency one at a time vs the umad round trip;
#   5. a capture of a few handshakes decodes in tshark, no malformed packet,
#      and the REQ carries the QPN/LIDs the engine was given.
# Skips (77) when the simulator or OpenSM is not built/installed.
set -u

top_builddir=${top_builddir:-.}
FABSIM=$top_builddir/sim/fabsim
PROG=$top_builddir/tests/integration/cm_connect_many
N=${CM_CONNECT_N:-1000}

skip() { echo "SKIP: $*"; exit 77; }
[ -x "$FABSIM" ] && [ -x "$top_builddir/sim/fabsimd" ] || skip "sim/fabsim not built"
[ -f "$top_builddir/sim/.libs/libfabsim.so" ] || skip "sim/libfabsim.so not built"
[ -x "$PROG" ] || skip "$PROG not built"
command -v opensm >/dev/null 2>&1 || [ -x /usr/sbin/opensm ] || skip "opensm not installed"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/cm_connect_many.XXXXXX")
export FABSIM_DIR="$tmp/fab"
pids=""
cleanup() {
	for p in $pids; do kill "$p" 2>/dev/null; done
	"$FABSIM" down >/dev/null 2>&1
	rm -rf "$tmp"
}
trap cleanup EXIT INT TERM
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
ok() { echo "ok: $*"; }

"$FABSIM" up --gen b2b >"$tmp/up.log" 2>&1 || { cat "$tmp/up.log"; skip "fabric did not come up"; }
hosts=$("$top_builddir/sim/fabsimd" --dir "$FABSIM_DIR" --ctl hosts)
h1=$(echo "$hosts" | awk 'NR == 1 { print $1 }')
h2=$(echo "$hosts" | awk 'NR == 2 { print $1 }')
lid2=$(echo "$hosts" | awk 'NR == 2 { for (i = 1; i < NF; i++) if ($i == "lid") print $(i + 1) }')
gid2=$(echo "$hosts" | awk 'NR == 2 { for (i = 1; i < NF; i++) if ($i == "gid") print $(i + 1) }')
[ -n "$h2" ] && [ -n "$lid2" ] && [ -n "$gid2" ] || skip "cannot read hosts: $hosts"

# run_pair NAME N [passive args]: passive on h2 in the background, active on h1.
run_pair() {
	name=$1 n=$2
	shift 2
	"$FABSIM" run "$h2" -- "$PROG" --passive --count "$n" --seconds 150 "$@" \
		>"$tmp/$name.passive" 2>&1 &
	ppid=$!
	pids="$pids $ppid"
	sleep 0.5
	timeout 200 "$FABSIM" run "$h1" -- "$PROG" --active --count "$n" --dlid "$lid2" \
		--dgid "$gid2" --seconds 150 >"$tmp/$name.active" 2>&1
	arc=$?
	wait "$ppid"
	prc=$?
	sed "s/^/  $name active: /" "$tmp/$name.active"
	sed "s/^/  $name passive: /" "$tmp/$name.passive"
}

run_pair clean "$N"
[ $arc -eq 0 ] && ok "$N connections, data, disconnect, TimeWait (active)" || fail "clean active rc=$arc"
[ $prc -eq 0 ] && ok "$N connections through TimeWait (passive)" || fail "clean passive rc=$prc"

"$FABSIM" fault add class 7 drop prob 0.2 >/dev/null
run_pair lossy "$N"
[ $arc -eq 0 ] && ok "20% CM MAD drop: all $N connect and leave" || fail "lossy active rc=$arc"
[ $prc -eq 0 ] && ok "20% CM MAD drop: passive all through TimeWait" || fail "lossy passive rc=$prc"
grep -q "retried [1-9]" "$tmp/lossy.active" && ok "losses were retried" || fail "no retries seen"
"$FABSIM" fault clear >/dev/null

run_pair killed 300 --exit-after-reqs 100
[ $arc -eq 3 ] && ok "passive gone mid-handshake: active reports timeouts" || fail "killed active rc=$arc"
grep -q "timeouts [1-9]" "$tmp/killed.active" || fail "no timeouts reported"

# Speed, printed only: connect latency one at a time next to the bare umad
# round trip measured in the same run (Get(ClassPortInfo) echo).
"$FABSIM" run "$h2" -- "$PROG" --passive --no-verbs --count 300 --seconds 60 \
	>"$tmp/lat.passive" 2>&1 &
ppid=$!
pids="$pids $ppid"
sleep 0.5
timeout 100 "$FABSIM" run "$h1" -- "$PROG" --active --latency 300 --count 300 --dlid "$lid2" \
	--dgid "$gid2" --seconds 60 >"$tmp/lat.active" 2>&1 && ok "latency run" || fail "latency run"
wait "$ppid"
grep "^latency" "$tmp/lat.active"

if command -v tshark >/dev/null 2>&1; then
	"$FABSIM" capture "$h1" "$tmp/cm.pcap" >/dev/null
	run_pair capture 5
	"$FABSIM" capture "$h1" off >/dev/null
	if [ -s "$tmp/cm.pcap" ]; then
		tshark -r "$tmp/cm.pcap" -V >"$tmp/cm.txt" 2>&1
		if grep -qi "malformed" "$tmp/cm.txt"; then fail "tshark: malformed packets"
		else ok "capture decodes in tshark without malformed packets"; fi
		# The first REQ as tshark reads it, against what the engine was given.
		want=$(sed -n 's/^active: first REQ //p' "$tmp/capture.active")
		got=$(tshark -r "$tmp/cm.pcap" -Y infiniband.cm.req -T fields \
			-e infiniband.cm.req.localqpn -e infiniband.cm.req.startpsn \
			-e infiniband.cm.req.serviceid -e infiniband.cm.req.prim_locallid \
			-e infiniband.cm.req.prim_remotelid -e infiniband.cm.req.pkey \
			-e infiniband.cm.req.pppmtu 2>/dev/null | head -1 |
			awk '{ printf "qpn %s psn %s service %s lids %d>%d pkey %s mtu %d\n",
				$1, $2, $3, $4, $5, $6, $7 }')
		if [ -n "$want" ] && [ "$want" = "$got" ]; then
			ok "REQ fields in tshark match the engine's input ($got)"
		else
			fail "REQ fields: engine '$want', tshark '$got'"
		fi
	else
		echo "note: no capture written"
	fi
fi

[ $failures -eq 0 ] || { echo "$failures failure(s)"; exit 1; }
exit 0
