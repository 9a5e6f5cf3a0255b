#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# The installed headers and pkg-config files are complete: `make install`
# into a private DESTDIR, then a small program against each of madcm.pc
# (include/madcm/*.h, libmadcm.so.0) and madcm-rdmacm.pc (rdma/rdma_cma.h,
# librdmacm.so.1), compiled and linked with nothing but what pkg-config
# says, finding everything in that tree, and run.  Under make check.
set -u

srcdir=${top_srcdir:-.}
builddir=${top_builddir:-.}
CC=${ABI_CC:-cc}

. "$srcdir/tests/skip.sh"
skip_missing pkg-config pkg-config

tmp=$(mktemp -d) || exit 99
trap 'rm -rf "$tmp"' EXIT
dest=$tmp/root

echo "== make install DESTDIR=$dest"
if ! env -u MAKEFLAGS -u MFLAGS ${MAKE:-make} -C "$builddir" install DESTDIR="$dest" >"$tmp/install.log" 2>&1; then
	cat "$tmp/install.log"
	echo "FAIL: make install"
	exit 1
fi
pcdir=$(find "$dest" -name madcm.pc -path '*/pkgconfig/*' | head -n 1)
if test -z "$pcdir"; then
	echo "FAIL: no madcm.pc installed"
	exit 1
fi
pcdir=$(dirname "$pcdir")
# The .pc files name the configured prefix: the sysroot puts it in $dest.
# The system's own stay in the search path (madcm-rdmacm.pc requires
# libibverbs'), behind the installed ones.
PKG_CONFIG_SYSROOT_DIR=$dest
PKG_CONFIG_PATH=$pcdir${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}
export PKG_CONFIG_SYSROOT_DIR PKG_CONFIG_PATH

cat >"$tmp/madcm.c" <<'PROG'
#include <stdio.h>
#include <string.h>
#include <madcm/cm_stat.h>
#include <madcm/trace.h>

int main(void)
{
	struct cm_stat_counters c;

	/* No engine: an error, not a crash. */
	if (cm_stat_get(NULL, &c) >= 0 || madcm_trace_active())
		return 1;
	if (strcmp(cm_stat_msg_name(CM_STAT_REQ), "REQ") != 0)
		return 1;
	if (madcm_trace_stop() == 0)
		return 1;
	puts("libmadcm ok");
	return 0;
}
PROG

cat >"$tmp/rdmacm.c" <<'PROG'
#include <stdio.h>
#include <rdma/rdma_cma.h>
#include <rdma/rsocket.h>

int main(void)
{
	if (rdma_destroy_id(NULL) == 0)
		return 1;
	printf("librdmacm ok: %s\n", rdma_event_str(RDMA_CM_EVENT_ESTABLISHED));
	return 0;
}
PROG

fail=0
for pc in madcm:madcm madcm-rdmacm:rdmacm; do
	mod=${pc%%:*}
	prog=${pc#*:}
	flags=$(pkg-config --cflags --libs "$mod") || {
		echo "FAIL: pkg-config $mod"
		fail=1
		continue
	}
	echo "== $mod: $CC ... $flags"
	# -Wl,-rpath from the .pc names the final prefix, not $dest: the
	# library path names the one installed here.
	if ! $CC -Wall -Werror -o "$tmp/$prog" "$tmp/$prog.c" $flags; then
		echo "FAIL: $prog.c does not build against the installed $mod"
		fail=1
		continue
	fi
	libdirs=$(pkg-config --libs-only-L "$mod" | sed 's/-L//g; s/ *$//; s/  */:/g')
	if ! LD_LIBRARY_PATH=$libdirs "$tmp/$prog"; then
		echo "FAIL: $prog against the installed $mod"
		fail=1
		continue
	fi
	# It ran on the installed library, not on one from the build tree.
	lib=$(LD_LIBRARY_PATH=$libdirs ldd "$tmp/$prog" | awk -v l="lib$prog.so" '$1 ~ l { print $3 }')
	case $lib in
	"$dest"/*) ;;
	*)
		echo "FAIL: $prog loaded lib$prog from '$lib', not from $dest"
		fail=1
		;;
	esac
done

test $fail -eq 0 || exit 1
echo "install check passed"
