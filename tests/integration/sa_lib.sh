# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# Sourced by tests/integration/sa_*.sh: start a private simulated fabric
# (sim/topologies/2sw4h.topo, Debian's OpenSM) in a mktemp -d directory,
# stop it by PID (fabsim down uses the pid files it wrote) on exit.
# Exits 77 (skip) when the fabric cannot start here.
set -u
. "$(dirname "$0")/../skip.sh"
top_builddir=${top_builddir:-$(cd "$(dirname "$0")/../.." && pwd)}
top_srcdir=${top_srcdir:-$top_builddir}
FABSIM=$top_builddir/sim/fabsim
MADCM=$top_builddir/tools/madcm
TOPO=$top_srcdir/sim/topologies/2sw4h.topo

skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*"; exit 1; }

[ -x "$FABSIM" ] || skip "no $FABSIM (simulator not built)"
[ -x "$MADCM" ] || skip "no $MADCM"
[ -f "$TOPO" ] || skip "no $TOPO"
[ -x /usr/sbin/opensm ] || skip_missing opensm opensm

FAB=$(mktemp -d "${TMPDIR:-/tmp}/madcm-sa.XXXXXX") || skip "mktemp failed"
sa_cleanup() {
	"$FABSIM" --dir "$FAB" down >/dev/null 2>&1
	if [ -n "${KEEP_FABRIC:-}" ]; then echo "fabric kept in $FAB"; else rm -rf "$FAB"; fi
}
trap sa_cleanup EXIT
trap 'exit 1' INT TERM

"$FABSIM" --dir "$FAB" up "$TOPO" >"$FAB/up.txt" 2>&1 || {
	cat "$FAB/up.txt"
	skip_or_fail_in_ci "the fabric did not come up"
}

fs() { "$FABSIM" --dir "$FAB" "$@"; }
# on HOST CMD...: run CMD attached to HOST
on() { h=$1; shift; "$FABSIM" --dir "$FAB" run "$h" -- "$@"; }
# Hosts, LIDs and GIDs as `fabsim up` printed them.
HOSTS=$(awk '$1 ~ /^h[0-9]+$/ { print $1 }' "$FAB/up.txt")
lid_of() { awk -v h="$1" '$1 == h { for (i = 1; i < NF; i++) if ($i == "lid") print $(i + 1) }' "$FAB/up.txt"; }
gid_of() { awk -v h="$1" '$1 == h { print $NF }' "$FAB/up.txt"; }
[ -n "$HOSTS" ] || skip "no hosts in: $(cat "$FAB/up.txt")"
