#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# madcmd keeps one port space per network namespace of its programs, as
# the kernel's rdma_cm does: on the simulated fabric (one madcmd on h1),
#   - two programs in two namespaces (unshare -n) bind the same address and
#     port through madcmd: both succeed; one of them listens on it;
#   - two in one namespace: the second gets EADDRINUSE (EADDRNOTAVAIL for
#     a wildcard), in the new namespace as in the fabric's;
#   - a port freed in one namespace does not free it in the other.
# The daemon tells a program's namespace by its /proc/PID/ns/net.  Skipped
# where no network namespace can be made (not root, no CAP_SYS_ADMIN).
. "$(dirname "$0")/sim_common.sh"
MADCMD=$top_builddir/madcmd/madcmd
HOLD=$top_builddir/tests/integration/madcmd_hold
[ -x "$MADCMD" ] || { echo "SKIP: madcmd not built"; exit 77; }
command -v unshare >/dev/null 2>&1 || skip_missing unshare util-linux
unshare -n true 2>/dev/null || skip_env "unshare -n: no network namespaces here (not root?)"

fs up --gen star:2 --madcmd="$MADCMD" >"$FABSIM_DIR/up.log" 2>&1 || { cat "$FABSIM_DIR/up.log"; fail "fabsim up --madcmd"; }
[ -S "$FABSIM_DIR/h1/madcmd.sock" ] || { cat "$FABSIM_DIR/up.log" >&2; fail "no madcmd on h1"; }
H1=198.18.0.1
out=$FABSIM_DIR/out
mkdir -p "$out"
run() { h=$1; shift; "$FABSIM" --dir "$FABSIM_DIR" run "$h" -- "$@"; }
# in_ns HOST CMD...: CMD in a new network namespace of its own, on HOST.
in_ns() { h=$1; shift; "$FABSIM" --dir "$FABSIM_DIR" run "$h" -- unshare -n "$@"; }
# background variants: $! is the command itself (fabsim run execs it)
run_bg() { h=$1; shift; "$FABSIM" --dir "$FABSIM_DIR" run "$h" -- "$@" & }
# A holder of a namespace: a program that joins it binds through madcmd
# from there (nsenter), as a second program of that namespace.
"$FABSIM" --dir "$FABSIM_DIR" run h1 -- unshare -n sleep 600 &
ns_holder=$!
bg_pids="$bg_pids $ns_holder"
wait_for "[ \"\$(readlink /proc/$ns_holder/ns/net)\" != \"\$(readlink /proc/self/ns/net)\" ]" 20 ||
	fail "no namespace holder"
in_held() { "$FABSIM" --dir "$FABSIM_DIR" run h1 -- nsenter --net="/proc/$ns_holder/ns/net" -- "$@"; }
in_held_bg() { "$FABSIM" --dir "$FABSIM_DIR" run h1 -- nsenter --net="/proc/$ns_holder/ns/net" -- "$@" & }

# 1. The same address and port in the fabric's namespace and in a new one.
run_bg h1 "$HOLD" bind $H1 7600 listen >"$out/a" 2>&1
a=$!
bg_pids="$bg_pids $a"
wait_for "grep -q '^listen' '$out/a'" 20 || { cat "$out/a" >&2; fail "bind+listen 7600 in the first namespace"; }
grep -q "^listening 7600" "$out/a" || { cat "$out/a" >&2; fail "listen of 7600 in the first namespace"; }
in_held_bg "$HOLD" bind $H1 7600 hold >"$out/b" 2>&1
b=$!
bg_pids="$bg_pids $b"
wait_for "grep -q . '$out/b'" 20 || fail "no answer to the bind in the second namespace"
grep -q "^bound 7600" "$out/b" || { cat "$out/b" >&2; fail "bind of 7600 in a second namespace"; }
echo "ok: one address and port bound in two namespaces (listening in one)"

# 2. A second program of each namespace: EADDRINUSE.
run h1 "$HOLD" bind $H1 7600 >"$out/a2" 2>&1
grep -q "bind: EADDRINUSE" "$out/a2" || { cat "$out/a2" >&2; fail "second bind in the first namespace: no EADDRINUSE"; }
in_held "$HOLD" bind $H1 7600 >"$out/b2" 2>&1
grep -q "bind: EADDRINUSE" "$out/b2" || { cat "$out/b2" >&2; fail "second bind in the second namespace: no EADDRINUSE"; }
in_held "$HOLD" bind 0.0.0.0 7600 >"$out/b3" 2>&1
grep -q "bind: EADDRNOTAVAIL" "$out/b3" || { cat "$out/b3" >&2; fail "wildcard bind in the second namespace: no EADDRNOTAVAIL"; }
echo "ok: EADDRINUSE within each namespace"

# 3. A third namespace binds it too; freeing it in one leaves the others.
in_ns h1 "$HOLD" bind $H1 7600 >"$out/c" 2>&1
grep -q "^bound 7600" "$out/c" || { cat "$out/c" >&2; fail "bind of 7600 in a third namespace"; }
kill -9 $a
wait $a 2>/dev/null
wait_for "'$FABSIM' --dir '$FABSIM_DIR' run h1 -- '$HOLD' bind $H1 7600 >/dev/null" 20 ||
	fail "7600 not freed in the first namespace by its holder's exit"
in_held "$HOLD" bind $H1 7600 >"$out/b4" 2>&1
grep -q "bind: EADDRINUSE" "$out/b4" || { cat "$out/b4" >&2; fail "7600 freed in the second namespace by the first's exit"; }
echo "ok: ports are freed per namespace"
echo "PASS"
