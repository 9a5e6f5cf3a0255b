#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# madcmd, the per-host daemon, on the simulated fabric (three hosts on a
# switch, one madcmd each), with Debian's unmodified rdmacm-utils under
# `madcm run` and tests/integration/madcmd_hold:
#   - rping -s and rping -c -C 1000 -v on the same host, while another
#     pair runs across hosts, at the same time;
#   - two ucmatose servers on one host on different ports, clients from
#     the two other hosts;
#   - a second bind of a port another process holds: EADDRINUSE; port 0
#     binds of two processes get different ports;
#   - kill -9 of a client holding 100 connections: the server sees 100
#     DISCONNECTED, and madcmd holds nothing more (madcm stat --daemon);
#   - kill -9 of an rping server mid-run: the client ends, no hang;
#   - an unprivileged program (uid nobody): EACCES binding port 1000, no
#     CM without madcmd (umad is root's), rping through it;
#   - udaddy, and two mckey receivers of one group on one host;
#   - kill -9 of a daemon under load: its client gets DEVICE_REMOVAL and
#     exits; a new daemon serves new connections.
. "$(dirname "$0")/sim_common.sh"
MADCM=$top_builddir/tools/madcm
MADCMD=$top_builddir/madcmd/madcmd
HOLD=$top_builddir/tests/integration/madcmd_hold
skip_missing rping rdmacm-utils
[ -x "$MADCMD" ] || { echo "SKIP: madcmd not built"; exit 77; }

fs up --gen star:3 --madcmd="$MADCMD" >"$FABSIM_DIR/up.log" 2>&1 || { cat "$FABSIM_DIR/up.log"; fail "fabsim up --madcmd"; }
H1=198.18.0.1
out=$FABSIM_DIR/out
mkdir -p "$out"

# fabsim runs one madcmd per host and points each program at its host's.
run() { h=$1; shift; "$FABSIM" --dir "$FABSIM_DIR" run "$h" -- "$@"; }
run_bg() { h=$1; shift; "$FABSIM" --dir "$FABSIM_DIR" run "$h" -- "$@" & }
ids_left() { run "$1" "$MADCM" stat --daemon | awk '/^# / { print $2 }'; }
# wait_madcmd_listen HOST PORT [PS]: until HOST's madcmd holds a listener
# for PORT in port space PS (hex; 0106 TCP, 0111 UDP), the event a client
# needs (not sim_common.sh's wait_listen: the daemon's own view).
wait_madcmd_listen() {
	sid=$(printf '0x00000000%s%04x' "${3:-0106}" "$2")
	wait_for "'$FABSIM' --dir '$FABSIM_DIR' run $1 -- '$MADCM' stat --daemon | grep -q 'LISTEN.*sid $sid'" 30 ||
		fail "no listener for port $2 on $1 (sid $sid)"
}
for h in h1 h2 h3; do
	[ -S "$FABSIM_DIR/$h/madcmd.sock" ] || { cat "$FABSIM_DIR/up.log" >&2; fail "no madcmd on $h"; }
done

# Every MAD of part 1 is logged in fabsimd.log, so that a failure there
# shows which CM messages went where (a pair was once seen disconnected
# mid-run in CI; see cm_trace).
fs trace on >/dev/null
cm_trace() {
	echo "--- the CM MADs of part 1 (fabsimd trace)" >&2
	grep " class 0x07 " "$FABSIM_DIR/fabsimd.log" >&2
	for h in h1 h2; do
		echo "--- ids madcmd holds on $h" >&2
		run "$h" "$MADCM" stat --daemon >&2
	done
}

# 1. rping twice on h1 (server and client), and h1 -> h2 at once.
run_bg h1 "$MADCM" run rping -s -a $H1 -V -C 1000 >"$out/rping1.s" 2>&1
s1=$!
bg_pids="$bg_pids $s1"
run_bg h1 "$MADCM" run rping -s -a $H1 -p 7175 -V -C 200 >"$out/rping2.s" 2>&1
s2=$!
bg_pids="$bg_pids $s2"
wait_madcmd_listen h1 7174
wait_madcmd_listen h1 7175
run_bg h1 "$MADCM" run rping -c -a $H1 -V -v -C 1000 >"$out/rping1.c" 2>"$out/rping1.c.err"
c1=$!
bg_pids="$bg_pids $c1"
run h2 "$MADCM" run rping -c -a $H1 -p 7175 -V -v -C 200 >"$out/rping2.c" 2>"$out/rping2.c.err" ||
	{ tail "$out/rping2.c" "$out/rping2.c.err" "$out/rping2.s" >&2; cm_trace; fail "rping h2 -> h1 beside a local pair"; }
