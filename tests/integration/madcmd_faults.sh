#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# Faults of madcmd itself, on the simulated fabric (h1 through a madcmd
# this test starts with its own options, h2 and h3 in-process):
#   1. a client that stops reading (SIGSTOP) while it holds an established
#      connection and a listener that peers keep sending REQs to: madcmd
#      cuts it off as too slow and releases its connections as at its
#      exit: the peer gets DISCONNECTED, the REQs' senders a REJ;
#   2. clients flooding the daemon (random bytes, and port commands at
#      full speed): other programs are served meanwhile;
#   3. the log on a full disk (stderr on /dev/full): madcmd keeps serving;
#   4. kill -9 of madcmd at several points of handshakes in progress: its
#      client ends promptly (no hang), a restarted madcmd serves new ones;
#   5. a madcmd that stops answering (SIGSTOP): rping resolving and
#      connecting through it ends with an error once MADCM_DAEMON_TIMEOUT_MS
#      passes (no hang); continued (SIGCONT), it serves a new rping;
#   6. a madcmd stopped while an rping server under it only waits for
#      events (listening): the keepalive's PING goes unanswered, the
#      server ends with an error; continued, madcmd serves a new one;
#   7. a healthy madcmd and a listener idle for several bounds: the PONGs
#      keep its session, it still accepts a connection.
. "$(dirname "$0")/sim_common.sh"
MADCMD=$top_builddir/madcmd/madcmd
MADCM=$top_builddir/tools/madcm
HOLD=$top_builddir/tests/integration/madcmd_hold
FLOOD=$top_builddir/tests/integration/madcmd_flood
[ -x "$MADCMD" ] || { echo "SKIP: madcmd not built"; exit 77; }
skip_missing rping rdmacm-utils

fs up --gen star:3 >"$FABSIM_DIR/up.log" 2>&1 || { cat "$FABSIM_DIR/up.log"; fail "fabsim up"; }
H1=198.18.0.1
H2=198.18.0.2
out=$FABSIM_DIR/out
mkdir -p "$out"
SOCK=$FABSIM_DIR/h1-madcmd.sock
run() { h=$1; shift; "$FABSIM" --dir "$FABSIM_DIR" run "$h" -- "$@"; }
# h1's programs use the test's madcmd; h2's and h3's run the CM in-process
# (no daemon there).
on1() { MADCM_DAEMON=$SOCK "$FABSIM" --dir "$FABSIM_DIR" run h1 -- "$@"; }
on_other() { h=$1; shift; MADCM_DAEMON=/nonexistent "$FABSIM" --dir "$FABSIM_DIR" run "$h" -- "$@"; }
# background variants: $! is the command itself (fabsim run execs it)
on1_bg() { MADCM_DAEMON=$SOCK "$FABSIM" --dir "$FABSIM_DIR" run h1 -- "$@" & }
on_other_bg() { h=$1; shift; MADCM_DAEMON=/nonexistent "$FABSIM" --dir "$FABSIM_DIR" run "$h" -- "$@" & }
# start_madcmd LOG ARGS...: h1's madcmd, its log to LOG; $mpid its pid.
start_madcmd() {
	log=$1
	shift
	rm -f "$SOCK"
	"$FABSIM" --dir "$FABSIM_DIR" run h1 -- "$MADCMD" -f -s "$SOCK" "$@" </dev/null >/dev/null 2>"$log" &
	mpid=$!
	bg_pids="$bg_pids $mpid"
	wait_for "[ -S '$SOCK' ] && '$FABSIM' --dir '$FABSIM_DIR' run h1 -- env MADCM_DAEMON='$SOCK' '$top_builddir/tools/madcm' stat --daemon" 30 ||
		{ cat "$log" >&2; fail "madcmd did not come up"; }
}
# gone PID SECONDS: PID has ended within SECONDS.
gone() { wait_for "! kill -0 $1" "$2"; }
# pair PORT NAME: a server on h2 and a client on h1 (through madcmd), 20
# connections held, then the client killed: the server sees them end.
pair() {
	on_other_bg h2 "$HOLD" server "$1" 20 >"$out/$2.s" 2>&1
	ps_=$!
	bg_pids="$bg_pids $ps_"
	wait_for "grep -q listening '$out/$2.s'" 30 || { cat "$out/$2.s" >&2; fail "$2: server"; }
	on1_bg "$HOLD" client $H2 "$1" 20 >"$out/$2.c" 2>&1
	pc=$!
	bg_pids="$bg_pids $pc"
	wait_for "grep -q 'connected 20' '$out/$2.c'" 60 || { cat "$out/$2.c" "$out/$2.s" >&2; fail "$2: 20 connections through madcmd"; }
	kill -9 $pc
	gone $ps_ 60 || { cat "$out/$2.s" >&2; fail "$2: server did not see its connections end"; }
}

