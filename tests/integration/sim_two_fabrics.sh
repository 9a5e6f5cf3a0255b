#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# Two fabrics at once in two directories do not see each other: different
# topologies, separate SMs, separate counters; down stops only its own.
. "$(dirname "$0")/sim_common.sh"
other=$(mktemp -d "${TMPDIR:-/tmp}/fabsim-test2.XXXXXX")
trap 'cleanup; "$FABSIM" --dir "$other" down; rm -rf "$other"' EXIT
fs up --gen star:3 >/dev/null || fail "fabric 1"
"$FABSIM" --dir "$other" up --gen star:6 >/dev/null || fail "fabric 2"
[ "$(on h1 saquery NodeRecord | grep -c '^NodeRecord')" = 4 ] || fail "fabric 1 NodeRecords"
[ "$("$FABSIM" --dir "$other" run h1 -- saquery NodeRecord | grep -c '^NodeRecord')" = 7 ] ||
	fail "fabric 2 NodeRecords"
"$FABSIM" --dir "$other" down
"$FABSIM" --dir "$other" status >/dev/null 2>&1 && fail "fabric 2 still up after down"
[ "$(on h2 saquery NodeRecord | grep -c '^NodeRecord')" = 4 ] || fail "fabric 1 hurt by fabric 2's down"
echo "PASS"
