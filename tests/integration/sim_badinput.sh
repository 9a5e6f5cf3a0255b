#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# Bad input: malformed topologies are refused with file:line and a reason;
# bad MADs from a client are dropped and counted; garbage on the socket
# does not kill the daemon.
. "$(dirname "$0")/sim_common.sh"
FABSIMD=$top_builddir/sim/fabsimd
t=$FABSIM_DIR/bad.topo
check_bad() { # $1: expected line, $2: expected text, stdin: topology
	cat >"$t"
	err=$("$FABSIMD" --check "$t" 2>&1) && fail "accepted bad topology ($2)"
	echo "$err" | grep -q "^$t:$1: .*$2" || fail "want '$t:$1: ...$2', got: $err"
}
printf 'Switch 8 "s1"\n[1] "nowhere"[1]\n\nHca 1 "h1"\n[1] "s1"[2]\n' | check_bad 2 "unknown node"
printf 'Switch 8 "s1"\n[9] "h1"[1]\n\nHca 1 "h1"\n[1] "s1"[9]\n' | check_bad 2 "out of range"
printf 'Switch 8 "s1"\n[1] "h1"[1]\n[2] "h1"[1]\n\nHca 1 "h1"\n' | check_bad 3 "conflicts"
printf 'Switch 8 "s1"\nbogus line here\n' | check_bad 2 "unknown line"
printf 'Hca 1 "h1"\nHca 1 "h1"\n' | check_bad 2 "duplicate node"
printf 'Switch x "s1"\n' | check_bad 1 "number of ports"
printf '[1] "a"[1]\n' | check_bad 1 "before any node"
fs up "$t" >/dev/null 2>&1 && fail "fabsim up accepted a bad topology"

fs up --gen star:2 --no-sm >/dev/null || fail "fabsim up"
"$top_builddir/tests/integration/sim_fuzz_proto" 400 7 || fail "fuzz"
fs status >"$FABSIM_DIR/status" || fail "daemon died"
bad=$(awk '$1 == "client_bad" { print $2 }' "$FABSIM_DIR/status")
proto=$(awk '$1 == "proto_bad" { print $2 }' "$FABSIM_DIR/status")
[ "$bad" -gt 0 ] || fail "truncated/oversize MADs not counted"
[ "$proto" -gt 0 ] || fail "protocol garbage not counted"
echo "PASS (client_bad $bad, proto_bad $proto)"