# 1. A client that stops reading, holding a connection and a listener.
start_madcmd "$out/madcmd1.log" -v --max-events 16 --sndbuf 1
on1_bg "$HOLD" server 7900 1 >"$out/slow.s" 2>&1
slow=$!
bg_pids="$bg_pids $slow"
wait_for "grep -q listening '$out/slow.s'" 30 || { cat "$out/slow.s" >&2; fail "slow server"; }
on_other_bg h2 "$HOLD" client $H1 7900 1 >"$out/slow.c" 2>&1
peer=$!
bg_pids="$bg_pids $peer"
wait_for "grep -q 'established 1' '$out/slow.s'" 60 || { cat "$out/slow.s" "$out/slow.c" >&2; fail "connection to the slow server"; }
kill -STOP $slow
# REQs from h3 to the stopped listener: events madcmd cannot deliver.
on_other_bg h3 "$HOLD" client $H1 7900 400 >"$out/slow.req" 2>&1
reqs=$!
bg_pids="$bg_pids $reqs"
wait_for "grep -q 'too slow' '$out/madcmd1.log'" 60 || { cat "$out/madcmd1.log" >&2; fail "madcmd did not cut off the stopped client"; }
gone $peer 60 || { cat "$out/slow.c" >&2; fail "the peer of the cut-off client saw nothing"; }
wait $peer
rc=$?
[ $rc -eq 4 ] && grep -q "^disconnected" "$out/slow.c" || { cat "$out/slow.c" >&2; fail "peer: exit $rc, no DISCONNECTED"; }
gone $reqs 60 || fail "the REQs' sender still waits"
grep -q "REJECTED\|UNREACHABLE" "$out/slow.req" || { cat "$out/slow.req" >&2; fail "the REQs' sender got no REJ"; }
kill -CONT $slow
gone $slow 60 || fail "the cut-off client does not end"
wait $slow
echo "ok: a client that stops reading is cut off; its peer gets DISCONNECTED, pending REQs a REJ"

# 2. Floods: random bytes and port commands at full speed from h1, while a
# program connects through the same madcmd.
on1_bg "$FLOOD" garbage 20 >"$out/flood.g" 2>&1
fg=$!
on1_bg "$FLOOD" commands 20 >"$out/flood.c" 2>&1
fc=$!
bg_pids="$bg_pids $fg $fc"
pair 7910 flood
kill -0 $fg && kill -0 $fc || fail "a flood ended before the pair was served"
wait $fg || { cat "$out/flood.g" >&2; fail "garbage flood"; }
wait $fc || { cat "$out/flood.c" >&2; fail "command flood"; }
grep -q "^sessions" "$out/flood.g" && grep -q "^sessions" "$out/flood.c" || fail "floods: $(cat "$out"/flood.?)"
echo "ok: floods of garbage and of commands: another program is served meanwhile ($(cat "$out/flood.g"))"
kill $mpid
gone $mpid 30 || fail "madcmd ignores SIGTERM"

