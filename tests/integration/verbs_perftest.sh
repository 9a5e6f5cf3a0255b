#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# perftest with default RC and the new post-send API (ibv_wr_*), between
# two simulated hosts.
. "$(dirname "$0")/verbs_lib.sh"
fab_up --gen b2b
rc=0
pair h1 h2 send_lat ib_send_lat -p "$(vt_port 11)" -n 200 || rc=1
pair h1 h2 write_bw ib_write_bw -p "$(vt_port 12)" -n 200 || rc=1
pair h1 h2 read_lat ib_read_lat -p "$(vt_port 13)" -n 200 || rc=1
pair h1 h2 atomic_lat ib_atomic_lat -p "$(vt_port 14)" -n 200 || rc=1
pair h1 h2 write_lat_old ib_write_lat -p "$(vt_port 15)" -n 200 --use_old_post_send || rc=1
[ $rc -eq 0 ] && echo PASS
exit $rc
