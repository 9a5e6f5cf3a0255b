#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# madcm decode on the demo capture (tests/data/cm_handshake.pcap), as text
# and JSON, both pcap link types, hex text (argument and stdin), raw MAD
# files, malformed and unknown MADs, broken captures.  Needs no fabric.
set -u

top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}
top_builddir=${top_builddir:-.}
MADCM=$top_builddir/tools/madcm
GEN=$top_builddir/tests/data/gen_handshake
PCAP=$top_srcdir/tests/data/cm_handshake.pcap
tmp=$(mktemp -d "${TMPDIR:-/tmp}/decode_cli.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM
failures=0
. "$(dirname "$0")/../skip.sh"

fail() {
	echo "FAIL: $*"
	failures=$((failures + 1))
}

ok() {
	echo "ok: $*"
}

# expect STATUS DESCRIPTION -- COMMAND...: run, check the exit status.
expect() {
	want=$1
	what=$2
	shift 3
	"$@" >"$tmp/out" 2>"$tmp/err"
	got=$?
	if [ "$got" -eq "$want" ]; then ok "$what (exit $got)"; else
		fail "$what: exit $got, expected $want"; cat "$tmp/err"; fi
}

# has PATTERN DESCRIPTION: the last output contains PATTERN (fixed string).
has() {
	if grep -qF -- "$1" "$tmp/out"; then ok "$2"; else fail "$2: no '$1' in output"; fi
}

expect 0 "madcm --help" -- "$MADCM" --help
has "decode" "--help lists decode"
expect 0 "madcm --version" -- "$MADCM" --version
has "madcm " "--version prints the version"
expect 0 "madcm decode --help" -- "$MADCM" decode --help
has "--json" "decode --help lists --json"
expect 2 "unknown subcommand" -- "$MADCM" frobnicate
expect 2 "unknown option" -- "$MADCM" decode --frobnicate

# The committed capture is what the generator makes today.
if [ -x "$GEN" ]; then
	expect 0 "gen_handshake" -- "$GEN" "$tmp/gen.pcap"
	if cmp -s "$tmp/gen.pcap" "$PCAP"; then ok "committed capture is up to date"; else
		fail "tests/data/cm_handshake.pcap differs from gen_handshake output (regenerate it)"; fi
	expect 0 "gen_handshake link type 247" -- "$GEN" "$tmp/ib.pcap" 247
fi

# Text.
expect 0 "decode text" -- "$MADCM" decode "$PCAP"
for m in "REQ (ConnectRequest)" "REP (ConnectReply)" "RTU (ReadyToUse)" \
	"DREQ (DisconnectRequest)" "DREP (DisconnectReply)"; do
	has "$m" "text shows $m"
done
has "LID 1 -> LID 2" "text shows the packet addresses"
has "service_id:                  0x0000000001061d2f" "text shows the TCP 7471 service ID"
has "transport_service_type:      0 (RC)" "text names coded values"
has "src_addr:                    192.168.1.1" "text decodes the IP CM header source"
has "dst_port:                    7471" "text shows the destination port"
has "private_data:            (196 zero bytes)" "text summarises zero private data"
[ "$(grep -c '^frame ' "$tmp/out")" -eq 5 ] && ok "text has 5 frames" || fail "text frame count"

# JSON: one object per MAD per line, the IBA names as keys.
expect 0 "decode --json" -- "$MADCM" decode --json "$PCAP"
cp "$tmp/out" "$tmp/handshake.json"
[ "$(wc -l <"$tmp/out")" -eq 5 ] && ok "json has 5 lines" || fail "json line count"
has '"message":"REQ"' "json message REQ"
has '"local_qpn":72' "json local_qpn"
has '"starting_psn":5906236' "json starting_psn"
has '"partition_key":65535' "json partition_key"
has '"primary_local_port_lid":1' "json primary_local_port_lid"
has '"service_id":"0x0000000001061d2f"' "json 64-bit service_id as hex string"
has '"local_ca_guid":"0x0002c90300a1b2c1"' "json local_ca_guid"
has '"private_data":"0040b26e' "json private_data"
has '"ip_cm_header":{"version":0,"ip_version":4,"src_port":45678,"src_addr":"192.168.1.1","dst_addr":"192.168.1.2"' \
	"json ip_cm_header"
has '"mad":{"base_version":1,"mgmt_class":7' "json MAD header under mad"
if have_tool python3 python3; then
	if python3 - "$tmp/out" <<'EOF'
import json, sys
msgs = [json.loads(l) for l in open(sys.argv[1])]
assert [m["message"] for m in msgs] == ["REQ", "REP", "RTU", "DREQ", "DREP"], msgs
req, rep, rtu, dreq, drep = msgs
assert rep["remote_comm_id"] == req["local_comm_id"]
assert rtu["local_comm_id"] == req["local_comm_id"]
assert dreq["remote_qpn_eecn"] == rep["local_qpn"] == 75
assert drep["remote_comm_id"] == dreq["local_comm_id"]
assert req["ip_cm_header"]["dst_port"] == 7471
assert req["mad"]["transaction_id"] == rep["mad"]["transaction_id"]
assert req["packet"]["slid"] == 1 and rep["packet"]["slid"] == 2
EOF
	then ok "json parses and the handshake is consistent"; else fail "json content"; fi
fi

# Link type 247 decodes to the same MADs.
if [ -f "$tmp/ib.pcap" ]; then
	expect 0 "decode link type 247" -- "$MADCM" decode --json "$tmp/ib.pcap"
	sed 's/^{"source":"[^"]*"//' "$tmp/out" >"$tmp/a"
	sed 's/^{"source":"[^"]*"//' "$tmp/handshake.json" >"$tmp/b"
	cmp -s "$tmp/a" "$tmp/b" && ok "247 and 197 decode alike" || fail "247 vs 197 differ"
fi

# Raw file, hex argument and hex on stdin: the REQ cut out of the capture
# (pcap header 24 + record header 16 + ERF 16 + LRH 8 + BTH 12 + DETH 8).
dd if="$PCAP" of="$tmp/req.mad" bs=1 skip=84 count=256 2>/dev/null
od -An -v -tx1 "$tmp/req.mad" >"$tmp/req.hex"
expect 0 "decode raw file" -- "$MADCM" decode --json "$tmp/req.mad"
sed 's/^{"source":"[^"]*","index":1//' "$tmp/out" >"$tmp/raw.json"
has '"local_qpn":72' "raw file decodes the REQ"
expect 0 "decode --hex" -- "$MADCM" decode --json --hex "0x$(tr -d ' \n' <"$tmp/req.hex")"
sed 's/^{"source":"[^"]*","index":1//' "$tmp/out" >"$tmp/hex.json"
cmp -s "$tmp/raw.json" "$tmp/hex.json" && ok "hex = raw" || fail "hex and raw decode differ"
"$MADCM" decode --json <"$tmp/req.hex" >"$tmp/out" 2>"$tmp/err" && has '"local_qpn":72' "hex on stdin" ||
	fail "hex on stdin"
cat "$tmp/req.mad" "$tmp/req.mad" >"$tmp/two.mad"
expect 0 "two raw MADs in one file" -- "$MADCM" decode --json "$tmp/two.mad"
[ "$(wc -l <"$tmp/out")" -eq 2 ] && ok "two MADs, two lines" || fail "two MADs"

# Malformed MADs: reported, the rest still decoded, exit status 1.
bad=$(tr -d ' \n' <"$tmp/req.hex" | sed 's/^01070203/01070103/')
expect 1 "bad class version" -- "$MADCM" decode --hex "$bad" --hex "$(cat "$tmp/req.hex")"
has "malformed MAD" "malformed MAD reported"
has "REQ (ConnectRequest)" "the good MAD after it is still decoded"
expect 1 "short MAD" -- "$MADCM" decode --hex "01 07 02 03"
expect 1 "not hex" -- "$MADCM" decode --hex "01 07 zz"
expect 1 "missing file" -- "$MADCM" decode "$tmp/does-not-exist"
head -c 700 "$PCAP" >"$tmp/trunc.pcap"
expect 1 "truncated capture" -- "$MADCM" decode "$tmp/trunc.pcap"
has "REQ (ConnectRequest)" "frames before the cut are decoded"

# Unknown class: header and bytes, not an error.
unk=$(tr -d ' \n' <"$tmp/req.hex" | sed 's/^01070203/01090103/')
expect 0 "vendor class" -- "$MADCM" decode --json --hex "$unk"
has '"message":null' "unknown attribute has no message"
has '"data":"' "unknown attribute shown as data"

# RMPP: every DATA segment repeats the 56 bytes of MAD, RMPP and SA
# headers (kernel mad_rmpp.c); after the first, the data from byte 56 on
# continues the record stream.  Segment 2 made from the first one (flags
# 0xfd: resp time 31, ACTIVE|LAST; segment number 2), data marked deadbeef.
SEED=$top_srcdir/tests/data/sa_seed_pr_rmpp.mad
head -c 256 "$SEED" >"$tmp/seg2.mad"
printf '\375' | dd of="$tmp/seg2.mad" bs=1 seek=26 conv=notrunc 2>/dev/null
printf '\000\000\000\002\000\000\000\050' | dd of="$tmp/seg2.mad" bs=1 seek=28 conv=notrunc 2>/dev/null
printf '\336\255\276\357' | dd of="$tmp/seg2.mad" bs=1 seek=56 conv=notrunc 2>/dev/null
expect 0 "decode RMPP segment 2" -- "$MADCM" decode --json "$tmp/seg2.mad"
has '"segment_number":2' "segment 2 is decoded as such"
has '"sa":{"sm_key":"0x0000000000000000","attribute_offset":8' "segment 2 shows its SA header"
has '"data":"deadbeef010604d2' "segment 2 data starts at byte 56"
expect 0 "decode RMPP segment 2 (text)" -- "$MADCM" decode "$tmp/seg2.mad"
has "data (200 bytes from byte 56)" "text: 200 data bytes from byte 56"

# tshark, an independent decoder, reads the capture without complaint.
if command -v tshark >/dev/null 2>&1; then
	tshark -r "$PCAP" -V >"$tmp/out" 2>/dev/null
	has "CM ConnectRequest" "tshark dissects the REQ"
	has "CM DisconnectReply" "tshark dissects the DREP"
	if grep -qi "malformed" "$tmp/out"; then fail "tshark reports malformed packets"; else
		ok "tshark: no malformed packet"; fi
fi

echo "decode_cli: $failures failure(s)"
[ "$failures" -eq 0 ]
