#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# madcmd's host-wide path cache: four hosts on a switch, one madcmd each,
# Debian's ucmatose under `madcm run`.  On every host a server, and from
# every host eight client programs to each other host's server, all at
# once: each host's programs ask for paths to three destinations, 24 times
# between them (each program's own SA client would make that 24 queries).  Through madcmd (PATH_QUERY, one cache and SA client for
# the host, concurrent asks coalesced) the SA sees exactly one PathRecord
# query per host and destination: counted on the fabric (fabsimd's MAD
# trace).  A second round of programs finds the paths in madcmd's cache:
# no query at all, and madcm stat --daemon shows the same counts.  Then
# OpenSM restarts and asks for client reregistration: madcmd flushes the
# cache on the verbs event, and a third round asks the SA once more.
#
# The client programs resolve their destinations' addresses through the
# SA as well: their address file knows only their own host, so each finds
# the ServiceRecord the destination's listener registered (lib/addr_sa.h),
# asked of madcmd (SERVICE_QUERY), whose ServiceRecord cache works as the
# path cache: one ServiceRecord GetTable per host and destination a round
# that finds the cache empty, none for a round that finds it full.
. "$(dirname "$0")/sim_common.sh"
MADCM=$top_builddir/tools/madcm
MADCMD=$top_builddir/madcmd/madcmd
skip_missing ucmatose rdmacm-utils
skip_missing saquery infiniband-diags
[ -x "$MADCMD" ] || { echo "SKIP: madcmd not built"; exit 77; }

fs up --gen star:4 --madcmd="$MADCMD" >"$FABSIM_DIR/up.log" 2>&1 || { cat "$FABSIM_DIR/up.log"; fail "fabsim up --madcmd"; }
out=$FABSIM_DIR/out
mkdir -p "$out"
run_bg() { h=$1; shift; "$FABSIM" --dir "$FABSIM_DIR" run "$h" -- "$@" & }
ip_of() { echo "198.18.0.${1#h}"; }
HOSTS="h1 h2 h3 h4"
CLIENTS=8 # programs per host and destination
ND=3      # destinations of a host's programs: the other hosts
for h in $HOSTS; do
	[ -S "$FABSIM_DIR/$h/madcmd.sock" ] || { cat "$FABSIM_DIR/up.log" >&2; fail "no madcmd on $h"; }
done

# PathRecord requests (Get 0x01 or GetTable 0x12 of attribute 0x0035) the
# fabric routed from host $1's LID to the SM.
path_queries() {
	lid=$(lid_of "$1")
	grep -E " lid $lid->[0-9]+ class 0x03 method 0x(01|12) attr 0x0035 " "$FABSIM_DIR/fabsimd.log" | wc -l
}

# ServiceRecord GetTables (0x12 of attribute 0x0031) from host $1's LID:
# the address resolutions, and the test's own saquery -S (counted apart).
# One per TID: the requester's RMPP ACK of the answer has the same method.
service_queries() {
	lid=$(lid_of "$1")
	grep -E " lid $lid->[0-9]+ class 0x03 method 0x12 attr 0x0031 " "$FABSIM_DIR/fabsimd.log" |
		sed -n 's/.* tid \(0x[0-9a-f]*\) .*/\1/p' | sort -u | wc -l
}

# Client programs know only their own host's addresses: the others' are
# found at the SA.
for h in $HOSTS; do
	g=$(awk -v h="$h" '$1 == h { print $2; exit }' "$FABSIM_DIR/hosts")
	[ -n "$g" ] || fail "no $h in $FABSIM_DIR/hosts"
	awk -v g="$g" '$2 == g' "$FABSIM_DIR/hosts" >"$FABSIM_DIR/own.$h"
done