# 3. The log on a full disk.
"$FABSIM" --dir "$FABSIM_DIR" run h1 -- "$MADCMD" -f -s "$SOCK" -v </dev/null >/dev/full 2>/dev/full &
mpid=$!
bg_pids="$bg_pids $mpid"
wait_for "[ -S '$SOCK' ]" 30 || fail "madcmd with its log on /dev/full did not come up"
pair 7920 fulllog
on1 "$HOLD" bind $H1 7921 >"$out/fullbind" 2>&1 || { cat "$out/fullbind" >&2; fail "bind through madcmd with a full log"; }
kill -0 $mpid || fail "madcmd with its log on /dev/full died"
kill $mpid
wait $mpid || fail "madcmd with its log on /dev/full: exit status $?"
echo "ok: log writes failing (/dev/full): madcmd serves, exits cleanly"

# 4. kill -9 of madcmd with handshakes in progress, at several points.
on_other_bg h2 "$HOLD" server 7930 1000000 >"$out/k.s" 2>&1
ks=$!
bg_pids="$bg_pids $ks"
wait_for "grep -q listening '$out/k.s'" 30 || fail "server for the kill -9 rounds"
for d in 0 0.02 0.05 0.1 0.2 0.4; do
	start_madcmd "$out/madcmd4.$d.log" -v
	on1_bg "$HOLD" client $H2 7930 30 >"$out/k.$d" 2>&1
	kc=$!
	# from the client's first session on (before it, the program would
	# find no daemon and run the CM itself)
	wait_for "grep -q 'pid $kc ' '$out/madcmd4.$d.log'" 30 || { cat "$out/madcmd4.$d.log" >&2; fail "no session of the client"; }
	sleep $d
	kill -9 $mpid
	wait $mpid 2>/dev/null
	gone $kc 60 || { cat "$out/k.$d" >&2; fail "client still runs 60 s after madcmd was killed (after ${d}s)"; }
	wait $kc
	rc=$?
	# 3: DEVICE_REMOVAL; 2: an error (connect or event) reported; 0: all
	# connected before the kill (then held: not 0 here, it is killed).
	[ $rc -eq 3 ] || [ $rc -eq 2 ] || { cat "$out/k.$d" >&2; fail "client after kill -9 at ${d}s: exit $rc"; }
done
kill -9 $ks
echo "ok: kill -9 of madcmd mid-handshake: the client ends at once, each time"
start_madcmd "$out/madcmd5.log"
pair 7940 after
echo "ok: a restarted madcmd serves new programs"

# 5. madcmd stopped (SIGSTOP) while rping on h1 resolves and connects to a
# server on h2: every wait for the daemon is bounded, so rping gets an
# error (a call failing, or ADDR_ERROR, ROUTE_ERROR, DEVICE_REMOVAL)
# rather than hanging; continued, the same madcmd serves a new rping.
on_other_bg h2 "$MADCM" run rping -s -a $H2 -p 7950 -V -C 10 >"$out/stall.s" 2>&1
ss=$!
bg_pids="$bg_pids $ss"
wait_listen $ss 7950 || { cat "$out/stall.s" >&2; fail "rping server for the stopped madcmd"; }
kill -STOP $mpid
on1_bg env MADCM_DAEMON_TIMEOUT_MS=2000 "$MADCM" run rping -c -a $H2 -p 7950 -V -v -C 10 >"$out/stall.c" 2>&1
sc=$!
bg_pids="$bg_pids $sc"
gone $sc 120 || { kill -CONT $mpid; cat "$out/stall.c" >&2; fail "rping still waits for the stopped madcmd"; }
wait $sc
rc=$?
[ $rc -ne 0 ] || { kill -CONT $mpid; cat "$out/stall.c" >&2; fail "rping through a stopped madcmd exited 0"; }
grep -qi "does not answer\|timed out\|error\|removal" "$out/stall.c" ||
	{ kill -CONT $mpid; cat "$out/stall.c" >&2; fail "rping through a stopped madcmd: no error reported"; }
