#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# Fetch a Debian bookworm kernel image package and unpack it (NOT install it)
# under $MADCM_KVM_DIR (default /tmp/madcm-kernel), then run depmod on the unpacked tree.
#
#   tests/kernel/fetch-kernel.sh [PACKAGE]
#
# PACKAGE defaults to the newest linux-image-6.1.0-N-amd64 that apt-cache knows.
# Prints the kernel release (e.g. 6.1.0-57-amd64) on the last line.
set -euo pipefail
D=${MADCM_KVM_DIR:-/tmp/madcm-kernel}
mkdir -p "$D"
cd "$D"
PKG=${1:-}
if [ -z "$PKG" ]; then
    if ! apt-cache show linux-image-amd64 >/dev/null 2>&1; then apt-get update >/dev/null; fi
    PKG=$(apt-cache search --names-only '^linux-image-6\.1\.0-[0-9]+-amd64$' |
          awk '{print $1}' | sort -t- -k5,5n | tail -1)
fi
[ -n "$PKG" ] || { echo "no linux-image-6.1.0-*-amd64 package found" >&2; exit 1; }
KREL=${PKG#linux-image-}
KDIR="$D/k-$KREL"
if [ ! -f "$KDIR/boot/vmlinuz-$KREL" ]; then
    ls "${PKG}"_*.deb >/dev/null 2>&1 || apt-get download "$PKG" >&2
    rm -rf "$KDIR.tmp"
    dpkg-deb -x "$(ls "${PKG}"_*.deb | tail -1)" "$KDIR.tmp"
    mv "$KDIR.tmp" "$KDIR"
fi
[ -f "$KDIR/lib/modules/$KREL/modules.dep.bin" ] || depmod -b "$KDIR" "$KREL"
for m in rdma_rxe ib_core ib_umad ib_uverbs ib_cm iw_cm rdma_cm rdma_ucm \
         9p 9pnet_virtio virtio_net virtio_pci overlay; do
    f=$(find "$KDIR/lib/modules/$KREL" -name "$m.ko*" | head -1)
    [ -n "$f" ] && continue
    grep -q "/$m.ko\$" "$KDIR/lib/modules/$KREL/modules.builtin" && continue
    echo "module $m missing in $PKG" >&2; exit 1
done
echo "$KREL"