# round N: every host's server (port 7600+N) takes CLIENTS connections
# from each of the other hosts, every client program starting at once.
round() {
	port=$((7600 + $1))
	pids=
	for h in $HOSTS; do
		run_bg "$h" "$MADCM" run ucmatose -p $port -c $((CLIENTS * ND)) -C 1 >"$out/s.$h.$1" 2>&1
		pids="$pids $!"
		bg_pids="$bg_pids $!"
	done
	for h in $HOSTS; do
		sid=$(printf '0x000000000106%04x' $port)
		wait_for "'$FABSIM' --dir '$FABSIM_DIR' run $h -- '$MADCM' stat --daemon | grep -q 'LISTEN.*sid $sid'" 30 ||
			fail "no listener on $h"
	done
	# Every listener's address records at the SA (published without waiting).
	wait_for "'$FABSIM' --dir '$FABSIM_DIR' run h1 -- saquery -S 2>/dev/null | grep -c 'madcm:ip:198\.18\.0\.[1-4]\$' | grep -qx 4" 30 ||
		fail "round $1: the listeners' ServiceRecords are not all at the SA"
	for h in $HOSTS; do
		eval "sr_before_$h=\$(service_queries $h)"
	done
	for h in $HOSTS; do
		for d in $HOSTS; do
			[ "$d" = "$h" ] && continue
			i=0
			while [ $i -lt $CLIENTS ]; do
				MADCM_ADDR_FILE=$FABSIM_DIR/own.$h \
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

# ServiceRecord GetTables host $1's programs caused in the last round.
round_services() {
	eval "b=\$sr_before_$1"
	echo $(($(service_queries "$1") - b))
}

fs trace on >/dev/null
round 1
for h in $HOSTS; do
	n=$(path_queries "$h")
	# ND destinations; without the host's cache it would be ND x CLIENTS.
	[ "$n" -eq $ND ] || fail "$h: $n PathRecord queries for $ND destinations and $((CLIENTS * ND)) programs"
	n=$(round_services "$h")
	[ "$n" -eq $ND ] || fail "$h: $n ServiceRecord queries for $ND destinations and $((CLIENTS * ND)) programs"
done
echo "ok: one PathRecord and one ServiceRecord query per host and destination ($((CLIENTS * ND)) programs a host)"

round 2
for h in $HOSTS; do
	n=$(path_queries "$h")
	[ "$n" -eq $ND ] || fail "$h: $n PathRecord queries after a second round (cached: still $ND)"
	n=$(round_services "$h")
	[ "$n" -eq 0 ] || fail "$h: $n ServiceRecord queries in a second round (cached: none)"
done
echo "ok: a second round of programs finds every path and address in madcmd's cache"

# madcm stat --daemon shows the same from madcmd's side: ND SA queries,
# every client program's ask (CLIENTS x ND a round) answered.
for h in $HOSTS; do
	st=$("$FABSIM" --dir "$FABSIM_DIR" run "$h" -- "$MADCM" stat --daemon | grep '^path cache')
	q=$(echo "$st" | sed -n 's/.* path_queries \([0-9]*\) .*/\1/p')
	a=$(echo "$st" | sed -n 's/.* path_asks \([0-9]*\) .*/\1/p')
	[ "$q" = $ND ] && [ "${a:-0}" -ge $((CLIENTS * ND * 2)) ] ||
		fail "$h: madcm stat --daemon: '$st' (path_queries $ND and path_asks >= $((CLIENTS * ND * 2)) expected)"
	st=$("$FABSIM" --dir "$FABSIM_DIR" run "$h" -- "$MADCM" stat --daemon | grep '^service cache')
	q=$(echo "$st" | sed -n 's/.* service_queries \([0-9]*\) .*/\1/p')
	a=$(echo "$st" | sed -n 's/.* service_asks \([0-9]*\) .*/\1/p')
	[ "$q" = $ND ] && [ "${a:-0}" -eq $((CLIENTS * ND * 2)) ] ||
		fail "$h: madcm stat --daemon: '$st' (service_queries $ND and service_asks $((CLIENTS * ND * 2)) expected)"
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
	[ "$n" -eq $((ND * 2)) ] || fail "$h: $n PathRecord queries after the flush ($ND before, $ND new expected)"
	q=$(stat_field "$h" path_queries)
	[ "$q" = $((ND * 2)) ] || fail "$h: madcm stat --daemon path_queries $q after the flush ($((ND * 2)) expected)"
	n=$(round_services "$h")
	[ "$n" -eq $ND ] || fail "$h: $n ServiceRecord queries after the flush ($ND new expected)"
done
echo "ok: after the flush, one new PathRecord and ServiceRecord query per host and destination"
fs trace off >/dev/null

exit 0
