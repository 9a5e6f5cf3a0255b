#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# M_Key: OpenSM protects every port (m_key, level 2) and still brings the
# subnet up; SMPs without the key get no answer and count a violation,
# with the key they work.
. "$(dirname "$0")/sim_common.sh"
FABSIM_OSM_SET="m_key 0x1234;m_key_protection_level 2" fs up --gen star:3 >/dev/null || fail "fabsim up"
q() { on h2 smpquery -K "$@" -D portinfo 0 1 2>&1; }
q -y 0x1234 | grep -q "^Mkey:\.*0x0000000000001234" || fail "PortInfo with the M_Key"
q -t 200 | grep -q "^Mkey" && fail "PortInfo without the M_Key answered at level 2"
q -y 0x1234 | grep -q "^MkeyViolations:\.*[1-9]" || fail "violation not counted"
[ "$(on h3 saquery NodeRecord | grep -c '^NodeRecord')" = 4 ] || fail "SA under M_Key protection"
echo "PASS"
