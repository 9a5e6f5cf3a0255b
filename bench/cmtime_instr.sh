#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# cmtime_instr: the instructions a connection costs, counted by callgrind,
# for Debian's unmodified cmtime under `madcm run` between two simulated
# hosts.  The count moves far less than a clock with the machine's load
# and where the scheduler puts a thread (which thread runs a MAD, how often
# a wait loops: two runs of one build differed by up to 8% in madcm's
# share), where the kernel bed's rate scatters by 25%: run it in each build
# directory and compare.  It is what an emulated CPU pays most
# directly (qemu's TCG on the kernel test bed runs every instruction in
# software, tests/kernel/README.md).  Prints, and asserts nothing:
#   - per side (cmtime's server on h1, its client on h2), the marginal
#     instructions of one connection: the count of a run of N2 connections
#     less that of N1, over N2 - N1, so that start-up and exit drop out;
#   - split by where they run: madcm (libmadcm and its librdmacm), libc
#     (locks, allocation, copies and system-call wrappers), the simulated
#     fabric's preload (libfabsim: what libibumad, libibverbs and the kernel
#     do on a real host), cmtime itself, the rest (the dynamic loader ...);
#   - madcm's and libc's costliest functions, per side.
# With -D both hosts' CM is a madcmd (one each, itself under callgrind),
# and each madcmd's instructions a connection are two more rows: what the
# daemon costs the host beside the program's own (libmadcm's client side).
# Every step of cmtime is in it (address, route, QP, connect, disconnect,
# destroy), and, on this InfiniBand fabric, the SA's PathRecord queries.
#
#   bench/cmtime_instr.sh [-D] [-a N1] [-b N2] [-t TOP] [-w SECONDS]
#        N1 100, N2 300 connections; TOP 12 functions a side; the client
#        starts SECONDS (8) after the server, which prints nothing to say
#        it listens (a client too early fails, and the run says so).
#        $FABSIM, $MADCM: else sim/fabsim and tools/madcm of the build
#        directory ($top_builddir, else the current directory if it has
#        sim/fabsim, else the tree the script is in).
# Needs valgrind and rdmacm-utils.  Starts its own fabric (`fabsim up --gen
# b2b`) in a temporary directory and stops it, killing only the processes
# it started, by PID.  About a minute.
set -u
# shellcheck source=bench/bench_fabric.sh
. "$(dirname "$0")/bench_fabric.sh"
N1=100 N2=300 TOP=12 WAIT=8 DAEMON=""
while getopts Da:b:t:w: o; do
	case $o in
	D) DAEMON=1 ;;
	a) N1=$OPTARG ;;
	b) N2=$OPTARG ;;
	t) TOP=$OPTARG ;;
	w) WAIT=$OPTARG ;;
	*) sed -n '25,31p' "$0" >&2; exit 2 ;;
	esac
done
[ "$N2" -gt "$N1" ] || { echo "cmtime_instr: N2 must exceed N1"; exit 2; }
for p in cmtime valgrind callgrind_annotate; do
	command -v $p >/dev/null || { echo "cmtime_instr: $p not installed"; exit 1; }
done
bench_paths cmtime_instr
bench_fabric_up cmtime-instr
H1=198.18.0.1 H2=198.18.0.2
CG="valgrind --tool=callgrind --dump-instr=no"
MADCMD=${MADCMD:-$B/madcmd/madcmd}
if [ -n "$DAEMON" ]; then
	[ -x "$MADCMD" ] || { echo "cmtime_instr: build $MADCMD first"; exit 1; }
	sides="s c sd cd"
else
	sides="s c"
fi

# daemon HOST FILE: HOST's madcmd under callgrind (counts to FILE), its
# socket $work/HOST.sock; its PID appended to $dpids.
daemon() {
	rm -f "$work/$1.sock"
	# shellcheck disable=SC2086
	"$FABSIM" --dir "$work/fab" run "$1" -- $CG --callgrind-out-file="$2" \
		"$MADCMD" -f -s "$work/$1.sock" </dev/null >/dev/null 2>"$2.log" &
	dpids="$dpids $!"
	pids="$pids $!"
	i=0
	until grep -q "listening on" "$2.log" 2>/dev/null; do
		i=$((i + 1))
		[ $i -lt 600 ] || { cat "$2.log"; echo "cmtime_instr: madcmd of $1 did not start"; exit 1; }
		sleep 0.1
	done
}

