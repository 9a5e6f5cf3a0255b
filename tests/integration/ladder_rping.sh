#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# madcm ladder on a real handshake: Debian's rping on madcm's
# librdmacm.so.1 between two simulated hosts, captured at h1's port
# (fabsim capture).  The JSON model has the two hosts' lifelines, named
# from the fabric's address file, and REQ, REP, RTU, DREQ, DREP arrows in
# that order; the HTML and SVG drawings are written and fetch nothing.
# Again with every CM MAD duplicated by the fabric: the copies h1
# receives are marked duplicate.
. "$(dirname "$0")/sim_common.sh"
MADCM=$top_builddir/tools/madcm
skip_missing rping rdmacm-utils
skip_missing python3 python3
[ -f "$top_builddir/lib/.libs/librdmacm.so.1" ] || { echo "SKIP: librdmacm.so.1 not built"; exit 77; }

fs up --gen b2b >"$FABSIM_DIR/up.log" 2>&1 || { cat "$FABSIM_DIR/up.log"; fail "fabsim up"; }
H1=198.18.0.1
out=$FABSIM_DIR/out
mkdir -p "$out"

# rping_captured NAME: one rping connection (2 pings) captured at h1.
rping_captured() {
	name=$1
	fs capture h1 "$out/$name.pcap" >/dev/null || fail "capture"
	"$FABSIM" --dir "$FABSIM_DIR" run h1 -- "$MADCM" run rping -s -a $H1 -C 2 \
		>"$out/$name.s" 2>&1 &
	sp=$!
	bg_pids="$bg_pids $sp"
	wait_listen $sp
	timeout 60 "$FABSIM" --dir "$FABSIM_DIR" run h2 -- "$MADCM" run rping -c -a $H1 -C 2 \
		>"$out/$name.c" 2>&1 || { tail -20 "$out/$name.c" >&2; fail "$name: rping client"; }
	# The server exits once its disconnect is done; bounded in case it hangs.
	i=0
	while kill -0 $sp 2>/dev/null && [ $i -lt 300 ]; do sleep 0.2; i=$((i + 1)); done
	kill -0 $sp 2>/dev/null && { tail -20 "$out/$name.s" >&2; fail "$name: rping server hangs"; }
	wait $sp || { tail -20 "$out/$name.s" >&2; fail "$name: rping server"; }
	sleep 0.5 # the last DREP on its way into the capture
	fs capture h1 off >/dev/null
}

# check_json FILE DUP: the model of a handshake; DUP 1: duplicates expected.
check_json() {
	python3 - "$1" "$2" <<'EOF'
import json, sys
m = json.load(open(sys.argv[1]))
dup = sys.argv[2] == "1"
lanes = m["lifelines"]
assert len(lanes) == 2, "lifelines: %r" % lanes
names = sorted(l["name"] for l in lanes)
assert names == ["h1", "h2"], "lifeline names %r" % names
h1 = [l["id"] for l in lanes if l["name"] == "h1"][0]
h2 = 1 - h1
cm = [a for a in m["arrows"] if a["class"] == "CM" and "duplicate" not in a["flags"]]
msgs = [a["message"] for a in cm]
want = ["REQ", "REP", "RTU", "DREQ", "DREP"]
# In order; an MRA (madcm's answer to a repeated REQ) or a crossed DREQ may sit between.
pos = 0
for w in want:
    while pos < len(msgs) and msgs[pos] != w:
        pos += 1
    assert pos < len(msgs), "no %s in order in %r" % (w, msgs)
    pos += 1
req = cm[msgs.index("REQ")]
assert req["from"] == h2 and req["to"] == h1, "REQ %r" % req
assert cm[msgs.index("REP")]["from"] == h1
assert len(m["connections"]) == 1, "connections %r" % m["connections"]
c = m["connections"][0]
assert c["service_id"] == "0x0000000001061c06", c
assert all(a["conn"] == 0 for a in cm), "arrows outside the connection"
assert req["label"].startswith("REQ " + c["active_comm_id"]), req["label"]
flagged = [a for a in m["arrows"] if "duplicate" in a["flags"]]
assert bool(flagged) == dup, "duplicates: %r" % flagged
assert not [a for a in m["arrows"] if "retry" in a["flags"]] or dup, "a retry"
print("ok: %s: %s" % (sys.argv[1].split("/")[-1], " ".join(msgs)))
EOF
}

rping_captured clean
"$MADCM" ladder --json --hosts "$FABSIM_DIR/hosts" "$out/clean.pcap" >"$out/clean.json" \
	2>"$out/clean.err" || { cat "$out/clean.err" >&2; fail "madcm ladder --json"; }
check_json "$out/clean.json" 0 || { cat "$out/clean.json" >&2; fail "clean handshake model"; }

# The drawings: HTML by default, SVG by name; self-contained.
"$MADCM" ladder --hosts "$FABSIM_DIR/hosts" -o "$out/clean.html" "$out/clean.pcap" ||
	fail "madcm ladder -o html"
"$MADCM" ladder --hosts "$FABSIM_DIR/hosts" -o "$out/clean.svg" "$out/clean.pcap" ||
	fail "madcm ladder -o svg"
head -1 "$out/clean.html" | grep -q '<!DOCTYPE html>' || fail "HTML: no doctype"
head -1 "$out/clean.svg" | grep -q '<?xml' || fail "SVG: no XML declaration"
for f in clean.html clean.svg; do
	grep -q '>h1<' "$out/$f" && grep -q '>h2<' "$out/$f" || fail "$f: hosts not named"
	n=$(grep -o 'http[s]*://[^"]*' "$out/$f" | grep -vc '^http://www.w3.org/2000/svg$')
	[ "$n" -eq 0 ] || fail "$f: refers to $n URLs"
done
echo "ok: HTML and SVG drawings"

# SA queries as arrows too: the PathRecord h1's CM asks before its REP.
"$MADCM" ladder --json --sa --hosts "$FABSIM_DIR/hosts" "$out/clean.pcap" >"$out/sa.json" ||
	fail "madcm ladder --sa"
grep -q '"class":"SA"' "$out/sa.json" && echo "ok: --sa draws SA MADs" ||
	echo "note: no SA MAD captured at h1"

# One connection by comm ID: the same arrows.
id=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["connections"][0]["active_comm_id"])' \
	"$out/clean.json")
"$MADCM" ladder --json --comm-id "$id" --hosts "$FABSIM_DIR/hosts" "$out/clean.pcap" \
	>"$out/byid.json" || fail "madcm ladder --comm-id"
check_json "$out/byid.json" 0 || fail "--comm-id $id"
"$MADCM" ladder --json --comm-id 0x1 "$out/clean.pcap" | grep -q '"arrows":\[\]' ||
	fail "--comm-id 0x1 kept arrows"
echo "ok: --comm-id"

# Every CM MAD duplicated by the fabric.
fs fault add class 7 dup >/dev/null || fail "fault add"
rping_captured dup
fs fault clear >/dev/null
"$MADCM" ladder --json --hosts "$FABSIM_DIR/hosts" "$out/dup.pcap" >"$out/dup.json" ||
	fail "madcm ladder on dup.pcap"
check_json "$out/dup.json" 1 || { cat "$out/dup.json" >&2; fail "duplicated handshake model"; }
echo "PASS: ladder_rping"
