#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# ibv_devinfo -v on a simulated host shows the port as the SM set it: the
# LID, SM LID and GID that fabsim reports, state Active.
. "$(dirname "$0")/verbs_lib.sh"
fab_up --gen b2b
on h1 ibv_devinfo -v >"$vt_dir/devinfo" 2>&1 || { cat "$vt_dir/devinfo"; fail "ibv_devinfo"; }
cat "$vt_dir/devinfo" | sed -n '1,12p;/port:/,$p'
lid=$(fabsim hosts | awk '$1 == "h1" { for (i = 1; i < NF; i++) if ($i == "lid") print $(i + 1) }')
gid=$(fabsim hosts | awk '$1 == "h1" { for (i = 1; i < NF; i++) if ($i == "gid") print $(i + 1) }')
grep -q "state:.*PORT_ACTIVE" "$vt_dir/devinfo" || fail "port not active"
dl=$(awk '/port_lid:/ { print $2 }' "$vt_dir/devinfo")
[ "$dl" = "$lid" ] || fail "port_lid $dl, fabric says $lid"
sm=$(awk '/sm_lid:/ { print $2 }' "$vt_dir/devinfo")
[ -n "$sm" ] && [ "$sm" != 0 ] || fail "no SM LID"
grep -q "GID\[  0\]:.*$gid" "$vt_dir/devinfo" || fail "GID is not $gid"
grep -q "link_layer:.*InfiniBand" "$vt_dir/devinfo" || fail "link layer"
echo "PASS"
