#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# Run by tests/deb/check_deb.sh inside the fresh Debian root where madcm's
# packages are installed (from the packages alone: no build tree here).
# Checks what they installed, then runs Debian's rping under `madcm run`
# between two hosts of the packaged simulator: the CM in each program,
# then through a madcmd per host (fabsim up --madcmd, the packaged
# /usr/sbin/madcmd).  Fails with the logs on any miss.
set -u
fail() { echo "in_root: FAIL: $*" >&2; exit 1; }
ok() { echo "in_root: ok: $*"; }
# rdma-core's librdmacm.so.1 is still the system's; madcm's is private,
# and `madcm run` finds it there.
sys=$(dpkg -L librdmacm1 | grep '/librdmacm\.so\.1$')
[ -n "$sys" ] && [ "$(dpkg -S "$sys" | cut -d: -f1)" = librdmacm1 ] ||
	fail "$sys does not belong to librdmacm1"
mine=$(dpkg -L madcm-rdmacm | grep '/librdmacm\.so\.1$')
[ "$mine" = "${sys%/*}/madcm/librdmacm.so.1" ] || fail "madcm's librdmacm.so.1 is $mine"
madcm run -v true 2>&1 | grep -q "from ${sys%/*}/madcm\$" || fail "madcm run does not use ${sys%/*}/madcm"
ok "librdmacm1's $sys untouched, madcm's in ${sys%/*}/madcm"
getent group madcm >/dev/null || fail "no madcm group"
[ -L /etc/systemd/system/multi-user.target.wants/madcmd.service ] || fail "madcmd.service not enabled"
grep -q '^d /run/madcm 0750 root madcm' /usr/lib/tmpfiles.d/madcmd.conf || fail "no tmpfiles entry"
ok "group madcm, madcmd.service enabled, /run/madcm in tmpfiles.d"

dir=$(mktemp -d /tmp/fab.XXXXXX)
fs() { fabsim --dir "$dir" "$@"; }
down() { fs down >/dev/null 2>&1; }
trap down EXIT
H1=198.18.0.1

# rping NAME: a server on h1 and a client on h2, each under `madcm run`;
# the client is retried while the server is not yet listening (REJ).
rping_pair() {
	name=$1
	fs run h1 -- madcm run rping -s -a $H1 -V -C 10 >"$dir/$name.s" 2>&1 &
	sp=$!
	i=0
	until fs run h2 -- madcm run rping -c -a $H1 -V -v -C 10 >"$dir/$name.c" 2>&1; do
		i=$((i + 1))
		[ $i -lt 30 ] && kill -0 $sp 2>/dev/null || {
			kill $sp 2>/dev/null
			tail -20 "$dir/$name.s" "$dir/$name.c" >&2
			fail "$name: client"
		}
		sleep 1
	done
	# The server exits after its 10 pings; a bound for a hung one.
	i=0
	while kill -0 $sp 2>/dev/null && [ $i -lt 60 ]; do sleep 1; i=$((i + 1)); done
	kill -9 $sp 2>/dev/null && fail "$name: server still running"
	wait $sp || { tail -20 "$dir/$name.s" >&2; fail "$name: server exit"; }
	n=$(grep -o 'ping data: rdma-ping-[0-9]*' "$dir/$name.c" | sort -u | wc -l)
	[ "$n" -eq 10 ] || { tail -20 "$dir/$name.c" >&2; fail "$name: $n of 10 pings"; }
	ok "$name: 10 pings"
}

fs up --gen b2b >"$dir/up.log" 2>&1 || { cat "$dir/up.log"; fail "fabsim up"; }
rping_pair rping
down
fs up --gen b2b --madcmd >"$dir/up.log" 2>&1 || { cat "$dir/up.log"; fail "fabsim up --madcmd"; }
rping_pair rping-madcmd
down
trap - EXIT
rm -rf "$dir"
ok "all"