for p in $c1 $s1 $s2; do
	wait $p || { tail "$out"/rping1.* "$out/rping2.s" >&2; cm_trace; fail "rping on one host (pid $p)"; }
done
n=$(grep -o 'ping data: rdma-ping-[0-9]*' "$out/rping1.c" | sort -u | wc -l)
[ "$n" -eq 1000 ] || { cm_trace; fail "rping on one host: $n of 1000 pings"; }
fs trace off >/dev/null
echo "ok: rping server and client on one host, another pair across hosts"

# 2. Two ucmatose servers on h1, clients from h2 and h3.
run_bg h1 "$MADCM" run ucmatose -p 7471 -c 20 >"$out/uc1.s" 2>&1
u1=$!
run_bg h1 "$MADCM" run ucmatose -p 7472 -c 20 >"$out/uc2.s" 2>&1
u2=$!
bg_pids="$bg_pids $u1 $u2"
wait_madcmd_listen h1 7471
wait_madcmd_listen h1 7472
run_bg h2 "$MADCM" run ucmatose -s $H1 -p 7471 -c 20 >"$out/uc1.c" 2>&1
k1=$!
run h3 "$MADCM" run ucmatose -s $H1 -p 7472 -c 20 >"$out/uc2.c" 2>&1 || { cat "$out/uc2.c" >&2; fail "ucmatose h3"; }
for p in $k1 $u1 $u2; do wait $p || { tail "$out"/uc* >&2; fail "ucmatose (pid $p)"; }; done
echo "ok: two ucmatose servers on one host"

# 3. The port space is the host's.
run_bg h1 "$HOLD" bind $H1 7600 hold >"$out/bind1" 2>&1
b1=$!
bg_pids="$bg_pids $b1"
wait_for "grep -q bound '$out/bind1'" 20 || { cat "$out/bind1" >&2; fail "bind 7600"; }
run h1 "$HOLD" bind $H1 7600 >"$out/bind2" 2>&1
grep -q "bind: EADDRINUSE" "$out/bind2" || { cat "$out/bind2" >&2; fail "second bind of 7600: no EADDRINUSE"; }
run h1 "$HOLD" bind 0.0.0.0 7600 >"$out/bind3" 2>&1
grep -q "bind: EADDRNOTAVAIL" "$out/bind3" || { cat "$out/bind3" >&2; fail "wildcard bind of 7600: no EADDRNOTAVAIL"; }
run_bg h1 "$HOLD" bind $H1 0 hold >"$out/bind4" 2>&1
b4=$!
bg_pids="$bg_pids $b4"
run_bg h1 "$HOLD" bind $H1 0 hold >"$out/bind5" 2>&1
b5=$!
bg_pids="$bg_pids $b5"
wait_for "grep -q bound '$out/bind4' && grep -q bound '$out/bind5'" 20 || fail "port 0 binds"
[ "$(cat "$out/bind4")" != "$(cat "$out/bind5")" ] || fail "two port 0 binds got one port: $(cat "$out/bind4")"
kill -9 $b1 $b4 $b5
wait $b1 $b4 $b5 2>/dev/null
run h1 "$HOLD" bind $H1 7600 >"$out/bind6" 2>&1 || { cat "$out/bind6" >&2; fail "7600 not freed by a killed process"; }
echo "ok: EADDRINUSE between processes, distinct ephemeral ports, freed on exit"

