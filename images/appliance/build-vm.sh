#!/usr/bin/env bash
# make image-vm: the x86-64 appliance VM image (UEFI: OVMF / any UEFI firmware + systemd-boot on
# the EFI system partition; serial console ttyS0). Needs root (mmdebstrap, file ownership in ext4).
#
# Out (.cache/appliance/out/): syncmesh-edge-vm-amd64.raw.zst, syncmesh-edge-vm-amd64.qcow2
# (zstd-compressed clusters), SHA256SUMS, manifest.json. Cached: nothing changed -> seconds.
#
# Env: APPLIANCE_CACHE (<repo>/.cache/appliance), MONGO_IMAGE and MONGO_IMAGE_REF (mongo-image.sh;
# README.md, MongoDB), ZSTD_LEVEL (9; with zstd's long-distance matching over a 128 MiB window,
# which any zstd decompresses without options: 358 MB here, where level 6 without it made 417 MB).
set -o errexit -o nounset -o pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
export APPLIANCE_CACHE=${APPLIANCE_CACHE:-$repo/.cache/appliance}
CACHE=$APPLIANCE_CACHE
ARCH=amd64
NAME=syncmesh-edge-vm-$ARCH
OUT=$CACHE/out
WORK=$CACHE/work/vm
ZSTD_LEVEL=${ZSTD_LEVEL:-9}
# fixed identities of the image's partitions: the kernel finds its root by PARTUUID
ROOT_PARTUUID=6d2c1f0e-5a1b-4c8e-9f3a-53796e636d31
t0=$(date +%s)

[[ $(id -u) == 0 ]] || { echo "image-vm: needs root (mmdebstrap, ext4 ownership)" >&2; exit 1; }
for t in skopeo mmdebstrap sfdisk mformat qemu-img zstd; do
  command -v "$t" >/dev/null || { echo "image-vm: $t is missing: make appliance-tools" >&2; exit 1; }
done

# a bad MONGO_IMAGE fails before the rootfs is built (mongo-image.sh: empty, an OCI archive, pull[:REF])
"$here/mongo-image.sh" check "$ARCH" > /dev/null

rootfs=$(APPLIANCE_ARCH=$ARCH APPLIANCE_PACKAGES=linux-image-cloud-amd64,systemd-boot-efi,initramfs-tools "$here/rootfs.sh")

