# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# Sourced by sim_common.sh and verbs_lib.sh, which give it `on HOST CMD...`
# (run in a simulated host) and `fail MSG`.
# wait_tcp_listen PID PORT [HOST [SECONDS]]: until a kernel TCP socket
# listens on PORT, in HOST's network namespace (fabsim up --ip) if HOST is
# given; at once if PID has exited; fails the test after SECONDS (60).
wait_tcp_listen() {
	_tp=$1 _tport=$2 _th=${3:-} _ts=${4:-60} _ti=0
	until ! kill -0 "$_tp" 2>/dev/null || if [ -n "$_th" ]; then
		on "$_th" ss -Hltn "sport = :$_tport"
	else
		ss -Hltn "sport = :$_tport"
	fi 2>/dev/null | grep -q .; do
		_ti=$((_ti + 1))
		[ $_ti -le $((_ts * 5)) ] || fail "no TCP listener on port $_tport within $_ts s (pid $_tp)"
		sleep 0.2
	done
}
