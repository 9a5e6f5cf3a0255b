#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# Partitions (issue 42 item 7): OpenSM's partitions.conf through
# `fabsim up --partitions` sets the ports' P_Key tables; madcm takes each
# address's P_Key from the address file's third column and Debian's
# unmodified rping connects in a partition and fails across one.  On a
# star of four hosts:
#   Default=0x7fff  every port a full member
#   P1=0x8001       h1 full, h2 and h3 limited
#   P2=0x8002       h3 and h4 full
# - h2 -> h1 in P1 (limited to full): connects, the data is validated;
# - h3 -> h4 in P2 (full to full): connects;
# - h2 -> h3 in P1 (limited to limited) and h1 -> h4 in P2 (h1 is no
#   member): the SA has no PathRecord, ROUTE_ERROR as the kernel's rdma_cm;
# - the simulator checks P_Keys on CM MADs (QP1): one sent by h2 at its
#   P1 index reaches h1 (answered) but not h3 (dropped, in pkey_drop).
. "$(dirname "$0")/sim_common.sh"
MADCM=$top_builddir/tools/madcm
skip_missing rping rdmacm-utils
[ -f "$top_builddir/lib/.libs/librdmacm.so.1" ] || { echo "SKIP: librdmacm.so.1 not built"; exit 77; }

# The GUIDs of the generated star, for partitions.conf: a first fabric
# tells them (a topology gives the same GUIDs every time).
fs up --gen star:4 --no-sm >"$FABSIM_DIR/up0.log" 2>&1 || { cat "$FABSIM_DIR/up0.log"; fail "fabsim up"; }
guid() { fs hosts | awk -v h="$1" '$1 == h { print $NF; exit }'; }
G1=$(guid h1) G2=$(guid h2) G3=$(guid h3) G4=$(guid h4)
[ -n "$G1" ] && [ -n "$G4" ] || fail "no GUIDs"
fs down >/dev/null 2>&1
parts=$FABSIM_DIR/parts.conf
cat >"$parts" <<EOC
Default=0x7fff, ipoib : ALL=full;
P1=0x8001 : $G1=full, $G2=limited, $G3=limited;
P2=0x8002 : $G3=full, $G4=full;
EOC
fs up --gen star:4 --partitions "$parts" >"$FABSIM_DIR/up.log" 2>&1 ||
	{ cat "$FABSIM_DIR/up.log"; fail "fabsim up --partitions"; }
cmp -s "$parts" "$FABSIM_DIR/partitions.conf" || fail "partitions.conf not in the fabric directory"

# The fabric's addresses, and each host's addresses in P1 and P2 (as its
# ib0.8001 / ib0.8002 would carry them), with their P_Keys.
gid() { fs hosts | awk -v h="$1" '$1 == h { for (i = 1; i < NF; i++) if ($i == "gid") print $(i + 1); exit }'; }
MADCM_ADDR_FILE=$FABSIM_DIR/parts_hosts
export MADCM_ADDR_FILE
{
	cat "$FABSIM_DIR/hosts"
	echo "10.1.0.1 $(gid h1) 0x8001"
	echo "10.1.0.2 $(gid h2) 0x8001"
	echo "10.1.0.3 $(gid h3) 0x8001"
	echo "10.2.0.3 $(gid h3) 0x8002"
	echo "10.2.0.4 $(gid h4) 0x8002"
} >"$MADCM_ADDR_FILE"
out=$FABSIM_DIR/out
mkdir -p "$out"

# ok NAME SERVERHOST CLIENTHOST ADDR: rping in the partition of ADDR works.
ok() {
	name=$1 sh=$2 ch=$3 addr=$4
	on_bg "$sh" "$MADCM" run rping -s -a "$addr" -V -C 3 >"$out/$name.s" 2>&1
	sp=$!
	bg_pids="$bg_pids $sp"
	wait_listen $sp
	if ! timeout 60 "$FABSIM" --dir "$FABSIM_DIR" run "$ch" -- "$MADCM" run \
		rping -c -a "$addr" -V -v -C 3 >"$out/$name.c" 2>&1; then
		cat "$out/$name.c" "$out/$name.s" >&2
		fail "$name: rping failed"
	fi
	wait "$sp" || { cat "$out/$name.s" >&2; fail "$name: rping server failed"; }
	n=$(grep -c 'ping data: rdma-ping-' "$out/$name.c")
	[ "$n" -ge 3 ] || fail "$name: $n pings"
	echo "ok: $name"
}

# refused NAME CLIENTHOST ADDR EVENT: the client's rping ends in EVENT.
refused() {
	name=$1 ch=$2 addr=$3 ev=$4
	if timeout 60 "$FABSIM" --dir "$FABSIM_DIR" run "$ch" -- "$MADCM" run \
		rping -c -a "$addr" -C 1 >"$out/$name.c" 2>&1; then
		cat "$out/$name.c" >&2
		fail "$name: rping connected across partitions"
	fi
	grep -q "cma event $ev" "$out/$name.c" || { cat "$out/$name.c" >&2; fail "$name: no $ev"; }
	echo "ok: $name ($ev)"
}

ok p1-limited-full h1 h2 10.1.0.1
ok p2-full-full h4 h3 10.2.0.4
refused p1-limited-limited h2 10.1.0.3 RDMA_CM_EVENT_ROUTE_ERROR
refused p2-not-member h1 10.2.0.4 RDMA_CM_EVENT_ROUTE_ERROR

# CM MADs on QP1 at h2's P1 index (1: OpenSM keeps the default at 0).
drops() { fs status | awk '$1 == "pkey_drop" { print $2 }'; }
d0=$(drops)
[ -n "$d0" ] || fail "no pkey_drop counter"
on_bg h1 "$PINGPONG" server 1 >"$out/pp.s" 2>&1
sp=$!
bg_pids="$bg_pids $sp"
wait_for "! kill -0 $sp || grep -q 'server lid' '$out/pp.s'" 60 || fail "the MAD server did not start"
PINGPONG_PKEY_INDEX=1 timeout 30 "$FABSIM" --dir "$FABSIM_DIR" run h2 -- \
	"$PINGPONG" client "$(lid_of h1)" 1 >"$out/pp.c" 2>&1 ||
	{ cat "$out/pp.c" "$out/pp.s" >&2; fail "limited to full: MAD not answered"; }
wait "$sp"
[ "$(drops)" = "$d0" ] || fail "limited to full: dropped"
PINGPONG_PKEY_INDEX=1 timeout 30 "$FABSIM" --dir "$FABSIM_DIR" run h2 -- \
	"$PINGPONG" get "$(lid_of h3)" 100 1 >"$out/pp.get" 2>&1
d1=$(drops)
[ "$d1" -gt "$d0" ] || { cat "$out/pp.get" >&2; fail "limited to limited: MAD not dropped"; }
echo "ok: CM MADs checked ($((d1 - d0)) dropped)"
echo "PASS"
