#!/usr/bin/env bash
# `make image-pi`: the Raspberry Pi 4 / Pi 400 / CM4 SD card image (arm64, Debian trixie).
#
#   images/appliance/pi/build.sh
#
# 1. the arm64 root filesystem, cached (images/appliance/rootfs.sh with the Pi's packages, the
#    non-free-firmware component and the firmware setup hook: ~15-30 min of emulated CPU once);
# 2. a copy of it gets the node (images/appliance/payload.sh, shared with the VM image), its
#    images unpacked into the node's containerd store (images/appliance/preload.sh), and what
#    only the Pi has (fstab by PARTUUID, the boot partition at /boot/firmware);
# 3. /boot/firmware, which raspi-firmware's kernel hook filled in the build (firmware, kernel,
#    initrd, DTBs, config.txt, cmdline.txt), plus the node file template, becomes the FAT32
#    partition; the rest the ext4 root (images/appliance/disk.sh: sfdisk, mtools,
#    mkfs.ext4 -d; no loop device, no mount);
# 4. PI_OUT gets the raw image (sparse; what test-pi boots), the compressed image, SHA256SUMS
#    and manifest.json. Nothing changed since the last build (same key): seconds, no rebuild.
#
# Env: MONGO_IMAGE (empty: the test server, and the node says so; an OCI archive of the official
# mongo 4.4.18 for arm64, or pull[:REF]: images/appliance/mongo-image.sh), MONGO_IMAGE_REF,
# PI_COMPRESS (zstd | xz, default zstd), ZSTD_LEVEL (12), PI_ROOTFS (a rootfs tarball to use
# instead of rootfs.sh's), the rest in pi/common.sh.
set -o errexit -o nounset -o pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=images/appliance/pi/common.sh
source "$here/common.sh"
appliance="$PI_REPO/images/appliance"
COMPRESS=${PI_COMPRESS:-zstd}
t0=$(date +%s)
fail() { echo "image-pi: $*" >&2; exit 1; }

# Bad configuration fails before the (long) rootfs build: MONGO_IMAGE (mongo-image.sh: empty, an
# arm64 OCI archive of MongoDB 4.4, or pull[:REF]), the compression.
"$appliance/mongo-image.sh" check arm64 > /dev/null
[[ $COMPRESS == zstd || $COMPRESS == xz ]] || fail "PI_COMPRESS must be zstd or xz, not $COMPRESS"

# The rootfs's maintainer scripts and the preload's containerd run arm64 binaries through
# qemu-user: binfmt_misc mounted and qemu-aarch64 registered (a fresh machine has neither).
"$PI_REPO/hack/bundle/binfmt.sh" arm64 >&2

# 1. The cached rootfs (PI_ROOTFS: use this rootfs tarball instead, e.g. while a new one builds).
rootfs=${PI_ROOTFS:-}
[[ -n $rootfs ]] || rootfs=$(APPLIANCE_ARCH=arm64 APPLIANCE_PACKAGES="$PI_PACKAGES" APPLIANCE_COMPONENTS="$PI_COMPONENTS" \
  APPLIANCE_SETUP_HOOK="$here/rootfs-setup.sh" APPLIANCE_ROOTFS_HOOK="$here/rootfs-customize.sh" APPLIANCE_CACHE="$APPLIANCE_CACHE" "$appliance/rootfs.sh")
t_rootfs=$(date +%s)
echo "image-pi: rootfs $rootfs ($((t_rootfs - t0)) s)" >&2

