# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# Sourced by the tests that check a data-path capture for malformed packets.
#
# tshark_no_payload_guess FILE prints the tshark options that keep it from
# guessing a protocol inside RC and UD payloads.  Those bytes are the
# application's, not madcm's: perftest fills its buffers with rand(), and
# about one 2-byte RDMA READ payload in 500 makes the "Ethernet over IB"
# heuristic take it for an EtherType and a CRTP header, which tshark then
# calls malformed.  The headers the sim and madcm build are still decoded
# and checked in full.  Heuristic names differ between Wireshark versions,
# so the names this tshark does not know are left out.
tshark_no_payload_guess() {
	tnpg_names="eth_over_ib mellanox_eoib iser_infiniband lnet_ib nvme_rdma
		rpcordma_infiniband rpcrdma_infiniband sdp_infiniband
		smb_direct_infiniband smcr_infiniband fc_infiniband"
	# One run per unknown name: tshark stops at the first one it meets.
	for tnpg_try in $tnpg_names; do
		tnpg_opts=
		for h in $tnpg_names; do tnpg_opts="$tnpg_opts --disable-heuristic $h"; done
		# shellcheck disable=SC2086
		tnpg_err=$(tshark $tnpg_opts -r "$1" -c 1 2>&1 >/dev/null) && break
		tnpg_bad=$(echo "$tnpg_err" | sed -n 's/.*No such protocol \([^,]*\),.*/\1/p' | head -1)
		[ -n "$tnpg_bad" ] || { tnpg_opts=; break; }
		tnpg_names=$(echo $tnpg_names | tr ' ' '\n' | grep -vx "$tnpg_bad")
	done
	echo "$tnpg_opts"
}
