#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# scripts/spdx.sh [--fix] [FILE...]: every source, script, build fragment
# and man page of the tree carries the project's SPDX line (COPYING).
# Without --fix it lists the files that lack it and fails; with --fix it
# adds the line in the comment form of each file's kind.  Files default to
# those git tracks (tests/spdx.sh runs this over the distributed tree).
set -eu
ID='SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB'
fix=0
[ "${1:-}" = --fix ] && { fix=1; shift; }
cd "$(dirname "$0")/.."
if [ $# -eq 0 ]; then
	# A tarball has no git: its files, less what autotools made.
	set -- $( (test -e .git && git ls-files) ||
		find . -type f ! -path './_build/*' ! -path './build*' ! -path './build-aux/*' \
			! -path './autom4te.cache/*' ! -name Makefile.in ! -name config.h.in |
		sed 's|^\./||')
fi
# The comment that carries the line in FILE, or nothing for a file that
# needs none (data, corpora, docs).
comment_of() {
	case $1 in
	tests/fuzz/corpus/* | tests/fuzz/regress/* | tests/data/* | */topologies/*) ;;
	*.c | *.h | *.map | *.pml | *.list) echo "/* $ID */" ;;
	*.sh | *.py | *.inc | *.am | *.ac | *.in | *.supp | *.service | .ci/run) echo "# $ID" ;;
	tests/kernel/init | tests/kernel/stage2 | tests/abi/extras.txt) echo "# $ID" ;;
	*.[1-8]) echo ".\\\" $ID" ;;
	esac
}
missing=0
for f in "$@"; do
	[ -f "$f" ] || continue
	c=$(comment_of "$f")
	[ -n "$c" ] || continue
	head -n 3 "$f" | grep -q "SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB" && continue
	if [ $fix = 0 ]; then
		echo "no SPDX line: $f"
		missing=$((missing + 1))
		continue
	fi
	# An old identifier is replaced; a #! line (and a man page's
	# preprocessor line) stays first.
	t=$(mktemp)
	if head -n 1 "$f" | grep -q "SPDX-License-Identifier"; then
		{ printf '%s\n' "$c"; tail -n +2 "$f"; } >"$t"
	elif head -n 1 "$f" | grep -q -e '^#!' -e "^'\\\\\"" ; then
		{ head -n 1 "$f"; printf '%s\n' "$c"; tail -n +2 "$f"; } >"$t"
	else
		{ printf '%s\n' "$c"; cat "$f"; } >"$t"
	fi
	cat "$t" >"$f"
	rm -f "$t"
done
[ $missing -eq 0 ] || { echo "$missing file(s) without the SPDX line: scripts/spdx.sh --fix FILE..."; exit 1; }
