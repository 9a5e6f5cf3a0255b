#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# repoll_create/ctl/wait (RDMACM_1.5) moving data between two simulated
# hosts: tests/integration/repoll_echo's server accepts 4 rsockets and
# echoes them in one repoll set that also holds a pipe, its client waits
# for the echoes of 4 rsockets and a pipe in one set; every echo arrives
# byte for byte and each pipe is reported once.
. "$(dirname "$0")/sim_common.sh"
ECHO=$top_builddir/tests/integration/repoll_echo
[ -f "$top_builddir/lib/.libs/librdmacm.so.1" ] || { echo "SKIP: librdmacm.so.1 not built"; exit 77; }

fs up --gen b2b >"$FABSIM_DIR/up.log" 2>&1 || { cat "$FABSIM_DIR/up.log"; fail "fabsim up"; }
H1=198.18.0.1
out=$FABSIM_DIR/out
mkdir -p "$out"

timeout 120 "$FABSIM" --dir "$FABSIM_DIR" run h1 -- "$ECHO" -s $H1 7490 4 >"$out/s" 2>&1 &
sp=$!
bg_pids="$bg_pids $sp"
wait_for "grep -q listening '$out/s'" 30 || { cat "$out/s" >&2; fail "server not listening"; }
timeout 120 "$FABSIM" --dir "$FABSIM_DIR" run h2 -- "$ECHO" -c $H1 7490 4 >"$out/c" 2>&1
crc=$?
wait $sp
src=$?
if [ $crc -ne 0 ] || [ $src -ne 0 ]; then
	echo "--- server: exit $src" >&2
	cat "$out/s" >&2
	echo "--- client: exit $crc" >&2
	cat "$out/c" >&2
	fail "repoll echo"
fi
grep -q "server done: 4 connections, 80000 bytes echoed" "$out/s" || { cat "$out/s" >&2; fail "server result"; }
grep -q "client done: 4 sockets" "$out/c" || { cat "$out/c" >&2; fail "client result"; }
cat "$out/s" "$out/c"
echo "repoll: ok"
exit 0
