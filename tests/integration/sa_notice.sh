#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# The SA's GID notices on the simulated fabric (OpenSM on h1; h2 and h3):
#   - a program on h2 listening (tests/integration/notice_watch) makes its
#     port subscribe to traps 64 and 65 (two InformInfo Sets on the wire);
#   - h3's link goes down and up: OpenSM reports trap 65, then 64, naming
#     h3's GID; h2 answers each Report with a ReportResp, and its program
#     gets no event (not its GID);
#   - OpenSM loses h2 (its SMPs are dropped, the SM resweeps): trap 65
#     naming h2's own GID reaches h2 and is answered, and the program gets
#     one ADDR_CHANGE (the verbs port event that the SM's link reset also
#     makes is the same change: not a second event); the SMPs pass again:
#     trap 64, one more ADDR_CHANGE;
#   - the same with madcmd on h2 and two programs: the daemon subscribes
#     once (the second program's Sets never reach the SA, which holds two
#     subscriptions), answers each Report once, each program gets its two
#     ADDR_CHANGEs, and when both are gone the SA holds no subscription.
. "$(dirname "$0")/sim_common.sh"
WATCH=$top_builddir/tests/integration/notice_watch
MADCMD=$top_builddir/madcmd/madcmd
MADCM=$top_builddir/tools/madcm
[ -x "$MADCMD" ] || { echo "SKIP: madcmd not built"; exit 77; }
fs up --gen star:3 >"$FABSIM_DIR/up.log" 2>&1 || { cat "$FABSIM_DIR/up.log"; fail "fabsim up"; }
out=$FABSIM_DIR/out
mkdir -p "$out"
gid_of() { fs hosts | awk -v h="$1" '$1 == h { print $10; exit }'; }
G2=$(gid_of h2)
G3=$(gid_of h3)
[ -n "$G2" ] && [ -n "$G3" ] || fail "no GIDs"
cap=$out/h2.pcap
fs capture h2:1 "$cap" >/dev/null || fail "capture"

# Wait up to $2 seconds for $1 (evaluated here: it may call the functions below).
wait_here() {
	i=0
	while ! eval "$1" >/dev/null 2>&1; do
		i=$((i + 1))
		[ $i -le $(($2 * 5)) ] || return 1
		sleep 0.2
	done
}
# SA notice MADs seen on h2's port: "METHOD TRAP GID LID a -> LID b", one a frame.
notices() {
	"$MADCM" decode "$cap" 2>/dev/null | awk '
		/^frame/ { lid = $0; sub(/.*UTC: /, "", lid); sub(/,.*/, "", lid) }
		/^SubnAdm/ { m = $2; a = $3 }
		/^    trap_number:/ { t = $2 }
		/^    gid:/ { if (a == "Notice") print m, t, $2, lid }'
}
# How many of them match "METHOD TRAP GID".
count() { notices | grep -c "^$1 $2 $3 " ; }
sets() { "$MADCM" decode "$cap" 2>/dev/null | grep -c '^SubnAdm Set InformInfo'; }
events() { grep -c "^event $2 RDMA_CM_EVENT_ADDR_CHANGE status 0" "$1"; }

# Drop every SMP to h2 and make the SM sweep (h3's link goes down and up):
# OpenSM cannot reach h2 and drops it.  Then let them pass again.
lose_h2() {
	fs fault add link h2:1 class 0x81 drop >/dev/null || fail "fault"
	fs fault add link h2:1 class 0x01 drop >/dev/null || fail "fault"
	fs link sw-1 3 down >/dev/null || fail "link down"
	fs link sw-1 3 up >/dev/null || fail "link up"
}

# ---- 1. One program, no daemon.
on_bg h2 "$WATCH" 198.18.0.2 >"$out/w1" 2>&1
w1=$!
bg_pids="$bg_pids $w1"
wait_for "grep -q ready '$out/w1'" 20 || { cat "$out/w1" >&2; fail "notice_watch did not start"; }
wait_here "[ \$(\"$MADCM\" decode '$cap' 2>/dev/null | grep -c '^SubnAdm GetResp InformInfo') -ge 2 ]" 20 ||
	fail "h2 did not subscribe (two InformInfo Sets answered)"
echo "ok: the port subscribed to traps 64 and 65 when its CM opened"

fs link sw-1 3 down >/dev/null || fail "link down"
wait_here "[ \$(count ReportResp 65 $G3) -ge 1 ]" 30 || { notices >&2; fail "no trap 65 for h3 answered by h2"; }
fs link sw-1 3 up >/dev/null || fail "link up"
wait_here "[ \$(count ReportResp 64 $G3) -ge 1 ]" 30 || { notices >&2; fail "no trap 64 for h3 answered by h2"; }
[ "$(count Report 65 "$G3")" -eq "$(count ReportResp 65 "$G3")" ] || { notices >&2; fail "Reports and ReportResps differ"; }
[ "$(events "$out/w1" 0)" -eq 0 ] || { cat "$out/w1" >&2; fail "ADDR_CHANGE for another host's GID"; }
echo "ok: traps 65 and 64 naming h3 answered by h2, no event for them"

