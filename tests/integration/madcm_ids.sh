#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# madcm ids (madcm-ids(1)) on the simulated fabric, with Debian's rping
# under `madcm run`, first in-process on both hosts, then with the server
# through madcmd on h1:
#   - a listening rping -s: link, state LISTEN, ps TCP, qp-type RC, the
#     pid started, comm "rping", src-addr and src-port of its command line;
#   - an established connection, both sides: state CONNECT, cm-state
#     ESTABLISHED, a comm ID and a QP number, addresses and ports that
#     match each other's;
#   - filters (pid, state, ps, src-port, dst-port, lqpn), and -j with
#     iproute2's keys;
#   - a table left by a killed process is removed by the next listing;
#   - through madcmd: the CM states come from the daemon.
. "$(dirname "$0")/sim_common.sh"
MADCM=$top_builddir/tools/madcm
MADCMD=$top_builddir/madcmd/madcmd
skip_missing rping rdmacm-utils
skip_missing python3 python3
[ -f "$top_builddir/lib/.libs/librdmacm.so.1" ] || { echo "SKIP: librdmacm.so.1 not built"; exit 77; }
[ -x "$MADCMD" ] || { echo "SKIP: madcmd not built"; exit 77; }

fs up --gen b2b >"$FABSIM_DIR/up.log" 2>&1 || { cat "$FABSIM_DIR/up.log"; fail "fabsim up"; }
H1=198.18.0.1
H2=198.18.0.2
MADCM_IDS_DIR=$FABSIM_DIR/ids
export MADCM_IDS_DIR
mkdir -p "$MADCM_IDS_DIR" "$FABSIM_DIR/out"
out=$FABSIM_DIR/out

ids() { h=$1; shift; on "$h" "$MADCM" ids "$@"; }
# val LINE KEY: the word after KEY in a text line of madcm ids
val() { echo "$1" | awk -v k="$2" '{ for (i = 1; i < NF; i++) if ($i == k) { print $(i + 1); exit } }'; }
# want LINE KEY VALUE WHAT
want() {
	v=$(val "$1" "$2")
	[ "$v" = "$3" ] || { echo "$1" >&2; fail "$4: $2 is '$v', not '$3'"; }
}
# one HOST FILTERS...: the single line madcm ids prints for the filters
one() {
	h=$1
	shift
	l=$(ids "$h" "$@")
	[ "$(echo "$l" | grep -c .)" -eq 1 ] || { ids "$h" >&2; fail "madcm ids $*: not one line: $l"; }
	echo "$l"
}