# 4. A client killed with 100 live connections.
run_bg h1 "$HOLD" server 7700 100 >"$out/hold.s" 2>&1
hs=$!
bg_pids="$bg_pids $hs"
wait_for "grep -q listening '$out/hold.s'" 20 || { cat "$out/hold.s" >&2; fail "hold server"; }
run_bg h2 "$HOLD" client $H1 7700 100 >"$out/hold.c" 2>&1
hc=$!
bg_pids="$bg_pids $hc"
wait_for "grep -q 'connected 100' '$out/hold.c'" 60 || { cat "$out/hold.c" "$out/hold.s" >&2; fail "100 connections"; }
[ "$(ids_left h2)" -ge 100 ] || fail "madcm stat --daemon on h2: $(ids_left h2) ids, 100 expected"
kill -9 $hc
wait $hs || { cat "$out/hold.s" >&2; fail "server did not see 100 DISCONNECTED"; }
grep -q "disconnected 100" "$out/hold.s" || fail "hold server: $(cat "$out/hold.s")"
# TimeWait passes, then nothing is left of the killed client.
wait_for "[ \"\$('$FABSIM' --dir '$FABSIM_DIR' run h2 -- '$MADCM' stat --daemon | awk '/^# / { print \$2 }')\" = 0 ]" 60 ||
	{ run h2 "$MADCM" stat --daemon >&2; fail "madcmd on h2 still holds ids of a killed client"; }
echo "ok: kill -9 of a client with 100 connections: DISCONNECTED at the peer, tables empty"

# 4b. The server killed mid-run (issue 10's case): its daemon sends the
# DREQ, so the client reports the disconnect and exits: no hang.
run_bg h1 "$MADCM" run rping -s -a $H1 -p 7710 -V -C 1000000 >"$out/ks.s" 2>&1
ks=$!
bg_pids="$bg_pids $ks"
wait_madcmd_listen h1 7710
run_bg h2 "$MADCM" run rping -c -a $H1 -p 7710 -V -v -C 1000000 >"$out/ks.c" 2>&1
kc=$!
bg_pids="$bg_pids $kc"
wait_for "grep -q 'ping data' '$out/ks.c'" 30 || { cat "$out/ks.c" >&2; fail "rping for the killed-server case"; }
kill -9 $ks
i=0
while kill -0 $kc 2>/dev/null; do
	i=$((i + 1))
	[ $i -le 300 ] || fail "rping client still running 60 s after its server was killed"
	sleep 0.2
done
echo "ok: server killed mid-run: the client ends (no hang)"

# 5. An unprivileged program (uid nobody): no umad access of its own, as
# on a real host, so only madcmd lets it use the CM; and binding a port
# below 1024 needs the capability.  What nobody runs is a copy in the
# fabric's directory (share_build): the checkout may be private.
NOBODY="setpriv --reuid=65534 --regid=65534 --clear-groups"
if [ "$(id -u)" -ne 0 ]; then
	echo "SKIP part 5 (uid nobody): not root, so no setpriv to another uid"
else
	chmod 755 "$FABSIM_DIR"
	share_build "$FABSIM_DIR/shared" tools/madcm tests/integration/madcmd_hold ||
		fail "copies of the build for uid nobody"
	# nobody runs the copies, with fabsim's preload from them too
	NB_LIB=$FABSIM_DIR/shared/sim/.libs/libfabsim.so
	nobody() {
		h=$1
		shift
		FABSIM_LIB=$NB_LIB "$FABSIM" --dir "$FABSIM_DIR" run "$h" -- \
			$NOBODY env LD_LIBRARY_PATH="$SHARED_LIBS" "$@"
	}
	NB_MADCM=$FABSIM_DIR/shared/tools/madcm
	nobody h1 test -x "$NB_MADCM" ||
		fail "uid nobody cannot reach $FABSIM_DIR (is ${TMPDIR:-/tmp} private?)"
	nobody h1 "$FABSIM_DIR/shared/tests/integration/madcmd_hold" bind $H1 1000 >"$out/priv" 2>&1
	grep -q "bind: EACCES" "$out/priv" || { cat "$out/priv" >&2; fail "uid nobody bound port 1000"; }
	nobody h1 env MADCM_DAEMON=/nonexistent "$NB_MADCM" run rping -s -a $H1 -C 1 >"$out/nodaemon" 2>&1 &&
		fail "uid nobody ran the CM without madcmd"
	grep -q "umad" "$out/nodaemon" || { cat "$out/nodaemon" >&2; fail "no word of the umad device"; }
	FABSIM_LIB=$NB_LIB "$FABSIM" --dir "$FABSIM_DIR" run h1 -- $NOBODY env LD_LIBRARY_PATH="$SHARED_LIBS" \
		"$NB_MADCM" run rping -s -a $H1 -p 7720 -V -C 20 >"$out/nb.s" 2>&1 &
	nbs=$!
	bg_pids="$bg_pids $nbs"
	wait_madcmd_listen h1 7720
	nobody h2 "$NB_MADCM" run rping -c -a $H1 -p 7720 -V -C 20 >"$out/nb.c" 2>&1 ||
		{ cat "$out/nb.c" "$out/nb.s" >&2; fail "rping as uid nobody through madcmd"; }
	wait $nbs || fail "rping server as uid nobody"
	echo "ok: uid nobody: EACCES for port 1000, no CM without madcmd, rping through it"
