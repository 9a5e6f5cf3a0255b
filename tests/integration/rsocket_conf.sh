#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# rdma-core's rsocket tuning files, /etc/rdma/rsocket/*, read by madcm's
# rsockets (lib/rsocket_conf.c): a new rsocket's options without the files
# (rdma-core's defaults), with files (mem_default, wmem_default,
# sqsize_default, rqsize_default, inline_default, iomap_size, and
# polling_time and wake_up_interval, which must not break anything), and
# with values below rdma-core's bounds (mem_default 0 -> 1, wmem_default
# below 2048 -> 4096; a connection's buffers are then at least 4096 bytes,
# madcm's minimum as for SO_RCVBUF) or unparsable ones (default kept).  The directory is fixed, as in
# rdma-core, so each case runs in a mount namespace (unshare -m) with a
# tmpfs over /etc/rdma: root only.
set -u
top_builddir=${top_builddir:-.}
PRINT=$top_builddir/tests/unit/rsocket_conf_print
. "$(dirname "$0")/../skip.sh"
[ "$(id -u)" = 0 ] || skip_env "needs root (a mount namespace over /etc/rdma)"
skip_missing unshare util-linux
[ -x "$PRINT" ] || { echo "SKIP: $PRINT not built"; exit 77; }
if ! unshare -m true 2>/dev/null; then
	[ "${CI:-}" = true ] && { echo "FAIL: unshare -m does not work here"; exit 1; }
	echo "SKIP: unshare -m not permitted here"
	exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0

# run DIR: the options printed with DIR's files as /etc/rdma/rsocket.
run() {
	unshare -m sh -c '
		mount --make-rprivate / 2>/dev/null
		mount -t tmpfs none /etc/rdma || exit 3
		mkdir /etc/rdma/rsocket || exit 3
		cp "$1"/* /etc/rdma/rsocket/ 2>/dev/null
		exec "$2"' sh "$1" "$PRINT"
}

# check NAME DIR "EXPECTED LINES"
check() {
	got=$(run "$2" | tr '\n' ' ')
	want=$(printf '%s\n' "$3" | tr '\n' ' ')
	if [ "$got" = "$want" ]; then
		echo "ok: $1"
	else
		echo "FAIL: $1"
		echo "  want: $want"
		echo "  got:  $got"
		fail=1
	fi
}

# The mount point: rdma-core (a dependency of libibverbs1) installs it.
[ -d /etc/rdma ] || { echo "SKIP: no /etc/rdma (rdma-core not installed) to mount over"; exit 77; }

mkdir "$tmp/none"
check "no files: rdma-core's defaults" "$tmp/none" "SO_RCVBUF 131072
SO_SNDBUF 131072
RDMA_SQSIZE 384
RDMA_RQSIZE 384
RDMA_INLINE 64
RDMA_IOMAPSIZE 0"

mkdir "$tmp/set"
echo 262144 >"$tmp/set/mem_default"
echo 65536 >"$tmp/set/wmem_default"
echo 128 >"$tmp/set/sqsize_default"
echo 256 >"$tmp/set/rqsize_default"
echo 32 >"$tmp/set/inline_default"
echo 16 >"$tmp/set/iomap_size"
echo 20 >"$tmp/set/polling_time"
echo 100 >"$tmp/set/wake_up_interval"
check "all files" "$tmp/set" "SO_RCVBUF 262144
SO_SNDBUF 65536
RDMA_SQSIZE 128
RDMA_RQSIZE 256
RDMA_INLINE 32
RDMA_IOMAPSIZE 16"

mkdir "$tmp/bounds"
echo 0 >"$tmp/bounds/mem_default"
echo 100 >"$tmp/bounds/wmem_default"
echo 300 >"$tmp/bounds/iomap_size"
echo "not a number" >"$tmp/bounds/sqsize_default"
check "bounds and bad files" "$tmp/bounds" "SO_RCVBUF 1
SO_SNDBUF 4096
RDMA_SQSIZE 384
RDMA_RQSIZE 384
RDMA_INLINE 64
RDMA_IOMAPSIZE 256"

[ $fail -eq 0 ] || exit 1
echo "rsocket_conf: ok"
exit 0
