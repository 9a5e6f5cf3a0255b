#!/bin/sh
# The main job, as it stands today, on a simulated fabric:
#   1. bring up a two-host fabric (fabsimd + Debian's OpenSM) in a private
#      directory and show its hosts;
#   2. ask the SA for a path with `madcm path`, next to saquery's answer;
#   3. connect three RC QPs from h2 to h1 through madcm's CM engine
#      (REQ/REP/RTU, one SEND each, DREQ/DREP, TimeWait) while capturing
#      h2's port;
#   4. decode the capture with `madcm decode` (and tshark when present);
#   5. take the fabric down.
# Argument: the build directory (default build).
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
b=$top/${1:-build}
madcm=$b/tools/madcm
fabsim=$b/sim/fabsim
conn=$b/tests/integration/cm_fabric_connect
make -s -C "$b" tests/integration/cm_fabric_connect >/dev/null

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
h1_gid=$(fab hosts | awk '$1 == "h1" { for (i = 1; i < NF; i++) if ($i == "gid") print $(i + 1) }')
h2_gid=$(fab hosts | awk '$1 == "h2" { for (i = 1; i < NF; i++) if ($i == "gid") print $(i + 1) }')

echo
echo "== madcm path $h2_gid $h1_gid   (run on h2)"
fab run h2 -- "$madcm" path "$h2_gid" "$h1_gid"

echo
echo "== CM handshake h2 -> h1: 3 RC connections, one SEND each, disconnect"
fab capture h2 "$dir/cm.pcap" >/dev/null
fab run h1 -- "$conn" server --n 3 --linger 1 >"$dir/server.log" 2>&1 &
srv_pid=$!
i=0
until grep -q listening "$dir/server.log" 2>/dev/null; do
	i=$((i + 1))
	[ $i -lt 200 ] || { cat "$dir/server.log"; exit 1; }
	sleep 0.05
done
fab run h2 -- "$conn" client --n 3 --dgid "$h1_gid"
wait "$srv_pid" || true
srv_pid=""
echo "server: $(tail -1 "$dir/server.log")"
fab capture h2 off >/dev/null

echo
echo "== madcm decode of the capture: one line per CM message"
"$madcm" decode --json "$dir/cm.pcap" |
	sed -n 's/.*"message":"\([^"]*\)".*/\1/p' | sort | uniq -c
echo
echo "== the first REQ, as IBA fields"
"$madcm" decode "$dir/cm.pcap" | awk '/ REQ \(/ { p = 1 } p && /^$/ { exit } p' | head -60
if command -v tshark >/dev/null 2>&1; then
	echo
	echo "== tshark's view of the same capture (CM packets)"
	tshark -r "$dir/cm.pcap" -Y "infiniband.mad.mgmtclass == 0x07" 2>/dev/null | head -16
fi
