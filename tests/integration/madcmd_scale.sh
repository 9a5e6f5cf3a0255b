#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# madcmd at scale (issue 43), counts asserted, never times:
#   1. 10,000 connections held through one madcmd: 10 bench/storm_worker
#      clients on h2 (through h2's madcmd), 1,000 connections each to
#      their own server on h1, one client at a time (1,000 in flight).
#      All established and held at once; h2's madcmd grows by at most
#      1 KiB per connection, both its malloc heap (heap_kib of
#      `madcm stat --daemon`) and its VmRSS, printed; once the clients
#      exit it holds no id.
#   2. 64 client processes on one host: 64 storm_workers on h2, 4
#      connections each to one server on h1: all established, no error,
#      and h2's madcmd holds no id once they exit.
# SCALE_WORKERS and SCALE_PER change the counts of part 1 (for a quick run).
. "$(dirname "$0")/sim_common.sh"
MADCM=$top_builddir/tools/madcm
MADCMD=$top_builddir/madcmd/madcmd
WORKER=$top_builddir/bench/storm_worker
[ -x "$MADCMD" ] || { echo "SKIP: madcmd not built"; exit 77; }
[ -x "$WORKER" ] || { echo "SKIP: storm_worker not built"; exit 77; }
W=${SCALE_WORKERS:-10} PER=${SCALE_PER:-1000}
N=$((W * PER))
LIMIT=1024 # bytes of daemon memory per held connection

fs up --gen star:2 --madcmd="$MADCMD" >"$FABSIM_DIR/up.log" 2>&1 || { cat "$FABSIM_DIR/up.log"; fail "fabsim up --madcmd"; }
out=$FABSIM_DIR/out
mkdir -p "$out"
touch "$out/go"
S1=198.18.0.1
mpid=$(cat "$FABSIM_DIR/h2/madcmd.pid") || fail "no madcmd pid for h2"

# stat_h2: `madcm stat --daemon` of h2's madcmd, in $out/stat.
stat_h2() { on h2 "$MADCM" stat --daemon >"$out/stat" 2>&1 || { cat "$out/stat" >&2; fail "madcm stat --daemon"; }; }
heap_kib() { stat_h2; sed -n 's/^heap_kib \([0-9]*\)$/\1/p' "$out/stat"; }
rss_kib() { awk '$1 == "VmRSS:" { print $2 }' "/proc/$mpid/status"; }
ids_h2() { stat_h2; sed -n 's/^# \([0-9]*\) ids$/\1/p' "$out/stat"; }
# worker HOST NAME PORT GO END EXPECT PEER...: a storm_worker in the background.
worker() {
	h=$1 nm=$2 port=$3 go=$4 end=$5 exp=$6
	shift 6
	on_bg "$h" "$MADCM" run "$WORKER" --name "$nm" --port "$port" --expect "$exp" --go "$go" \
		--end "$end" --timeout 300 "$@" >"$out/$nm.out" 2>&1 </dev/null
	bg_pids="$bg_pids $!"
	eval "pid_$nm=$!"
}
# wait_line FILE PATTERN SECONDS
wait_line() { wait_for "grep -q '$2' '$1'" "$3"; }
# reap NAME...: each worker exited with status 0.
reap() {
	for nm in "$@"; do
		eval "p=\$pid_$nm"
		wait "$p" || { tail -3 "$out/$nm.out" >&2; fail "$nm exited $?"; }
	done
}

# ---- 1. N connections through h2's madcmd ---------------------------
servers="" clients=""
k=0
while [ $k -lt "$W" ]; do
	worker h1 s$k $((7000 + k)) "$out/go" "$out/end1" "$PER"
	peers=$(awk -v n="$PER" -v p="$S1:$((7000 + k))" 'BEGIN { for (i = 0; i < n; i++) printf "%s ", p }')
	# shellcheck disable=SC2086 # one word per connection
	worker h2 c$k $((7100 + k)) "$out/go$k" "$out/end1" 0 $peers
	servers="$servers s$k" clients="$clients c$k"
	k=$((k + 1))
done
for nm in $servers $clients; do
	wait_line "$out/$nm.out" " listening " 60 || fail "$nm does not listen"
