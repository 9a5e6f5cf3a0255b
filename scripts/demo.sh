#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# The demo: Debian's unmodified rping between two simulated hosts, on
# madcm's librdmacm.so.1 (`madcm run`), with no kernel rdma_cm anywhere:
#   1. bring up a two-host fabric (fabsimd + Debian's OpenSM) in a private
#      directory; fabsim writes its address file (h1 = 198.18.0.1,
#      h2 = 198.18.0.2) and `fabsim run` points MADCM_ADDR_FILE at it;
#   2. run `rping -s` on h1 and `rping -c -C 10 -v -V` on h2, both under
#      `madcm run`, while capturing h1's port;
#   3. show what went on the wire with `madcm decode` (and tshark when
#      present): SA PathRecord, REQ with the IP CM header, REP, RTU, DREQ,
#      DREP;
#   4. take the fabric down.
# Argument: the build directory (default build).
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
b=$top/${1:-build}
madcm=$b/tools/madcm
fabsim=$b/sim/fabsim

dir=$(mktemp -d "${TMPDIR:-/tmp}/madcm-demo.XXXXXX")
srv_pid=""
cleanup() {
	[ -n "$srv_pid" ] && kill "$srv_pid" 2>/dev/null
	"$fabsim" --dir "$dir" down >/dev/null 2>&1 || true
	rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP
fab() { "$fabsim" --dir "$dir" "$@"; }

echo "== fabsim up --gen b2b   (fabsimd + OpenSM, private directory $dir)"
fab up --gen b2b
echo
echo "== the fabric's address file (madcm-hosts(5))"
grep -v '^#' "$dir/hosts"

echo
echo "== h1: madcm run rping -s -a 198.18.0.1 -V -C 10"
fab capture h1 "$dir/rping.pcap" >/dev/null
fab run h1 -- "$madcm" run rping -s -a 198.18.0.1 -V -C 10 >"$dir/server.log" 2>&1 &
srv_pid=$!
sleep 0.5
echo "== h2: madcm run rping -c -a 198.18.0.1 -v -V -C 10"
fab run h2 -- "$madcm" run rping -c -a 198.18.0.1 -v -V -C 10
wait "$srv_pid" || { cat "$dir/server.log"; exit 1; }
srv_pid=""
echo "server (h1) said:"
sed 's/^/  /' "$dir/server.log"
sleep 0.3
fab capture h1 off >/dev/null

echo
echo "== madcm decode of h1's capture: the management MADs"
"$madcm" decode --json "$dir/rping.pcap" |
	sed -n 's/.*"message":"\([^"]*\)".*/\1/p' | uniq -c
echo
echo "== the REQ, as IBA fields (service ID 0x1060000 + port 7174; IP CM header)"
"$madcm" decode "$dir/rping.pcap" | awk '/ REQ \(/ { p = 1 } p && /^$/ { exit } p' | head -60
if command -v tshark >/dev/null 2>&1; then
	echo
	echo "== tshark's view of the same capture (CM packets)"
	tshark -r "$dir/rping.pcap" -Y "infiniband.mad.mgmtclass == 0x07" 2>/dev/null | head -16
fi
