#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# Topologies: ibsim's sample files load, and what ibnetdiscover prints of a
# simulated fabric loads back into the same fabric.
. "$(dirname "$0")/sim_common.sh"
FABSIMD=$top_builddir/sim/fabsimd
for f in /usr/share/doc/ibsim-utils/net-examples/net*; do
	[ -f "$f" ] || continue
	"$FABSIMD" --check "$f" >/dev/null || fail "ibsim sample $f refused"
done
fs up --gen fattree:8 >/dev/null || fail "fabsim up"
on h5 ibnetdiscover >"$FABSIM_DIR/snap.topo" || fail "ibnetdiscover"
fs down
[ "$("$FABSIMD" --check "$FABSIM_DIR/snap.topo")" = "44 nodes, 32 hosts" ] || fail "snapshot does not load back"
# the generator's own dump round-trips too
"$FABSIMD" --dump --gen star:5 >"$FABSIM_DIR/star.topo"
[ "$("$FABSIMD" --check "$FABSIM_DIR/star.topo")" = "6 nodes, 5 hosts" ] || fail "--dump does not load back"
fs up "$FABSIM_DIR/snap.topo" >/dev/null || fail "fabsim up on the snapshot"
[ "$(on h7 saquery NodeRecord | grep -c '^NodeRecord')" = 44 ] || fail "NodeRecords on the snapshot"
echo "PASS"
