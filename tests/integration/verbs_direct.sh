#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# Cut-through (sim/verbs_direct.c): packets go from process to process
# without fabsimd only while routing them would not change them, and the
# moment something a route depends on changes, they route through the
# daemon again, so faults, captures and link state act on every packet.
#  1. A ping-pong on a quiet fabric goes direct: fabsimd routes almost
#     none of its packets, and granted the two routes.
#  2. A capture on h1 sees every packet: all go through the daemon.
#  3. Any fault rule, even one that never matches data, sends them all
#     through the daemon, where faults are applied.
#  4. A fault rule added in the middle of a direct stream acts at once: a
#     100% drop on h1's link ends the stream with RETRY_EXC_ERR.
#  5. Bandwidth across the switch to cut-through: ib_write_bw puts 2000
#     packets in flight before the route is granted; none may overtake
#     another (they wait for the answer), or every gap is a sequence NAK
#     counted against retry_cnt and the run fails with RETRY_EXC_ERR
#     (it did in 2 runs of 15).  Eight runs in a row.
#  6. FABSIM_VERBS_DIRECT=0 turns it off.
#  7. Both ends of a cut-through ping-pong run valgrind-clean (sockets,
#     queues and waiting packets are reachable or freed).
#  8. UD request/reply, as udaddy does it: the server answers on an AH
#     made from the request's WC and exits as soon as its replies are
#     completed.  Its first packets to the client wait in the server for
#     the route answer; they are completed, hence on the wire, and must
#     not die with the process (they did in about 2 runs of 3, and
#     udaddy's client hung waiting for them).  20 runs, new processes
#     each time.
#  9. The listeners are socket files in DIR/direct: none is left once
#     their processes are gone, killed ones too (fabsimd removes them).
# 10. A fabric directory whose socket paths do not fit in sun_path (108
#     bytes) still cuts through (the names are reached through
#     /proc/self/fd/N/).
. "$(dirname "$0")/verbs_lib.sh"
fab_up --gen b2b
stat() { on h1 "$VERBS_CHECK" daemon-stats | sed -n "s/.* $1 \([0-9]*\).*/\1/p"; }

p0=$(stat pkts) g0=$(stat grants)
pair h1 h2 direct ibv_rc_pingpong -p "$(vt_port 41)" -n 1000 || fail "rc_pingpong"
p1=$(stat pkts) g1=$(stat grants)
echo "direct: daemon routed $((p1 - p0)) packets of a 1000-message ping-pong, granted $((g1 - g0))"
[ $((p1 - p0)) -lt 100 ] || fail "the ping-pong went through the daemon"
[ $((g1 - g0)) -ge 2 ] || fail "no cut-through granted"

fabsim capture h1 "$vt_dir/h1.pcap" >/dev/null || fail "capture"
pair h1 h2 captured ibv_rc_pingpong -p "$(vt_port 42)" -n 200 -s 64 || fail "rc_pingpong, captured"
fabsim capture h1 off
p2=$(stat pkts)
echo "captured: daemon routed $((p2 - p1)) packets"
[ $((p2 - p1)) -ge 400 ] || fail "packets skipped the daemon during a capture"
if command -v tshark >/dev/null 2>&1; then
	n=$(tshark -r "$vt_dir/h1.pcap" -Y 'infiniband.bth.opcode == 4' 2>/dev/null | wc -l)
	echo "captured: $n RC Send Only packets"
	[ "$n" -ge 400 ] || fail "the capture missed packets"
fi

fabsim fault add link h1:1 class 7 drop >/dev/null || fail "fault add"
pair h1 h2 faulted ibv_rc_pingpong -p "$(vt_port 43)" -n 200 || fail "rc_pingpong, fault rule"
p3=$(stat pkts)
echo "fault rule: daemon routed $((p3 - p2)) packets"
[ $((p3 - p2)) -ge 400 ] || fail "packets skipped the daemon while a fault rule exists"
fabsim fault clear >/dev/null

stream_start
i=0
until [ "$(stat grants)" -gt "$g1" ]; do
	i=$((i + 1))
	[ $i -le 300 ] || fail "the stream did not go direct"
	sleep 0.2
done
fabsim fault add link h1:1 drop >/dev/null || fail "fault add"
wait "$cpid"
crc=$?
cat "$vt_dir/cli.out"
[ $crc -eq 0 ] || fail "a drop rule added mid-stream did not end it in RETRY_EXC_ERR"
grep -q "transport retry counter exceeded" "$vt_dir/cli.out" || fail "wrong status"
fabsim fault clear >/dev/null
wait_active h1 || fail "h1 not Active again after the drop rule"

for i in 1 2 3 4 5 6 7 8; do
	pair h1 h2 "write_bw$i" ib_write_bw -p "$(vt_port $((50 + i)))" -n 200 >"$vt_dir/bw.out" 2>&1 ||
		{ cat "$vt_dir/bw.out"; fail "ib_write_bw run $i"; }
done
echo "8 ib_write_bw runs passed"

