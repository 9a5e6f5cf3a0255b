#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# The soak test (issue 45 item 7, `make check-soak`): an hour of churn.
# One simulated fabric of four hosts (star:4), madcmd on each, 8
# soak_client processes per host (each listens on its own port and, at
# random, connects to the others and sends, makes SIDR and plain
# datagram ids, joins and leaves multicast groups); 5% of the CM MADs on
# h4's link dropped.  Every KILL seconds one client is killed with SIGKILL
# and started again; every RESTART seconds one madcmd is stopped and
# started (round robin).  Every SAMPLE seconds: each madcmd's RSS and open
# fds, the ids it holds (madcm stat --daemon), the ServiceRecords and
# multicast groups at the SA (saquery -S, -g).
# Pass:
#   - after the last client exited nothing is left: no id at any madcmd,
#     the SA's ServiceRecords and multicast groups are those from before
#     the clients (the IPoIB broadcast group), within a bounded wait;
#   - each madcmd's RSS and fd count grow less than 1% after warm-up (the
#     first 20% of the run): for the madcmd alive at the end of each host,
#     the median over the first WINDOW after warm-up (warm-up counted from
#     its start when it was restarted) against the median over the last
#     WINDOW (a minute in an hour's run); a host whose madcmd was
#     restarted too late for two windows is reported, not checked; in
#     runs shorter than SOAK_GROWTH_MIN minutes (default 30), where a
#     madcmd restarted a minute ago is still warming up, growth is
#     reported only;
#   - no process exits non-zero but the killed clients (and no madcmd
#     dies unless restarted here).
# Writes samples.csv and samples.png (gnuplot) into SOAK_DIR (default: a
# new directory it prints).  SOAK_MINUTES (default 60) sets the length;
# the intervals scale down with it (SAMPLE 10 s, KILL 30 s, RESTART 10
# min, WINDOW 1 min in an hour; in 3 minutes: 3 s, 15 s, 30 s, 9 s).
# Starts its own fabric in SOAK_DIR/fab and kills only what it started.
set -u

: "${top_builddir:=$(cd "$(dirname "$0")/../.." && pwd)}"
. "$(dirname "$0")/../skip.sh"
FABSIM=$top_builddir/sim/fabsim
MADCM=$top_builddir/tools/madcm
MADCMD=$top_builddir/madcmd/madcmd
CLIENT=$top_builddir/tests/soak/soak_client
export MADCMD
for p in "$FABSIM" "$MADCM" "$MADCMD" "$CLIENT"; do
	[ -x "$p" ] || { echo "SKIP: $p not built"; exit 77; }
done
[ -x /usr/sbin/opensm ] || skip_missing opensm opensm
skip_missing saquery infiniband-diags
skip_missing gnuplot gnuplot-nox

MIN=${SOAK_MINUTES:-60}
case "$MIN" in '' | *[!0-9]*) echo "SOAK_MINUTES must be a whole number" >&2; exit 1 ;; esac
[ "$MIN" -ge 1 ] || { echo "SOAK_MINUTES must be at least 1" >&2; exit 1; }
T=$((MIN * 60))
clamp() { v=$1; [ "$v" -ge "$2" ] || v=$2; [ "$v" -le "$3" ] || v=$3; echo "$v"; }
SAMPLE=$(clamp $((T / 60)) 2 10)
KILL=$(clamp $((T / 12)) 5 30)
RESTART=$(clamp $((T / 6)) 10 600)
WARM=$((T / 5))
WINDOW=$(clamp $((T / 60)) $((3 * SAMPLE)) 60)
GROWTH_MIN=${SOAK_GROWTH_MIN:-30}
HOSTS="h1 h2 h3 h4"
NCLIENT=8
BASE=7400

