# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# Sourced by the test scripts: how a test, or a part of one, says it cannot
# run here.  A skip for something the install step (scripts/dev.sh, whose
# PKGS lists the Debian packages the tests use) would have installed fails
# in CI (CI=true), where it could only hide a test; a skip for a reason no
# package changes (not root, no namespaces, no /dev/kvm) says so and skips
# in CI too.

# skip_or_fail_in_ci REASON: exit 77 (skip), or 1 in CI.
skip_or_fail_in_ci() {
	if [ "${CI:-}" = true ]; then
		echo "FAIL: $* (CI=true: the install step provides this, so it may not skip)" >&2
		exit 1
	fi
	echo "SKIP: $*"
	exit 77
}

# skip_missing TOOL PACKAGE: TOOL (a program of the Debian package PACKAGE)
# is not installed: skip, or fail in CI.
skip_missing() {
	command -v "$1" >/dev/null 2>&1 ||
		skip_or_fail_in_ci "$1 not installed (Debian package $2)"
}

# have_tool TOOL PACKAGE: for a part of a test that needs TOOL: true when
# it is installed; else fail in CI, or say the part is skipped and be false.
have_tool() {
	command -v "$1" >/dev/null 2>&1 && return 0
	if [ "${CI:-}" = true ]; then
		echo "FAIL: $1 not installed (Debian package $2; CI=true: the install step provides it)" >&2
		exit 1
	fi
	echo "SKIP part: $1 not installed (Debian package $2)"
	return 1
}

# skip_env REASON: skip for a reason of this machine or user that no
# package changes (CI skips too).
skip_env() {
	echo "SKIP (no package changes this): $*"
	exit 77
}