done
# A sanitizer build's allocator (redzones, quarantine; mallinfo2 answers
# nothing) is not what a host runs: memory is measured in plain builds.
measure=${MADCM_SANITIZED:+no}
if [ -z "$measure" ]; then
	heap0=$(heap_kib) rss0=$(rss_kib)
	[ -n "$heap0" ] && [ -n "$rss0" ] || fail "no heap_kib or VmRSS: $(tail -2 "$out/stat")"
fi
k=0
while [ $k -lt "$W" ]; do
	touch "$out/go$k"
	wait_line "$out/c$k.out" "^summary " 300 || fail "c$k did not finish"
	grep -q "^summary c$k active $PER/$PER .* errors 0$" "$out/c$k.out" ||
		fail "c$k: $(grep '^summary' "$out/c$k.out")"
	k=$((k + 1))
done
for nm in $servers; do
	wait_line "$out/$nm.out" "^summary " 60 || fail "$nm did not get its connections"
	grep -q "^summary $nm active 0/0 passive $PER/$PER " "$out/$nm.out" ||
		fail "$nm: $(grep '^summary' "$out/$nm.out")"
done
if [ -z "$measure" ]; then
	heap1=$(heap_kib) rss1=$(rss_kib)
else
	stat_h2
fi
held=$(grep -c ' conn .* ESTABLISHED ' "$out/stat")
[ "$held" = "$N" ] || fail "h2's madcmd holds $held established connections, not $N"
if [ -z "$measure" ]; then
	hb=$(((heap1 - heap0) * 1024 / N)) rb=$(((rss1 - rss0) * 1024 / N))
	echo "madcmd h2: $held connections held; heap ${heap0} -> ${heap1} KiB ($hb B/conn), VmRSS ${rss0} -> ${rss1} KiB ($rb B/conn)"
	[ "$hb" -le "$LIMIT" ] || fail "madcmd heap grows $hb bytes per connection (limit $LIMIT)"
	[ "$rb" -le "$LIMIT" ] || fail "madcmd VmRSS grows $rb bytes per connection (limit $LIMIT)"
else
	echo "madcmd h2: $held connections held (memory not measured: a sanitizer build)"
fi
touch "$out/end1"
# shellcheck disable=SC2086
reap $clients $servers
wait_for "[ \"\$('$FABSIM' --dir '$FABSIM_DIR' run h2 -- '$MADCM' stat --daemon | sed -n 's/^# \([0-9]*\) ids\$/\1/p')\" = 0 ]" 60 ||
	fail "h2's madcmd still holds $(ids_h2) ids after its clients exited"
echo "ok: $N connections established and held through one madcmd, all released"

# ---- 2. 64 client processes on h2 -----------------------------------
P=64 C=4
worker h1 srv 7300 "$out/go" "$out/end2" $((P * C))
wait_line "$out/srv.out" " listening " 60 || fail "srv does not listen"
many=""
k=0
while [ $k -lt $P ]; do
	# shellcheck disable=SC2046 # one word per connection
	worker h2 p$k $((7200 + k)) "$out/go2" "$out/end2" 0 $(yes "$S1:7300" | head -n $C)
	many="$many p$k"
	k=$((k + 1))
done
for nm in $many; do
	wait_line "$out/$nm.out" " listening " 120 || fail "$nm does not listen"
done
touch "$out/go2"
for nm in $many; do
	wait_line "$out/$nm.out" "^summary " 300 || fail "$nm did not finish"
	grep -q "^summary $nm active $C/$C .* errors 0$" "$out/$nm.out" ||
		fail "$nm: $(grep '^summary' "$out/$nm.out")"
done
wait_line "$out/srv.out" "^summary " 60 || fail "srv did not get its connections"
grep -q "^summary srv active 0/0 passive $((P * C))/$((P * C)) " "$out/srv.out" ||
	fail "srv: $(grep '^summary' "$out/srv.out")"
[ "$(ids_h2)" = $((P * C + P)) ] || fail "h2's madcmd holds $(ids_h2) ids, not $((P * C)) connections and $P listeners"
touch "$out/end2"
# shellcheck disable=SC2086
reap $many srv
wait_for "[ \"\$('$FABSIM' --dir '$FABSIM_DIR' run h2 -- '$MADCM' stat --daemon | sed -n 's/^# \([0-9]*\) ids\$/\1/p')\" = 0 ]" 60 ||
	fail "h2's madcmd still holds $(ids_h2) ids after its 64 clients exited"
echo "ok: $P client processes on h2, $((P * C)) connections, all established and released"