# Cache key: the rootfs, every file this build puts in, the scripts themselves.
key=$(
  {
    echo "$rootfs" "${MONGO_IMAGE:-}" "${MONGO_IMAGE_REF:-}"
    [[ ! -f ${MONGO_IMAGE:-} ]] || sha256sum "$MONGO_IMAGE"
    find "$here" -type f \( -path "$here/test/*" -o -name README.md -o -name "*.pyc" \) -prune -o -type f -print0 | sort -z | xargs -0 sha256sum
    sha256sum "$repo"/images/node/{node-prepare.sh,node-import.sh,node.yml,prometheus.yml,containerd.toml} "$repo/images/NOTICE"
    sha256sum "$repo"/ansible/collections/ansible_collections/syncmesh/edge/plugins/module_utils/{mesh_auth,registry,mongodb_cpu,node_stack}.py
    sha256sum "$repo"/ansible/collections/ansible_collections/syncmesh/edge/roles/mongodb/{files/rs-init.js,templates/compose-official.yml.j2,defaults/main.yml}
    sha256sum "$repo"/ansible/collections/ansible_collections/syncmesh/edge/roles/faasd/{templates/faasd.service.j2,templates/faasd-provider.service.j2,defaults/main.yml}
    cat "${IMAGES_DIR:-$repo/.cache/images}"/*.digest "${IMAGES_DIR:-$repo/.cache/images}"/*.ref
    sha256sum "${FAASD_DIR:-$repo/.cache/faasd}/bin/$ARCH/faasd"
  } | sha256sum | cut -c1-16
)
if [[ -f "$OUT/$NAME.key" && "$(cat "$OUT/$NAME.key")" == "$key" && -s "$OUT/$NAME.qcow2" && -s "$OUT/$NAME.raw.zst" && -s "$WORK/$NAME.raw" ]]; then
  echo "image-vm: up to date ($OUT/$NAME.qcow2, key $key; $(($(date +%s) - t0)) s)" >&2
  exit 0
fi

echo "image-vm: assembling the image (key $key)" >&2
rm -rf "$WORK"
mkdir -p "$WORK/root" "$WORK/esp" "$OUT"
tar -C "$WORK/root" --numeric-owner -xpf "$rootfs"
"$here/payload.sh" "$WORK/root" "$ARCH"
"$here/preload.sh" "$WORK/root"
cp -a "$here/vm/overlay/." "$WORK/root/"
# a VM has no Wi-Fi device: wpa_supplicant would only cost boot time
ln -sfn /dev/null "$WORK/root/etc/systemd/system/wpa_supplicant.service"

# --- the EFI system partition: systemd-boot, the kernel and initrd, the node file ---------------
kver=$(basename "$(ls -d "$WORK"/root/lib/modules/* | sort -V | tail -n1)")
mkdir -p "$WORK/esp/EFI/BOOT" "$WORK/esp/loader/entries" "$WORK/esp/syncmesh"
cp "$WORK/root/usr/lib/systemd/boot/efi/systemd-bootx64.efi" "$WORK/esp/EFI/BOOT/BOOTX64.EFI"
cp "$WORK/root/boot/vmlinuz-$kver" "$WORK/esp/syncmesh/vmlinuz"
cp "$WORK/root/boot/initrd.img-$kver" "$WORK/esp/syncmesh/initrd.img"
# no_timer_check: under software emulation on a busy host the kernel's IO-APIC timer check can
# fail ("IO-APIC + timer doesn't work!" panic, seen here); the timer works, the check is too strict
printf 'default syncmesh.conf\ntimeout 0\nconsole-mode keep\neditor no\n' > "$WORK/esp/loader/loader.conf"
cat > "$WORK/esp/loader/entries/syncmesh.conf" <<EOC
title   Syncmesh Edge node (Debian trixie, kernel $kver)
linux   /syncmesh/vmlinuz
initrd  /syncmesh/initrd.img
options root=PARTUUID=$ROOT_PARTUUID rw rootwait console=tty0 console=ttyS0,115200n8 net.ifnames=1 systemd.show_status=auto transparent_hugepage=never no_timer_check
EOC
cp "$here/vm/syncmesh-node.yaml" "$WORK/esp/syncmesh-node.yaml"

# --- package list (before the docs go), then the disk ------------------------------------------
chroot "$WORK/root" dpkg-query -W -f '${Package}\t${Version}\t${Architecture}\n' > "$WORK/packages.tsv"
rm -rf "$WORK/root/boot/"{vmlinuz,initrd.img,System.map,config}-* "$WORK/root/var/cache/apt/"*.bin
installed_mib=$(du -sm "$WORK/root" | cut -f1)
export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git -C "$repo" log -1 --format=%ct)}
DISK_TABLE=gpt DISK_BOOT_MIB=256 DISK_ROOT_PARTUUID=$ROOT_PARTUUID \
  "$here/disk.sh" "$WORK/$NAME.raw" "$WORK/esp" "$WORK/root"

# --- outputs --------------------------------------------------------------------------------------
rm -f "$OUT/$NAME".*
qemu-img convert -f raw -O qcow2 -c -o compression_type=zstd "$WORK/$NAME.raw" "$OUT/$NAME.qcow2.partial"
mv "$OUT/$NAME.qcow2.partial" "$OUT/$NAME.qcow2"
zstd -q -T0 "-$ZSTD_LEVEL" --long=27 --sparse -f "$WORK/$NAME.raw" -o "$OUT/$NAME.raw.zst"
python3 "$here/manifest.py" --name "$NAME" --arch "$ARCH" --packages "$WORK/packages.tsv" --root "$WORK/root" \
  --images "${IMAGES_DIR:-$repo/.cache/images}" --image-list "$WORK/root/usr/lib/syncmesh/images" \
  --installed-mib "$installed_mib" --raw "$WORK/$NAME.raw" --out "$OUT" > "$OUT/manifest.json"
(cd "$OUT" && sha256sum "$NAME.raw.zst" "$NAME.qcow2" manifest.json > SHA256SUMS)
rm -rf "$WORK/root" "$WORK/esp"
echo "$key" > "$OUT/$NAME.key"
echo "image-vm: $OUT/$NAME.qcow2 $(du -m "$OUT/$NAME.qcow2" | cut -f1) MiB, $NAME.raw.zst $(du -m "$OUT/$NAME.raw.zst" | cut -f1) MiB, installed $installed_mib MiB, in $(($(date +%s) - t0)) s" >&2