fi

# 5b. Datagram ids and multicast through madcmd: udaddy (SIDR), and two
# mckey receivers of one group on one host (the daemon holds one SA
# membership for both) with a sender on another.
run_bg h1 "$MADCM" run udaddy -b $H1 -c 4 >"$out/ud.s" 2>&1
uds=$!
bg_pids="$bg_pids $uds"
wait_madcmd_listen h1 7174 0111
run h2 "$MADCM" run udaddy -s $H1 -c 4 >"$out/ud.c" 2>&1 || { cat "$out/ud.c" "$out/ud.s" >&2; fail "udaddy through madcmd"; }
wait $uds || { cat "$out/ud.s" >&2; fail "udaddy server through madcmd"; }
for i in 1 2; do
	run_bg h1 "$MADCM" run mckey -m 230.168.1.6 -b $H1 >"$out/mk$i" 2>&1
	eval "mk$i=\$!"
	sleep 0.3
done
bg_pids="$bg_pids $mk1 $mk2"
run h2 "$MADCM" run mckey -m 230.168.1.6 -b 198.18.0.2 -s >"$out/mk.s" 2>&1 || { cat "$out/mk.s" >&2; fail "mckey sender"; }
for p in $mk1 $mk2; do wait $p || fail "mckey receiver (pid $p)"; done
for i in 1 2; do
	grep -q "^data transfers complete" "$out/mk$i" && ! grep -q MULTICAST_ERROR "$out/mk$i" ||
		{ cat "$out/mk$i" >&2; fail "mckey receiver $i through madcmd"; }
done
echo "ok: udaddy, and two mckey receivers of one group on one host, through madcmd"

# 6. The daemon killed under load: its client ends, a new daemon serves.
run_bg h1 "$MADCM" run rping -s -a $H1 -p 7800 -V -C 1000000 >"$out/load.s" 2>&1
ls_=$!
bg_pids="$bg_pids $ls_"
wait_madcmd_listen h1 7800
run_bg h2 "$MADCM" run rping -c -a $H1 -p 7800 -V -C 1000000 >"$out/load.c" 2>&1
lc=$!
bg_pids="$bg_pids $lc"
wait_for "grep -q . '$out/load.c' || kill -0 $lc" 5
sleep 1
fs madcmd h2 kill
i=0
while kill -0 $lc 2>/dev/null; do
	i=$((i + 1))
	[ $i -le 300 ] || fail "rping client still running 60 s after its madcmd died"
	sleep 0.2
done
grep -qi "removal" "$out/load.c" || { cat "$out/load.c" >&2; fail "no DEVICE_REMOVAL reported to the client"; }
kill -9 $ls_ 2>/dev/null
fs madcmd h2 start || fail "madcmd restart on h2"
run_bg h1 "$MADCM" run rping -s -a $H1 -p 7801 -V -C 10 >"$out/after.s" 2>&1
as=$!
bg_pids="$bg_pids $as"
wait_madcmd_listen h1 7801
run h2 "$MADCM" run rping -c -a $H1 -p 7801 -V -C 10 >"$out/after.c" 2>&1 || { cat "$out/after.c" >&2; fail "rping through a restarted madcmd"; }
wait $as || fail "rping server after the restart"
echo "ok: kill -9 of madcmd under load: DEVICE_REMOVAL, exit; a new madcmd serves"
echo "PASS"
