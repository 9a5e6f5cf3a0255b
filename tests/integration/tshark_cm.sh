#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# Cross-check of the CM wire formats with an independent decoder: the
# encoder writes one MAD per CM attribute into an ERF/InfiniBand pcap
# (the form Debian's tshark 4.0 dissects), tshark decodes it, and
# gen_cm_pcap compares every field tshark knows with what was encoded.
# tshark must also report no malformed packet and no expert finding.
# The demo capture tests/data/cm_handshake.pcap must pass the same checks.
# Skipped (77) without tshark.
set -u

top_builddir=${top_builddir:-.}
top_srcdir=${top_srcdir:-.}
gen="$top_builddir/tests/integration/gen_cm_pcap"
dir=$(mktemp -d "${TMPDIR:-/tmp}/tshark_cm.XXXXXX") || exit 99
trap 'rm -rf "$dir"' EXIT INT TERM

fail() {
	echo "FAIL: $*" >&2
	exit 1
}

. "$(dirname "$0")/../skip.sh"
skip_missing tshark tshark

"$gen" write "$dir/cm.pcap" || fail "gen_cm_pcap write"

fields=$("$gen" fields | sed 's/^/-e /' | tr '\n' ' ')
# shellcheck disable=SC2086 # word splitting of $fields is intended
tshark -n -r "$dir/cm.pcap" -T fields -E separator=/t -E occurrence=f \
	-e frame.number $fields >"$dir/cm.tsv" 2>"$dir/tshark.err" ||
	{ cat "$dir/tshark.err" >&2; fail "tshark could not read the capture"; }
"$gen" check <"$dir/cm.tsv" || fail "tshark and the encoder disagree"

demo="$top_srcdir/tests/data/cm_handshake.pcap"
for f in "$dir/cm.pcap" "$demo"; do
	[ -f "$f" ] || continue
	n=$(tshark -n -r "$f" 2>/dev/null | wc -l)
	[ "$n" -gt 0 ] || fail "tshark shows no packet in $(basename "$f")"
	bad=$(tshark -n -r "$f" -Y '_ws.malformed || _ws.expert' 2>/dev/null)
	[ -z "$bad" ] || { echo "$bad" >&2; fail "tshark flags packets in $(basename "$f")"; }
done

# The demo handshake reads as the five messages of one connection.
if [ -f "$demo" ]; then
	names=$(tshark -n -r "$demo" -T fields -e infiniband.mad.attributeid 2>/dev/null |
		tr '\n' ' ')
	[ "$names" = "0x0010 0x0013 0x0014 0x0015 0x0016 " ] ||
		fail "cm_handshake.pcap attributes: $names"
fi
echo "PASS: tshark agrees with the CM encoder"
exit 0
