#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# The model (tests/model/cm.pml) and the code (cm/state.c) have the same
# transitions: the model's T() and RETX() lines equal the C table as
# tests/model/cm_table_dump prints it.  Then shows that the check bites:
# a copy of the model with one transition changed, and one with a
# transition removed, fail it; so does cm_table_dump_mutant, built from a
# copy of cm/state.c with one transition changed (tests/model/Makefile.inc).
set -eu

: "${top_srcdir:=$(cd "$(dirname "$0")/../.." && pwd)}"
: "${top_builddir:=.}"
model=$top_srcdir/tests/model/cm.pml
dump=$top_builddir/tests/model/cm_table_dump
mutant=$top_builddir/tests/model/cm_table_dump_mutant

tmp=$(mktemp -d "${TMPDIR:-/tmp}/cm-table.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM

# The transitions a model file states, one per line, sorted.
extract() {
	{
		grep -oE '^[[:space:]]*T\([A-Z_]+, [A-Z_]+, [A-Z_]+, [A-Z_]+\)' "$1" |
			sed 's/^[[:space:]]*//'
		grep -oE 'RETX\([A-Z_]+\)' "$1"
	} | sort -u
}

"$dump" | sort -u >"$tmp/code"
extract "$model" >"$tmp/model"
test -s "$tmp/code" && test -s "$tmp/model"
if ! diff -u "$tmp/code" "$tmp/model" >"$tmp/diff"; then
	echo "FAIL: cm/state.c (-) and tests/model/cm.pml (+) differ:"
	cat "$tmp/diff"
	exit 1
fi
echo "ok   model = code: $(wc -l <"$tmp/model") transitions and retransmitting states"

# must_differ NAME FILE: FILE's transitions must not pass as the code's.
must_differ() {
	if cmp -s "$tmp/code" "$2"; then
		echo "FAIL: $1 was not caught"
		exit 1
	fi
	echo "ok   caught: $1"
}

# A model changed on its own: RTU in REP_SENT leads elsewhere.
sed 's/T(REP_SENT, RTU, GO, ESTABLISHED)/T(REP_SENT, RTU, GO, TIMEWAIT)/' "$model" >"$tmp/m1.pml"
cmp -s "$model" "$tmp/m1.pml" && { echo "FAIL: mutation 1 did not apply"; exit 1; }
extract "$tmp/m1.pml" >"$tmp/m1"
must_differ "model mutant (REP_SENT/RTU -> TIMEWAIT)" "$tmp/m1"

# A model that forgot a transition: a REQ in TimeWait is no longer answered.
grep -v 'T(TIMEWAIT, REQ, REJ_STALE, SAME)' "$model" >"$tmp/m2.pml" || true
extract "$tmp/m2.pml" >"$tmp/m2"
must_differ "model mutant (TIMEWAIT/REQ removed)" "$tmp/m2"

# A model whose timer no longer retransmits in DREQ_SENT.
sed 's/RETX(DREQ_SENT)//' "$model" >"$tmp/m3.pml"
extract "$tmp/m3.pml" >"$tmp/m3"
must_differ "model mutant (DREQ_SENT not retransmitting)" "$tmp/m3"

# The code changed on its own: the mutant table against the real model.
"$mutant" | sort -u >"$tmp/c1"
if cmp -s "$tmp/c1" "$tmp/model"; then
	echo "FAIL: code mutant (cm/state.c copy) was not caught"
	exit 1
fi
echo "ok   caught: code mutant (state.c copy: REP_SENT/RTU -> DREQ_RCVD)"
diff "$tmp/model" "$tmp/c1" | sed -n 's/^[<>]/     &/p'