lose_h2
wait_here "[ \$(count ReportResp 65 $G2) -ge 1 ]" 40 || { notices >&2; fail "no trap 65 naming h2 answered"; }
wait_here "[ \$(events '$out/w1' 0) -ge 1 ]" 20 || { cat "$out/w1" >&2; fail "no ADDR_CHANGE when h2 went out of service"; }
fs fault clear >/dev/null
wait_here "[ \$(count ReportResp 64 $G2) -ge 1 ]" 40 || { notices >&2; fail "no trap 64 naming h2 answered"; }
wait_here "[ \$(events '$out/w1' 0) -ge 2 ]" 20 || { cat "$out/w1" >&2; fail "no ADDR_CHANGE when h2 came back"; }
# Whatever else comes (the verbs events of the link reset) is the same change.
wait_here "on h2 ibstat | grep -q 'State: Active'" 30 || fail "h2 not Active again"
sleep 1
[ "$(events "$out/w1" 0)" -eq 2 ] || { cat "$out/w1" >&2; fail "not exactly two ADDR_CHANGE"; }
kill "$w1"
wait "$w1" 2>/dev/null
echo "ok: trap 65 and 64 naming h2: one ADDR_CHANGE each"

# ---- 2. Two programs through madcmd.
MADCMD=$MADCMD fs madcmd h2 start >/dev/null || fail "madcmd start"
fs capture h2:1 off >/dev/null
cap=$out/h2-madcmd.pcap
fs capture h2:1 "$cap" >/dev/null || fail "capture"
on_bg h2 "$WATCH" 198.18.0.2 >"$out/m1" 2>&1
m1=$!
bg_pids="$bg_pids $m1"
wait_for "grep -q ready '$out/m1'" 20 || { cat "$out/m1" >&2; fail "notice_watch through madcmd did not start"; }
wait_here "[ \$(\"$MADCM\" decode '$cap' 2>/dev/null | grep -c '^SubnAdm GetResp InformInfo') -ge 2 ]" 20 ||
	fail "madcmd did not subscribe"
on_bg h2 "$WATCH" -p 7480 198.18.0.2 >"$out/m2" 2>&1
m2=$!
bg_pids="$bg_pids $m2"
wait_for "grep -q ready '$out/m2'" 20 || { cat "$out/m2" >&2; fail "second notice_watch did not start"; }
# The second program's Sets are answered by the daemon (its counters,
# logged on SIGUSR1), and none reaches the SA.
dpid=$(cat "$FABSIM_DIR/h2/madcmd.pid")
subs_here() { kill -USR1 "$dpid"; grep 'fabsim0/1: SA notices' "$FABSIM_DIR/h2/madcmd.log" | tail -1; }
wait_here "subs_here | grep -q 'answered here 2,'" 20 || { subs_here >&2; fail "madcmd did not answer the second subscription"; }
subs_here | grep -q 'subscriptions sent 2 ' || { subs_here >&2; fail "madcmd sent the second subscription"; }
[ "$(sets)" -eq 2 ] || fail "InformInfo Sets of the second program on the wire"
iirs() { on h1 saquery -I 2>/dev/null | grep -c 'trap_num'; }
[ "$(iirs)" -eq 2 ] || { on h1 saquery -I >&2; fail "the SA holds $(iirs) subscriptions, not 2"; }
lose_h2
wait_here "[ \$(count ReportResp 65 $G2) -ge 1 ]" 40 || { notices >&2; fail "madcmd: no trap 65 naming h2 answered"; }
wait_here "[ \$(events '$out/m1' 0) -ge 1 ] && [ \$(events '$out/m2' 0) -ge 1 ]" 20 ||
	{ cat "$out/m1" "$out/m2" >&2; fail "madcmd: no ADDR_CHANGE when h2 went out of service"; }
fs fault clear >/dev/null
wait_here "[ \$(count ReportResp 64 $G2) -ge 1 ]" 40 || { notices >&2; fail "madcmd: no trap 64 naming h2 answered"; }
wait_here "[ \$(events '$out/m1' 0) -ge 2 ] && [ \$(events '$out/m2' 0) -ge 2 ]" 20 ||
	{ cat "$out/m1" "$out/m2" >&2; fail "madcmd: no ADDR_CHANGE when h2 came back"; }
wait_here "on h2 ibstat | grep -q 'State: Active'" 30 || fail "h2 not Active again"
sleep 1
for f in m1 m2; do
	[ "$(events "$out/$f" 0)" -eq 2 ] || { cat "$out/$f" >&2; fail "madcmd: $f not exactly two ADDR_CHANGE"; }
done
# One answer a Report: the daemon's, not one per program.
for t in 64 65; do
	[ "$(count Report $t "$G2")" -eq "$(count ReportResp $t "$G2")" ] ||
		{ notices >&2; fail "madcmd: trap $t Reports and ReportResps differ"; }
done
wait_here "subs_here | grep -q 'passed to sessions [1-9]'" 10 || { subs_here >&2; fail "madcmd passed no Report on"; }
kill "$m1" "$m2"
wait "$m1" 2>/dev/null
wait "$m2" 2>/dev/null
# The last program gone, the daemon unsubscribes: the SA holds none.
wait_here "[ \$(iirs) -eq 0 ]" 20 || { on h1 saquery -I >&2; fail "subscriptions left at the SA"; }
! grep -q "ERR 4307" "$FABSIM_DIR/opensm.log" || fail "OpenSM refused an unsubscribe"
echo "ok: through madcmd: one subscription, one ReportResp a Report, two programs told, unsubscribed"
echo "PASS"
