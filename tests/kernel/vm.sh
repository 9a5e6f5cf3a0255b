#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# Boot a Debian kernel (unpacked by fetch-kernel.sh) in qemu with the host's /
# as a read-only 9p lower layer under a tmpfs overlay (see init, stage2).
#
#   tests/kernel/vm.sh [options]
#     --krel KREL       kernel release (default: $RXEVM_KREL, else the newest
#                       k-* under $MADCM_KVM_DIR by version sort)
#     --kvm             use KVM (default: TCG). On this workplace /dev/kvm is
#                       kvm_pvm (nested PVM): a stock kernel's ring-0 code is
#                       emulated there and dies on cmpxchg16b/xrstor; see README
#     --cpu MODEL       qemu -cpu (default: max for TCG, host,-arch-capabilities for KVM)
#     --name NAME       hostname (default vm)
#     --ip A.B.C.D/NN   eth0 address
#     --ip6 ADDR/NN     eth0 IPv6 address (no DAD)
#     --listen PORT     eth0 = qemu socket netdev listening on 127.0.0.1:PORT
#     --connect PORT    eth0 = qemu socket netdev connecting to 127.0.0.1:PORT
#                       (neither: eth0 on a private hub with no peer)
#     --mac MAC         eth0 MAC (default 52:54:00:12:34:NN, NN from --ip)
#     --mem MiB         (default 1024)   --smp N (default 1)
#     --bzimage         boot vmlinuz (bzImage, xz) instead of the uncompressed
#                       vmlinux through the PVH entry (default; vmlinux is
#                       extracted once: saves the ~3 s xz decompression in TCG)
#     --bios FILE       firmware (default qboot.rom: boots faster than SeaBIOS
#                       under TCG; "default" = qemu's SeaBIOS)
#     --script PATH     host path of a bash script to run in the guest, then
#                       power off; without it: interactive shell
#     --out DIR         host dir shared read-write at /out in the guest
#     --var K=V         exported to the script as RXEVM_K=V (repeatable)
#     --pin CPU         run qemu on host CPU CPU only (taskset): two VMs on
#                       two host CPUs then never share one
# The console (ttyS0) is on stdout. No user-mode (slirp) network is created:
# the guest's only NIC is the socket/hub one, so guest traffic never leaves
# qemu except as the 127.0.0.1 TCP stream between two qemu processes.
set -euo pipefail
D=${MADCM_KVM_DIR:-/tmp/madcm-kernel}
HERE=$(cd "$(dirname "$0")" && pwd)
KREL=${RXEVM_KREL:-} ACCEL=tcg CPU= BIOS=qboot.rom PVH=1 NAME=vm IP= IP6= LISTEN= CONNECT= MAC= MEM=1024 SMP=1 SCRIPT= OUTDIR= PIN=
VARS=()
while [ $# -gt 0 ]; do
    case "$1" in
    --krel) KREL=$2; shift ;;
    --tcg) ACCEL=tcg ;;
    --kvm) ACCEL=kvm ;;
    --cpu) CPU=$2; shift ;;
    --name) NAME=$2; shift ;;
    --ip) IP=$2; shift ;;
    --ip6) IP6=$2; shift ;;
    --listen) LISTEN=$2; shift ;;
    --connect) CONNECT=$2; shift ;;
    --mac) MAC=$2; shift ;;
    --mem) MEM=$2; shift ;;
    --bios) BIOS=$2; shift ;;
    --bzimage) PVH= ;;
    --smp) SMP=$2; shift ;;
    --script) SCRIPT=$(readlink -f "$2"); shift ;;
    --out) OUTDIR=$(readlink -f "$2"); shift ;;
    --var) VARS+=("rxevm.$2"); shift ;;
    --pin) PIN=$2; shift ;;
    *) echo "vm.sh: unknown option $1" >&2; exit 2 ;;
    esac
    shift
done
if [ -z "$KREL" ]; then
    KREL=$(ls -d "$D"/k-* 2>/dev/null | sed "s|$D/k-||" | sort -V | tail -1)
