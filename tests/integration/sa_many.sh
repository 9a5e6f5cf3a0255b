#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# 1,000 PathRecord queries outstanding at once from one process all
# complete, each with the path it asked for.
. "$(dirname "$0")/sa_lib.sh"
SA_MANY=$top_builddir/tests/integration/sa_many
[ -x "$SA_MANY" ] || skip "no $SA_MANY"
set -- $HOSTS
lids=""
for h in $HOSTS; do lids="$lids $(lid_of "$h")"; done
on "$1" "$SA_MANY" -n 1000 $lids || fail "not every query completed"
echo "PASS"
