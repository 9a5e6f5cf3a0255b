#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# bench/storm.sh: a connection storm on a simulated fat tree (issue 44).
#
#   storm.sh --hosts H [--per-host P] [--pattern PATTERN] [--loss PCT]
#            [--delay MS] [--no-madcmd] [--seed N] [--timeout S] [--out DIR]
#            [--cm-timeout T] [--cm-retries N]
#
# PATTERN: all-to-all (every process connects to every other),
# many-to-one (every process to the first), ring (each to the next),
# random:K (each to K distinct others, seeded).  The fabric is
# `fabsim up --gen fattree:K:H` (the smallest K-port tree that holds H
# hosts); with madcmd (the default) one madcmd per host serves its P
# processes; --no-madcmd runs each process's CM in the process (P must be
# 1: one CM agent per port).  --loss drops that share of CM MADs (class 7)
# and --delay delays them, through fabsim's faults.  --cm-timeout (the CM
# response timeout exponent, 0-31) and --cm-retries (0-15) go to every
# process's REQs (MADCM_CM_RESPONSE_TIMEOUT, MADCM_CM_RETRIES).  Each process is a
# bench/storm_worker under `madcm run` on its host: all listen, then all
# connect at once when the go file appears.
#
# Prints a table ending in one line
#   storm: H hosts, P per host, PATTERN: established X of Y in T s, SA PathRecord queries Q
# and writes, in DIR (default ./storm-H-P-PATTERN): storm.csv (one row per
# connection), timeline.csv (established and SA queries per time bin),
# cdf.csv, and with gnuplot cdf.png, conns.png, sa.png.  Exit status 0
# when every connection was established.  Prints only: asserts no time.
set -u

usage() {
	sed -n '4,7p' "$0" | sed 's/^# *//' >&2
	exit 2
}

H="" P=1 pattern=all-to-all loss="" delay="" madcmd=1 seed=1 timeout=600 out=""
cm_timeout="" cm_retries=""
while [ $# -gt 0 ]; do
	case $1 in
	--hosts) H=$2; shift 2 ;;
	--per-host) P=$2; shift 2 ;;
	--pattern) pattern=$2; shift 2 ;;
	--loss) loss=$2; shift 2 ;;
	--delay) delay=$2; shift 2 ;;
	--no-madcmd) madcmd=""; shift ;;
	--seed) seed=$2; shift 2 ;;
	--cm-timeout) cm_timeout=$2; shift 2 ;;
	--cm-retries) cm_retries=$2; shift 2 ;;
	--timeout) timeout=$2; shift 2 ;;
	--out) out=$2; shift 2 ;;
	-h | --help) usage ;;
	*) echo "storm: unknown argument $1" >&2; usage ;;
	esac
done
case $H in '' | *[!0-9]*) usage ;; esac
case $P in '' | *[!0-9]*) usage ;; esac
[ "$H" -ge 2 ] && [ "$H" -le 2048 ] || { echo "storm: --hosts 2..2048" >&2; exit 2; }
[ "$P" -ge 1 ] || usage
[ -n "$madcmd" ] || [ "$P" = 1 ] || {
	echo "storm: --no-madcmd needs --per-host 1 (one CM agent per port without madcmd)" >&2
	exit 2
}
case $pattern in
all-to-all | many-to-one | ring) ;;
random:*)
	k=${pattern#random:}
	case $k in '' | *[!0-9]*) usage ;; esac
	;;
*) usage ;;
esac

here=$(cd "$(dirname "$0")" && pwd)
. "$here/bench_fabric.sh"
bench_paths storm
WORKER=${STORM_WORKER:-$B/bench/storm_worker}
[ -x "$WORKER" ] || { echo "storm: build $WORKER first" >&2; exit 1; }
[ -x /usr/sbin/opensm ] || { echo "storm: needs opensm" >&2; exit 1; }
[ -n "$out" ] || out=./storm-$H-$P-$(echo "$pattern" | tr ':' '-')
mkdir -p "$out" || exit 1
out=$(cd "$out" && pwd)

