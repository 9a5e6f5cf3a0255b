#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# Build a minimal initramfs (static busybox + virtio/9p/overlay modules + init)
# for an unpacked kernel made by fetch-kernel.sh.
#
#   tests/kernel/mkinitramfs.sh KREL      -> $MADCM_KVM_DIR/initramfs-KREL.cpio.gz
set -euo pipefail
KREL=$1
D=${MADCM_KVM_DIR:-/tmp/madcm-kernel}
HERE=$(cd "$(dirname "$0")" && pwd)
MD="$D/k-$KREL/lib/modules/$KREL"
OUT="$D/initramfs-$KREL.cpio.gz"
BUSYBOX=/bin/busybox
file -L "$BUSYBOX" 2>/dev/null | grep -q 'statically linked' ||
    { echo "need busybox-static (apt-get install busybox-static)" >&2; exit 1; }
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
mkdir -p "$T/bin" "$T/lib/modules"
cp "$BUSYBOX" "$T/bin/busybox"
cp "$HERE/init" "$T/init"
cp "$HERE/stage2" "$T/stage2"
chmod 755 "$T/init" "$T/stage2"
# Module closure, in load order (modprobe --show-depends prints deps first).
: > "$T/modules.list"
for m in virtio_pci virtio_net 9pnet_virtio 9p overlay; do
    modprobe -d "$D/k-$KREL" -S "$KREL" --show-depends "$m" |
        awk '$1=="insmod"{print $2}'
done | awk '!seen[$0]++' | while read -r f; do
    b=$(basename "$f")
    # busybox insmod passes the file to init_module() as is: decompress.
    case "$b" in
    *.ko.xz) b=${b%.xz}; xz -dc "$f" > "$T/lib/modules/$b" ;;
    *.ko.zst) b=${b%.zst}; zstd -qdc "$f" > "$T/lib/modules/$b" ;;
    *.ko.gz) b=${b%.gz}; gzip -dc "$f" > "$T/lib/modules/$b" ;;
    *) cp "$f" "$T/lib/modules/$b" ;;
    esac
    echo "$b" >> "$T/modules.list"
done
(cd "$T" && find . | cpio -o -H newc --quiet | gzip -1) > "$OUT.tmp"
mv "$OUT.tmp" "$OUT"
echo "$OUT ($(du -h "$OUT" | cut -f1)); modules: $(tr '\n' ' ' < "$T/modules.list")"
