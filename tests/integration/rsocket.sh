#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# Debian's unmodified rsocket programs on madcm's librdmacm.so.1 (`madcm
# run`), between two simulated hosts:
#   rstream with its default series (64 B to 1 MiB, latency and
#   bandwidth, two connections), a custom run, and each -T variant
#   (b blocking, n non-blocking, a rpoll, v verify, and combinations);
#   riostream (riomap/riowrite) with a custom run and with -T a/n/v;
#   the same rstream runs with 20% of CM MADs lost;
#   a server killed mid-stream: the client (with a 1 s keepalive) fails
#   instead of hanging;
#   a peer killed while the other end blocks in rrecv with SO_KEEPALIVE
#   (TCP_KEEPIDLE 1 s): a keepalive finds it gone, rrecv says ECONNRESET;
#   the same while the other end spins on a non-blocking rsend.
# MADCM_QUICK_CHECK=1 skips the long default series and the lossy runs;
# RSOCKET_RIOSTREAM_DEFAULT=1 adds riostream's default series.
. "$(dirname "$0")/sim_common.sh"
MADCM=$top_builddir/tools/madcm
skip_missing rstream rdmacm-utils
[ -f "$top_builddir/lib/.libs/librdmacm.so.1" ] || { echo "SKIP: librdmacm.so.1 not built"; exit 77; }

fs up --gen b2b >"$FABSIM_DIR/up.log" 2>&1 || { cat "$FABSIM_DIR/up.log"; fail "fabsim up"; }
H1=198.18.0.1
out=$FABSIM_DIR/out
mkdir -p "$out"
passed=0
quick=${MADCM_QUICK_CHECK:-0}

# pair NAME TIMEOUT PROG "SERVER ARGS" "CLIENT ARGS": both must exit 0 and
# print a result row.
pair() {
	name=$1 t=$2 prog=$3 s=$4 c=$5
	# shellcheck disable=SC2086
	timeout "$t" "$FABSIM" --dir "$FABSIM_DIR" run h1 -- "$MADCM" run $prog $s \
		>"$out/$name.s" 2>&1 &
	sp=$!
	bg_pids="$bg_pids $sp"
	wait_listen $sp
	# shellcheck disable=SC2086
	timeout "$t" "$FABSIM" --dir "$FABSIM_DIR" run h2 -- "$MADCM" run $prog -s $H1 $c \
		>"$out/$name.c" 2>&1
	crc=$?
	wait $sp
	src=$?
	if [ $crc -ne 0 ] || [ $src -ne 0 ]; then
		echo "--- server ($prog $s): exit $src" >&2
		tail -20 "$out/$name.s" >&2
		echo "--- client ($prog -s $H1 $c): exit $crc" >&2
		tail -20 "$out/$name.c" >&2
		fail "$name"
	fi
	for f in "$out/$name.s" "$out/$name.c"; do
		grep -Eq '^(custom|[0-9]+[km]?_(lat|bw)) ' "$f" || { cat "$f" >&2; fail "$name: no result row"; }
	done
	passed=$((passed + 1))
	echo "ok: $name ($(grep -Ec '^(custom|[0-9]+[km]?_(lat|bw)) ' "$out/$name.c") rows)"
}

custom="-C 200 -S 65536"
stream_cases() {
	sfx=$1
	pair "rstream$sfx" 120 rstream "$custom" "$custom"
	for t in b n a v; do
		pair "rstream-T$t$sfx" 120 rstream "$custom -T $t" "$custom -T $t"
	done
	pair "rstream-Tnv$sfx" 120 rstream "-C 100 -S 1000000 -T n -T v" "-C 100 -S 1000000 -T n -T v"
	pair "rstream-Tav$sfx" 120 rstream "-C 1000 -S 100 -T a -T v" "-C 1000 -S 100 -T a -T v"
	pair "rstream-Tbv$sfx" 120 rstream "-I 100 -C 3 -S 3000 -T b -T v" "-I 100 -C 3 -S 3000 -T b -T v"
}

stream_cases ""
if [ "$quick" != 1 ]; then
	pair rstream-default 300 rstream "" ""
	n=$(grep -Ec '^[0-9]+[km]?_(lat|bw) ' "$out/rstream-default.c")
	[ "$n" -eq 8 ] || fail "rstream default series: $n of 8 rows"
fi

pair riostream 120 riostream "-C 100 -S 65536" "-C 100 -S 65536"
for t in a n v; do
	pair "riostream-T$t" 120 riostream "-I 50 -C 4 -S 10000 -T $t" "-I 50 -C 4 -S 10000 -T $t"
