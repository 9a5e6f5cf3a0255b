#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# Debian's unmodified redis-server (an epoll event loop) and redis-tools
# under `madcm run --rsocket` between two simulated hosts: redis-benchmark
# -n 2000 -t set,get prints its two results, and a redis-cli set/get
# round-trips; no kernel socket listens on the port.  The same benchmark
# over kernel TCP on loopback is printed next to it (no time asserted).
. "$(dirname "$0")/sim_common.sh"
MADCM=$top_builddir/tools/madcm
skip_missing redis-server redis-server
skip_missing redis-benchmark redis-tools
[ -f "$top_builddir/lib/.libs/librspreload.so" ] || { echo "SKIP: librspreload.so not built"; exit 77; }

out=$FABSIM_DIR/out
mkdir -p "$out"
PORT=6390
# No persistence, no protected mode, nothing written outside $out.
conf="--save '' --appendonly no --protected-mode no --dir $out --daemonize no"

fs up --gen b2b >"$FABSIM_DIR/up.log" 2>&1 || { cat "$FABSIM_DIR/up.log"; fail "fabsim up"; }
H1=198.18.0.1

# shellcheck disable=SC2086
timeout 300 "$FABSIM" --dir "$FABSIM_DIR" run h1 -- "$MADCM" run --rsocket -- \
	sh -c "exec redis-server --bind $H1 --port $PORT --pidfile $out/redis.pid $conf" \
	>"$out/server.log" 2>&1 &
sp=$!
bg_pids="$bg_pids $sp"
wait_for "grep -q 'Ready to accept connections' '$out/server.log'" 60 ||
	{ cat "$out/server.log" >&2; fail "redis-server did not start"; }
# A signal to the wrappers does not reach redis-server: on a failure the
# cleanup kills it by its own PID.
wait_for "test -s '$out/redis.pid'" 10 && bg_pids="$bg_pids $(cat "$out/redis.pid")"
if command -v ss >/dev/null && ss -Hltn "sport = :$PORT" | grep -q .; then
	fail "a kernel listener on port $PORT: redis is not on rsockets"
fi

on_h2() { timeout 240 "$FABSIM" --dir "$FABSIM_DIR" run h2 -- "$MADCM" run --rsocket -- "$@"; }
on_h2 redis-cli -h $H1 -p $PORT set madcm-key rsocket-value >"$out/set" 2>&1 ||
	{ cat "$out/set" >&2; fail "redis-cli set"; }
on_h2 redis-cli -h $H1 -p $PORT get madcm-key >"$out/get" 2>&1 ||
	{ cat "$out/get" >&2; fail "redis-cli get"; }
[ "$(cat "$out/set")" = OK ] && [ "$(cat "$out/get")" = rsocket-value ] ||
	{ cat "$out/set" "$out/get" >&2; fail "redis-cli set/get round trip"; }
echo "ok: redis-cli set/get over rsockets"
on_h2 redis-benchmark -h $H1 -p $PORT -n 2000 -t set,get -q >"$out/bench" 2>&1 ||
	{ cat "$out/bench" >&2; fail "redis-benchmark over rsockets"; }
# Progress lines end in \r: the results are the lines after the last one.
tr '\r' '\n' <"$out/bench" >"$out/bench.lines"
grep -q '^ *SET: .* requests per second' "$out/bench.lines" &&
	grep -q '^ *GET: .* requests per second' "$out/bench.lines" ||
	{ cat "$out/bench" >&2; fail "redis-benchmark printed no SET/GET results"; }
echo "ok: redis-benchmark over rsockets"
# The server exits by itself: a signal to the wrapper would not reach it.
on_h2 redis-cli -h $H1 -p $PORT shutdown nosave >/dev/null 2>&1
wait $sp 2>/dev/null

# The TCP baseline, loopback, no preload.
# shellcheck disable=SC2086
sh -c "exec redis-server --bind 127.0.0.1 --port $PORT $conf" >"$out/tcp-server.log" 2>&1 &
tp=$!
bg_pids="$bg_pids $tp"
wait_for "grep -q 'Ready to accept connections' '$out/tcp-server.log'" 30 || fail "TCP redis-server"
timeout 120 redis-benchmark -h 127.0.0.1 -p $PORT -n 2000 -t set,get -q >"$out/tcp-bench" 2>&1 ||
	{ cat "$out/tcp-bench" >&2; fail "redis-benchmark over TCP"; }
redis-cli -h 127.0.0.1 -p $PORT shutdown nosave >/dev/null 2>&1 || kill $tp 2>/dev/null
wait $tp 2>/dev/null

echo "redis-benchmark -n 2000 -t set,get -q"
echo "  rsockets (two simulated hosts):"
tr '\r' '\n' <"$out/bench" | grep 'requests per second' | sed 's/^/    /'
echo "  kernel TCP (loopback):"
tr '\r' '\n' <"$out/tcp-bench" | grep 'requests per second' | sed 's/^/    /'
echo "rspreload_redis: ok"
exit 0