# The smallest even K >= 4 whose two-level tree holds H hosts.
K=4
while [ $((K * K / 2)) -lt "$H" ]; do K=$((K + 2)); done
[ "$K" -le 64 ] || { echo "storm: $H hosts do not fit a fattree:64" >&2; exit 2; }

work=$(mktemp -d "${TMPDIR:-/tmp}/storm.XXXXXX") || exit 1
fab=$work/fab
pids=""
cleanup() {
	for p in $pids; do kill "$p" 2>/dev/null; done
	"$FABSIM" --dir "$fab" down >/dev/null 2>&1
	[ -n "${STORM_KEEP:-}" ] || rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 1' HUP INT PIPE TERM
fs() { "$FABSIM" --dir "$fab" "$@"; }
now() { date +%s.%N; }

echo "storm: fabric in $fab (fattree:$K:$H), output in $out"
t_up=$(now)
timeout 300 "$FABSIM" --dir "$fab" up --gen "fattree:$K:$H" >"$work/up.log" 2>&1 || {
	cat "$work/up.log"
	exit 1
}
mkdir -p "$work/stat" "$work/w"
if [ -n "$madcmd" ]; then
	# Each madcmd publishes its engine's counters in a file of its own.
	for h in $(seq 1 "$H"); do
		MADCM_STAT_FILE=$work/stat/madcmd-h$h.stat fs madcmd "h$h" start >/dev/null || exit 1
	done
fi
t_fab=$(now)

# Each host's IPv4 address, from the fabric's address file (name line,
# then the IPv4 and IPv6 lines with the same GID).
awk '$1 ~ /^h[0-9]+$/ { name[$2] = $1; next }
     $1 ~ /^[0-9.]+$/ && ($2 in name) { print name[$2], $1 }' "$fab/hosts" >"$work/ips"

# Processes 0..N-1: process i is on host i/P+1, port 7000 + i%P.
N=$((H * P))
awk -v N="$N" -v pat="$pattern" -v seed="$seed" 'BEGIN {
	if (pat == "all-to-all") {
		for (i = 0; i < N; i++) for (j = 0; j < N; j++) if (i != j) print i, j
	} else if (pat == "many-to-one") {
		for (i = 1; i < N; i++) print i, 0
	} else if (pat == "ring") {
		for (i = 0; i < N; i++) print i, (i + 1) % N
	} else {
		k = substr(pat, 8) + 0
		if (k > N - 1) k = N - 1
		srand(seed)
		for (i = 0; i < N; i++) {
			delete used
			for (c = 0; c < k;) {
				j = int(rand() * N)
				if (j == i || (j in used)) continue
				used[j] = 1; c++; print i, j
			}
		}
	}
}' >"$work/edges"
Y=$(wc -l <"$work/edges")

[ -z "$loss" ] || fs fault add class 7 drop prob "$(echo "$loss" | awk '{ print $1 / 100 }')" >/dev/null
[ -z "$delay" ] || fs fault add class 7 delay "$delay" >/dev/null
fs trace on >/dev/null

