#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# make check-ladder-browser (check-long): `madcm ladder`'s HTML opened in a
# real browser, Debian's headless chromium.  The page must load from the
# file alone (no network: chromium runs with networking refused for every
# host), its DOM must hold the ladder (the SVG, a lifeline per port and an
# arrow label per CM MAD of the capture), the browser's console must log
# no error, and the screenshot must show a drawing (not one flat colour).
# The screenshot is kept as ladder-browser.png in the build directory.
set -u
. "$(dirname "$0")/../skip.sh"
: "${top_builddir:=$(cd "$(dirname "$0")/../.." && pwd)}"
: "${top_srcdir:=$top_builddir}"
MADCM=$top_builddir/tools/madcm
browser=$(command -v chromium || command -v chromium-browser || true)
[ -n "$browser" ] || skip_missing chromium chromium
have_tool python3 || skip_missing python3 python3
d=$(mktemp -d "${TMPDIR:-/tmp}/ladder-browser.XXXXXX") || exit 99
trap 'rm -rf "$d"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

"$MADCM" ladder -o "$d/ladder.html" "$top_srcdir/tests/data/cm_handshake.pcap" ||
	fail "madcm ladder"
"$MADCM" ladder --json "$top_srcdir/tests/data/cm_handshake.pcap" >"$d/ladder.json" ||
	fail "madcm ladder --json"
# chromium as root needs --no-sandbox; its profile stays in the directory.
run() {
	timeout 120 "$browser" --headless=new --no-sandbox --disable-gpu \
		--user-data-dir="$d/profile" --host-resolver-rules='MAP * ~NOTFOUND' \
		--enable-logging=stderr --v=0 --window-size=1280,1024 "$@" \
		"file://$d/ladder.html"
}
run --dump-dom >"$d/dom.html" 2>"$d/dom.err" || { cat "$d/dom.err" >&2; fail "chromium --dump-dom"; }
run --screenshot="$d/shot.png" >/dev/null 2>"$d/shot.err" ||
	{ cat "$d/shot.err" >&2; fail "chromium --screenshot"; }
# Console errors and failed loads (the page must need nothing else).
if grep -E 'CONSOLE.*(Error|Uncaught)|ERR_(FILE|NAME|CONNECTION)' "$d/dom.err" "$d/shot.err"; then
	fail "the browser logged errors"
fi
python3 - "$d" <<'PY' || exit 1
import json, re, struct, sys, zlib
d = sys.argv[1]
dom = open(d + "/dom.html", encoding="utf-8").read()
model = json.load(open(d + "/ladder.json"))
def fail(msg):
    print("FAIL: " + msg, file=sys.stderr)
    sys.exit(1)
if "<svg" not in dom:
    fail("no <svg> in the rendered DOM")
arrows = model.get("arrows") or model.get("messages") or []
lanes = model.get("lifelines") or model.get("lanes") or []
if not arrows or not lanes:
    fail("the JSON model has no arrows or lifelines")
for a in arrows:
    label = a.get("msg") or a.get("message") or a.get("name") or ""
    if label and label not in dom:
        fail("arrow %r not in the rendered page" % label)
# The screenshot: a PNG whose pixels are not all one colour.
png = open(d + "/shot.png", "rb").read()
if png[:8] != b"\x89PNG\r\n\x1a\n":
    fail("the screenshot is not a PNG")
w, h = struct.unpack(">II", png[16:24])
data, pos = b"", 8
while pos < len(png):
    n, kind = struct.unpack(">I4s", png[pos:pos + 8])
    if kind == b"IDAT":
        data += png[pos + 8:pos + 8 + n]
    pos += 12 + n
raw = zlib.decompress(data)
if len(set(raw[i:i + 3] for i in range(1, len(raw), 97))) < 3:
    fail("the screenshot is one flat colour")
print("ok: %dx%d screenshot, %d lifelines, %d arrows in the page" % (w, h, len(lanes), len(arrows)))
PY
cp "$d/shot.png" "$top_builddir/ladder-browser.png" 2>/dev/null || true
echo "ok: madcm ladder's HTML renders in chromium (ladder-browser.png)"