# check_pair SFX SPID CPID CMSTATE_SOURCE: the listener and both ends of
# the connection of an rping server SPID on h1 and client CPID on h2.
check_pair() {
	sfx=$1 sp=$2 cp=$3
	wait_for "'$FABSIM' --dir '$FABSIM_DIR' run h1 -- '$MADCM' ids pid $sp state LISTEN | grep -q ." 30 ||
		{ ids h1 >&2; fail "$sfx: no LISTEN id for rping -s (pid $sp)"; }
	l=$(one h1 pid "$sp" state LISTEN)
	want "$l" link "$DEV1/1" "$sfx listener"
	want "$l" ps TCP "$sfx listener"
	want "$l" qp-type RC "$sfx listener"
	want "$l" comm rping "$sfx listener"
	want "$l" src-addr "$H1:7174" "$sfx listener"
	want "$l" cm-state LISTEN "$sfx listener"
	echo "ok: $sfx: listening rping -s (pid $sp): $l"

	wait_for "'$FABSIM' --dir '$FABSIM_DIR' run h2 -- '$MADCM' ids pid $cp cm-state ESTABLISHED | grep -q ." 60 ||
		{ ids h2 >&2; tail "$out"/* >&2; fail "$sfx: the client (pid $cp) has no ESTABLISHED id"; }
	c=$(one h2 pid "$cp" cm-state established)
	want "$c" state CONNECT "$sfx client"
	want "$c" ps TCP "$sfx client"
	want "$c" qp-type RC "$sfx client"
	want "$c" comm rping "$sfx client"
	want "$c" dst-addr "$H1:7174" "$sfx client"
	want "$c" link "$DEV2/1" "$sfx client"
	cport=$(val "$c" src-addr | sed 's/.*://')
	[ "$(val "$c" src-addr)" = "$H2:$cport" ] || fail "$sfx client: src-addr $(val "$c" src-addr)"
	clqpn=$(val "$c" lqpn)
	[ -n "$clqpn" ] || fail "$sfx client: no lqpn"
	case $(val "$c" comm-id) in 0x????????) ;; *) fail "$sfx client: comm-id $(val "$c" comm-id)" ;; esac
	echo "ok: $sfx: client (pid $cp): $c"

	wait_for "'$FABSIM' --dir '$FABSIM_DIR' run h1 -- '$MADCM' ids pid $sp state CONNECT dst-port $cport | grep -q ESTABLISHED" 30 ||
		{ ids h1 >&2; fail "$sfx: the server has no ESTABLISHED id to $H2:$cport"; }
	s=$(one h1 pid "$sp" state connect src-port 7174 dst-port "$cport" ps tcp)
	want "$s" src-addr "$H1:7174" "$sfx server side"
	want "$s" dst-addr "$H2:$cport" "$sfx server side"
	want "$s" cm-state ESTABLISHED "$sfx server side"
	want "$s" comm rping "$sfx server side"
	slqpn=$(val "$s" lqpn)
	[ -n "$slqpn" ] || fail "$sfx server side: no lqpn"
	one h1 lqpn "$slqpn" pid "$sp" >/dev/null
	echo "ok: $sfx: server side of the connection: $s"

	# JSON: iproute2's keys, the same values.
	ids h1 -j pid "$sp" >"$out/$sfx.json"
	python3 - "$out/$sfx.json" "$sp" "$cport" "$H1" "$H2" "$DEV1" "$4" <<'EOF' ||
import json, sys
path, sp, cport, h1, h2, dev, daemon = sys.argv[1:]
ids = json.load(open(path))
assert len(ids) == 2, ids
keys = {"ifname", "port", "qp-type", "state", "ps", "pid", "comm", "src-addr", "src-port",
        "cm-state", "daemon"}
for i in ids:
    assert keys <= set(i), (sorted(keys - set(i)), i)
    assert i["ifname"] == dev and i["port"] == 1 and i["pid"] == int(sp), i
    assert i["comm"] == "rping" and i["ps"] == "TCP" and i["qp-type"] == "RC", i
    assert i["src-addr"] == h1 and i["src-port"] == 7174, i
    assert i["daemon"] == (daemon == "1"), i
lis = [i for i in ids if i["state"] == "LISTEN"]
con = [i for i in ids if i["state"] == "CONNECT"]
assert len(lis) == 1 and len(con) == 1, ids
assert "dst-addr" not in lis[0] or lis[0]["dst-port"] == 0, lis
c = con[0]
assert c["dst-addr"] == h2 and c["dst-port"] == int(cport), c
assert isinstance(c["lqpn"], int) and isinstance(c["comm-id"], int), c
assert c["cm-state"] == "ESTABLISHED", c
EOF
		{ cat "$out/$sfx.json" >&2; fail "$sfx: JSON"; }
	echo "ok: $sfx: JSON with rdma's keys"
}

DEV1=$(on h1 ibv_devices 2>/dev/null | awk 'NR > 2 { print $1; exit }')
DEV2=$(on h2 ibv_devices 2>/dev/null | awk 'NR > 2 { print $1; exit }')
[ -n "$DEV1" ] && [ -n "$DEV2" ] || fail "no device names (ibv_devices)"

# 1. In-process on both hosts.
on_bg h1 "$MADCM" run rping -s -a $H1 -C 1000000 >"$out/s1" 2>&1
sp=$!
bg_pids="$bg_pids $sp"
wait_for "'$FABSIM' --dir '$FABSIM_DIR' run h1 -- '$MADCM' ids pid $sp state LISTEN | grep -q ." 30 ||
	{ ids h1 >&2; fail "no LISTEN id for rping -s (pid $sp)"; }
[ "$(stat -c %a "$MADCM_IDS_DIR/ids.$sp")" = 600 ] || fail "ids.$sp: mode is not 0600"
on_bg h2 "$MADCM" run rping -c -a $H1 -C 1000000 >"$out/c1" 2>&1
cp=$!
bg_pids="$bg_pids $cp"
check_pair in-process "$sp" "$cp" 0
[ -z "$(ids h1 pid "$sp" state ADDR_QUERY)" ] || fail "a filter on state matched the wrong state"

# A killed process leaves its table: the next listing ignores and removes it.
kill -9 "$cp" "$sp"
wait "$cp" "$sp" 2>/dev/null
[ -f "$MADCM_IDS_DIR/ids.$sp" ] || fail "no table left by the killed server"
[ -z "$(ids h1 pid "$sp")" ] || fail "the killed server's ids are still listed"
[ ! -f "$MADCM_IDS_DIR/ids.$sp" ] || fail "the killed server's table was not removed"
[ ! -f "$MADCM_IDS_DIR/ids.$cp" ] || fail "the killed client's table was not removed"
echo "ok: tables of killed processes ignored and removed"

# A QP the program freed itself (ibv_destroy_qp, as rping does) leaves a
# dangling id->qp until rdma_destroy_id; the table, written again while
# that id is listed (a second id bound), must not read it: under
# AddressSanitizer (make check-asan, CI's ASan stage) it was a
# use-after-free.  The id still shows the QP number it had.
on_bg h1 "$MADCM" run rping -s -a $H1 -p 7175 >"$out/qg.s" 2>&1
sp=$!
bg_pids="$bg_pids $sp"
wait_listen $sp 7175
mkfifo "$out/qg.in"
# Not on_bg: a function's redirections are opened by this shell, and the
# FIFO's would wait for a writer.
"$FABSIM" --dir "$FABSIM_DIR" run h2 -- "$MADCM" run "$top_builddir/tests/integration/ids_qp_gone" \
	$H1 7175 7176 <"$out/qg.in" >"$out/qg.c" 2>&1 &
qp=$!
bg_pids="$bg_pids $qp"
exec 3>"$out/qg.in"
wait_for "grep -q bound '$out/qg.c'" 30 || { cat "$out/qg.c" >&2; fail "ids_qp_gone: not bound"; }
wait_for "'$FABSIM' --dir '$FABSIM_DIR' run h2 -- '$MADCM' ids pid $qp src-port 7176 | grep -q ." 30 ||
	{ ids h2 >&2; fail "ids_qp_gone: the table was not written again"; }
l=$(ids h2 pid $qp dst-port 7175)
case $(val "$l" lqpn) in
"" | -*) echo "$l" >&2; fail "ids_qp_gone: no QP number" ;;
esac
echo >&3
exec 3>&-
wait $qp || { cat "$out/qg.c" >&2; fail "ids_qp_gone"; }
kill -9 $sp 2>/dev/null
wait $sp 2>/dev/null
echo "ok: an id whose QP the program freed ($l)"

# A process that exits removes its own.  ucmatose, not rping: on an error
# rping calls exit() from its CM thread while main returns, and two
# exits at once may end the process before every exit handler ran (its
# table is then a dead process's, removed by the next listing, above).
on h2 "$MADCM" run ucmatose -s 198.18.0.99 -c 1 >"$out/gone" 2>&1
[ -z "$(ls "$MADCM_IDS_DIR")" ] || {
	ls -l "$MADCM_IDS_DIR" >&2
	for f in "$MADCM_IDS_DIR"/*; do echo "== $f" >&2; cat "$f" >&2; ps -o pid,stat,args -p "${f##*.}" >&2; done
	cat "$out/gone" >&2
	fail "a table outlived its process"
}
echo "ok: a process's table goes with it"

# 2. The server through madcmd on h1, the client in-process on h2.
fs madcmd h1 start >"$out/madcmd.log" 2>&1 || { cat "$out/madcmd.log" >&2; fail "madcmd start"; }
on_bg h1 "$MADCM" run rping -s -a $H1 -C 1000000 >"$out/s2" 2>&1
sp=$!
bg_pids="$bg_pids $sp"
wait_for "'$FABSIM' --dir '$FABSIM_DIR' run h1 -- '$MADCM' ids pid $sp cm-state LISTEN | grep -q ." 30 ||
	{ ids h1 >&2; on h1 "$MADCM" stat --daemon >&2; fail "madcmd: no LISTEN id for rping -s (pid $sp)"; }
on_bg h2 "$MADCM" run rping -c -a $H1 -C 1000000 >"$out/c2" 2>&1
cp=$!
bg_pids="$bg_pids $cp"
check_pair madcmd "$sp" "$cp" 1
kill -9 "$cp" "$sp"
wait "$cp" "$sp" 2>/dev/null

echo "PASS: madcm ids"
exit 0
