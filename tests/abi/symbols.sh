#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# Symbol versions of madcm's librdmacm.so.1.
#
#  1. lib/librdmacm.map lists exactly the (name, version) pairs below.
#  2. Every pair rdma-core's installed librdmacm.so.1 exports is below, except
#     those listed in NOT_YET.
#  3. The built lib/.libs/librdmacm.so.1 exports exactly the pairs below and
#     nothing else (no leaked internal symbol, no unversioned one).
#
# Exits 77 (skip) when the library is not built yet or objdump is missing.
set -u

srcdir=${top_srcdir:-.}
builddir=${top_builddir:-.}
map=$srcdir/lib/librdmacm.map
ours=$builddir/lib/.libs/librdmacm.so.1
ref=${ABI_REF_LIBRDMACM:-}
if test -z "$ref"; then
	for d in /usr/lib/x86_64-linux-gnu /usr/lib64 /usr/lib; do
		if test -e "$d/librdmacm.so.1"; then
			ref=$d/librdmacm.so.1
			break
		fi
	done
fi

# rdma-core's librdmacm.map, nodes RDMACM_1.0 to RDMACM_1.5.
EXPECTED="
RDMACM_1.0 rdma_create_event_channel rdma_destroy_event_channel rdma_create_id
RDMACM_1.0 rdma_destroy_id rdma_bind_addr rdma_resolve_addr rdma_resolve_route
RDMACM_1.0 rdma_create_qp rdma_destroy_qp rdma_connect rdma_listen rdma_accept
RDMACM_1.0 rdma_reject rdma_notify rdma_disconnect rdma_get_cm_event rdma_ack_cm_event
RDMACM_1.0 rdma_get_src_port rdma_get_dst_port rdma_join_multicast rdma_leave_multicast
RDMACM_1.0 rdma_get_devices rdma_free_devices rdma_event_str rdma_set_option
RDMACM_1.0 rdma_migrate_id rdma_getaddrinfo rdma_freeaddrinfo rdma_get_request
RDMACM_1.0 rdma_create_ep rdma_destroy_ep rdma_create_srq rdma_destroy_srq
RDMACM_1.0 rdma_create_srq_ex rdma_create_qp_ex
RDMACM_1.0 rsocket rbind rlisten raccept rconnect rshutdown rclose rrecv rrecvfrom
RDMACM_1.0 rrecvmsg rsend rsendto rsendmsg rread rreadv rwrite rwritev rpoll rselect
RDMACM_1.0 rgetpeername rgetsockname rsetsockopt rgetsockopt rfcntl riomap riounmap
RDMACM_1.0 riowrite
RDMACM_1.1 rdma_join_multicast_ex
RDMACM_1.2 rdma_establish rdma_init_qp_attr
RDMACM_1.3 rdma_get_remote_ece rdma_reject_ece rdma_set_local_ece
RDMACM_1.4 rdma_query_addrinfo rdma_resolve_addrinfo rdma_write_cm_event
RDMACM_1.5 repoll_create repoll_ctl repoll_wait
"
# In rdma-core's library but not exported yet (none now: the rsocket calls
# and RDMACM_1.5's repoll_* are in EXPECTED).
NOT_YET="
"

tmp=$builddir/tests/abi/symbols.tmp.$$
mkdir -p "$tmp" || exit 99
trap 'rm -rf "$tmp"' EXIT
fail=0

pairs() {
	# "VERSION name" lines -> sorted "name@VERSION" pairs
	echo "$1" | awk 'NF { for (i = 2; i <= NF; i++) print $i "@" $1 }' | sort -u
}
pairs "$EXPECTED" >"$tmp/expected"
pairs "$NOT_YET" >"$tmp/not-yet"

. "$(dirname "$0")/exports.inc"

