#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# No library madcm builds may need static TLS: an initial-exec TLS
# variable marks a library STATIC_TLS (DT_FLAGS), and dlopen() of it (or
# of librdmacm.so.1, which holds libmadcm's code) then fails with "cannot
# allocate memory in static TLS block" unless its TLS block fits glibc's
# small surplus: Python's pyverbs, UCX, Open MPI, libfabric and JNI load
# librdmacm that way (docs/architecture.md).  Every shared library of
# the build tree (the .libs directories libtool fills) is checked.
set -u
: "${top_builddir:=$(cd "$(dirname "$0")/../.." && pwd)}"
. "$(dirname "$0")/../skip.sh"
skip_missing readelf binutils
libs=$(find "$top_builddir" -path '*/.libs/*.so*' -type f ! -name '*.o' | sort)
[ -n "$libs" ] || { echo "SKIP: no shared library built"; exit 77; }
fail=0
n=0
for lib in $libs; do
	readelf -h "$lib" >/dev/null 2>&1 || continue # not ELF
	n=$((n + 1))
	if readelf -dW "$lib" | grep -q 'STATIC_TLS'; then
		echo "FAIL: $lib needs static TLS:"
		readelf -dW "$lib" | grep FLAGS
		readelf -lW "$lib" | grep -w TLS
		fail=1
	else
		echo "ok: $lib"
	fi
done
# The installed libraries must be among them.
for want in librdmacm.so.1 libmadcm.so.0; do
	echo "$libs" | grep -q "/$want" || { echo "FAIL: $want not found under $top_builddir"; fail=1; }
done
echo "$n libraries checked"
exit $fail
