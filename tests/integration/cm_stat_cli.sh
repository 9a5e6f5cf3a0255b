#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# madcm stat on a snapshot written by a real engine (cm_stat_gen): the
# counters table, the per-state count, --conns, --raw, and the errors.
# Needs no fabric.
set -u

top_builddir=${top_builddir:-.}
MADCM=$top_builddir/tools/madcm
GEN=$top_builddir/tests/integration/cm_stat_gen
tmp=$(mktemp -d "${TMPDIR:-/tmp}/cm_stat_cli.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM
failures=0

fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
ok() { echo "ok: $*"; }
# has PATTERN DESCRIPTION: grep the last output
has() { if grep -q -- "$1" "$tmp/out"; then ok "$2"; else fail "$2"; cat "$tmp/out"; fi; }

[ -x "$MADCM" ] && [ -x "$GEN" ] || { echo "SKIP: build tools/madcm and $GEN"; exit 77; }

"$GEN" "$tmp/cm.stat" || fail "cm_stat_gen"
[ -s "$tmp/cm.stat" ] && ok "snapshot written through MADCM_STAT_FILE" || fail "no snapshot"

"$MADCM" stat "$tmp/cm.stat" >"$tmp/out" 2>&1 && ok "exit 0" || fail "exit status"
has '^REQ  *0  *3 ' "REQ: 3 received (the lost one was retried)"
has '^REP  *3 ' "REP: 3 sent"
has '^conns live 3 ' "summary: 3 live connections"
has '^DREQ  *0  *1 ' "DREQ received"
has 'ESTABLISHED 2' "two connections established"
has 'TIMEWAIT 1' "one in TimeWait"

MADCM_STAT_FILE="$tmp/cm.stat" "$MADCM" stat --conns >"$tmp/out" 2>&1 || fail "--conns via env"
has 'passive' "--conns lists connections"
has '0x000101' "--conns shows the peer QPN"

"$MADCM" stat --raw "$tmp/cm.stat" >"$tmp/out" 2>&1
if cmp -s "$tmp/out" "$tmp/cm.stat"; then ok "--raw prints the file"; else fail "--raw"; fi

"$MADCM" stat "$tmp/none" >"$tmp/out" 2>&1
[ $? -eq 1 ] && ok "missing file: exit 1" || fail "missing file status"
echo hello >"$tmp/bad"
"$MADCM" stat "$tmp/bad" >"$tmp/out" 2>&1
[ $? -eq 1 ] && ok "not a snapshot: exit 1" || fail "bad file status"
env -u MADCM_STAT_FILE "$MADCM" stat >"$tmp/out" 2>&1
[ $? -eq 2 ] && ok "no file: exit 2" || fail "usage status"

[ $failures -eq 0 ] || { echo "$failures failure(s)"; exit 1; }
exit 0