# Cache key: the rootfs, every file this build puts in, the scripts themselves.
key=$(
  {
    echo "$rootfs" "${MONGO_IMAGE:-}" "${MONGO_IMAGE_REF:-}" "$COMPRESS"
    [[ ! -f ${MONGO_IMAGE:-} ]] || sha256sum "$MONGO_IMAGE"
    find "$appliance" -type f \( -path "*/test/*" -o -name README.md -o -name "*.pyc" \) -prune -o -type f -print0 | sort -z | xargs -0 sha256sum
    find "$PI_REPO/images/node" -maxdepth 1 -type f -print0 | sort -z | xargs -0 sha256sum
    sha256sum "$PI_REPO/images/NOTICE"
    sha256sum "$PI_REPO"/ansible/collections/ansible_collections/syncmesh/edge/roles/mongodb/{files/rs-init.js,templates/compose-official.yml.j2,defaults/main.yml}
    sha256sum "$PI_REPO"/ansible/collections/ansible_collections/syncmesh/edge/plugins/module_utils/*.py
    sha256sum "$PI_REPO"/ansible/collections/ansible_collections/syncmesh/edge/roles/faasd/{templates/*,defaults/main.yml}
    cat "${IMAGES_DIR:-$PI_REPO/.cache/images}"/*.digest "${IMAGES_DIR:-$PI_REPO/.cache/images}"/*.ref
    sha256sum "${FAASD_DIR:-$PI_REPO/.cache/faasd}/bin/arm64/faasd"
  } | sha256sum | cut -c1-16
)
img="$PI_OUT/$PI_IMAGE_NAME.img"
if [[ -f "$PI_OUT/$PI_IMAGE_NAME.key" && "$(cat "$PI_OUT/$PI_IMAGE_NAME.key")" == "$key" && -s "$img" && -s "$PI_OUT/manifest.json" ]]; then
  echo "image-pi: up to date ($img, key $key; $(($(date +%s) - t0)) s)" >&2
  exit 0
fi

work="$PI_CACHE/work"
stage="$work/root"
boot="$work/boot"
rm -rf "$work" "$PI_OUT/$PI_IMAGE_NAME.key"
mkdir -p "$stage" "$boot" "$PI_OUT"
tar --extract --numeric-owner --xattrs --xattrs-include='*' -C "$stage" -f "$rootfs"

# The firmware hook ran with the values of rootfs-setup.sh: they must be the disk's.
fw="$stage/boot/firmware"
grep -qx "ROOTPART=$PI_ROOTPART" "$stage/etc/default/raspi-firmware" \
  || fail "the cached rootfs's /etc/default/raspi-firmware does not say ROOTPART=$PI_ROOTPART"
grep -qw "root=$PI_ROOTPART" "$fw/cmdline.txt" \
  || fail "cmdline.txt of the cached rootfs does not boot $PI_ROOTPART: $(cat "$fw/cmdline.txt" 2>/dev/null)"
! grep -qE "(^| )cma=" "$fw/cmdline.txt" \
  || fail "cmdline.txt of the cached rootfs sets cma= (a Pi 4 does not boot with it): $(cat "$fw/cmdline.txt")"
for f in start4.elf fixup4.dat bcm2711-rpi-4-b.dtb bcm2711-rpi-400.dtb bcm2711-rpi-cm4-io.dtb config.txt; do
  [[ -s "$fw/$f" ]] || fail "raspi-firmware's hook did not put $f into /boot/firmware"
done

# 2. The node, then the Pi's own files.
MONGO_IMAGE=${MONGO_IMAGE:-} APPLIANCE_CACHE="$APPLIANCE_CACHE" "$appliance/payload.sh" "$stage" arm64
# the images unpacked into the node's containerd store now (the rootfs's arm64 containerd runs
# through qemu-user-static), so a Pi's first boot imports nothing (shared with the VM image)
"$appliance/preload.sh" "$stage"
t_preload=$(date +%s)
cat > "$stage/etc/fstab" <<EOC
# Syncmesh Edge Pi image: partitions by PARTUUID (MBR disk id $PI_DISK_ID)
$PI_ROOTPART  /               ext4  defaults,noatime              0 1
$PI_BOOTPART  /boot/firmware  vfat  defaults,noatime,umask=0077   0 2
EOC
# The boot program reads the node file from the boot partition at /boot/efi (the VM's ESP); on
# the Pi that partition is /boot/firmware (raspi-firmware's hook writes there), so /boot/efi
# is a link to it and the node's units wait for that mount.
rm -rf "$stage/boot/efi"
ln -s firmware "$stage/boot/efi"
for unit in syncmesh-configure syncmesh-node; do
  mkdir -p "$stage/etc/systemd/system/$unit.service.d"
  printf '# Syncmesh Edge Pi image: the boot partition is /boot/firmware\n[Unit]\nWants=boot-firmware.mount\nAfter=boot-firmware.mount\n' \
    > "$stage/etc/systemd/system/$unit.service.d/pi.conf"
done

# 3. The boot partition: the firmware tree and the node file template; the root keeps an empty
# /boot/firmware as the mount point.
cp -a "$fw/." "$boot/"
find "$fw" -mindepth 1 -delete
install -m 0644 "$appliance/vm/syncmesh-node.yaml" "$boot/syncmesh-node.yaml"
installed_mib=$(du -sm --apparent-size "$stage" | cut -f1)
DISK_TABLE=dos DISK_ID=$PI_DISK_ID DISK_BOOT_MIB=$PI_BOOT_MIB DISK_BOOT_LABEL=$PI_BOOT_LABEL \
  "$appliance/disk.sh" "$img" "$boot" "$stage"
t_disk=$(date +%s)

# 4. Compressed image, checksums, manifest (images/appliance/manifest.py, shared with the VM).
dpkg-query --admindir="$stage/var/lib/dpkg" -W -f '${Package}\t${Version}\t${Architecture}\n' > "$work/packages.tsv"
rm -f "$PI_OUT/$PI_IMAGE_NAME".img.* "$PI_OUT/manifest.json" "$PI_OUT/SHA256SUMS"
case $COMPRESS in
  zstd) zimg="$img.zst"; zstd -q -f -T0 "-${ZSTD_LEVEL:-12}" --sparse -o "$zimg.partial" "$img" ;;
  xz) zimg="$img.xz"; xz -T0 -6 -c "$img" > "$zimg.partial" ;;
  *) fail "PI_COMPRESS must be zstd or xz, not $COMPRESS" ;;
esac
mv "$zimg.partial" "$zimg"
python3 "$appliance/manifest.py" --name "$PI_IMAGE_NAME" --arch arm64 --packages "$work/packages.tsv" --root "$stage" \
  --images "${IMAGES_DIR:-$PI_REPO/.cache/images}" --image-list "$stage/usr/lib/syncmesh/images" \
  --installed-mib "$installed_mib" --raw "$img" --out "$PI_OUT" > "$PI_OUT/manifest.json.partial"
mv "$PI_OUT/manifest.json.partial" "$PI_OUT/manifest.json"
(cd "$PI_OUT" && sha256sum "$(basename "$zimg")" manifest.json > SHA256SUMS)
rm -rf "$work"
echo "$key" > "$PI_OUT/$PI_IMAGE_NAME.key"
t_end=$(date +%s)
echo "image-pi: $zimg: $(du -m --apparent-size "$zimg" | cut -f1) MiB compressed, $(du -m --apparent-size "$img" | cut -f1) MiB raw, $installed_mib MiB installed" >&2
echo "image-pi: done in $((t_end - t0)) s (rootfs $((t_rootfs - t0)) s, node $((t_preload - t_rootfs)) s incl. preload, disk $((t_disk - t_preload)) s, compress + manifest $((t_end - t_disk)) s)" >&2
