#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# Listeners as quick as the kernel's (lib/cma_addr.c): rdma_listen takes
# REQs before its port's ServiceRecords are at the SA, and rdma_destroy_id
# does not wait for their Deletes.  On a two-host fabric whose SA answers
# ServiceRecords late (every such MAD delayed 200 ms each way), a server
# replaces its listener (destroy, accept the request, listen on a new id
# and the other port) 100 times while its client connects again as soon
# as it is ESTABLISHED: the client never gets REJECTED.  Before, each
# replacement waited 400 ms for the SA, and the client's next REQ found
# no listener.  REQs are delayed 100 ms on the way, so that the server,
# which listens again right after its accept, is not raced by a client
# that runs while it is descheduled on a busy machine: the margin is the
# REQ's 100 ms against the listen's microseconds (and the old 400 ms).  Then, the SA answering at once again:
#  - the server's ServiceRecord (madcm:ip:198.18.0.1) is at the SA while
#    it listens,
#  - gone after it destroyed its listener (and one more listened to and
#    destroyed at once: the Delete follows the Set),
#  - there again after it listens again, and gone once it returned from
#    main without destroying anything (the exit waits for the Deletes).
# And a REQ that comes between a server's bind and its listen (qperf -cm1
# tells its client the port, then listens) waits for the listen
# (cm/held.c): the server binds, the client connects, and once the REQ is
# in the trace of the CM that serves h1 (its write precedes the REQ's
# handling, which a listen waits for), the server listens; the client is
# ESTABLISHED, h1 sent no REJ.
# In-process, then the same through madcmd (fabsim madcmd HOST start), where the
# program's SA client registers through the daemon's MAD proxy and the
# daemon deletes what a closed session left.
. "$(dirname "$0")/sim_common.sh"
MADCM=$top_builddir/tools/madcm
PROG=$top_builddir/tests/integration/listen_replace
MADCMD=$top_builddir/madcmd/madcmd
[ -x "$MADCMD" ] || { echo "SKIP: madcmd not built"; exit 77; }
export MADCMD
[ -x "$PROG" ] || { echo "SKIP: listen_replace not built"; exit 77; }
skip_missing saquery infiniband-diags
H1=198.18.0.1
N=${LISTEN_REPLACE_N:-100}

records() { on h2 saquery -S 2>/dev/null | grep -c "madcm:ip:$H1\$"; }
has_record() { [ "$(records)" -gt 0 ]; }
present() { wait_for "'$FABSIM' --dir '$FABSIM_DIR' run h2 -- saquery -S 2>/dev/null | grep -q 'madcm:ip:$H1\$'" 20; }
absent() { wait_for "! '$FABSIM' --dir '$FABSIM_DIR' run h2 -- saquery -S 2>/dev/null | grep -q 'madcm:ip:$H1\$'" 20; }
# wait until the server's output has line $1
said() { wait_for "grep -qx '$1' '$out'" 30 || { cat "$out" >&2; fail "$mode: server never said '$1'"; }; }

run() {
	mode=$1 port=$2
	out=$FABSIM_DIR/server.$mode
	has_record && fail "$mode: a record for $H1 before the server started"
	fs fault add class 0x03 attr 0x0031 delay 200 >/dev/null || fail "fault add"
	fs fault add class 0x07 attr 0x0010 delay 100 >/dev/null || fail "fault add REQ delay"
	on_bg h1 "$MADCM" run "$PROG" server "$port" "$N" >"$out" 2>&1
	sp=$!
	bg_pids="$bg_pids $sp"
	said listening
	timeout 120 "$FABSIM" --dir "$FABSIM_DIR" run h2 -- \
		"$MADCM" run "$PROG" client $H1 "$port" "$N" >"$FABSIM_DIR/client.$mode" 2>&1 ||
		{ cat "$FABSIM_DIR/client.$mode" "$out" >&2; fail "$mode: client"; }
	grep -qx "connected $N" "$FABSIM_DIR/client.$mode" || fail "$mode: client did not connect $N"
	said "replaced $N"
	echo "ok: $mode: $N listeners replaced while the client connected again at once, no REJ"
	fs fault clear >/dev/null
	present || fail "$mode: no ServiceRecord for $H1 while the server listens"
	kill -USR1 "$sp"
	said destroyed
	absent || fail "$mode: the ServiceRecord outlived the destroyed listeners"
	kill -USR1 "$sp"
	said "listening again"
	present || fail "$mode: no ServiceRecord after listening again"
	kill -USR1 "$sp"
	wait "$sp" || { cat "$out" >&2; fail "$mode: server exit"; }
	said exiting
	echo "ok: $mode: the ServiceRecord is there while listening, gone after destroy"
}

# late MODE PORT TRACE: TRACE is the pcap of h1's CM (the server's, or madcmd's).
late() {
	mode=$1 port=$2 trace=$3
	out=$FABSIM_DIR/late.$mode
	on_bg h1 env MADCM_TRACE="$FABSIM_DIR/late.pcap" "$MADCM" run "$PROG" late "$port" >"$out" 2>&1
	sp=$!
	bg_pids="$bg_pids $sp"
	said bound
	on_bg h2 "$MADCM" run "$PROG" client $H1 "$port" 1 >"$FABSIM_DIR/late_client.$mode" 2>&1
	cp=$!
	bg_pids="$bg_pids $cp"
	wait_for "'$MADCM' decode '$trace' 2>/dev/null | grep -q 'dst_port: *$port '" 60 ||
		{ "$MADCM" decode "$trace" >&2; fail "$mode: no REQ in $trace"; }
	kill -USR1 "$sp"
	wait "$cp" || { cat "$FABSIM_DIR/late_client.$mode" "$out" >&2; fail "$mode: late: client"; }
	wait "$sp" || { cat "$out" >&2; fail "$mode: late: server exit"; }
	said accepted
	! "$MADCM" decode "$trace" | grep -q 'REJ (ConnectReject)' || fail "$mode: late: h1 sent a REJ"
	echo "ok: $mode: a REQ between bind and listen waited for the listen"
}

fs up --gen b2b >"$FABSIM_DIR/up.log" 2>&1 || { cat "$FABSIM_DIR/up.log"; fail "fabsim up"; }
run in-process 7700
# In-process the exit waited for the SA's answers: gone now.
has_record && fail "in-process: the ServiceRecord outlived the process"
echo "ok: in-process: gone after exit"
late in-process 7720 "$FABSIM_DIR/late.pcap"
MADCM_TRACE="$FABSIM_DIR/madcmd.pcap" fs madcmd h1 start >/dev/null || fail "madcmd start h1"
fs madcmd h2 start >/dev/null || fail "madcmd start h2"
run madcmd 7710
# madcmd deletes what the closed session left, after the session ends.
absent || fail "madcmd: the ServiceRecord outlived the process"
echo "ok: madcmd: gone after exit"
late madcmd 7730 "$FABSIM_DIR/madcmd.pcap"
exit 0
