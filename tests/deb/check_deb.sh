#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# `make check-deb`: madcm's Debian packages (debian/) built from a copy of
# the distributed tree (make distdir), checked by lintian (no error), then
# installed in a fresh Debian root made by mmdebstrap from the archive
# the host's apt uses, beside Debian's OpenSM and rdmacm-utils; in that
# root, from the packages alone: rdma-core's librdmacm.so.1 is untouched,
# madcmd's unit is enabled, its group and tmpfiles entry exist, and
# `madcm run rping` passes between two hosts of the packaged simulator,
# with the CM in each program and through a madcmd per host
# (tests/deb/in_root.sh).  Needs root (mmdebstrap --mode=root, chroot).
# DEB_MIRROR overrides the archive, CHECK_DEB_KEEP=1 keeps the work
# directory.
set -eu
: "${top_srcdir:?}" "${top_builddir:?}"
MAKE=${MAKE:-make}
fail() { echo "check-deb: FAIL: $*" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || fail "needs root (mmdebstrap --mode=root, chroot)"
for c in dpkg-buildpackage dh lintian mmdebstrap unshare; do
	command -v $c >/dev/null ||
		fail "$c missing: apt-get install dpkg-dev debhelper lintian mmdebstrap"
done

work=$(mktemp -d "${TMPDIR:-/tmp}/check-deb.XXXXXX")
cleanup() {
	if [ "${CHECK_DEB_KEEP:-0}" = 1 ]; then echo "check-deb: kept $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT
step() { echo "check-deb: $* ($(date +%T))"; }

# 1. The packages, built from the distributed tree (out of the source tree).
version=$(sed -n 's/^PACKAGE_VERSION = //p' "$top_builddir/Makefile")
src=$work/madcm-$version
step "copying the tree (make distdir)"
$MAKE -C "$top_builddir" distdir distdir="$src" >"$work/distdir.log" 2>&1 ||
	{ tail -20 "$work/distdir.log"; fail "make distdir"; }
step "dpkg-buildpackage -b -us -uc (log: build.log)"
(cd "$src" && DEB_BUILD_OPTIONS="nocheck parallel=$(nproc)" dpkg-buildpackage -b -us -uc) \
	>"$work/build.log" 2>&1 || { tail -40 "$work/build.log"; fail "dpkg-buildpackage"; }
changes=$(ls "$work"/madcm_*.changes)

# 2. lintian: warnings are printed, an error fails.
step "lintian"
lintian --fail-on error "$changes" || fail "lintian reports an error"

# 3. A fresh Debian root with the packages installed from their .deb files.
suite=$(. /etc/os-release && echo "$VERSION_CODENAME")
mirror=${DEB_MIRROR:-$(sed -n 's/^URIs: *//p; s/^deb \(http[^ ]*\) .*/\1/p' \
	/etc/apt/sources.list.d/debian.sources /etc/apt/sources.list 2>/dev/null | head -n 1)}
mirror=${mirror:-http://deb.debian.org/debian}
debs=$(ls "$work"/*.deb | grep -v -- -dbgsym_ | tr '\n' ' ')
root=$work/root
step "mmdebstrap $suite from $mirror (log: mmdebstrap.log)"
mmdebstrap --mode=root --variant=apt --include=opensm,rdmacm-utils,infiniband-diags \
	--customize-hook='mkdir -p "$1/tmp/debs"' \
	--customize-hook="copy-in $debs /tmp/debs" \
	--customize-hook='chroot "$1" sh -c "apt-get install -y /tmp/debs/*.deb && rm -rf /tmp/debs"' \
	"$suite" "$root" "$mirror" >"$work/mmdebstrap.log" 2>&1 ||
	{ tail -40 "$work/mmdebstrap.log"; fail "mmdebstrap"; }

# 4. In the root: what the packages installed, and rping on the simulator.
step "rping under madcm run in the root"
cp "$top_srcdir/tests/deb/in_root.sh" "$root/in_root.sh"
# A private mount namespace: /proc, /dev and /tmp of the root vanish with it.
unshare --mount --fork sh -c '
	root=$1
	mount -t proc proc "$root/proc" && mount --rbind /dev "$root/dev" &&
	mount -t tmpfs tmpfs "$root/tmp" && exec chroot "$root" /bin/sh /in_root.sh
' sh "$root" || fail "in the installed root (tests/deb/in_root.sh)"
step "all passed"