kill -CONT $mpid
on1 "$MADCM" run rping -c -a $H2 -p 7950 -V -v -C 10 >"$out/stall.c2" 2>&1 ||
	{ cat "$out/stall.c2" "$out/stall.s" >&2; fail "rping through madcmd continued after SIGSTOP"; }
n=$(grep -c 'ping data: rdma-ping-' "$out/stall.c2")
[ "$n" -eq 10 ] || { cat "$out/stall.c2" >&2; fail "rping after SIGCONT: $n of 10 pings"; }
kill -0 $mpid || fail "madcmd died after SIGSTOP/SIGCONT"
echo "ok: a stopped madcmd: rping ends with an error (exit $rc); continued, madcmd serves a new rping"

# The rping server on h1 under madcmd, listening; its LISTEN in the daemon.
h1_server() { # PORT TIMEOUT_MS OUT
	on1_bg env MADCM_DAEMON_TIMEOUT_MS=$2 "$MADCM" run rping -s -a $H1 -p $1 -V -C 10 >"$3" 2>&1
	h1s=$!
	bg_pids="$bg_pids $h1s"
	wait_for "MADCM_DAEMON='$SOCK' '$FABSIM' --dir '$FABSIM_DIR' run h1 -- '$MADCM' stat --daemon | grep -qi listen" 60 ||
		{ cat "$3" >&2; fail "rping server on h1 through madcmd (port $1)"; }
}

# 6. madcmd stopped while the only thing its program waits for is an event
# (a listener's CONNECT_REQUEST): the keepalive ends the wait with an error
# (DEVICE_REMOVAL: rping's server exits non-zero), no hang.
h1_server 7960 2000 "$out/idle.s"
kill -STOP $mpid
gone $h1s 120 || { kill -CONT $mpid; cat "$out/idle.s" >&2; fail "a listener still waits for the stopped madcmd"; }
wait $h1s
rc=$?
kill -CONT $mpid
[ $rc -ne 0 ] || { cat "$out/idle.s" >&2; fail "a listener on a stopped madcmd exited 0"; }
h1_server 7961 2000 "$out/idle.s2"
on_other h2 "$MADCM" run rping -c -a $H1 -p 7961 -V -v -C 10 >"$out/idle.c2" 2>&1 ||
	{ cat "$out/idle.c2" "$out/idle.s2" >&2; fail "rping to a listener of madcmd continued"; }
gone $h1s 60 || fail "rping server after SIGCONT did not end"
wait $h1s || { cat "$out/idle.s2" >&2; fail "rping server after SIGCONT: exit $?"; }
echo "ok: a listener of a stopped madcmd ends with an error (exit $rc); continued, madcmd serves a new one"

# 7. A healthy madcmd, a listener idle for several bounds (1 s each): its
# session lives on the keepalive's PONGs, and it accepts a connection.
h1_server 7962 1000 "$out/keep.s"
for i in 1 2 3 4 5 6 7 8; do
	sleep 0.5
	kill -0 $h1s || { cat "$out/keep.s" >&2; fail "an idle listener ended (its daemon answers)"; }
	on1 "$MADCM" stat --daemon | grep -qi listen || fail "an idle listener's LISTEN is gone from madcmd"
done
on_other h2 "$MADCM" run rping -c -a $H1 -p 7962 -V -v -C 10 >"$out/keep.c" 2>&1 ||
	{ cat "$out/keep.c" "$out/keep.s" >&2; fail "rping to a listener idle for several bounds"; }
n=$(grep -c 'ping data: rdma-ping-' "$out/keep.c")
[ "$n" -eq 10 ] || { cat "$out/keep.c" >&2; fail "rping to the idle listener: $n of 10 pings"; }
gone $h1s 60 || fail "the idle listener's rping server did not end"
wait $h1s || { cat "$out/keep.s" >&2; fail "the idle listener's rping server: exit $?"; }
echo "ok: a listener idle for several bounds keeps its session and accepts a connection"
echo "PASS"
