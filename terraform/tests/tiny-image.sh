#!/usr/bin/env bash
# A tiny VM for testing the libvirt plumbing without the appliance image (make test-tf-smoke):
# Debian's cloud kernel + a busybox initramfs whose /init reads the NoCloud seed the module
# attaches as a virtio disk (meta-data; user-data: the node file's network.address), sets that static address on eth0 and serves the node file
# fields it must not leak (none: only id and address) over HTTP on :8080 (/healthz). It proves
# domains, network, taps, seeds, static addresses and teardown; it is NOT a mesh node.
#
#   terraform/tests/tiny-image.sh OUT_DIR     writes vmlinuz, initrd.img, disk.raw (cached)
set -o errexit -o nounset -o pipefail
out="${1:?output folder}"
KERNEL_PKG=${TINY_KERNEL_PKG:-linux-image-cloud-amd64}
[[ -s "$out/vmlinuz" && -s "$out/initrd.img" && -s "$out/disk.raw" ]] && { echo "$out"; exit 0; }
export PATH="$PATH:/usr/sbin:/sbin"
command -v busybox >/dev/null || { echo "tiny-image: busybox is missing: apt-get install busybox-static" >&2; exit 1; }
tmp=$(mktemp -d "/tmp/${TF_PREFIX:-smt}-tiny.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$out"
# the versioned package behind the meta package
pkg=$(apt-cache depends "$KERNEL_PKG" | awk '/Depends: linux-image-/{print $2; exit}')
# the kernel package is kept beside the outputs: apt-get download is slow here
ls "$out/$pkg"_*.deb >/dev/null 2>&1 || (cd "$out" && apt-get download "$pkg" 2>&1 | grep -v unsandboxed >&2 || true)
dpkg-deb -x "$(ls "$out/$pkg"_*.deb | head -n1)" "$tmp/k"
kver=${pkg#linux-image-}
depmod -b "$tmp/k" "$kver"
ird="$tmp/initrd"
mkdir -p "$ird"/{bin,proc,sys,dev,seed,www,lib/modules/"$kver"}
cp "$(command -v busybox)" "$ird/bin/busybox"
for m in virtio_pci virtio_net virtio_blk ata_piix ahci sr_mod isofs; do
  # the module and what it depends on, from the package's own tree
  { modprobe -d "$tmp/k" -S "$kver" --show-depends "$m" 2>/dev/null || true; } | awk '/^insmod/{print $2}' | while read -r ko; do
    rel=${ko#"$tmp/k"}
    mkdir -p "$ird$(dirname "$rel")"
    cp -n "$ko" "$ird$rel"
  done
done
cp "$tmp/k/lib/modules/$kver"/modules.{order,builtin,builtin.modinfo} "$ird/lib/modules/$kver/" 2>/dev/null || true
depmod -b "$ird" "$kver"
cat >"$ird/init" <<'INIT'
#!/bin/busybox sh
/bin/busybox --install -s /bin
mount -t proc proc /proc; mount -t sysfs sys /sys; mount -t devtmpfs dev /dev
for m in virtio_pci virtio_net virtio_blk ata_piix ahci sr_mod isofs; do modprobe "$m" 2>/dev/null; done
i=0; while [ ! -b /dev/vdb ] && [ ! -b /dev/vda ] && [ $i -lt 600 ]; do i=$((i+1)); sleep 0.5; done
echo "tiny: seed device after $i waits: $(ls /dev/vd* 2>&1)" >/dev/console
mount -t iso9660 -o ro /dev/vda /seed 2>/dev/null || mount -t iso9660 -o ro /dev/vdb /seed || echo "tiny: no seed on /dev/vda or vdb" >/dev/console
id=$(sed -n 's/^"\{0,1\}local-hostname"\{0,1\}: *"\{0,1\}\([^"]*\)"\{0,1\}$/\1/p' /seed/meta-data)
addr=$(grep -o '[0-9]*\.[0-9]*\.[0-9]*\.[0-9]*/[0-9]*' /seed/user-data | head -n1)
hostname "$id"
echo "tiny: id=$id addr=$addr" >/dev/console
ip link set lo up; ip link set eth0 up; ip addr add "$addr" dev eth0
printf '{"node":"%s","address":"%s","image":"tiny"}\n' "$id" "$addr" >/www/healthz
httpd -p 8080 -h /www
echo "tiny: node $id ready at $addr" >/dev/console
exec sh -c 'while :; do sleep 3600; done'
INIT
chmod +x "$ird/init"
(cd "$ird" && find . | cpio -o -H newc --quiet | gzip -1) >"$out/initrd.img.tmp"
cp "$tmp/k/boot/vmlinuz-$kver" "$out/vmlinuz.tmp"
truncate -s 16M "$out/disk.raw.tmp"
for f in vmlinuz initrd.img disk.raw; do mv -f "$out/$f.tmp" "$out/$f"; done
echo "$out"
