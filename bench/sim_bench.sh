#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# fabsim vs ibsim, side by side on one generated fat tree, and the umad
# round trip vs a plain UNIX socket.  Prints numbers; asserts nothing.
#   bench/sim_bench.sh [K]     (fat tree of K-port switches, default 16)
set -u
K=${1:-16}
B=${top_builddir:-$(cd "$(dirname "$0")/.." && pwd)}
FABSIM=$B/sim/fabsim FABSIMD=$B/sim/fabsimd BENCH=$B/bench/sim_bench
UMAD2SIM=/usr/lib/x86_64-linux-gnu/umad2sim/libumad2sim.so
OPENSM=${OPENSM:-/usr/sbin/opensm}
N=${N:-5000}
work=$(mktemp -d "${TMPDIR:-/tmp}/fabsim-bench.XXXXXX")
ibsim_pid=""
cleanup() {
	[ -n "$ibsim_pid" ] && kill "$ibsim_pid" 2>/dev/null
	"$FABSIM" --dir "$work/fab" down
	rm -rf "$work"
}
trap cleanup EXIT

osm_conf() { # $1 conf, $2 log
	"$OPENSM" -c "$1.tmpl" >/dev/null 2>&1
	sed -e "s|^log_file .*|log_file $2|" -e "s|^force_log_flush .*|force_log_flush TRUE|" \
	    -e "s|^dump_files_dir .*|dump_files_dir $work/|" \
	    -e "s|^partition_config_file .*|partition_config_file $work/none|" "$1.tmpl" >"$1"
}

"$FABSIMD" --dump --gen "fattree:$K" >"$work/ft.topo"
nodes=$("$FABSIMD" --check "$work/ft.topo")
echo "topology: fattree:$K ($nodes)"

# OpenSM start -> SUBNET UP on fabsim
"$FABSIM" --dir "$work/fab" up --no-sm "$work/ft.topo" >/dev/null || exit 1
osm_conf "$work/fab.conf" "$work/fab-osm.log"
t_fab=$(FABSIM_DIR=$work/fab FABSIM_HOST=h1 OSM_CACHE_DIR=$work OSM_TMP_DIR=$work \
	LD_PRELOAD=$B/sim/.libs/libfabsim.so "$BENCH" osm "$work/fab-osm.log" -- \
	"$OPENSM" -F "$work/fab.conf" 2>/dev/null | tail -1)
echo "opensm start -> SUBNET UP on fabsim: $t_fab"

# ... and on Debian's ibsim
if command -v ibsim >/dev/null && [ -f "$UMAD2SIM" ]; then
	(cd "$work" && exec ibsim -s -n "$work/ft.topo" >"$work/ibsim.out" 2>&1) &
	ibsim_pid=$!
	i=0
	until grep -q "simulator ready" "$work/ibsim.out" 2>/dev/null || [ $i -gt 100 ]; do
		sleep 0.1; i=$((i + 1))
	done
	if ! kill -0 "$ibsim_pid" 2>/dev/null; then
		# ibsim binds one fixed socket name per machine: another one runs
		echo "ibsim failed to start: $(tail -1 "$work/ibsim.out")"
		ibsim_pid=""
	fi
fi
if [ -n "$ibsim_pid" ]; then
	host=$(awk '/^Ca/ { gsub(/"/, "", $3); print $3; exit }' "$work/ft.topo")
	osm_conf "$work/ibsim.conf" "$work/ibsim-osm.log"
	t_ib=$(SIM_HOST=$host OSM_CACHE_DIR=$work OSM_TMP_DIR=$work LD_PRELOAD=$UMAD2SIM \
		"$BENCH" osm "$work/ibsim-osm.log" -- "$OPENSM" -F "$work/ibsim.conf" 2>/dev/null | tail -1)
	echo "opensm start -> SUBNET UP on ibsim:  $t_ib"
	kill "$ibsim_pid" 2>/dev/null
	wait "$ibsim_pid" 2>/dev/null
	ibsim_pid=""
elif ! command -v ibsim >/dev/null || [ ! -f "$UMAD2SIM" ]; then
	echo "ibsim not installed: skipped"
fi

# Round trip and rate between two hosts (needs LIDs: bring an SM up)
"$FABSIM" --dir "$work/fab" sm start >/dev/null || exit 1
dlid=$("$FABSIM" --dir "$work/fab" hosts | awk '$1 == "h2" { print $6 }')
"$FABSIM" --dir "$work/fab" run h2 -- "$BENCH" umad-server $((2 * N)) >"$work/srv.out" 2>&1 &
srv=$!
i=0
until grep -q ready "$work/srv.out" 2>/dev/null || [ $i -gt 100 ]; do sleep 0.05; i=$((i + 1)); done
"$FABSIM" --dir "$work/fab" run h1 -- "$BENCH" umad-client "$dlid" "$N" 16 | sed 's/^/umad ping-pong (fabsim) /'
wait $srv
echo "unix socketpair ping-pong $("$BENCH" unix "$N")"
