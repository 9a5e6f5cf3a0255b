#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# The exports of every installed library against the list committed beside
# this script, so that a new (or lost) export is a reviewed change: each
# tests/abi/LIB.exports holds the defined dynamic symbols of the built
# LIB.so as name@VERSION ("name@" when unversioned), sorted.  On a
# difference it prints the diff; after a deliberate change, regenerate
# with `tests/abi/exports.sh --update` from the build directory.
# libmadcm.so.0 exports only what include/madcm/*.h declares: each name in
# its list must be declared there.
#
# Exits 77 (skip) when a library is not built yet or objdump is missing.
set -u

srcdir=${top_srcdir:-.}
builddir=${top_builddir:-.}
update=no
test "${1:-}" = --update && update=yes

. "$srcdir/tests/skip.sh"
skip_missing objdump binutils

# list name, built library
LIBS="
libmadcm mad/.libs/libmadcm.so.0
librdmacm lib/.libs/librdmacm.so.1
librspreload lib/.libs/librspreload.so
"

. "$srcdir/tests/abi/exports.inc"

tmp=$(mktemp -d) || exit 99
trap 'rm -rf "$tmp"' EXIT
fail=0
missing=0

echo "$LIBS" | while read -r name so; do
	test -n "$name" || continue
	list=$srcdir/tests/abi/$name.exports
	if test ! -e "$builddir/$so"; then
		echo "SKIP: $so is not built yet"
		echo >>"$tmp/missing"
		continue
	fi
	exports "$builddir/$so" >"$tmp/$name"
	if test $update = yes; then
		{
			echo "# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB"
			echo "# What $so exports (tests/abi/exports.sh)."
			cat "$tmp/$name"
		} >"$list"
		echo "wrote $list"
		continue
	fi
	grep -v '^#' "$list" | sort >"$tmp/$name.want"
	echo "== $so: $(grep -c . "$tmp/$name") exports"
	if ! diff -u --label "$list" --label "$so" "$tmp/$name.want" "$tmp/$name"; then
		echo "FAIL: $so does not export exactly $list"
		echo "      (- missing, + not listed: review, then tests/abi/exports.sh --update)"
		echo >>"$tmp/fail"
	fi
done
test $update = yes && exit 0
test -e "$tmp/fail" && fail=1

echo "== libmadcm's exports against include/madcm/*.h"
for sym in $(grep -v '^#' "$srcdir/tests/abi/libmadcm.exports" | sed 's/@.*//'); do
	if ! cat "$srcdir"/include/madcm/*.h | grep -Eq "[^A-Za-z0-9_]$sym\("; then
		echo "FAIL: libmadcm exports $sym, which no include/madcm/*.h declares"
		fail=1
	fi
done

if test $fail -ne 0; then
	echo "export check FAILED"
	exit 1
fi
if test -e "$tmp/missing"; then
	exit 77
fi
echo "export check passed"
exit 0