dir=${SOAK_DIR:-}
[ -n "$dir" ] || dir=$(mktemp -d "${TMPDIR:-/tmp}/soak.XXXXXX") || exit 1
mkdir -p "$dir/clients" || exit 1
dir=$(cd "$dir" && pwd)
fab=$dir/fab
echo "soak: $MIN min (sample ${SAMPLE}s, kill ${KILL}s, madcmd restart ${RESTART}s," \
	"warm-up ${WARM}s, window ${WINDOW}s); samples, plot and logs in $dir"

fail=0
bad() {
	echo "FAIL: $*"
	echo "FAIL: $*" >>"$dir/summary.txt"
	fail=1
}
note() {
	echo "$*"
	echo "$*" >>"$dir/summary.txt"
}
: >"$dir/summary.txt"

# Only the clients not yet waited for are killed (a PID waited for may
# be another program's by now).
cleanup() {
	for h in $HOSTS; do
		n=0
		while [ $n -lt $NCLIENT ]; do
			eval "p=\${pid_${h}_$n:-}"
			[ -z "$p" ] || kill -9 "$p" 2>/dev/null
			n=$((n + 1))
		done
	done
	"$FABSIM" --dir "$fab" down >/dev/null 2>&1
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

fs() { "$FABSIM" --dir "$fab" "$@"; }
on() { h=$1; shift; "$FABSIM" --dir "$fab" run "$h" -- "$@"; }

FABSIM_UP_TIMEOUT=120 fs up --gen star:4 --madcmd="$MADCMD" >"$dir/up.log" 2>&1 ||
	{ cat "$dir/up.log"; skip_or_fail_in_ci "fabsim up --madcmd failed"; }
for h in $HOSTS; do
	[ -S "$fab/$h/madcmd.sock" ] || { cat "$dir/up.log"; bad "no madcmd on $h"; exit 1; }
done
# The hosts' addresses: host number i (in the order of `fabsim hosts`)
# has 198.18.i/256.i%256 in the address file (fabsim(1)).
fs hosts >"$dir/hosts" || { bad "fabsim hosts failed"; exit 1; }
ips=""
for h in $HOSTS; do
	i=$(awk -v h="$h" '!seen[$1]++ { n++ } $1 == h { print n; exit }' "$dir/hosts")
	[ -n "$i" ] || { cat "$dir/hosts"; bad "no host $h in the fabric"; exit 1; }
	a=198.18.$((i / 256)).$((i % 256))
	grep -q "^$a " "$fab/hosts" || { cat "$fab/hosts"; bad "$a ($h) not in $fab/hosts"; exit 1; }
	ips="$ips $a"
	eval "ip_$h=$a"
done

# What the SA holds without the clients: compared at the end.
sa_services() { on h1 saquery -S 2>/dev/null | grep -c "ServiceRecord dump"; }
sa_groups() { on h1 saquery -g 2>/dev/null | grep -c "MCMemberRecord group dump"; }
sa_mgids() { on h1 saquery -g 2>/dev/null | awk '/MGID/ { print $NF }' | sort; }
base_services=$(sa_services)
base_groups=$(sa_groups)
sa_mgids >"$dir/mgids.before"
note "before: SA ServiceRecords $base_services, multicast groups $base_groups"

fs fault add link h4:1 class 0x07 drop prob 0.05 >/dev/null || bad "fabsim fault add failed"

# The clients.  Run the (libtool) program once first, so that 32 starts
# at once do not race to set it up.
"$CLIENT" >/dev/null 2>&1
t0=$(date +%s)
until=$((t0 + T))
killed=0
start_client() { # HOST N
	eval "a=\$ip_$1"
	# A simple command, not a function: $! is then the client itself
	# (fabsim run execs it), which a kill must reach.
	"$FABSIM" --dir "$fab" run "$1" -- "$CLIENT" "$a" $((BASE + $2)) "$until" "$2" "$BASE" \
		"$NCLIENT" $ips >>"$dir/clients/$1-$2.log" 2>&1 &
	eval "pid_$1_$2=$!"
}
for h in $HOSTS; do
	n=0
	while [ $n -lt $NCLIENT ]; do
		start_client "$h" $n
		n=$((n + 1))
	done
done

madcmd_pid() { cat "$fab/$1/madcmd.pid" 2>/dev/null; }
for h in $HOSTS; do eval "mpid_$h=$(madcmd_pid $h)"; done
rss_of() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status" 2>/dev/null || echo 0; }
fds_of() { ls "/proc/$1/fd" 2>/dev/null | wc -l; }
ids_of() { on "$1" "$MADCM" stat --daemon 2>/dev/null | awk '/^# / { n = $2 } END { print n + 0 }'; }

csv=$dir/samples.csv
{
	printf "t,phase"
	for h in $HOSTS; do printf ",%s_pid,%s_rss_kb,%s_fds,%s_ids" "$h" "$h" "$h" "$h"; done
	printf ",sa_services,sa_groups\n"
} >"$csv"
sample() { # PHASE
	line="$(($(date +%s) - t0)),$1"
	for h in $HOSTS; do
		p=$(madcmd_pid "$h")
		line="$line,$p,$(rss_of "$p"),$(fds_of "$p"),$(ids_of "$h")"
	done
	echo "$line,$(sa_services),$(sa_groups)" >>"$csv"
}

# A client that exited by itself before the end: its status, and start it
# again so the churn goes on.
check_clients() {
	for h in $HOSTS; do
		n=0
		while [ $n -lt $NCLIENT ]; do
			eval "p=\$pid_${h}_$n"
			if [ -n "$p" ] && ! kill -0 "$p" 2>/dev/null; then
				wait "$p"
				rc=$?
				eval "pid_${h}_$n="
				[ "$(date +%s)" -ge "$until" ] ||
					{ bad "client $h-$n (pid $p) exited with $rc before the end"; start_client "$h" $n; }
			fi
			n=$((n + 1))
		done
	done
}

next_sample=$t0
next_kill=$((t0 + KILL))
next_restart=$((t0 + RESTART))
rr=0
while :; do
	now=$(date +%s)
	[ "$now" -lt "$until" ] || break
	if [ "$now" -ge "$next_sample" ]; then
		sample run
		next_sample=$((next_sample + SAMPLE))
	fi
	if [ "$now" -ge "$next_restart" ] && [ $((now + 5)) -lt "$until" ]; then
		set -- $HOSTS
		shift $((rr % 4))
		h=$1
		rr=$((rr + 1))
		eval "old=\$mpid_$h"
		kill -0 "$old" 2>/dev/null || bad "madcmd on $h (pid $old) died before its restart"
		fs madcmd "$h" stop >>"$dir/events.log" 2>&1 || bad "fabsim madcmd $h stop failed"
		fs madcmd "$h" start >>"$dir/events.log" 2>&1 || bad "fabsim madcmd $h start failed"
		# The new madcmd must serve its port soon (its log says so).  No
		# client starts before: one started while no madcmd listens opens
		# the port's CM itself, and madcmd cannot have it until it exits.
		i=0
		until grep -q "serving .*LID" "$fab/$h/madcmd.log" 2>/dev/null; do
			i=$((i + 1))
			[ $i -lt 20 ] || break
			sleep 1
		done
		grep -q "serving .*LID" "$fab/$h/madcmd.log" ||
			bad "madcmd restarted on $h at $((now - t0)) s does not serve its port after 20 s: $(head -1 "$fab/$h/madcmd.log")"
		cp "$fab/$h/madcmd.log" "$dir/madcmd-$h-$rr.log" 2>/dev/null
		eval "mpid_$h=$(madcmd_pid "$h")"
		echo "$((now - t0)) restarted madcmd on $h" >>"$dir/events.log"
		next_restart=$((next_restart + RESTART))
	fi
	if [ "$now" -ge "$next_kill" ]; then
		r=$(awk -v s="$now" 'BEGIN { srand(s); print int(rand() * 32) }')
		set -- $HOSTS
		shift $((r / NCLIENT))
		h=$1
		n=$((r % NCLIENT))
		eval "p=\$pid_${h}_$n"
		if kill -9 "$p" 2>/dev/null; then
			wait "$p"
			killed=$((killed + 1))
			echo "$((now - t0)) killed client $h-$n" >>"$dir/events.log"
		fi
		start_client "$h" $n
		next_kill=$((next_kill + KILL))
	fi
	check_clients
	for h in $HOSTS; do
		eval "p=\$mpid_$h"
		kill -0 "$p" 2>/dev/null || bad "madcmd on $h (pid $p) died"
	done
	sleep 1
done
# What each madcmd holds open with the clients still there.
for h in $HOSTS; do
	ls -l "/proc/$(madcmd_pid "$h")/fd" >"$dir/fds-$h.txt" 2>&1
done
note "churn over after $(($(date +%s) - t0)) s: $killed clients killed, $rr madcmd restarts"

# The clients end by themselves at $until (each wait is bounded by 15 s).
deadline=$(($(date +%s) + 90))
for h in $HOSTS; do
	n=0
	while [ $n -lt $NCLIENT ]; do
		eval "p=\$pid_${h}_$n"
		while kill -0 "$p" 2>/dev/null && [ "$(date +%s)" -lt "$deadline" ]; do
			sleep 1
		done
		if kill -0 "$p" 2>/dev/null; then
			bad "client $h-$n (pid $p) still runs 90 s after the end"
			kill -9 "$p"
		fi
		[ -n "$p" ] || { n=$((n + 1)); continue; }
		wait "$p"
		rc=$?
		eval "pid_${h}_$n="
		[ $rc -eq 0 ] || bad "client $h-$n (pid $p) exited with $rc (see $dir/clients/$h-$n.log)"
		n=$((n + 1))
	done
done
awk '/ops [0-9]+ ok/ { ops += $4; ok += $6; err += $8 }
	END { printf "clients (last runs of each): ops %d ok %d errors %d\n", ops, ok, err }' \
	"$dir"/clients/*.log | tee -a "$dir/summary.txt"

# Nothing left: poll (TimeWait, MAD timeouts, leaves in flight) up to 90 s.
left() {
	for h in $HOSTS; do
		echo "$h ids $(ids_of "$h")"
	done
	echo "sa services $(sa_services) groups $(sa_groups)"
}
i=0
while :; do
	left >"$dir/left.txt"
	awk -v s="$base_services" -v g="$base_groups" '
		$2 == "ids" && $3 != 0 { bad = 1 }
		$1 == "sa" && ($3 != s || $5 != g) { bad = 1 }
		END { exit bad }' "$dir/left.txt" && break
	i=$((i + 1))
	[ $i -lt 30 ] || break
	sleep 3
done
sample end
note "after the clients: $(tr '\n' ' ' <"$dir/left.txt")"
for h in $HOSTS; do
	n=$(awk -v h="$h" '$1 == h { print $3 }' "$dir/left.txt")
	[ "$n" = 0 ] || { bad "madcmd on $h holds $n ids after the last client exited"; on "$h" "$MADCM" stat --daemon >>"$dir/summary.txt" 2>&1; }
done
s=$(awk '$1 == "sa" { print $3 }' "$dir/left.txt")
[ "$s" = "$base_services" ] || bad "SA ServiceRecords: $s after, $base_services before"
sa_mgids >"$dir/mgids.after"
cmp -s "$dir/mgids.before" "$dir/mgids.after" ||
	bad "multicast groups left at the SA: $(comm -13 "$dir/mgids.before" "$dir/mgids.after" | tr '\n' ' ')"

# Growth of RSS and fds after warm-up, per host (see the head comment).
awk -F, -v warm="$WARM" -v win="$WINDOW" -v hosts="$HOSTS" '
function median(a, n,    i, j, t) {
	for (i = 2; i <= n; i++)
		for (j = i; j > 1 && a[j - 1] > a[j]; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
	return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
$2 == "run" { n++; for (i = 1; i <= NF; i++) v[n, i] = $i; tend = $1 }
END {
	nh = split(hosts, H, " ")
	for (k = 1; k <= nh; k++) {
		h = H[k]
		pid = v[n, col[h "_pid"]]
		for (r = 1; r <= n && v[r, col[h "_pid"]] != pid; r++)
			;
		b0 = v[r, 1] + warm
		if (b0 < warm) b0 = warm
		if (b0 + win > tend - win) {
			printf "%s: madcmd %s started at %d s: too late for two %d s windows after warm-up, not checked\n", h, pid, v[r, 1], win
			continue
		}
		split("rss_kb fds", what, " ")
		for (w = 1; w <= 2; w++) {
			c = col[h "_" what[w]]
			nb = nf = 0
			delete B; delete F
			for (r = 1; r <= n; r++) {
				if (v[r, col[h "_pid"]] != pid) continue
				if (v[r, 1] >= b0 && v[r, 1] < b0 + win) B[++nb] = v[r, c]
				if (v[r, 1] >= tend - win) F[++nf] = v[r, c]
			}
			mb = median(B, nb); mf = median(F, nf)
			g = mb > 0 ? (mf - mb) * 100 / mb : 0
			printf "%s: madcmd %s %s median %g (%d s..%d s, %d samples) -> %g (last %d s, %d samples): %+.2f%%%s\n",
				h, pid, what[w], mb, b0, b0 + win, nb, mf, win, nf, g, (g >= 1 ? " GROWTH" : "")
		}
	}
}' "$csv" >"$dir/growth.txt"
cat "$dir/growth.txt" | tee -a "$dir/summary.txt"
if grep -q GROWTH "$dir/growth.txt"; then
	if [ "$MIN" -ge "$GROWTH_MIN" ]; then
		bad "a madcmd grew by 1% or more after warm-up (growth.txt)"
	else
		note "growth not enforced in a run shorter than $GROWTH_MIN min (SOAK_GROWTH_MIN)"
	fi
fi

# The plot: one panel per measure, one line per host.
gp=$dir/samples.gp
{
	echo "set terminal png size 1200,1000 noenhanced"
	echo "set output '$dir/samples.png'"
	echo "set datafile separator ','"
	echo "set key autotitle columnhead left top"
	echo "set xlabel 'seconds'"
	echo "set multiplot layout 2,2 title 'madcm soak, $MIN min: $(date -u +%F)'"
	for m in rss_kb:2 fds:3 ids:4; do
		name=${m%:*}
		off=${m#*:}
		printf "set title '%s per madcmd'\nplot" "$name"
		k=0
		for h in $HOSTS; do
			[ $k -eq 0 ] || printf ","
			printf " '%s' using 1:%d with lines title '%s'" "$csv" $((2 + 4 * k + off)) "$h"
			k=$((k + 1))
		done
		echo
	done
	echo "set title 'at the SA'"
	echo "set yrange [0:*]"
	echo "set offsets 0, 0, 2, 0"
	echo "plot '$csv' using 1:19 with lines title 'ServiceRecords', '' using 1:20 with lines title 'multicast groups'"
	echo "unset multiplot"
} >"$gp"
gnuplot "$gp" 2>"$dir/gnuplot.err" || bad "gnuplot failed: $(cat "$dir/gnuplot.err")"

fs down >/dev/null 2>&1
trap - EXIT
if [ $fail -eq 0 ]; then
	note "PASS: soak $MIN min; samples $csv, plot $dir/samples.png"
else
	note "soak $MIN min FAILED; samples $csv, plot $dir/samples.png, logs $dir"
fi
exit $fail
