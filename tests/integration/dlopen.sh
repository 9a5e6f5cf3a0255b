#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# madcm's librdmacm.so.1 loaded with dlopen(), as plugins and language
# bindings load it (docs/architecture.md: no initial-exec TLS), on two
# simulated hosts with OpenSM, under `madcm run`:
#   1. dlopen_connect, which links nothing of librdmacm, dlopen()s it
#      (RTLD_NOW | RTLD_LOCAL) and makes one connection through the
#      rdma_* calls it resolved with dlsym: private data both ways,
#      ESTABLISHED, DISCONNECTED on both sides; each side loaded the build
#      tree's librdmacm (which holds libmadcm's code: no libmadcm.so.0),
#      and dlclose() left it loaded (its threads run on: unloaded, they
#      crashed the program);
#   2. Debian's pyverbs (python3-pyverbs): `import pyverbs.cmid` loads
#      the build tree's librdmacm (not rdma-core's: /proc/self/maps), and
#      an id on an event channel resolves h1's address and route.
. "$(dirname "$0")/sim_common.sh"
MADCM=$top_builddir/tools/madcm
PROG=$top_builddir/tests/integration/dlopen_connect
[ -x "$PROG" ] || { echo "SKIP: $PROG not built"; exit 77; }
[ -f "$top_builddir/lib/.libs/librdmacm.so.1" ] || { echo "SKIP: librdmacm.so.1 not built"; exit 77; }
# The libraries a program must find, by their real paths.
want_rdmacm=$(cd "$top_builddir/lib/.libs" && pwd -P)/librdmacm.so.1
want_rdmacm=$(readlink -f "$want_rdmacm")

fs up --gen b2b >"$FABSIM_DIR/up.log" 2>&1 || { cat "$FABSIM_DIR/up.log"; fail "fabsim up"; }
H1=198.18.0.1
PORT=7471
out=$FABSIM_DIR/out
mkdir -p "$out"

# loaded_ok NAME: NAME's output names the build tree's library.
loaded_ok() {
	grep -qxF "loaded $want_rdmacm" "$out/$1" ||
		{ cat "$out/$1" >&2; fail "$1: not $want_rdmacm"; }
}

# ---- 1. dlopen(), dlsym(), one connection ----
"$FABSIM" --dir "$FABSIM_DIR" run h1 -- "$MADCM" run "$PROG" librdmacm.so.1 server $PORT \
	>"$out/server" 2>&1 &
sp=$!
bg_pids="$bg_pids $sp"
i=0
until grep -q listening "$out/server"; do
	i=$((i + 1))
	kill -0 $sp 2>/dev/null && [ $i -le 300 ] || { cat "$out/server" >&2; fail "server did not listen"; }
	sleep 0.2
done
timeout 90 "$FABSIM" --dir "$FABSIM_DIR" run h2 -- "$MADCM" run "$PROG" librdmacm.so.1 \
	client $H1 $PORT >"$out/client" 2>&1
crc=$?
wait $sp
src=$?
if [ $crc -ne 0 ] || [ $src -ne 0 ]; then
	echo "--- server: exit $src" >&2
	cat "$out/server" >&2
	echo "--- client: exit $crc" >&2
	cat "$out/client" >&2
	fail "dlopen_connect"
fi
for side in server client; do
	loaded_ok $side
	grep -qx connected "$out/$side" && grep -qx disconnected "$out/$side" &&
		grep -qx closed "$out/$side" ||
		{ cat "$out/$side" >&2; fail "$side: not connected, disconnected and closed"; }
done
echo "ok: dlopen()ed librdmacm.so.1 connected and disconnected h2 -> h1, dlclose()d"

# ---- 2. pyverbs ----
# Debian's pyverbs is for Debian's python3 (a python3 first on the PATH
# may be another build of Python, without it).
py=
for p in /usr/bin/python3 python3; do
	if "$p" -c 'import pyverbs.cmid' >/dev/null 2>&1; then
		py=$p
		break
	fi
done
if [ -z "$py" ]; then
	[ "${CI:-}" = true ] && fail "python3-pyverbs not installed (scripts/dev.sh installs it)"
	echo "note: python3-pyverbs not installed, pyverbs not checked"
	echo "PASS"
	exit 0
fi
cat >"$out/cmid.py" <<PYEOF
import sys
import pyverbs.cmid as cmid

want = sys.argv[1]
maps = {line.split()[-1] for line in open('/proc/self/maps') if 'librdmacm.so' in line}
print('librdmacm mapped:', ' '.join(sorted(maps)))
if maps != {want}:
    sys.exit('not only %s' % want)
ch = cmid.CMEventChannel()
cid = cmid.CMID(creator=ch)
cid.resolve_addr(cmid.AddrInfo(dst='$H1', dst_service='$PORT'), 5000)
for want_ev in ('RDMA_CM_EVENT_ADDR_RESOLVED', 'RDMA_CM_EVENT_ROUTE_RESOLVED'):
    ev = cmid.CMEvent(ch)
    got = ev.event_str()
    ev.ack_cm_event()
    print('event', got)
    if got != want_ev:
        sys.exit('%s, want %s' % (got, want_ev))
    if want_ev == 'RDMA_CM_EVENT_ADDR_RESOLVED':
        cid.resolve_route(5000)
cid.close()
ch.close()
print('pyverbs ok')
PYEOF
timeout 90 "$FABSIM" --dir "$FABSIM_DIR" run h2 -- "$MADCM" run "$py" "$out/cmid.py" \
	"$want_rdmacm" >"$out/pyverbs" 2>&1 || { cat "$out/pyverbs" >&2; fail "pyverbs under madcm run"; }
grep -qx "pyverbs ok" "$out/pyverbs" || { cat "$out/pyverbs" >&2; fail "pyverbs"; }
cat "$out/pyverbs"
echo "ok: pyverbs.cmid on madcm's librdmacm resolved h1's address and route"
echo "PASS"