fi
K="$D/k-$KREL"
[ -f "$K/boot/vmlinuz-$KREL" ] || { echo "no kernel $KREL; run tests/kernel/fetch-kernel.sh" >&2; exit 1; }
KIMG="$K/boot/vmlinuz-$KREL"
if [ -n "$PVH" ]; then
    KIMG="$D/vmlinux-$KREL"
    if [ ! -s "$KIMG" ]; then
        # bzImage payload: xz (6.1) or zstd (6.12); data trails the stream.
        BZ="$K/boot/vmlinuz-$KREL"
        off=$(LC_ALL=C grep -abo -m1 $'\xfd7zXZ\x00' "$BZ" | cut -d: -f1 | head -1 || true)
        if [ -n "$off" ]; then
            tail -c +$((off + 1)) "$BZ" | xz -dc > "$KIMG.tmp" 2>/dev/null || true
        else
            off=$(LC_ALL=C grep -abo -m1 $'\x28\xb5\x2f\xfd' "$BZ" | cut -d: -f1 | head -1 || true)
            tail -c +$((off + 1)) "$BZ" | zstd -qdc > "$KIMG.tmp" 2>/dev/null || true
        fi
        [ "$(readelf -n "$KIMG.tmp" 2>/dev/null | grep -c Xen)" -gt 0 ] || { echo "vmlinux extraction failed" >&2; exit 1; }
        mv "$KIMG.tmp" "$KIMG"
    fi
fi
INITRD="$D/initramfs-$KREL.cpio.gz"
if [ ! -f "$INITRD" ] || [ "$HERE/init" -nt "$INITRD" ] || [ "$HERE/stage2" -nt "$INITRD" ]; then
    "$HERE/mkinitramfs.sh" "$KREL" >&2
fi
if [ "$ACCEL" = kvm ] && ! [ -r /dev/kvm -a -w /dev/kvm ]; then
    echo "vm.sh: /dev/kvm not usable, using TCG" >&2; ACCEL=tcg
fi
if [ "$ACCEL" = kvm ]; then A=(-enable-kvm -cpu "${CPU:-host,-arch-capabilities}")
else A=(-accel tcg -cpu "${CPU:-max}"); fi
if [ -z "$MAC" ]; then
    last=${IP%/*}; last=${last##*.}; [ -n "$IP" ] || last=1
    MAC=$(printf '52:54:00:12:34:%02x' "$last")
fi
if [ -n "$LISTEN" ]; then NET="socket,id=n0,listen=127.0.0.1:$LISTEN"
elif [ -n "$CONNECT" ]; then NET="socket,id=n0,connect=127.0.0.1:$CONNECT"
else NET="hubport,id=n0,hubid=0"; fi
APPEND="console=ttyS0 quiet loglevel=4 panic=-1 rxevm.name=$NAME rxevm.moddir=$K/lib/modules/$KREL"
[ -n "$IP" ] && APPEND+=" rxevm.ip=$IP"
[ -n "$IP6" ] && APPEND+=" rxevm.ip6=$IP6"
[ -n "$SCRIPT" ] && APPEND+=" rxevm.script=$SCRIPT"
for v in "${VARS[@]}"; do APPEND+=" $v"; done
FS=(-fsdev "local,id=fsroot,path=/,security_model=none,readonly=on,multidevs=remap"
    -device "virtio-9p-pci,fsdev=fsroot,mount_tag=hostroot")
if [ -n "$OUTDIR" ]; then
    mkdir -p "$OUTDIR"
    FS+=(-fsdev "local,id=fsout,path=$OUTDIR,security_model=none"
         -device "virtio-9p-pci,fsdev=fsout,mount_tag=out")
fi
FW=(); [ "$BIOS" = default ] || FW=(-bios "$BIOS")
if [ -t 0 ] && [ -z "$SCRIPT" ]; then CON=(-serial mon:stdio); else CON=(-serial stdio); fi
TS=(); [ -n "$PIN" ] && command -v taskset > /dev/null && TS=(taskset -c "$PIN")
exec "${TS[@]}" qemu-system-x86_64 -nodefaults -no-user-config -nographic -no-reboot \
    "${A[@]}" "${FW[@]}" -m "$MEM" -smp "$SMP" -name "$NAME" \
    -kernel "$KIMG" -initrd "$INITRD" -append "$APPEND" \
    "${CON[@]}" "${FS[@]}" \
    -netdev "$NET" -device "virtio-net-pci,netdev=n0,mac=$MAC,romfile="
