#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# OpenSM killed and restarted: the subnet comes back and SA answers again.
. "$(dirname "$0")/sim_common.sh"
fs up --gen star:4 >/dev/null || fail "fabsim up"
on h2 saquery NodeRecord | grep -q NodeRecord || fail "SA before restart"
pid=$(cat "$FABSIM_DIR/opensm.pid")
kill -9 "$pid"
# while it is gone, SA queries time out instead of hanging
on h2 timeout 20 saquery -t 200 NodeRecord >/dev/null 2>&1 && fail "SA answered without an SM"
fs sm start >/dev/null || fail "opensm restart"
[ "$(cat "$FABSIM_DIR/opensm.pid")" != "$pid" ] || fail "same opensm pid"
n=$(on h3 saquery NodeRecord | grep -c '^NodeRecord')
[ "$n" = 5 ] || fail "NodeRecord count after restart: $n"
on h4 ibstat | grep -q "State: Active" || fail "ports not Active after restart"
echo "PASS"
