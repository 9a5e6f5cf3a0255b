#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# librspreload.so's fork mode (RDMAV_FORK_SAFE=1, as rdma-core's): Debian's
# unmodified servers that fork a child per connection, under
# `madcm run --rsocket` between two simulated hosts (madcmd on each):
#   1. rstream -T f -T v (rdmacm-utils: the parent accepts, the child runs
#      the test; data verified) against rstream -T f;
#   2. socat TCP-LISTEN:PORT,fork EXEC:cat (an echo server whose children
#      poll before they read) with two clients at once, 1 MiB each;
#   3. one socat client that stops halfway: by then the TCP connection is
#      closed (ss: nothing established on the port) and the rest still
#      crosses;
#   4. netcat-openbsd, which does not fork, in fork mode on both ends;
#   5. after a process left the fork semaphore taken (as one killed during
#      a conversion does), conversions still happen.
# In every case the data arrive intact, the CM made an RC connection per
# TCP connection (the fabric's CM MAD count), and the data did not cross
# TCP: the namespace's IP traffic stays below 64 KiB while megabytes move.
#
# The first connection of each pair is real TCP, so the test runs in a
# private network namespace whose lo carries the simulated hosts' IP
# addresses, with a private /dev/shm (the semaphore "/rsocket_fork").
if [ -z "${RSPRELOAD_FORK_NS:-}" ]; then
	. "$(dirname "$0")/../skip.sh"
	skip_missing unshare util-linux
	skip_missing ip iproute2
	for u in -nm -rnm; do
		if unshare $u true 2>/dev/null; then
			RSPRELOAD_FORK_NS=1 exec unshare $u -- /bin/sh "$0" "$@"
		fi
	done
	skip_env "cannot make a network and mount namespace (unshare -nm as root, or -rnm with user namespaces)"
fi
. "$(dirname "$0")/sim_common.sh"
MADCM=$top_builddir/tools/madcm
SEMHOLD=$top_builddir/tests/integration/rspreload_fork_sem
skip_missing rstream rdmacm-utils
skip_missing socat socat
RSTREAM=$(command -v rstream)
SOCAT=$(command -v socat)
[ -f "$top_builddir/lib/.libs/librspreload.so" ] || { echo "SKIP: librspreload.so not built"; exit 77; }
[ -x "$SEMHOLD" ] || { echo "SKIP: $SEMHOLD not built"; exit 77; }

mount -t tmpfs -o mode=1777 tmpfs /dev/shm || fail "a private /dev/shm"
H1=198.18.0.1
ip link set lo up || fail "lo up"
ip addr add $H1/32 dev lo || fail "$H1 on lo"
ip addr add 198.18.0.2/32 dev lo || fail "198.18.0.2 on lo"

fs up --gen b2b --madcmd >"$FABSIM_DIR/up.log" 2>&1 || { cat "$FABSIM_DIR/up.log"; fail "fabsim up --madcmd"; }
out=$FABSIM_DIR/out
mkdir -p "$out"
head -c 1048576 /dev/urandom >"$out/data"
RDMAV_FORK_SAFE=1
export RDMAV_FORK_SAFE
passed=0

# IP bytes sent in this namespace (all of it on lo), and CM MADs the fabric forwarded.
ip_octets() {
	awk '/^IpExt:/ { if (!h) { for (i = 1; i <= NF; i++) c[$i] = i; h = 1 } else print $c["OutOctets"] }' \
		/proc/net/netstat
}
cm_mads() { fs status | awk '$1 == "class" && $2 == "0x07" { print $4 }'; }
mark() { oct0=$(ip_octets) cm0=$(cm_mads); }
# over_rc NAME CONNECTIONS: since mark, at least REQ, REP, RTU per connection
# and less than 64 KiB of IP.
over_rc() {
	oct=$(($(ip_octets) - oct0)) cm=$(($(cm_mads) - cm0))
	[ "$cm" -ge $((3 * $2)) ] || fail "$1: $cm CM MADs for $2 connections"
	[ "$oct" -lt 65536 ] || fail "$1: $oct bytes crossed IP"
}
# Every program runs without a timeout wrapper, so that $! is the program
# itself (fabsim run and madcm run exec it) and the cleanup's kill reaches it.
# start HOST IN OUT PROGRAM ARGS...: in the background, $pid.
start() {
	h=$1 in=$2 res=$3
	shift 3
	"$FABSIM" --dir "$FABSIM_DIR" run "$h" -- "$MADCM" run --rsocket -- "$@" \
		<"$in" >"$res" 2>>"$out/stderr" &
	pid=$!
	bg_pids="$bg_pids $pid"
}
# finish PID: wait up to 120 s for PID to end; its exit status.
finish() {
	wait_for "[ ! -d /proc/$1 ] || grep -q '^[0-9]* (.*) Z' /proc/$1/stat" 120 ||
		{ cat "$out/stderr" >&2; fail "pid $1 still running after 120 s"; }
	wait "$1"
}
listening() { wait_for "ss -Hltn 'sport = :$1' | grep -q ." 20 || fail "no TCP listener on port $1"; }

