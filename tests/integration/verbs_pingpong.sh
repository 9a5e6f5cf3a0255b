#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# Debian's unmodified ibv_{rc,uc,ud,srq}_pingpong between two simulated
# hosts: server on h1, client on h2, QP data exchanged over TCP.
. "$(dirname "$0")/verbs_lib.sh"
fab_up --gen b2b
rc=0
pair h1 h2 rc ibv_rc_pingpong -p "$(vt_port 1)" -n 200 || rc=1
pair h1 h2 rc-events ibv_rc_pingpong -p "$(vt_port 2)" -n 200 -e -s 10000 || rc=1
pair h1 h2 uc ibv_uc_pingpong -p "$(vt_port 3)" -n 200 || rc=1
pair h1 h2 ud ibv_ud_pingpong -p "$(vt_port 4)" -n 200 || rc=1
pair h1 h2 srq ibv_srq_pingpong -p "$(vt_port 5)" -n 200 || rc=1
# Completion events, 16 QPs on one SRQ and one CQ.  Its ending is racy:
# both sides post sends beyond -n, the peer exits while they are in flight,
# and a side still waiting for ACKs of what the peer did receive fails
# after the retry timeout if the last packets a process sent before it
# exited are lost (fabsimd once dropped them).
pair h1 h2 srq-events ibv_srq_pingpong -p "$(vt_port 6)" -n 200 -e || rc=1
[ $rc -eq 0 ] && echo PASS
exit $rc
