#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# A program that outlives its madcmd: the daemon killed with -9, the
# program's listener gets DEVICE_REMOVAL; it destroys it and listens again
# until a new madcmd (started on the same socket) serves it, then connects
# a new id to it through the new daemon (tests/integration/madcmd_again).
# Its new ids get new sessions: the port's CM session and the host's port
# space, as the kernel's rdma_cm serves new ids on a device added again.
. "$(dirname "$0")/sim_common.sh"
AGAIN=$top_builddir/tests/integration/madcmd_again
MADCMD=$top_builddir/madcmd/madcmd
[ -x "$MADCMD" ] || { echo "SKIP: madcmd not built"; exit 77; }
export MADCMD

fs up --gen b2b >"$FABSIM_DIR/up.log" 2>&1 || { cat "$FABSIM_DIR/up.log"; fail "fabsim up"; }
fs madcmd h1 start >/dev/null || fail "madcmd start"
out=$FABSIM_DIR/again.out
on_bg h1 "$AGAIN" 198.18.0.1 7480 >"$out" 2>&1
ap=$!
bg_pids="$bg_pids $ap"
wait_for "grep -q '^listening$' '$out'" 20 || { cat "$out" >&2; fail "madcmd_again did not listen"; }
fs madcmd h1 kill >/dev/null || fail "madcmd kill"
wait_for "grep -q '^removal$' '$out'" 20 || { cat "$out" >&2; fail "no DEVICE_REMOVAL when madcmd died"; }
sleep 1 # it tries meanwhile, and fails (no daemon): that must not stick
kill -0 "$ap" 2>/dev/null || { cat "$out" >&2; fail "madcmd_again gave up without a daemon"; }
fs madcmd h1 start >/dev/null || fail "madcmd start again"
wait "$ap" || { cat "$out" >&2; fail "madcmd_again through the new madcmd"; }
grep -q "^connected again$" "$out" || { cat "$out" >&2; fail "no connection through the new madcmd"; }
cat "$out"
echo PASS
