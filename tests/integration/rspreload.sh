#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# librspreload.so: Debian's unmodified netcat-openbsd (plain blocking
# socket calls and poll(2)) on both ends under `madcm run --rsocket`,
# between two simulated hosts:
#   a file sent from the client to the server (nc -N: shutdown on EOF),
#   and one sent from the server to the client;
# each arrives byte for byte, both ends exit 0, and the listening side
# never had a kernel TCP listener on the port (its connection was an
# rsocket, not TCP); and outside the fabric, with no RDMA device, the
# same programs keep their TCP sockets (here over loopback).
. "$(dirname "$0")/sim_common.sh"
MADCM=$top_builddir/tools/madcm
skip_missing nc.openbsd netcat-openbsd
NC=$(command -v nc.openbsd)
have_ss=false
have_tool ss iproute2 && have_ss=true
[ -f "$top_builddir/lib/.libs/librspreload.so" ] || { echo "SKIP: librspreload.so not built"; exit 77; }

out=$FABSIM_DIR/out
mkdir -p "$out"
head -c 4194304 /dev/urandom >"$out/data"
passed=0

# No fabric: rsocket() fails, the preloaded program falls back to TCP.
"$MADCM" run --rsocket -- "$NC" -l 127.0.0.1 5100 </dev/null >"$out/tcp.s" 2>&1 &
sp=$!
bg_pids="$bg_pids $sp"
if $have_ss; then wait_tcp_listen $sp 5100; else sleep 1; fi
timeout 60 "$MADCM" run --rsocket -- "$NC" -N 127.0.0.1 5100 <"$out/data" >/dev/null 2>&1 ||
	fail "fallback to TCP: client"
wait $sp || fail "fallback to TCP: server"
cmp "$out/data" "$out/tcp.s" || fail "fallback to TCP: the data differ"
passed=$((passed + 1))
echo "ok: no RDMA device, TCP kept"

fs up --gen b2b >"$FABSIM_DIR/up.log" 2>&1 || { cat "$FABSIM_DIR/up.log"; fail "fabsim up"; }
H1=198.18.0.1

# no_tcp_listener PORT: no kernel socket listens on the port.
no_tcp_listener() {
	$have_ss || return 0
	! ss -Hltn "sport = :$1" | grep -q .
}

# xfer NAME PORT "SERVER ARGS" "CLIENT ARGS" SERVER-IN CLIENT-IN RESULT:
# nc -l on h1, nc to it from h2; RESULT (a file) must equal the data.
xfer() {
	name=$1 port=$2
	# shellcheck disable=SC2086
	timeout 120 "$FABSIM" --dir "$FABSIM_DIR" run h1 -- "$MADCM" run --rsocket -- \
		"$NC" $3 -l -p "$port" <"$5" >"$out/$name.s" 2>"$out/$name.se" &
	sp=$!
	bg_pids="$bg_pids $sp"
	wait_listen $sp "$port"
	tcp=ok
	no_tcp_listener "$port" || tcp="a kernel listener on port $port"
	# shellcheck disable=SC2086
	timeout 120 "$FABSIM" --dir "$FABSIM_DIR" run h2 -- "$MADCM" run --rsocket -- \
		"$NC" $4 $H1 "$port" <"$6" >"$out/$name.c" 2>"$out/$name.ce"
	crc=$?
	wait $sp
	src=$?
	if [ $crc -ne 0 ] || [ $src -ne 0 ] || [ "$tcp" != ok ]; then
		echo "--- server: exit $src; $tcp" >&2
		cat "$out/$name.se" >&2
		echo "--- client: exit $crc" >&2
		cat "$out/$name.ce" >&2
		fail "$name"
	fi
	cmp "$out/data" "$7" || fail "$name: the data differ"
	passed=$((passed + 1))
	echo "ok: $name ($(wc -c <"$7") bytes, $(cksum <"$7" | cut -d' ' -f1))"
}

xfer upload 5101 "" "-N" /dev/null "$out/data" "$out/upload.s"
xfer download 5102 "-N" "" "$out/data" /dev/null "$out/download.c"

echo "rspreload: $passed runs passed"
exit 0