done
# riostream's receiver spins on memory without calling the library, so on a
# loaded 2-core machine its 100k-iteration latency test can take minutes
# (the soft HCA threads starve): only when asked.
[ "${RSOCKET_RIOSTREAM_DEFAULT:-0}" = 1 ] && pair riostream-default 590 riostream "" ""

if [ "$quick" != 1 ]; then
	fs fault seed 11 >/dev/null
	fs fault add class 7 drop prob 0.2 >/dev/null || fail "fault add"
	for i in 1 2 3; do
		pair "rstream-lossy$i" 120 rstream "$custom" "$custom"
	done
	pair "rstream-lossy-Tn" 120 rstream "$custom -T n" "$custom -T n"
	pair "riostream-lossy" 120 riostream "-C 20 -S 4096" "-C 20 -S 4096"
	hits=$(fs fault list | awk '/class 7/ { for (i = 1; i < NF; i++) if ($i == "hits") print $(i + 1) }')
	[ "${hits:-0}" -gt 0 ] || fail "the loss rule dropped nothing"
	echo "lossy runs: $hits CM MADs dropped"
	fs fault clear >/dev/null 2>&1 || fs fault del 0 >/dev/null
fi

# The server killed mid-stream: the client reports an error and exits.
# rstream is a ping-pong: when the server dies the client may be sending
# (its RDMA writes then fail) or waiting for the server's half with
# nothing of its own in flight.  A blocked reader learns that its peer is
# gone only from a keepalive (see the next case): no CM outlives a killed
# process here to send its DREQ, as the kernel's rdma_cm or madcmd does.
# So the client runs with -k 1; without it, one CI run in many hung here.
"$FABSIM" --dir "$FABSIM_DIR" run h1 -- "$MADCM" run rstream -C 100000000 -S 65536 \
	>"$out/kill.s" 2>&1 &
sp=$!
bg_pids="$bg_pids $sp"
wait_listen $sp
timeout 120 "$FABSIM" --dir "$FABSIM_DIR" run h2 -- "$MADCM" run rstream -s $H1 -C 100000000 \
	-S 65536 -k 1 >"$out/kill.c" 2>&1 &
cp=$!
bg_pids="$bg_pids $cp"
# Killed once connected (rstream's port 7471): killed during the connect,
# the client's REQ retries would take longer than the timeout above.
wait_id $cp 60 cm-state ESTABLISHED dst-port 7471 || fail "the rstream client did not connect"
kill -9 $sp
wait $cp
crc=$?
[ $crc -ne 0 ] && [ $crc -ne 124 ] || { tail "$out/kill.c" >&2; fail "killed server: client exit $crc"; }
passed=$((passed + 1))
echo "ok: killed server, client exit $crc ($(tail -1 "$out/kill.c"))"

# SO_KEEPALIVE: only a keepalive can tell a blocked reader its peer is gone.
# ka_case NAME MODE PORT READY PAUSE: rsocket_keepalive's client in MODE
# (-c blocks in rrecv, -b spins on rsend) against a server killed once the
# client printed READY and PAUSE seconds passed; the client must say the
# peer is gone (exit 0).
KA=$top_builddir/tests/integration/rsocket_keepalive
ka_case() {
	"$FABSIM" --dir "$FABSIM_DIR" run h1 -- "$KA" -s $H1 "$3" >"$out/$1.s" 2>&1 &
	sp=$!
	bg_pids="$bg_pids $sp"
	wait_listen $sp "$3"
	timeout 120 "$FABSIM" --dir "$FABSIM_DIR" run h2 -- "$KA" "$2" $H1 "$3" 1 >"$out/$1.c" 2>&1 &
	cp=$!
	bg_pids="$bg_pids $cp"
	wait_for "grep -q accepted '$out/$1.s' && grep -q $4 '$out/$1.c'" 30 ||
		{ cat "$out/$1.s" "$out/$1.c" >&2; fail "$1: no connection"; }
	[ "$5" = 0 ] || sleep "$5"
	kill -9 $sp
	wait $cp
	crc=$?
	[ $crc -eq 0 ] || { cat "$out/$1.c" >&2; fail "$1: client exit $crc"; }
	passed=$((passed + 1))
	echo "ok: $1: a keepalive found the killed peer ($(tail -1 "$out/$1.c"))"
}
ka_case keepalive -c 7480 connected 0
# The same for a client that spins on a non-blocking rsend, as rstream
# does, and so holds its socket's lock nearly all the time: the
# keepalive thread hands its write to that thread (lib/rsocket.c ka_due).
# The server never reads: once the client's credits are spent and its
# writes drained, only a keepalive can find the server gone.  (Writes
# still in flight when it is killed would find it too, more slowly: the
# pause keeps the case from being that weaker one.)
ka_case keepalive-busy -b 7481 full 1

echo "rsocket: $passed runs passed"
exit 0