# Launch every worker; each waits for the go file once it listens.
i=0
while [ $i -lt "$N" ]; do
	h=$((i / P + 1)) port=$((7000 + i % P))
	name=h$h.$((i % P))
	peers=$(awk -v i="$i" -v P="$P" 'NR == FNR { ip[$1] = $2; next }
		$1 == i { printf "%s:%d ", ip["h" (int($2 / P) + 1)], 7000 + $2 % P }' \
		"$work/ips" "$work/edges")
	expect=$(awk -v i="$i" '$2 == i { n++ } END { print n + 0 }' "$work/edges")
	# shellcheck disable=SC2086 # peers: one word each
	MADCM_STAT_FILE=$work/stat/w-$name.stat \
		MADCM_CM_RESPONSE_TIMEOUT=$cm_timeout MADCM_CM_RETRIES=$cm_retries \
		"$FABSIM" --dir "$fab" run "h$h" -- \
		"$MADCM" run "$WORKER" --name "$name" --port "$port" --expect "$expect" \
		--go "$work/go" --end "$work/end" --timeout "$timeout" $peers \
		>"$work/w/$name.out" 2>&1 </dev/null &
	pids="$pids $!"
	i=$((i + 1))
done
# waitn PATTERN WHAT: every worker's output has a line matching PATTERN.
waitn() {
	n=0
	while [ "$(grep -l "$1" "$work"/w/*.out 2>/dev/null | wc -l)" -lt "$N" ]; do
		n=$((n + 1))
		if [ $n -gt $((timeout * 5)) ]; then
			echo "storm: not every worker $2 within ${timeout}s" >&2
			return 1
		fi
		sleep 0.2
	done
}
waitn " listening " "listened" || exit 1
t_go=$(now)
touch "$work/go"
waitn "^summary " "finished"
# The engines rewrite their counter snapshots once a second: let them
# publish the storm's before anything is torn down.
sleep 1.5
touch "$work/end"
for p in $pids; do wait "$p"; done
pids=""
if [ -n "$madcmd" ]; then
	# Stopping a madcmd publishes its counters a last time.  All at
	# once: each stop waits for its madcmd to exit (seconds at 64 hosts).
	for h in $(seq 1 "$H"); do fs madcmd "h$h" stop >/dev/null 2>&1 & done
	wait
fi
fs status >"$work/status.txt"
cp "$fab/fabsimd.log" "$work/trace.log" 2>/dev/null
cat "$work"/w/*.out >"$work/all.out"

# ---- analysis -------------------------------------------------------
# t0: the first connect's start (monotonic); rt0: the same instant on the
# wall clock the trace uses.
set -- $(awk '$1 == "clock" { if (!m || $3 < m) { m = $3; r = $4 } } END { printf "%s %s", m, r }' \
	"$work/all.out")
mono0=${1:-0} real0=${2:-0}
awk -v m0="$mono0" 'BEGIN { OFS = ","; print "src,dst,start_s,addr_s,route_s,done_s,connect_ms,result,reason" }
	$1 == "conn" && $3 != "" {
		t = $4 - m0
		d = ($7 > 0) ? ($7 - m0) / 1e9 : ""
		ms = ($7 > 0) ? ($7 - $4) / 1e6 : ""
		print $2, $3, t / 1e9, ($5 > 0 ? ($5 - m0) / 1e9 : ""), ($6 > 0 ? ($6 - m0) / 1e9 : ""), d, ms, $8, $9
	}' "$work/all.out" >"$out/storm.csv"
X=$(awk -F, 'NR > 1 && $8 == "ok"' "$out/storm.csv" | wc -l)
T=$(awk -F, 'NR > 1 && $8 == "ok" && $6 > m { m = $6 } END { printf "%.3f", m }' "$out/storm.csv")
# Connect latencies (ms), sorted: the CDF and its percentiles.
awk -F, 'NR > 1 && $8 == "ok" { print $7 }' "$out/storm.csv" | sort -g >"$work/lat"
awk '{ v[NR] = $1 } END { for (i = 1; i <= NR; i++) printf "%s,%.5f\n", v[i], i / NR }' \
	"$work/lat" | sed '1i connect_ms,fraction' >"$out/cdf.csv"
pct() { awk -v p="$1" '{ v[NR] = $1 } END { if (!NR) { print "-"; exit }
	i = int(p * NR + 0.999999); if (i < 1) i = 1; if (i > NR) i = NR; printf "%.2f", v[i] }' "$work/lat"; }

# SA requests (method < 0x80) from the trace: one query per (source, TID,
# attribute), whatever its retries and RMPP ACKs; times on the wall clock.
awk -v r0="$real0" '$3 == "mad" && $6 == "->" {
	for (f = 1; f < NF; f++) { if ($f == "class") c = $(f + 1); if ($f == "method") m = $(f + 1)
		if ($f == "attr") a = $(f + 1); if ($f == "tid") t = $(f + 1) }
	if (c != "0x03" || index("01234567", substr(m, 3, 1)) == 0) next
	key = $4 " " $5 " " t " " a
	if (key in seen) next
	seen[key] = 1
	printf "%.3f %s\n", $1 - r0 / 1e9, a
}' "$work/trace.log" >"$work/sa_queries" 2>/dev/null || : >"$work/sa_queries"
# PathRecord is attribute 0x0035; only queries from the storm's start on.
Q=$(awk '$1 >= -0.001 && $2 == "0x0035"' "$work/sa_queries" | wc -l)

# Timeline: established connections and SA queries per bin (1/50 of the run).
awk -F, -v T="$T" 'BEGIN { bin = (T > 0 ? T / 50 : 0.01); if (bin < 0.001) bin = 0.001 }
	FNR == 1 { file++ }
	file == 1 && FNR > 1 && $8 == "ok" { e[int($6 / bin)]++ }
	file == 2 { split($0, f, " "); if (f[1] >= 0) s[int(f[1] / bin)]++ }
	END { print "t_s,established_per_s,established_total,sa_queries_per_s"
		for (i = 0; i <= 50 + 5; i++) { tot += e[i]
			printf "%.4f,%.1f,%d,%.1f\n", (i + 1) * bin, e[i] / bin, tot, s[i] / bin } }' \
	"$out/storm.csv" "$work/sa_queries" >"$out/timeline.csv"

# CM counters: the engines' snapshots (madcmd's or the processes').
awk '$1 == "msg" { s[$2] += $3; r[$2] += $4; rt[$2] += $5; d[$2] += $6; u[$2] += $7 }
     $1 == "errors" { to += $3; se += $5 }
     END { for (k in s) printf "cm %s %d %d %d %d %d\n", k, s[k], r[k], rt[k], d[k], u[k]
	   printf "cmerr %d %d\n", to, se }' "$work"/stat/*.stat 2>/dev/null >"$work/cm" || :
cm() { awk -v k="$1" -v f="$2" '$1 == "cm" && $2 == k { print $f; n = 1 } END { if (!n) print 0 }' "$work/cm"; }

statv() { awk -v k="$1" '$1 == "class" && $2 == k { print $4; exit }' "$work/status.txt"; }
statc() { awk -v k="$1" '$1 == k { print $2; exit }' "$work/status.txt"; }

tmo=${cm_timeout:-$(sed -n 's/^#define CMA_CM_RESPONSE_TIMEOUT *\([0-9]*\).*/\1/p' "$here/../lib/cma.h" 2>/dev/null)}
rtr=${cm_retries:-$(sed -n 's/^#define CMA_MAX_CM_RETRIES *\([0-9]*\).*/\1/p' "$here/../lib/cma.h" 2>/dev/null)}

{
	printf '%-34s %s\n' "fabric" "fattree:$K:$H ($H hosts), fabsim up + OpenSM $(awk -v a="$t_up" -v b="$t_fab" 'BEGIN { printf "%.1f", b - a }') s"
	printf '%-34s %s\n' "processes" "$N ($P per host, $([ -n "$madcmd" ] && echo "madcmd on each host" || echo "CM in each process"))"
	printf '%-34s %s\n' "pattern" "$pattern: $Y connections${loss:+, CM MAD loss $loss%}${delay:+, CM MAD delay $delay ms}"
	printf '%-34s %s\n' "CM timeout, retries" "response timeout ${tmo:-?} (4.096 us * 2^${tmo:-?}), max CM retries ${rtr:-?} ($([ -n "$cm_timeout$cm_retries" ] && echo "--cm-timeout/--cm-retries" || echo "lib/cma.h defaults"))"
	printf '%-34s %s\n' "established" "$X of $Y"
	printf '%-34s %s\n' "time to the full mesh (s)" "$([ "$X" = "$Y" ] && echo "$T" || echo "- (last at $T)")"
	printf '%-34s %s\n' "connect latency ms (median/p99/max)" "$(pct 0.5) / $(pct 0.99) / $(pct 1)"
	printf '%-34s %s\n' "outcomes" "$(awk -F, 'NR > 1 { n[$8]++ } END { for (k in n) printf "%s %d  ", k, n[k] }' "$out/storm.csv")"
	printf '%-34s %s\n' "REJs received by reason" "$(awk '$1 == "reject" { n[$3] += $4 } END { for (k in n) { printf "%s: %d  ", k, n[k]; c++ } if (!c) printf "none" }' "$work/all.out")"
	printf '%-34s %s\n' "CM MADs sent (REQ REP RTU MRA REJ)" "$(cm REQ 3) $(cm REP 3) $(cm RTU 3) $(cm MRA 3) $(cm REJ 3)"
	printf '%-34s %s\n' "CM MADs retried (REQ REP)" "$(cm REQ 5) $(cm REP 5)"
	printf '%-34s %s\n' "CM duplicates answered (REQ REP)" "$(cm REQ 7) $(cm REP 7)"
	printf '%-34s %s\n' "CM timeouts, send errors" "$(awk '$1 == "cmerr" { print $2 ", " $3 }' "$work/cm")"
	printf '%-34s %s\n' "fabric: CM MADs (class 0x07) fwd" "$(statv 0x07)"
	printf '%-34s %s\n' "fabric: faults dropped, delayed" "$(statc fault_drop), $(statc fault_delay)"
	printf '%-34s %s\n' "SA queries by attribute" "$(awk 'BEGIN { nm["0x0001"] = "ClassPortInfo"; nm["0x0031"] = "ServiceRecord"
		nm["0x0035"] = "PathRecord"; nm["0x0038"] = "MCMemberRecord"
		nm["0x0003"] = "InformInfo"; nm["0x00f3"] = "InformInfoRecord" }
		$1 >= -0.001 { n[$2]++ } END { for (k in n) printf "%s %d  ", (k in nm ? nm[k] : k), n[k] }' "$work/sa_queries")"
	printf '%-34s %s\n' "fabric: SA MADs (class 0x03) fwd" "$(statv 0x03) (whole run, both ways)"
	echo "storm: $H hosts, $P per host, $pattern: established $X of $Y in $T s, SA PathRecord queries $Q"
} | tee "$out/summary.txt"
cp "$work/status.txt" "$out/fabsim-status.txt"