# rstream_run TAG PORT WHAT: rstream -T f on both ends, 20 transfers of
# 100000 bytes each way, verified by rstream.
rstream_run() {
	mark
	start h1 /dev/null "$out/$1.s" "$RSTREAM" -T f -T v -C 20 -S 100000 -p "$2"
	sp=$pid
	listening "$2"
	start h2 /dev/null "$out/$1.c" "$RSTREAM" -s $H1 -T f -T v -C 20 -S 100000 -p "$2"
	finish $pid || { cat "$out/$1.c" "$out/stderr" >&2; fail "$3: rstream client"; }
	finish $sp || { cat "$out/$1.s" "$out/stderr" >&2; fail "$3: rstream server"; }
	grep -q '^custom' "$out/$1.c" || { cat "$out/$1.c" >&2; fail "$3: no result"; }
	over_rc "$3" 1
	passed=$((passed + 1))
	echo "ok: $3: 2 x 20 x 100000 bytes verified, IP $oct bytes, $cm CM MADs"
}

# 1. rdmacm-utils' own fork server.
rstream_run rstream 6101 "rstream -T f"

# 2. socat's fork server, two clients at once.
mark
start h1 /dev/null "$out/echo.s" "$SOCAT" TCP-LISTEN:6102,fork,reuseaddr EXEC:cat
echo_sp=$pid
listening 6102
start h2 "$out/data" "$out/echo1" "$SOCAT" -t 30 - TCP:$H1:6102
c1=$pid
start h2 "$out/data" "$out/echo2" "$SOCAT" -t 30 - TCP:$H1:6102
finish $pid || { cat "$out/stderr" >&2; fail "socat client 2"; }
finish $c1 || { cat "$out/stderr" >&2; fail "socat client 1"; }
cmp "$out/data" "$out/echo1" || fail "socat: client 1's echo differs"
cmp "$out/data" "$out/echo2" || fail "socat: client 2's echo differs"
over_rc socat 2
passed=$((passed + 1))
echo "ok: socat fork: 2 clients at once, 1 MiB each echoed, IP $oct bytes, $cm CM MADs"

# 3. The TCP connection is gone once converted: a client sends half, waits
# for its echo, finds no TCP connection left on the port, sends the rest.
head -c 524288 "$out/data" >"$out/half1"
tail -c +524289 "$out/data" >"$out/half2"
mkfifo "$out/fifo"
mark
start h2 "$out/fifo" "$out/echo3" "$SOCAT" -t 30 - TCP:$H1:6102
c3=$pid
exec 3>"$out/fifo"
cat "$out/half1" >&3
wait_for "[ \$(wc -c <'$out/echo3') -ge 524288 ]" 60 || { cat "$out/stderr" >&2; fail "half the echo"; }
est=$(ss -Htn state established "( sport = :6102 or dport = :6102 )")
[ -z "$est" ] || fail "a TCP connection on port 6102 after the conversion: $est"
cat "$out/half2" >&3
exec 3>&-
finish $c3 || { cat "$out/stderr" >&2; fail "socat client 3"; }
cmp "$out/data" "$out/echo3" || fail "socat: client 3's echo differs"
over_rc "socat halves" 1
passed=$((passed + 1))
echo "ok: socat fork: no TCP connection on the port once converted, echo intact, IP $oct bytes"
kill "$echo_sp"
finish $echo_sp

# 4. A program that does not fork works in fork mode too: netcat-openbsd
# (poll(2) before every read) sends the file from the client.
if NC=$(command -v nc.openbsd); then
	mark
	start h1 /dev/null "$out/nc.s" "$NC" -l -p 6104
	sp=$pid
	listening 6104
	start h2 "$out/data" /dev/null "$NC" -N $H1 6104
	finish $pid || { cat "$out/stderr" >&2; fail "nc client"; }
	finish $sp || { cat "$out/stderr" >&2; fail "nc server"; }
	cmp "$out/data" "$out/nc.s" || fail "nc: the data differ"
	over_rc nc 1
	passed=$((passed + 1))
	echo "ok: nc in fork mode: 1 MiB uploaded, IP $oct bytes, $cm CM MADs"
fi

# 5. A semaphore left taken: conversions go on.
"$SEMHOLD" || fail "take the fork semaphore"
rstream_run rstream2 6103 "rstream -T f, semaphore left taken"

echo "rspreload_fork: $passed runs passed"
exit 0
