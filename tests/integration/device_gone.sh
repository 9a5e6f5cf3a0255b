#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# The HCA's MAD port going away under live ids (here: the simulated
# fabric's daemon, which is every host's HCA, killed with -9, so each
# umad fd hangs up as a removed device's does): an unmodified rping -s
# in the process and another through madcmd both get
# RDMA_CM_EVENT_DEVICE_REMOVAL and exit; madcmd logs the port as gone
# and does not spin on the dead fd (its CPU time stays flat); when the
# device is back madcmd serves it again.
. "$(dirname "$0")/sim_common.sh"
MADCM=$top_builddir/tools/madcm
skip_missing rping rdmacm-utils
fs up --gen b2b >"$FABSIM_DIR/up.log" 2>&1 || { cat "$FABSIM_DIR/up.log"; fail "fabsim up"; }
fs madcmd h1 start >/dev/null || fail "madcmd start"
out=$FABSIM_DIR/out
mkdir -p "$out"
on_bg h1 "$MADCM" run rping -s -a 198.18.0.1 -v >"$out/daemon.log" 2>&1
p1=$!
on_bg h2 "$MADCM" run rping -s -a 198.18.0.2 -v >"$out/inproc.log" 2>&1
p2=$!
bg_pids="$bg_pids $p1 $p2"
# Both listening: the daemon's shows in madcm stat, the other's in madcm ids.
wait_for "'$FABSIM' --dir '$FABSIM_DIR' run h1 '$MADCM' stat --daemon | grep -qi listen" 20 ||
	fail "rping through madcmd never listened"
wait_listen $p2 7174 60 src-addr 198.18.0.2
dpid=$(cat "$FABSIM_DIR/h1/madcmd.pid")
kill -9 "$(cat "$FABSIM_DIR/fabsimd.pid")" || fail "kill fabsimd"
for p in $p1 $p2; do
	i=0
	while kill -0 "$p" 2>/dev/null; do
		i=$((i + 1))
		[ $i -le 100 ] || fail "rping $p still running 20 s after its device went away"
		sleep 0.2
	done
done
grep -q "device removal" "$out/daemon.log" || { cat "$out/daemon.log"; fail "through madcmd: no DEVICE_REMOVAL"; }
grep -q "device removal" "$out/inproc.log" || { cat "$out/inproc.log"; fail "in-process: no DEVICE_REMOVAL"; }
wait_for "grep -q 'hung up' '$FABSIM_DIR/h1/madcmd.log'" 10 || fail "madcmd did not see its port go"
# utime + stime of madcmd, in clock ticks, a second apart: a spin costs ~100.
ticks() { awk '{ print $14 + $15 }' "/proc/$dpid/stat"; }
t0=$(ticks)
sleep 1
t1=$(ticks)
[ $((t1 - t0)) -lt 30 ] || fail "madcmd spins on its dead port ($((t1 - t0)) ticks in 1 s)"
echo "ok: DEVICE_REMOVAL in the process and through madcmd; madcmd idle on the dead port"
# The device back (a new fabric daemon: every host's HCA again): madcmd,
# still running, serves the port again, as the kernel's rdma_cm takes a
# device added again, and unmodified rpings on h1 connect through it.
fs up --gen b2b >"$FABSIM_DIR/up2.log" 2>&1 || { cat "$FABSIM_DIR/up2.log"; fail "fabsim up again"; }
served_twice="[ \$(grep -c 'serving fabsim0/1' '$FABSIM_DIR/h1/madcmd.log') -ge 2 ]"
wait_for "$served_twice" 20 || fail "madcmd did not serve its port again"
kill -0 "$dpid" || fail "madcmd exited"
on_bg h1 "$MADCM" run rping -s -a 198.18.0.1 -C 3 -v >"$out/again.s" 2>&1
bg_pids="$bg_pids $!"
wait_for "'$FABSIM' --dir '$FABSIM_DIR' run h1 '$MADCM' stat --daemon | grep -qi listen" 20 ||
	fail "rping through madcmd never listened after the device came back"
on h1 "$MADCM" run rping -c -a 198.18.0.1 -C 3 -v >"$out/again.c" 2>&1 ||
	{ cat "$out/again.c" "$out/again.s"; fail "rping through madcmd after the device came back"; }
grep -q "rdma-ping-2" "$out/again.c" || { cat "$out/again.c"; fail "no third ping after the device came back"; }
echo "ok: the device back, madcmd serves it again"
