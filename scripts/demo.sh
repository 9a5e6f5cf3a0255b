#!/bin/sh
# The main job, as it stands today: decode a CM handshake (REQ, REP, RTU,
# DREQ, DREP) captured in the format ibdump writes, first as IBA fields,
# then as JSON.  Argument: the build directory.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
b=${1:-build}
madcm="$top/$b/tools/madcm"
[ -x "$madcm" ] || madcm="$top/$b/madcm"
cap="$top/tests/data/cm_handshake.pcap"

echo "== madcm decode $cap"
"$madcm" decode "$cap"
echo
echo "== madcm decode --json (first message)"
"$madcm" decode --json "$cap" | head -1