# count N: cmtime's server (until the client is done, then SIGTERM:
# callgrind writes its counts as the process ends) and client, N connections.
count() {
	dpids=""
	if [ -n "$DAEMON" ]; then
		daemon h1 "$work/sd.$1"
		daemon h2 "$work/cd.$1"
		MADCM_DAEMON=$work/h1.sock
	else
		MADCM_DAEMON=/nonexistent # in-process, whatever the host runs
	fi
	export MADCM_DAEMON
	# shellcheck disable=SC2086
	"$FABSIM" --dir "$work/fab" run h1 -- "$MADCM" run -- $CG \
		--callgrind-out-file="$work/s.$1" cmtime -b $H1 -c "$1" >"$work/s.$1.log" 2>&1 &
	pids=$!
	sleep "$WAIT"
	# shellcheck disable=SC2086
	[ -z "$DAEMON" ] || MADCM_DAEMON=$work/h2.sock
	timeout 300 "$FABSIM" --dir "$work/fab" run h2 -- "$MADCM" run -- $CG \
		--callgrind-out-file="$work/c.$1" cmtime -s $H1 -b $H2 -c "$1" >"$work/c.$1.log" 2>&1 ||
		echo "cmtime_instr: cmtime's client failed ($1 connections)"
	# An error event (REJECTED, UNREACHABLE ...) makes the counts another run's.
	grep -q "^event:" "$work/c.$1.log" &&
		echo "cmtime_instr: error events with $1 connections (server not listening yet? -w)"
	kill "$pids" 2>/dev/null
	wait "$pids" 2>/dev/null
	# The daemons last, after their programs: callgrind writes at exit.
	for p in $dpids; do kill "$p" 2>/dev/null; done
	for p in $dpids; do wait "$p" 2>/dev/null; done
	pids=""
}

# self FILE: "COST FUNCTION OBJECT" for every function callgrind counted.
self() {
	callgrind_annotate --threshold=100 "$1" 2>/dev/null | awk '
		/^ *[0-9,]+ +\(/ && / \[/ {
			c = $1; gsub(",", "", c)
			o = $NF; sub(/\]$/, "", o); sub(/.*\//, "", o)
			f = $0; sub(/^ *[0-9,]+ +\([^)]*\) +/, "", f); sub(/ \[[^]]*\]$/, "", f)
			sub(/^.*\.\.\//, "", f); sub(/^\.\/.*\//, "", f); gsub(/ /, "_", f)
			print c, f, o }'
}

count "$N1"
count "$N2"
echo "cmtime_instr: cmtime -c $N1 and -c $N2 on fabsim b2b (server h1, client h2)${DAEMON:+, each host's CM in its madcmd}, instructions a connection"
printf '%-8s %9s %9s %9s %9s %9s %9s\n' side total madcm libc fabric cmtime rest
side_name() {
	case $1 in
	s) echo server ;;
	c) echo client ;;
	sd) echo "madcmd(s)" ;;
	cd) echo "madcmd(c)" ;;
	esac
}
for side in $sides; do
	if [ ! -s "$work/$side.$N1" ] || [ ! -s "$work/$side.$N2" ]; then
		echo "$side: no counts"
		continue
	fi
	self "$work/$side.$N1" >"$work/$side.a"
	self "$work/$side.$N2" >"$work/$side.b"
	# The per-connection difference of each function, with its group.
	awk -v n="$((N2 - N1))" '
		FNR == NR { a[$2 " " $3] = $1; next }
		{ k = $2 " " $3; d = ($1 - a[k]) / n
		  g = "rest"
		  if ($3 ~ /^lib(madcm|rdmacm)\./ || $3 == "madcmd") g = "madcm"
		  else if ($3 ~ /^libc\./) g = "libc"
		  else if ($3 ~ /^libfabsim/) g = "fabric"
		  else if ($3 == "cmtime") g = "cmtime"
		  print d, g, $2 }' "$work/$side.a" "$work/$side.b" >"$work/$side.d"
	awk -v side="$(side_name $side)" '
		{ t += $1; g[$2] += $1 }
		END { printf "%-8s %9.0f %9.0f %9.0f %9.0f %9.0f %9.0f\n", side, t,
		      g["madcm"], g["libc"], g["fabric"], g["cmtime"], g["rest"] }' "$work/$side.d"
done
for side in $sides; do
	[ -s "$work/$side.d" ] || continue
	for g in madcm libc; do
		echo "$g's costliest functions, $(side_name $side) (instructions a connection):"
		awk -v g=$g '$2 == g { printf "  %7.0f  %s\n", $1, $3 }' "$work/$side.d" | sort -rn | head -"$TOP"
	done
done