if command -v gnuplot >/dev/null 2>&1; then
	gnuplot <<EOF 2>"$work/gnuplot.err" || cat "$work/gnuplot.err" >&2
set terminal pngcairo size 640,400 noenhanced
set datafile separator ","
set key left top
set grid
set output "$out/cdf.png"
set title "connect latency CDF: $H hosts, $P per host, $pattern${loss:+, loss $loss%}"
set xlabel "connect latency (ms): resolve address, route, REQ/REP/RTU"
set ylabel "fraction of connections"
set logscale x
plot "$out/cdf.csv" every ::1 using 1:2 with steps lw 2 title "established"
unset logscale x
set output "$out/conns.png"
set title "connections established: $H hosts, $pattern"
set xlabel "time since the first connect (s)"
set ylabel "connections/s"
set y2label "established (total)"
set y2tics
set ytics nomirror
plot "$out/timeline.csv" every ::1 using 1:2 with steps lw 2 title "per second", \
     "" every ::1 using 1:3 axes x1y2 with lines lw 2 title "total"
unset y2label
unset y2tics
set ytics mirror
set output "$out/sa.png"
set title "SA queries (all record types): $H hosts, $pattern"
set ylabel "queries/s"
plot "$out/timeline.csv" every ::1 using 1:4 with steps lw 2 title "SA queries/s"
EOF
	[ -s "$out/cdf.png" ] || echo "storm: gnuplot wrote no plots" >&2
else
	echo "storm: gnuplot not found, no plots (apt-get install gnuplot-nox)" >&2
fi
[ "$X" = "$Y" ]
