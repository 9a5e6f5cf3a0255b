#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# The simulator's fuzz seeds and reproducers (tests/data/fuzz_sim/), each
# replayed once through its target's standalone driver: all must pass
# (a reproducer added there keeps its bug fixed).
set -e
d=$top_srcdir/tests/data/fuzz_sim
FUZZ_ITERATIONS=0 "$top_builddir/tests/fuzz/fuzz_sim_topo" "$d"/topo_* \
	"$top_srcdir/sim/topologies/2sw4h.topo"
FUZZ_ITERATIONS=0 "$top_builddir/tests/fuzz/fuzz_sim_smp" "$d"/smp_*
