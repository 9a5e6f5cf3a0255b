#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# The environment's CM settings (madcm-rdmacm(7)): Debian's rping under
# `madcm run` with MADCM_CM_RESPONSE_TIMEOUT=17 and MADCM_CM_RETRIES=4
# sends REQs that carry them (both response timeouts, max CM retries), in
# process and through madcmd; without them the REQ carries the kernel's
# 20 and 15; an out-of-range value is refused with a message and the
# default used.
. "$(dirname "$0")/sim_common.sh"
MADCM=$top_builddir/tools/madcm
skip_missing rping rdmacm-utils
have_tool python3 || skip_missing python3 python3
fs up --gen b2b >"$FABSIM_DIR/up.log" 2>&1 || { cat "$FABSIM_DIR/up.log"; fail "fabsim up"; }
H1=198.18.0.1
out=$FABSIM_DIR/out
mkdir -p "$out"

# req NAME EXPECT_T EXPECT_R [ENV...]: one rping pair, the client's REQ
# captured at h1 and its fields checked.
req() {
	name=$1 et=$2 er=$3
	shift 3
	fs capture h1 "$out/$name.pcap" >/dev/null || fail "capture"
	on_bg h1 "$MADCM" run rping -s -a $H1 -C 2 >"$out/$name.s" 2>&1
	sp=$!
	bg_pids="$bg_pids $sp"
	wait_listen $sp
	env "$@" timeout 60 "$FABSIM" --dir "$FABSIM_DIR" run h2 -- "$MADCM" run rping -c -a $H1 -C 2 \
		>"$out/$name.c" 2>&1 || { cat "$out/$name.c" >&2; fail "$name: rping"; }
	wait $sp || { cat "$out/$name.s" >&2; fail "$name: rping server"; }
	fs capture h1 off >/dev/null
	"$MADCM" decode --json "$out/$name.pcap" 2>/dev/null | python3 -c '
import json, sys
et, er = int(sys.argv[1]), int(sys.argv[2])
reqs = [m for m in map(json.loads, sys.stdin) if m.get("message") == "REQ"]
if not reqs:
    sys.exit("no REQ captured")
for m in reqs:
    got = (m["remote_cm_response_timeout"], m["local_cm_response_timeout"], m["max_cm_retries"])
    if got != (et, et, er):
        sys.exit("REQ carries %s, not %s" % (got, (et, et, er)))
' "$et" "$er" || fail "$name: REQ fields"
	echo "ok: $name: the REQ carries timeouts $et and $er retries"
}

req default 20 15
req tuned 17 4 MADCM_CM_RESPONSE_TIMEOUT=17 MADCM_CM_RETRIES=4
req bad 20 15 MADCM_CM_RESPONSE_TIMEOUT=32 MADCM_CM_RETRIES=x
grep -q "MADCM_CM_RESPONSE_TIMEOUT=32 is not 0 to 31: ignored" "$out/bad.c" ||
	{ cat "$out/bad.c" >&2; fail "no message for an out-of-range value"; }
fs madcmd h2 start >/dev/null || fail "madcmd h2"
req madcmd 18 6 MADCM_CM_RESPONSE_TIMEOUT=18 MADCM_CM_RETRIES=6
echo "PASS: cm_tunables"