p5=$(stat pkts)
FABSIM_VERBS_DIRECT=0 pair h1 h2 off ibv_rc_pingpong -p "$(vt_port 44)" -n 200 || fail "rc_pingpong, off"
p6=$(stat pkts)
echo "FABSIM_VERBS_DIRECT=0: daemon routed $((p6 - p5)) packets"
[ $((p6 - p5)) -ge 400 ] || fail "FABSIM_VERBS_DIRECT=0 did not turn it off"
if have_tool valgrind valgrind; then
	vg="valgrind -q --error-exitcode=3 --leak-check=full --show-possibly-lost=no"
	vg="$vg --errors-for-leak-kinds=definite"
	port=$(vt_port 45)
	# shellcheck disable=SC2086
	bg_on h1 $vg ibv_rc_pingpong -p "$port" -n 300 >"$vt_dir/vg.srv" 2>&1
	spid=$!
	i=0 # valgrind takes seconds to start the server
	until ss -ltn 2>/dev/null | grep -q ":$port "; do
		i=$((i + 1))
		[ $i -lt 300 ] || fail "the server under valgrind never listened"
		sleep 0.1
	done
	# shellcheck disable=SC2086
	on h2 $vg ibv_rc_pingpong -p "$port" -n 300 127.0.0.1 >"$vt_dir/vg.cli" 2>&1
	crc=$?
	wait "$spid"
	src=$?
	tail -n 1 "$vt_dir/vg.cli"
	[ $crc -eq 0 ] && [ $src -eq 0 ] ||
		{ cat "$vt_dir/vg.srv" "$vt_dir/vg.cli"; fail "valgrind found errors on the cut-through path"; }
fi

for i in $(seq 1 20); do
	rm -f "$vt_dir/ud.info"
	bg_on h1 "$VERBS_CHECK" ud-server "$vt_dir/ud.info" 4 >"$vt_dir/ud.srv" 2>&1
	spid=$!
	on h2 "$VERBS_CHECK" ud-client "$vt_dir/ud.info" 4 >"$vt_dir/ud.cli" 2>&1
	crc=$?
	wait "$spid"
	src=$?
	[ $crc -eq 0 ] && [ $src -eq 0 ] ||
		{ cat "$vt_dir/ud.srv" "$vt_dir/ud.cli"; fail "UD replies on an AH from the WC lost (run $i)"; }
done
echo "20 UD request/reply runs passed"

bg_on h1 "$VERBS_CHECK" hold 1 60 >"$vt_dir/hold.out" 2>&1
hpid=$!
i=0
until grep -q holding "$vt_dir/hold.out"; do
	i=$((i + 1))
	[ $i -lt 300 ] || fail "verbs_check hold did not start"
	sleep 0.1
done
ls "$vt_dir/fab/direct" | grep -q "^$hpid\." || fail "no listener of $hpid in DIR/direct"
kill -9 $hpid
i=0
while ls "$vt_dir/fab/direct" | grep -q "^$hpid\."; do
	i=$((i + 1))
	[ $i -lt 300 ] || { ls -l "$vt_dir/fab/direct"; fail "the listener of a killed process stays"; }
	sleep 0.1
done
# of the processes that exited, none is left (the stream's server runs)
for f in "$vt_dir"/fab/direct/*; do
	[ -e "$f" ] || continue
	p=${f##*/}
	kill -0 "${p%%.*}" 2>/dev/null || { ls -l "$vt_dir/fab/direct"; fail "$f left by a process gone"; }
done
echo "DIR/direct: no listener of a process gone"

# 90 bytes: fabsimd.sock fits, DIR/direct/PID.TIME does not
long=$vt_dir/long
while [ ${#long} -lt 90 ]; do long=${long}x; done
if [ ${#long} -gt 90 ]; then
	echo "(TMPDIR too long for the long-directory case)"
else
	trap '"$FABSIM" --dir "$long" down >/dev/null 2>&1; vt_cleanup' EXIT
	"$FABSIM" --dir "$long" up --gen b2b >"$vt_dir/long.up" 2>&1 ||
		{ cat "$vt_dir/long.up"; fail "fabric in $long"; }
	port=$(vt_port 49)
	FABSIM_VERBS_STATS=1 "$FABSIM" --dir "$long" run h1 -- ibv_rc_pingpong -p "$port" -n 200 \
		>"$vt_dir/long.srv" 2>&1 &
	spid=$!
	vt_pids="$vt_pids $spid"
	wait_tcp_listen $spid "$port"
	FABSIM_VERBS_STATS=1 "$FABSIM" --dir "$long" run h2 -- ibv_rc_pingpong -p "$port" -n 200 \
		127.0.0.1 >"$vt_dir/long.cli" 2>&1 || { cat "$vt_dir/long.cli"; fail "ping-pong in $long"; }
	wait $spid || { cat "$vt_dir/long.srv"; fail "ping-pong server in $long"; }
	grep -q "direct tx [1-9]" "$vt_dir/long.cli" ||
		{ cat "$vt_dir/long.cli"; fail "no cut-through with a ${#long}-byte directory"; }
	echo "a ${#long}-byte fabric directory cuts through"
fi
echo PASS
