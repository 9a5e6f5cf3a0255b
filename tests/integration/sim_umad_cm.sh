#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# CM-class MADs between processes on different hosts through libibumad
# only; kernel-like agent registration rules.
. "$(dirname "$0")/sim_common.sh"
fs up --gen star:4 >/dev/null || fail "fabsim up"
[ -x "$PINGPONG" ] || fail "no $PINGPONG"
agents() { fs status | awk '$1 == "connections" { print $4 }'; }
base_agents=$(agents)

# two hosts exchange 200 Send MADs of class 0x07
on_bg h3 "$PINGPONG" server 200 >"$FABSIM_DIR/server.out" 2>&1
bg_pids="$bg_pids $!"
wait_for "grep -q 'server lid' $FABSIM_DIR/server.out" 10 || fail "server did not start"
on h1 "$PINGPONG" client "$(lid_of h3)" 200 || fail "ping-pong"
wait $! || fail "server: $(cat "$FABSIM_DIR/server.out")"

# a burst on a non-blocking fd (libibumad opens umad fds so): every send
# goes out (a umad write never says the queue is full), every answer comes
on_bg h3 "$PINGPONG" server 3000 >"$FABSIM_DIR/server.out" 2>&1
bg_pids="$bg_pids $!"
wait_for "grep -q 'server lid' $FABSIM_DIR/server.out" 10 || fail "burst server did not start"
on h1 "$PINGPONG" burst "$(lid_of h3)" 3000 || fail "burst on a non-blocking fd"
wait $! || fail "burst server: $(cat "$FABSIM_DIR/server.out")"

# in one process: a second registration of 0x07/Send fails EINVAL
on h2 "$PINGPONG" dupreg || fail "in-process duplicate registration did not fail"

# two processes on one host: different classes coexist, the same fails
on_bg h2 "$PINGPONG" reg 0x07 30 >"$FABSIM_DIR/hold.out" 2>&1
holder=$!
bg_pids="$bg_pids $holder"
wait_for "grep -q registered $FABSIM_DIR/hold.out" 10 || fail "holder did not register"
on h2 "$PINGPONG" reg 0x09 || fail "a different class on the same host"
on h2 "$PINGPONG" reg 0x07
[ $? = 3 ] || fail "duplicate registration across processes did not fail with EINVAL"
on h4 "$PINGPONG" reg 0x07 || fail "same class on another host must work"

# the holder dies: its agent goes with it, at once
kill -9 $holder
wait $holder 2>/dev/null
on h2 "$PINGPONG" reg 0x07 || fail "stale agent after the holder was killed"

# a client killed in the middle of traffic leaves nothing behind
on_bg h3 "$PINGPONG" server 1000000 >"$FABSIM_DIR/busy.s" 2>&1
srv=$!
bg_pids="$bg_pids $srv"
wait_for "! kill -0 $srv || grep -q 'server lid' '$FABSIM_DIR/busy.s'" 60 || fail "the busy MAD server did not start"
on_bg h1 "$PINGPONG" client "$(lid_of h3)" 100000 >/dev/null 2>&1
cli=$!
bg_pids="$bg_pids $cli"
sleep 0.5
kill -9 $cli $srv
wait $cli $srv 2>/dev/null
on h3 "$PINGPONG" reg 0x07 || fail "stale agent after killing a busy server"
on h1 "$PINGPONG" reg 0x07 || fail "stale agent after killing a busy client"
[ "$(agents)" = "$base_agents" ] || fail "agents left behind: $(agents), OpenSM alone has $base_agents"
# many processes on one host query the SA at once: every answer reaches
# the process that asked (the hi_tid in each TID)
pids=""
for i in 1 2 3 4 5 6 7 8; do
	on_bg h2 saquery NodeRecord >"$FABSIM_DIR/sa.$i" 2>&1
	pids="$pids $!"
done
for p in $pids; do wait $p || fail "concurrent saquery failed"; done
for i in 1 2 3 4 5 6 7 8; do
	[ "$(grep -c '^NodeRecord' "$FABSIM_DIR/sa.$i")" = 5 ] || fail "concurrent saquery $i: $(cat "$FABSIM_DIR/sa.$i")"
done

# a request to a LID nobody owns: retried by the MAD layer, then ETIMEDOUT
r0=$(fs status | awk '$1 == "retries" { print $2 }')
out=$(on h1 "$PINGPONG" get 999 100 2) || fail "get to nowhere: $out"
echo "$out" | grep -q "^status 110 " || fail "no ETIMEDOUT status: $out"
r1=$(fs status | awk '$1 == "retries" { print $2 }')
[ $((r1 - r0)) = 2 ] || fail "retries counted $((r1 - r0)), want 2"
# a Get nobody registered for: the remote MAD layer answers "unsupported"
out=$(on h1 "$PINGPONG" get "$(lid_of h4)" 500 0) || fail "unmatched get: $out"
echo "$out" | grep -q "^status 0 mad_status 0xc method 0x81" || fail "unmatched Get answer: $out"

# SA table through an rmpp_version 0 agent: raw segments, our own ACKs
out=$(on h4 "$PINGPONG" satable "$(lid_of h1)") || fail "user-RMPP SA table"
[ "$(echo "$out" | awk '{ print $2 }')" = 5 ] || fail "user-RMPP NodeRecords: $out"
echo "PASS"
