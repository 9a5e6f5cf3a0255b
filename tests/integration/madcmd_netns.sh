#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# madcmd keeps one port space per network namespace of its programs, as
# the kernel's rdma_cm does: on the simulated fabric (one madcmd on h1),
#   - two programs in two namespaces (unshare -n) bind the same address and
#     port through madcmd: both succeed; one of them listens on it;
#   - two in one namespace: the second gets EADDRINUSE (EADDRNOTAVAIL for
#     a wildcard), in the new namespace as in the fabric's;
#   - a port freed in one namespace does not free it in the other;
#   - two namespaces, each with an address of its own on its `lo` (and in
#     the fabric's address file, for h1's GID), both listen on one port
#     (one engine listener, shared): a client on h2 reaches the server of
#     the namespace that holds the address it connects to, and one to an
#     address no listening namespace holds is refused.
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

# 4. One port listened on in two namespaces, REQs routed by address.
command -v ip >/dev/null 2>&1 || skip_missing ip iproute2
"$FABSIM" --dir "$FABSIM_DIR" run h1 -- unshare -n sleep 600 &
ns2_holder=$!
bg_pids="$bg_pids $ns2_holder"
wait_for "[ \"\$(readlink /proc/$ns2_holder/ns/net)\" != \"\$(readlink /proc/self/ns/net)\" ]" 20 ||
	fail "no second namespace holder"
in_held2_bg() { "$FABSIM" --dir "$FABSIM_DIR" run h1 -- nsenter --net="/proc/$ns2_holder/ns/net" -- "$@" & }
NS_A=198.18.100.1
NS_B=198.18.100.2
NS_NONE=198.18.100.3
gid1=$(awk -v a=$H1 '$1 == a { print $2; exit }' "$FABSIM_DIR/hosts")
[ -n "$gid1" ] || fail "no GID of h1 in $FABSIM_DIR/hosts"
printf '%s %s\n%s %s\n%s %s\n' $NS_A "$gid1" $NS_B "$gid1" $NS_NONE "$gid1" >>"$FABSIM_DIR/hosts"
nsenter --net="/proc/$ns_holder/ns/net" -- sh -c "ip link set lo up && ip addr add $NS_A/32 dev lo" ||
	fail "cannot give the first namespace $NS_A"
nsenter --net="/proc/$ns2_holder/ns/net" -- sh -c "ip link set lo up && ip addr add $NS_B/32 dev lo" ||
	fail "cannot give the second namespace $NS_B"
in_held_bg "$HOLD" server 7700 1 >"$out/sa" 2>&1
sa=$!
bg_pids="$bg_pids $sa"
wait_for "grep -q '^listening' '$out/sa'" 20 || { cat "$out/sa" >&2; fail "server in the first namespace"; }
in_held2_bg "$HOLD" server 7700 1 >"$out/sb" 2>&1
sb=$!
bg_pids="$bg_pids $sb"
wait_for "grep -q '^listening' '$out/sb'" 20 || { cat "$out/sb" >&2; fail "server in the second namespace: a shared listener"; }
run_bg h2 "$HOLD" client $NS_B 7700 1 >"$out/cb" 2>&1
cb=$!
bg_pids="$bg_pids $cb"
wait_for "grep -q '^established 1' '$out/sb'" 30 ||
	{ cat "$out/sb" "$out/cb" >&2; fail "the client of $NS_B did not reach the second namespace's server"; }
grep -q "^established" "$out/sa" && { cat "$out/sa" >&2; fail "the first namespace's server got $NS_B's client"; }
run_bg h2 "$HOLD" client $NS_A 7700 1 >"$out/ca" 2>&1
ca=$!
bg_pids="$bg_pids $ca"
wait_for "grep -q '^established 1' '$out/sa'" 30 ||
	{ cat "$out/sa" "$out/ca" >&2; fail "the client of $NS_A did not reach the first namespace's server"; }
echo "ok: one port listened on in two namespaces, each client at its address's server"
# An address no listening namespace holds: refused (REJ), no server takes it.
run h2 "$HOLD" client $NS_NONE 7700 1 >"$out/cn" 2>&1 && { cat "$out/cn" >&2; fail "a client of $NS_NONE connected"; }
grep -q "^connected" "$out/cn" && { cat "$out/cn" >&2; fail "a client of $NS_NONE connected"; }
grep -q "REJECTED\|UNREACHABLE" "$out/cn" || { cat "$out/cn" >&2; fail "a client of $NS_NONE: no REJ"; }
echo "ok: an address of no listening namespace is refused"
echo "PASS"
