#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# Eight threads of a fresh process make its first CM calls at once (bind
# and listen, each on its own port), 20 processes in a row, in-process on
# madcm's librdmacm.so.1, then 5 more through madcmd: every listen
# succeeds.  The port's CM agent is
# opened once; a second open racing the first used to fail ("another
# process owns the port's CM class") and fail its caller.
. "$(dirname "$0")/sim_common.sh"
MADCM=$top_builddir/tools/madcm
PROG=$top_builddir/tests/integration/first_use_threads
[ -x "$PROG" ] || { echo "SKIP: first_use_threads not built"; exit 77; }

fs up --gen b2b >"$FABSIM_DIR/up.log" 2>&1 || { cat "$FABSIM_DIR/up.log"; fail "fabsim up"; }
for i in $(seq 1 20); do
	timeout 60 "$FABSIM" --dir "$FABSIM_DIR" run h1 -- \
		"$MADCM" run "$PROG" 198.18.0.1 $((7800 + i * 10)) 8 >"$FABSIM_DIR/out" 2>&1 ||
		{ cat "$FABSIM_DIR/out" >&2; fail "run $i: not every thread listened"; }
	grep -qx "listening 8" "$FABSIM_DIR/out" || { cat "$FABSIM_DIR/out" >&2; fail "run $i"; }
done
echo "ok: 20 processes, 8 threads each making the first CM call at once: all listened"
fs madcmd h1 start >/dev/null || fail "madcmd start h1"
for i in $(seq 1 5); do
	timeout 60 "$FABSIM" --dir "$FABSIM_DIR" run h1 -- \
		"$MADCM" run "$PROG" 198.18.0.1 $((8100 + i * 10)) 8 >"$FABSIM_DIR/out" 2>&1 ||
		{ cat "$FABSIM_DIR/out" >&2; fail "madcmd run $i: not every thread listened"; }
done
echo "ok: the same through madcmd, 5 processes"
