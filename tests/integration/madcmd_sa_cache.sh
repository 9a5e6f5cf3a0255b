#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# madcmd's host-wide path cache: three hosts on a switch, one madcmd each,
# Debian's ucmatose under `madcm run`.  On every host a server, and from
# every host three client programs to each other host's server, all at
# once: each host's programs ask for paths to two destinations, six times
# between them.  Through madcmd (PATH_QUERY, one cache and SA client for
# the host, concurrent asks coalesced) the SA sees exactly one PathRecord
# query per host and destination: counted on the fabric (fabsimd's MAD
# trace).  A second round of programs finds the paths in madcmd's cache:
# no query at all, and madcm stat --daemon shows the same counts.  Then
# OpenSM restarts and asks for client reregistration: madcmd flushes the
# cache on the verbs event, and a third round asks the SA once more.
. "$(dirname "$0")/sim_common.sh"
MADCM=$top_builddir/tools/madcm
MADCMD=$top_builddir/madcmd/madcmd
skip_missing ucmatose rdmacm-utils
[ -x "$MADCMD" ] || { echo "SKIP: madcmd not built"; exit 77; }

fs up --gen star:3 --madcmd="$MADCMD" >"$FABSIM_DIR/up.log" 2>&1 || { cat "$FABSIM_DIR/up.log"; fail "fabsim up --madcmd"; }
out=$FABSIM_DIR/out
mkdir -p "$out"
run_bg() { h=$1; shift; "$FABSIM" --dir "$FABSIM_DIR" run "$h" -- "$@" & }
ip_of() { echo "198.18.0.${1#h}"; }
HOSTS="h1 h2 h3"
CLIENTS=3 # programs per host and destination
for h in $HOSTS; do
	[ -S "$FABSIM_DIR/$h/madcmd.sock" ] || { cat "$FABSIM_DIR/up.log" >&2; fail "no madcmd on $h"; }
done

# PathRecord requests (Get 0x01 or GetTable 0x12 of attribute 0x0035) the
# fabric routed from host $1's LID to the SM.
path_queries() {
	lid=$(lid_of "$1")
	grep -E " lid $lid->[0-9]+ class 0x03 method 0x(01|12) attr 0x0035 " "$FABSIM_DIR/fabsimd.log" | wc -l
}

# round N: every host's server (port 7600+N) takes CLIENTS connections
# from each of the two other hosts, every client program starting at once.
round() {
	port=$((7600 + $1))
	pids=
	for h in $HOSTS; do
		run_bg "$h" "$MADCM" run ucmatose -p $port -c $((CLIENTS * 2)) -C 1 >"$out/s.$h.$1" 2>&1
		pids="$pids $!"
		bg_pids="$bg_pids $!"
	done
	for h in $HOSTS; do
		sid=$(printf '0x000000000106%04x' $port)
		wait_for "'$FABSIM' --dir '$FABSIM_DIR' run $h -- '$MADCM' stat --daemon | grep -q 'LISTEN.*sid $sid'" 30 ||
			fail "no listener on $h"
	done
	for h in $HOSTS; do
		for d in $HOSTS; do
			[ "$d" = "$h" ] && continue
			i=0
			while [ $i -lt $CLIENTS ]; do
				run_bg "$h" "$MADCM" run ucmatose -s "$(ip_of "$d")" -p $port -c 1 -C 1 \
					>"$out/c.$h.$d.$i.$1" 2>&1
				pids="$pids $!"
				bg_pids="$bg_pids $!"
				i=$((i + 1))
			done
		done
	done
	for p in $pids; do
		wait "$p" || { tail "$out"/*."$1" >&2; fail "round $1: ucmatose (pid $p) failed"; }
	done
}

fs trace on >/dev/null
round 1
for h in $HOSTS; do
	n=$(path_queries "$h")
	# Two destinations; without the host's cache it would be 2 x CLIENTS.
	[ "$n" -eq 2 ] || fail "$h: $n PathRecord queries for 2 destinations and $((CLIENTS * 2)) programs"
done
echo "ok: one PathRecord query per host and destination ($((CLIENTS * 2)) programs a host)"

round 2
for h in $HOSTS; do
	n=$(path_queries "$h")
	[ "$n" -eq 2 ] || fail "$h: $n PathRecord queries after a second round (cached: still 2)"
done
echo "ok: a second round of programs finds every path in madcmd's cache"

# madcm stat --daemon shows the same from madcmd's side: two SA queries,
# every client program's ask (6 a round) answered.
for h in $HOSTS; do
	st=$("$FABSIM" --dir "$FABSIM_DIR" run "$h" -- "$MADCM" stat --daemon | grep '^path cache')
	q=$(echo "$st" | sed -n 's/.* path_queries \([0-9]*\) .*/\1/p')
	a=$(echo "$st" | sed -n 's/.* path_asks \([0-9]*\) .*/\1/p')
	[ "$q" = 2 ] && [ "${a:-0}" -ge $((CLIENTS * 4)) ] ||
		fail "$h: madcm stat --daemon: '$st' (path_queries 2 and path_asks >= $((CLIENTS * 4)) expected)"
done
echo "ok: madcm stat --daemon shows the path cache counters"

# OpenSM restarts: its first sweep sets ClientReregister in every port's
# PortInfo, the HCA raises IBV_EVENT_CLIENT_REREGISTER, and madcmd, which
# watches its ports' verbs async events, flushes the host's path cache
# (cache_flush_rereg).  The next round asks the SA again: once per host
# and destination, as the first.
stat_field() { # HOST FIELD: a counter of madcm stat --daemon
	"$FABSIM" --dir "$FABSIM_DIR" run "$1" -- "$MADCM" stat --daemon |
		sed -n "s/.* $2 \([0-9]*\).*/\1/p"
}
for h in $HOSTS; do
	[ "$(stat_field "$h" cache_flush_rereg)" = 0 ] || fail "$h: a reregistration flush before the SM restarted"
done
fs sm stop >/dev/null || fail "sm stop"
fs sm start >/dev/null || fail "sm start"
for h in $HOSTS; do
	i=0
	until [ "$(stat_field "$h" cache_flush_rereg)" -ge 1 ] 2>/dev/null; do
		i=$((i + 1))
		[ $i -le 300 ] || { cat "$FABSIM_DIR/$h/madcmd.log" >&2; fail "$h: no cache flush for the SM's client reregistration"; }
		sleep 0.2
	done
done
echo "ok: the restarted SM's client reregistration flushed every host's path cache"
round 3
for h in $HOSTS; do
	n=$(path_queries "$h")
	[ "$n" -eq 4 ] || fail "$h: $n PathRecord queries after the flush (2 before, 2 new expected)"
	q=$(stat_field "$h" path_queries)
	[ "$q" = 4 ] || fail "$h: madcm stat --daemon path_queries $q after the flush (4 expected)"
done
echo "ok: after the flush, one new PathRecord query per host and destination"
fs trace off >/dev/null

exit 0
