#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# Address resolution on the simulated fabric (2sw4h, OpenSM):
#  - `fabsim up` wrote DIR/hosts and `fabsim run` points MADCM_ADDR_FILE at
#    it: madcm_addrs_* resolve host names, IPv4 and IPv6 addresses to GIDs
#    and a port's GID back to its own addresses;
#  - ServiceRecords (lib/addr_sa.h): addresses registered on h1 resolve to
#    h1's GID from h2, an unknown address gives ENOENT, and a deleted one
#    is gone while the port's other address stays.
. "$(dirname "$0")/sa_lib.sh"
TOOL=$top_builddir/tests/integration/addr_sa_tool
[ -x "$TOOL" ] || skip "no $TOOL"
set -- $HOSTS
[ $# -ge 2 ] || skip "fewer than two hosts"
h1=$1 h2=$2
gid1=$(gid_of "$h1")
want=$("$TOOL" canon "$gid1") || fail "no GID for $h1 in: $(cat "$FAB/up.txt")"

# --- the fabric's address file
[ -f "$FAB/hosts" ] || fail "fabsim up wrote no $FAB/hosts"
grep -q "^198\.18\.0\.1 $gid1\$" "$FAB/hosts" || fail "no IPv4 line for $h1: $(cat "$FAB/hosts")"
grep -q "^2001:db8::1 $gid1\$" "$FAB/hosts" || fail "no IPv6 line for $h1"
on "$h2" sh -c 'test "$MADCM_ADDR_FILE" = "$1"' sh "$FAB/hosts" || fail "fabsim run: MADCM_ADDR_FILE not $FAB/hosts"
MADCM_ADDR_FILE=/elsewhere on "$h2" sh -c 'test "$MADCM_ADDR_FILE" = /elsewhere' ||
	fail "fabsim run overrode a MADCM_ADDR_FILE already set"
got=$(on "$h2" "$TOOL" file 198.18.0.1) || fail "file: 198.18.0.1 unknown"
[ "$got" = "$want" ] || fail "file: 198.18.0.1 -> $got, want $want"
got=$(on "$h2" "$TOOL" file 2001:db8::1) || fail "file: 2001:db8::1 unknown"
[ "$got" = "$want" ] || fail "file: 2001:db8::1 -> $got, want $want"
got=$(on "$h2" "$TOOL" file "$h1" | tr '\n' ' ') || fail "file: name $h1 unknown"
[ "$got" = "198.18.0.1 2001:db8::1 " ] || fail "file: $h1 -> '$got'"
on "$h2" "$TOOL" file 198.18.99.99 2>/dev/null
[ $? -eq 2 ] || fail "file: an unknown address did not give ENOENT"
on "$h2" "$TOOL" file no-such-host 2>/dev/null
[ $? -eq 2 ] || fail "file: an unknown name did not give ENOENT"
got=$(on "$h2" "$TOOL" local | tr '\n' ' ') || fail "local: $h2 has no address"
[ "$got" = "198.18.0.2 2001:db8::2 " ] || fail "local: $h2 -> '$got'"
MADCM_ADDR_FILE=$FAB/missing on "$h2" "$TOOL" file 198.18.0.1 2>"$FAB/err.txt"
[ $? -eq 1 ] && grep -q "$FAB/missing" "$FAB/err.txt" || fail "a missing MADCM_ADDR_FILE was not an error"
printf 'h1 fe80::1\n198.18.0.1 not-a-gid\n' >"$FAB/broken"
MADCM_ADDR_FILE=$FAB/broken on "$h2" "$TOOL" file 198.18.0.1 2>"$FAB/err.txt"
grep -q "$FAB/broken:2: bad GID" "$FAB/err.txt" || fail "broken file: $(cat "$FAB/err.txt")"
echo "PASS: address file: names, IPv4, IPv6, own addresses, errors"

# --- SA ServiceRecords: registered on h1, resolved from h2
# The SA alone: no address file
export MADCM_ADDR_FILE=
on "$h1" "$TOOL" register 198.18.0.1 2001:db8::1 || fail "register on $h1"
got=$(on "$h2" "$TOOL" resolve 198.18.0.1) || fail "resolve 198.18.0.1 from $h2"
[ "$got" = "$want" ] || fail "SA: 198.18.0.1 -> $got, want $want"
got=$(on "$h2" "$TOOL" resolve 2001:db8::1) || fail "resolve 2001:db8::1 from $h2"
[ "$got" = "$want" ] || fail "SA: 2001:db8::1 -> $got, want $want"
got=$(on "$h2" "$TOOL" resolve ::ffff:198.18.0.1) || fail "resolve ::ffff:198.18.0.1 from $h2"
[ "$got" = "$want" ] || fail "SA: ::ffff:198.18.0.1 -> $got"
on "$h2" "$TOOL" resolve 198.18.77.77 2>/dev/null
[ $? -eq 2 ] || fail "SA: an unknown address did not give ENOENT"
on "$h2" "$TOOL" resolve 2001:db8::77 2>/dev/null
[ $? -eq 2 ] || fail "SA: an unknown IPv6 address did not give ENOENT"
# the records are readable with saquery
if have_tool saquery infiniband-diags; then
	on "$h2" saquery -S 2>/dev/null | grep -q "madcm:ip:198.18.0.1" || fail "saquery does not show madcm:ip:198.18.0.1"
fi
on "$h1" "$TOOL" unregister 198.18.0.1 || fail "unregister on $h1"
on "$h2" "$TOOL" resolve 198.18.0.1 2>/dev/null
[ $? -eq 2 ] || fail "SA: 198.18.0.1 still resolves after unregister"
got=$(on "$h2" "$TOOL" resolve 2001:db8::1) || fail "SA: the port's other address went too"
[ "$got" = "$want" ] || fail "SA: 2001:db8::1 -> $got after unregistering the IPv4 one"
echo "PASS: ServiceRecords: register on $h1, resolve from $h2, unknown, delete"
