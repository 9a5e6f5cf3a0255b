#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# UD multicast along the MFTs OpenSM programmed: three hosts join a group
# through the SA; h1 and h2 attach a QP and get every datagram h3 sends;
# a QP on h3 that joined but did not attach gets none.
. "$(dirname "$0")/verbs_lib.sh"
fab_up --gen star:3
g=ff12:1405:ffff:0000:0000:0000:0000:$(printf %04x $(($$ % 65536)))
bg_on h1 "$VERBS_CHECK" mcast-recv "$g" 6 >"$vt_dir/r1" 2>&1
p1=$!
bg_on h2 "$VERBS_CHECK" mcast-recv "$g" 6 >"$vt_dir/r2" 2>&1
p2=$!
bg_on h3 "$VERBS_CHECK" mcast-recv "$g" 6 noattach >"$vt_dir/r3" 2>&1
p3=$!
for f in r1 r2 r3; do
	i=0
	until grep -q ready "$vt_dir/$f" 2>/dev/null; do
		i=$((i + 1))
		[ $i -lt 100 ] || { cat "$vt_dir/$f"; fail "$f did not join"; }
		sleep 0.1
	done
done
sleep 0.5 # let OpenSM program the MFTs for the new members
on h3 "$VERBS_CHECK" mcast-send "$g" 5 || fail "send"
wait "$p1" "$p2" "$p3"
cat "$vt_dir/r1" "$vt_dir/r2" "$vt_dir/r3"
grep -q "received 5" "$vt_dir/r1" || fail "h1 did not get 5"
grep -q "received 5" "$vt_dir/r2" || fail "h2 did not get 5"
grep -q "received 0" "$vt_dir/r3" || fail "h3 (not attached) got datagrams"
echo PASS
