# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# Sourced by tests/integration/sim_*.sh: a private fabric per test, torn
# down on exit (only what this test started, by PID).
set -u
. "$(dirname "$0")/../skip.sh"
: "${top_builddir:=$(cd "$(dirname "$0")/../.." && pwd)}"
: "${top_srcdir:=$top_builddir}"
FABSIM=$top_builddir/sim/fabsim
PINGPONG=$top_builddir/tests/integration/sim_umad_pingpong
[ -x "$FABSIM" ] || { echo "SKIP: $FABSIM not built"; exit 77; }
[ -x /usr/sbin/opensm ] || skip_missing opensm opensm
FABSIM_DIR=$(mktemp -d "${TMPDIR:-/tmp}/fabsim-test.XXXXXX")
export FABSIM_DIR
# The id tables programs publish for `madcm ids` stay in the test's own
# directory, not the host's /run/madcm.
MADCM_IDS_DIR=$FABSIM_DIR/ids
mkdir -p "$MADCM_IDS_DIR"
export MADCM_IDS_DIR
bg_pids=""
cleanup() {
	for p in $bg_pids; do kill -9 "$p" 2>/dev/null; done
	"$FABSIM" --dir "$FABSIM_DIR" down
	if [ "${KEEP_FABSIM:-}" = "" ]; then rm -rf "$FABSIM_DIR"; fi
}
trap cleanup EXIT
fail() {
	echo "FAIL: $*" >&2
	echo "--- fabsim status" >&2
	"$FABSIM" --dir "$FABSIM_DIR" status >&2 || true
	tail -20 "$FABSIM_DIR/opensm.log" >&2 2>/dev/null || true
	exit 1
}
fs() { "$FABSIM" --dir "$FABSIM_DIR" "$@"; }
on() { h=$1; shift; "$FABSIM" --dir "$FABSIM_DIR" run "$h" -- "$@"; }
# background variant: $! is the command itself (fabsim run execs it)
on_bg() { h=$1; shift; "$FABSIM" --dir "$FABSIM_DIR" run "$h" -- "$@" & }
lid_of() { fs hosts | awk -v h="$1" '$1 == h { print $6; exit }'; }
# wait up to $2 seconds for command $1 (a shell snippet) to succeed
wait_for() {
	i=0
	while ! sh -c "$1" >/dev/null 2>&1; do
		i=$((i + 1))
		[ $i -le $(($2 * 5)) ] || return 1
		sleep 0.2
	done
}
# wait_id PID SECONDS FILTER...: until an id that matches the `madcm ids`
# filters (madcm-ids(1)) shows in this test's id tables; at once if PID
# (the program expected to make it) has exited: its exit status then tells.
wait_id() {
	_wp=$1 _ws=$2 _wi=0
	shift 2
	until ! kill -0 "$_wp" 2>/dev/null ||
		"$top_builddir/tools/madcm" ids "$@" 2>/dev/null | grep -q .; do
		_wi=$((_wi + 1))
		[ $_wi -le $((_ws * 5)) ] || return 1
		sleep 0.2
	done
}
# wait_listen PID [PORT [SECONDS [KEY VALUE]...]]: until a listener (on
# PORT, "" for any; and matching the further filters) shows in `madcm ids`,
# so a client started next finds it (a REQ before is rejected: no
# listener), however loaded the machine.  Fails the test after SECONDS
# (60).  rdma_cm programs and rsockets publish their listeners there.
wait_listen() {
	_lp=$1 _lport=${2:-} _ls=${3:-60}
	shift $(($# < 3 ? $# : 3))
	[ -z "$_lport" ] || set -- src-port "$_lport" "$@"
	wait_id "$_lp" "$_ls" state LISTEN "$@" ||
		fail "no listener${_lport:+ on port $_lport} within $_ls s (pid $_lp)"
}
. "$(dirname "$0")/tcp_wait.sh"
# share_build DIR PROGRAM...: copies, in DIR, of what a test runs as
# another user (uid nobody): the build tree's libraries (libmadcm,
# librdmacm.so.1, librspreload.so, libfabsim.so) and each PROGRAM (a path
# under top_builddir), laid out as in the build tree so `madcm run` finds
# the library beside it.  The checkout may be private (mode 0700, as root's
# home is), and libtool's wrappers and the libraries' run paths point back
# into it, so the real binaries (from .libs) are copied and DIR is made
# readable by all; run them with LD_LIBRARY_PATH=$SHARED_LIBS and
# FABSIM_LIB=DIR/sim/.libs/libfabsim.so (fabsim run's preload).
share_build() {
	d=$1
	shift
	mkdir -p "$d/.libs" "$d/lib/.libs" "$d/sim/.libs" || return 1
	cp -L "$top_builddir/lib/.libs/librdmacm.so.1" "$top_builddir/lib/.libs/librspreload.so" \
			"$d/lib/.libs/" &&
		cp -L "$top_builddir/sim/.libs/libfabsim.so" "$d/sim/.libs/" || return 1
	for p in "$@"; do
		# A libtool wrapper script's program is in .libs (a program that
		# links no shared library of the build is itself the binary).
		real=$p
		if [ "$(head -c 2 "$top_builddir/$p")" = "#!" ]; then
			real=$(dirname "$p")/.libs/$(basename "$p")
			[ -f "$top_builddir/$real" ] || real=$p
		fi
		mkdir -p "$d/$(dirname "$p")" && cp -L "$top_builddir/$real" "$d/$p" || return 1
	done
	chmod -R a+rX "$d"
	SHARED_LIBS=$d/lib/.libs:$d/.libs
}
