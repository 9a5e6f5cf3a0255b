#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# rsocket_bench: Debian's unmodified rstream on madcm's rsockets (`madcm
# run`) next to perftest between the same two simulated hosts, on one
# fabric in one run.  Prints, and asserts nothing:
#   - 1 MiB bandwidth: `rstream -S 1048576 -C COUNT` (a custom run: COUNT
#     transfers one way, then back; its Gb/sec is the rate of one
#     direction) next to `ib_write_bw -s 1048576 -n ITERS` (its BW average,
#     in MiB/s, turned into Gb/s), and the ratio (target: at least 80%);
#   - the 64-byte round trip: `rstream -S 64 -C 1 -I N` (rstream's latency
#     mode: one transfer each way per iteration; usec/xfer is half a round
#     trip, the mean) next to `ib_send_lat -s 64 -n N` (t_avg, the mean, and
#     t_typical, the median, both half a round trip), and the ratio of the
#     means (target: at most 1.5x).
# Both programs run as Debian ships them and busy-poll (rstream's default
# non-blocking calls, perftest's polling); server on h1, client on h2.
# The machine is shared: each pair is measured ROUNDS times, floor and
# rstream alternating, and the medians are compared; every round is
# printed.  A run that fails prints "-" for its number.
#
#   bench/rsocket_bench.sh [-r ROUNDS] [-n LAT_ITERS] [-c BW_COUNT] [-i BW_ITERS]
#        ROUNDS 3, LAT_ITERS 10000 (both latency programs), BW_COUNT 500
#        (rstream's 1 MiB transfers each way), BW_ITERS 1000 (ib_write_bw's).
#        $FABSIM, $MADCM: else sim/fabsim and tools/madcm of the build
#        directory ($top_builddir, else the current directory if it has
#        sim/fabsim, else the tree the script is in).
# e.g. from a build directory: ../bench/rsocket_bench.sh -r 5
# Starts its own fabric (`fabsim up --gen b2b`) in a temporary directory and
# stops it, killing only the processes it started, by PID.
set -u
# shellcheck source=bench/bench_fabric.sh
. "$(dirname "$0")/bench_fabric.sh"
ROUNDS=3 LAT_N=10000 BW_C=500 BW_N=1000
while getopts r:n:c:i: o; do
	case $o in
	r) ROUNDS=$OPTARG ;;
	n) LAT_N=$OPTARG ;;
	c) BW_C=$OPTARG ;;
	i) BW_N=$OPTARG ;;
	*) sed -n '20,26p' "$0" >&2; exit 2 ;;
	esac
done
for p in rstream ib_write_bw ib_send_lat; do
	command -v $p >/dev/null || { echo "rsocket_bench: $p not installed"; exit 1; }
done
bench_paths rsocket_bench
bench_fabric_up rsocket-bench
H1=198.18.0.1
# perftest meets over TCP on loopback, shared with whatever else runs here:
# a port of our own for every run (a run's port may linger in TIME_WAIT).
tcp_port=$((20000 + ($$ * 13) % 10000))

# run NAME "SERVER COMMAND" "CLIENT COMMAND": the server on h1, then the
# client on h2; the client's output is in $work/NAME.c.  Both exit within
# 300 s or are killed.
run() {
	# shellcheck disable=SC2086
	timeout 300 "$FABSIM" --dir "$work/fab" run h1 -- $2 >"$work/$1.s" 2>&1 &
	sp=$!
	pids="$pids $sp"
	sleep 0.5
	# shellcheck disable=SC2086
	timeout 300 "$FABSIM" --dir "$work/fab" run h2 -- $3 >"$work/$1.c" 2>&1
	wait "$sp"
}

# The number in column $2 of the first line of file $1 matching $3, or "-".
col() {
	awk -v c="$2" -v re="$3" '$0 ~ re { v = $c; exit } END { print (v == "" ? "-" : v) }' "$1"
}

# The median of the numbers on stdin ("-" when none).
median() {
	grep -v '^-$' | sort -g | awk '{ v[NR] = $1 }
		END { if (!NR) print "-"; else if (NR % 2) print v[(NR + 1) / 2];
		      else printf "%.2f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

for f in bw_floor bw_rs lat_avg lat_typ lat_rs; do : >"$work/$f"; done
echo "rsocket_bench: $ROUNDS rounds on fabsim b2b, servers on h1, clients on h2"
printf '%-6s %14s %14s %22s %14s\n' round ib_write_bw rstream_1MiB "ib_send_lat avg/typ" rstream_64B
r=1
while [ $r -le "$ROUNDS" ]; do
	tcp_port=$((tcp_port + 1))
	run bw "ib_write_bw -p $tcp_port -s 1048576 -n $BW_N" \
		"ib_write_bw -p $tcp_port -s 1048576 -n $BW_N 127.0.0.1"
	# BW average [MiB/s] -> Gb/s
	fb=$(col "$work/bw.c" 4 '^ *1048576 ')
	[ "$fb" != - ] && fb=$(awk -v m="$fb" 'BEGIN { printf "%.2f", m * 1048576 * 8 / 1e9 }')
	run rsbw "$MADCM run rstream -S 1048576 -C $BW_C" \
		"$MADCM run rstream -s $H1 -S 1048576 -C $BW_C"
	rb=$(col "$work/rsbw.c" 7 '^custom ')
	tcp_port=$((tcp_port + 1))
	run lat "ib_send_lat -p $tcp_port -s 64 -n $LAT_N" \
		"ib_send_lat -p $tcp_port -s 64 -n $LAT_N 127.0.0.1"
	la=$(col "$work/lat.c" 6 '^ *64 ')
	lt=$(col "$work/lat.c" 5 '^ *64 ')
	run rslat "$MADCM run rstream -S 64 -C 1 -I $LAT_N" \
		"$MADCM run rstream -s $H1 -S 64 -C 1 -I $LAT_N"
	rl=$(col "$work/rslat.c" 8 '^custom ')
	printf '%-6s %9s Gb/s %9s Gb/s %12s/%-6s us %11s us\n' $r "$fb" "$rb" "$la" "$lt" "$rl"
	echo "$fb" >>"$work/bw_floor"
	echo "$rb" >>"$work/bw_rs"
	echo "$la" >>"$work/lat_avg"
	echo "$lt" >>"$work/lat_typ"
	echo "$rl" >>"$work/lat_rs"
	r=$((r + 1))
done

fb=$(median <"$work/bw_floor") rb=$(median <"$work/bw_rs")
la=$(median <"$work/lat_avg") lt=$(median <"$work/lat_typ") rl=$(median <"$work/lat_rs")
ratio() { # $1 / $2 in the format $3, or "-"
	awk -v a="$1" -v b="$2" -v f="$3" 'BEGIN {
		if (a == "-" || b == "-" || b + 0 == 0) print "-"; else printf f "\n", a / b }'
}
echo "1 MiB stream bandwidth (medians): rstream $rb Gb/s, ib_write_bw $fb Gb/s:" \
	"$(ratio "$rb" "$fb" "%.2f" | awk '$1 != "-" { printf "%.0f%%", 100 * $1; next } { print }')" \
	"of the floor (target >= 80%)"
echo "64 B half round trip (medians): rstream $rl us, ib_send_lat $la us mean" \
	"($lt us typical): $(ratio "$rl" "$la" "%.2fx") the floor's mean (target <= 1.5x)"
exit 0
