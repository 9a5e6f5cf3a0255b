#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# madcm torture (madcm-torture(1)) on the simulator, h2 against a CM on h1:
#   - against madcm's engine (tests/integration/torture_target): every
#     case answered as required, in the table and in --json;
#   - the same target accepting late (--accept-delay): repeated REQs get
#     the delayed MRA, still one connection;
#   - against the test double (torture_target_broken: a copy of
#     cm/state.c whose IDLE row drops a REP for no connection instead of
#     answering REJ "invalid comm ID"): torture exits 1 and reports that
#     case, and only that one, as not answered as required.
. "$(dirname "$0")/sim_common.sh"
MADCM=$top_builddir/tools/madcm
TARGET=$top_builddir/tests/integration/torture_target
BROKEN=$top_builddir/tests/integration/torture_target_broken
[ -x "$TARGET" ] && [ -x "$BROKEN" ] || { echo "SKIP: torture targets not built"; exit 77; }

fs up --gen b2b >"$FABSIM_DIR/up.log" 2>&1 || { cat "$FABSIM_DIR/up.log"; fail "fabsim up"; }
G1=$(fs hosts | awk '$1 == "h1" { for (i = 1; i < NF; i++) if ($i == "gid") print $(i + 1); exit }')
[ -n "$G1" ] || fail "no GID for h1"
out=$FABSIM_DIR/out
mkdir -p "$out"
ncases=$("$MADCM" torture --list | grep -c '^[a-z]')
[ "$ncases" -ge 30 ] || fail "only $ncases cases listed"

# start_target NAME PROGRAM [ARGS]: run it on h1, wait until it listens.
start_target() {
	name=$1
	shift
	on_bg h1 "$@" >"$out/$name.target" 2>&1
	tp=$!
	bg_pids="$bg_pids $tp"
	wait_for "grep -q ready '$out/$name.target'" 20 || fail "$name: target did not start"
}
stop_target() {
	kill "$tp" 2>/dev/null
	wait "$tp" 2>/dev/null
}
torture() {
	name=$1
	shift
	timeout 600 "$FABSIM" --dir "$FABSIM_DIR" run h2 -- "$MADCM" torture "$@" "$G1" \
		>"$out/$name.out" 2>"$out/$name.err"
}

# 1. madcm's engine: every case as required (JSON and table).
start_target good "$TARGET"
torture good-json --json
rc=$?
[ $rc -eq 0 ] || { cat "$out/good-json.out" "$out/good-json.err" >&2; fail "torture exit $rc"; }
n=$(grep -c '"result": "as-required"' "$out/good-json.out")
[ "$n" -eq "$ncases" ] || { cat "$out/good-json.out" >&2; fail "$n of $ncases as required"; }
grep -q "\"summary\": {\"as-required\": $ncases, \"deviated\": 0, \"silent\": 0, \"target-died\": 0" \
	"$out/good-json.out" || fail "JSON summary"
torture good-table --case stale-qp --case req-in-timewait --case rep-unknown-id
[ $? -eq 0 ] || { cat "$out/good-table.out" >&2; fail "table run"; }
grep -q '^stale-qp  *as-required  *REJ reason 10 (stale_conn) rejecting REQ; DREQ for the old' \
	"$out/good-table.out" || { cat "$out/good-table.out" >&2; fail "stale-qp row"; }
grep -q 'required: REJ reason 10' "$out/good-table.out" || fail "required text"
grep -q '^3 as-required, 0 deviated, 0 silent, 0 target-died, 0 skipped$' \
	"$out/good-table.out" || fail "table summary"
stop_target
echo "ok: madcm's engine: $ncases of $ncases as required"

# 2. Accepting late: the repeats of a REQ get the delayed MRA.
start_target delay "$TARGET" --accept-delay 500
torture delay --case dup-req-before-rep --case dup-req-after-rep --case handshake
[ $? -eq 0 ] || { cat "$out/delay.out" >&2; fail "delayed accept"; }
grep -Eq '^dup-req-before-rep +as-required +1 REP, [1-9][0-9]* MRA, one comm ID' "$out/delay.out" ||
	{ cat "$out/delay.out" >&2; fail "no delayed MRA"; }
stop_target
echo "ok: delayed MRA"

# 3. The broken engine is caught, and only where it is broken.
start_target broken "$BROKEN"
torture broken --json
rc=$?
[ $rc -eq 1 ] || { cat "$out/broken.out" >&2; fail "torture exit $rc against the broken engine"; }
grep -q '"name": "rep-unknown-id".*"result": "silent"' "$out/broken.out" ||
	{ cat "$out/broken.out" >&2; fail "broken REP row not reported"; }
n=$(grep -c '"result": "as-required"' "$out/broken.out")
[ "$n" -eq $((ncases - 1)) ] || { cat "$out/broken.out" >&2; fail "broken: $n as required"; }
stop_target
echo "ok: the broken engine is caught (rep-unknown-id: silent)"
exit 0
