#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# madcmd serves a port it could not open at start once it can: here the
# port's CM agent is held by a program that runs its CM in-process when
# madcmd starts (the same happens to a port not yet Active at boot).  The
# daemon logs the port as not opened, the program exits, and within a few
# of the daemon's 2 s looks the port is served: Debian's unmodified rping
# then runs through it.  Before that, a program through madcmd is refused
# at once with EBUSY and a message saying whose the port's CM is.
. "$(dirname "$0")/sim_common.sh"
MADCM=$top_builddir/tools/madcm
MADCMD=$top_builddir/madcmd/madcmd
skip_missing rping rdmacm-utils
[ -x "$MADCMD" ] || { echo "SKIP: madcmd not built"; exit 77; }
export MADCMD

fs up --gen b2b >"$FABSIM_DIR/up.log" 2>&1 || { cat "$FABSIM_DIR/up.log"; fail "fabsim up"; }
H1=198.18.0.1
log=$FABSIM_DIR/h1/madcmd.log

# An in-process rping server holds h1's CM agent (no daemon yet).
on_bg h1 "$MADCM" run rping -s -a $H1 -C 1 >"$FABSIM_DIR/held.out" 2>&1
held=$!
bg_pids="$bg_pids $held"
# Its listener published: its CM (and the port's CM agent) is open.
wait_listen $held
kill -0 $held 2>/dev/null || { cat "$FABSIM_DIR/held.out" >&2; fail "in-process rping server"; }

fs madcmd h1 start >/dev/null || fail "madcmd start"
grep -q "cannot open" "$log" || { cat "$log" >&2; fail "madcmd opened a port whose CM agent was held"; }
if grep -q "^.*serving fabsim0/1" "$log"; then
	cat "$log" >&2
	fail "madcmd served a port it could not open"
fi
echo "ok: madcmd started beside a program holding the port's CM agent, port not served"

# A program through madcmd meanwhile fails at once, and says why.
on h1 "$MADCM" run timeout 30 rping -s -a $H1 -C 1 >"$FABSIM_DIR/busy.out" 2>&1 &&
	{ cat "$FABSIM_DIR/busy.out" >&2; fail "rping through madcmd ran on a port madcmd does not serve"; }
grep -q "another process owns the port's CM class" "$FABSIM_DIR/busy.out" ||
	{ cat "$FABSIM_DIR/busy.out" >&2; fail "no reason given for the port madcmd cannot serve"; }
echo "ok: a program through madcmd is told the port's CM class is another process's"

kill $held 2>/dev/null
wait $held 2>/dev/null
wait_for "grep -q 'serving fabsim0/1' '$log'" 20 || { cat "$log" >&2; fail "the port was not served after it was freed"; }
echo "ok: served once the program exited"

on_bg h1 "$MADCM" run rping -s -a $H1 -V -C 10 >"$FABSIM_DIR/rping.s" 2>&1
s=$!
bg_pids="$bg_pids $s"
wait_listen $s
on h2 "$MADCM" run rping -c -a $H1 -V -v -C 10 >"$FABSIM_DIR/rping.c" 2>&1 ||
	{ cat "$FABSIM_DIR/rping.c" "$FABSIM_DIR/rping.s" "$log" >&2; fail "rping to h1 through madcmd"; }
wait $s || { cat "$FABSIM_DIR/rping.s" >&2; fail "rping server through madcmd"; }
n=$(grep -c 'ping data' "$FABSIM_DIR/rping.c")
[ "$n" -eq 10 ] || fail "rping: $n of 10 pings"
echo "ok: rping through the port madcmd came to serve"
