#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# XRC through madcm: Debian's unmodified rdma_xserver and rdma_xclient
# (rdmacm-utils) with `-c x` between two simulated hosts (`madcm run`).
# The client's RDMA_PS_IB id has an XRC_SEND QP (rdma_create_ep), the
# server's an XRC_RECV QP and an XRC SRQ whose number it sends in the
# REP's private data; the client sends one message to that SRQ.  Also RC
# (`-c r`) as a baseline, and a capture of an XRC run: the REQ says
# transport type 3 with extended transport type 1 (XRC), the REP names
# the target QP in its Local EE Context Number, and the data packets are
# XRC SEND Only (opcode 0xa4) with an XRCETH naming that SRQ, and XRC
# Acknowledge (0xb1).
. "$(dirname "$0")/sim_common.sh"
. "$(dirname "$0")/rdmacm_pair.sh"
MADCM=$top_builddir/tools/madcm
skip_missing rdma_xserver rdmacm-utils
[ -f "$top_builddir/lib/.libs/librdmacm.so.1" ] || { echo "SKIP: librdmacm.so.1 not built"; exit 77; }

fs up --gen b2b >"$FABSIM_DIR/up.log" 2>&1 || { cat "$FABSIM_DIR/up.log"; fail "fabsim up"; }
H1=198.18.0.1
out=$FABSIM_DIR/out
mkdir -p "$out"
passed=0

pair xrc-rc 60 "rdma_xserver -p 7471 -c r" "rdma_xclient -s $H1 -p 7471 -c r"
expect xrc-rc.s "rdma_xserver: end 0"
expect xrc-rc.c "rdma_xclient: end 0"

fs capture h1 "$FABSIM_DIR/xrc.pcap" >/dev/null || fail "capture"
pair xrc 60 "rdma_xserver -p 7472 -c x" "rdma_xclient -s $H1 -p 7472 -c x"
sleep 0.3
fs capture h1 off >/dev/null
expect xrc.s "rdma_xserver: end 0"
expect xrc.c "rdma_xclient: end 0"

# Several in a row: each run opens its XRC domain and SRQ again.
for i in 1 2 3; do
	pair "xrc-$i" 60 "rdma_xserver -p 7473 -c x" "rdma_xclient -s $H1 -p 7473 -c x"
done

# The wire, as madcm's decoder reads it (tshark where installed).
"$MADCM" decode --json "$FABSIM_DIR/xrc.pcap" >"$out/xrc.json" 2>&1 || fail "madcm decode"
grep '"attribute":"ConnectRequest"' "$out/xrc.json" | head -1 >"$out/req.json"
grep -q '"transport_service_type":3' "$out/req.json" ||
	{ cat "$out/req.json" >&2; fail "REQ: transport service type not 3"; }
grep -q '"extended_transport_type":1' "$out/req.json" ||
	{ cat "$out/req.json" >&2; fail "REQ: extended transport type not 1 (XRC)"; }
grep -q '"service_id":"0x00000000013f1d30"' "$out/req.json" ||
	{ cat "$out/req.json" >&2; fail "REQ: service ID not RDMA_PS_IB's 0x13f0000 + 7472"; }
grep '"attribute":"ConnectReply"' "$out/xrc.json" | head -1 >"$out/rep.json"
grep -q '"local_qpn":0,' "$out/rep.json" && grep -q '"srq":1' "$out/rep.json" &&
	grep -q '"local_ee_context_number":[1-9]' "$out/rep.json" ||
	{ cat "$out/rep.json" >&2; fail "REP: not an XRC target's (QPN in the EECN, SRQ)"; }
passed=$((passed + 1))
echo "ok: REQ and REP of the XRC handshake"
# Wireshark names XRC opcodes but does not parse the XRCETH (4.0): the
# opcodes are checked, and the SRQ number after the BTH against the one
# the REP carried.
if command -v tshark >/dev/null 2>&1; then
	tshark -n -r "$FABSIM_DIR/xrc.pcap" -Y 'infiniband.bth.opcode >= 0xa0' \
		-T fields -e infiniband.bth.opcode -e infiniband.vendor >"$out/xrc.txt" 2>/dev/null ||
		fail "tshark could not read the capture"
	srqn=$(sed -n 's/.*"private_data":"\([0-9a-f]\{8\}\)".*/\1/p' "$out/rep.json")
	grep -q "^164	$srqn" "$out/xrc.txt" ||
		{ cat "$out/xrc.txt" >&2; fail "capture: no XRC SEND Only (0xa4) to SRQ $srqn"; }
	grep -q "^177" "$out/xrc.txt" || { cat "$out/xrc.txt" >&2; fail "capture: no XRC ACK (0xb1)"; }
	passed=$((passed + 1))
	echo "ok: capture (tshark: XRC SEND Only with XRCETH SRQ $srqn, XRC ACK)"
fi

echo "PASS: $passed XRC runs on madcm"
exit 0
