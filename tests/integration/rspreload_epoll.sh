#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# librspreload.so's epoll and sendfile64: Debian's python3 (which calls
# epoll_create1, epoll_ctl, epoll_wait and sendfile64 itself) under `madcm
# run --rsocket` on two simulated hosts: an epoll echo server with a pipe
# in its set, 3 clients sending a file with os.sendfile at once; every
# echo arrives byte for byte, the pipe is reported once, and no kernel
# socket listened on the port (the connections were rsockets).
. "$(dirname "$0")/sim_common.sh"
MADCM=$top_builddir/tools/madcm
PY=/usr/bin/python3
SCRIPT=$top_srcdir/tests/integration/rspreload_epoll.py
[ -x "$PY" ] || skip_or_fail_in_ci "Debian's python3 not installed (Debian package python3)"
[ -f "$top_builddir/lib/.libs/librspreload.so" ] || { echo "SKIP: librspreload.so not built"; exit 77; }

fs up --gen b2b >"$FABSIM_DIR/up.log" 2>&1 || { cat "$FABSIM_DIR/up.log"; fail "fabsim up"; }
H1=198.18.0.1
PORT=5110
out=$FABSIM_DIR/out
mkdir -p "$out"
head -c 65536 /dev/urandom >"$out/data"

timeout 120 "$FABSIM" --dir "$FABSIM_DIR" run h1 -- "$MADCM" run --rsocket -- \
	"$PY" "$SCRIPT" server $H1 $PORT 3 >"$out/s" 2>&1 &
sp=$!
bg_pids="$bg_pids $sp"
wait_for "grep -q listening '$out/s'" 30 || { cat "$out/s" >&2; fail "server not listening"; }
tcp=ok
if command -v ss >/dev/null && ss -Hltn "sport = :$PORT" | grep -q .; then
	tcp="a kernel listener on port $PORT"
fi
timeout 120 "$FABSIM" --dir "$FABSIM_DIR" run h2 -- "$MADCM" run --rsocket -- \
	"$PY" "$SCRIPT" client $H1 $PORT 3 "$out/data" >"$out/c" 2>&1
crc=$?
wait $sp
src=$?
if [ $crc -ne 0 ] || [ $src -ne 0 ] || [ "$tcp" != ok ]; then
	echo "--- server: exit $src; $tcp" >&2
	cat "$out/s" >&2
	echo "--- client: exit $crc" >&2
	cat "$out/c" >&2
	fail "python3 epoll echo over rsockets"
fi
grep -q "server done: 3 connections, 196608 bytes echoed, pipe 1" "$out/s" ||
	{ cat "$out/s" >&2; fail "server result"; }
cat "$out/s" "$out/c"
echo "rspreload_epoll: ok"
exit 0