echo "== 1. $map"
# Strip comments, then read "NODE {", names ending in ";", and "local: *;".
sed -e 's,/\*.*\*/,,g' -e '/\/\*/,/\*\//d' -e 's/#.*//' "$map" | tr -s ' \t' ' ' | awk '
	/^ *[A-Za-z_][A-Za-z0-9_.]* *\{/ { node = $1; next }
	/global:/ || /^ *\}/ || /^ *$/ { next }
	/local: *\*;/ { if (node != "RDMACM_1.0") print "local@" node; next }
	{ gsub(/[ ;]/, ""); if ($0 != "") print $0 "@" node }
' | sort >"$tmp/map"
if ! grep -q 'local: *\*;' "$map"; then
	echo "FAIL: no 'local: *;' in $map"
	fail=1
fi
if ! diff -u --label expected --label "$map" "$tmp/expected" "$tmp/map"; then
	echo "FAIL: $map does not list exactly the expected symbols (- expected, + map)"
	fail=1
fi

. "$(dirname "$0")/../skip.sh"
skip_missing objdump binutils

echo "== 2. rdma-core's library: ${ref:-not found}"
if test -n "$ref"; then
	exports "$ref" | grep '@RDMACM_' >"$tmp/ref"
	sort -u "$tmp/expected" "$tmp/not-yet" >"$tmp/allowed"
	# Pairs rdma-core exports that are neither expected nor excused.
	comm -23 "$tmp/ref" "$tmp/allowed" >"$tmp/ref-missing"
	if test -s "$tmp/ref-missing"; then
		echo "FAIL: rdma-core exports these, the expected list lacks them:"
		sed 's/^/  /' "$tmp/ref-missing"
		fail=1
	fi
	# Expected pairs that rdma-core's library does not export: only those of
	# the nodes newer than it (RDMACM_1.4 in v60, 1.5 after v64; Debian 12
	# ships v44) may be missing there.
	newer='@RDMACM_1\.[45]$'
	grep -v "$newer" "$tmp/expected" | comm -23 - "$tmp/ref" >"$tmp/ref-extra"
	if test -s "$tmp/ref-extra"; then
		echo "FAIL: expected, but rdma-core's library does not export them:"
		sed 's/^/  /' "$tmp/ref-extra"
		fail=1
	fi
	echo "$(grep -c . "$tmp/ref") versioned exports"
else
	echo "(no librdmacm.so.1 installed: not compared)"
fi

echo "== 3. built library: $ours"
if test ! -e "$ours"; then
	echo "SKIP: $ours is not built yet"
	test $fail -ne 0 && exit 1
	exit 77
fi
exports "$ours" >"$tmp/ours"
echo "$(grep -c . "$tmp/ours") exports"
if ! diff -u --label expected --label "$ours" "$tmp/expected" "$tmp/ours"; then
	echo "FAIL: the library does not export exactly the expected symbols"
	echo "      (- missing, + not allowed: leaked or unversioned)"
	fail=1
fi

echo "== 4. version nodes of $ours"
# Each node once, in rdma-core's order, each inheriting from the one before.
objdump -p "$ours" | awk '
	/^Version definitions:/ { on = 1; next }
	/^Version References:/ || /^$/ { on = 0 }
	on && $4 ~ /^RDMACM_/ { node = $4; print "node " node; next }
	on && NF == 1 && node != "" { print "parent " node " " $1 }
' >"$tmp/nodes"
want_nodes='RDMACM_1.0 RDMACM_1.1 RDMACM_1.2 RDMACM_1.3 RDMACM_1.4 RDMACM_1.5'
prev=
for n in $want_nodes; do
	echo "node $n"
	test -n "$prev" && echo "parent $n $prev"
	prev=$n
done >"$tmp/nodes-want"
if ! diff -u --label expected --label "$ours" "$tmp/nodes-want" "$tmp/nodes"; then
	echo "FAIL: the version nodes differ from rdma-core's (RDMACM_1.0 ... RDMACM_1.5)"
	fail=1
fi

if test $fail -ne 0; then
	echo "symbol check FAILED"
	exit 1
fi
echo "symbol check passed"
exit 0
