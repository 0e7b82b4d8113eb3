#!/usr/bin/env bash
# Assembles a bootable disk image from two folders, without loop devices or mounts: a FAT boot
# partition (filled with mtools) and an ext4 root partition (filled with `mkfs.ext4 -d`), laid out
# with sfdisk. Shared by every appliance target (VM: GPT + EFI system partition; Pi: MBR + FAT).
#
#   disk.sh OUT.raw BOOT_DIR ROOT_DIR
#
# Env (documented defaults):
#   DISK_TABLE       gpt        gpt (the boot partition is an EFI system partition) or dos (MBR; the Pi's firmware reads FAT partition 1)
#   DISK_BOOT_MIB    256        size of the boot partition
#   DISK_ROOT_SLACK  25         free space in the root filesystem, percent of its content (grown to the disk at first boot)
#   DISK_ROOT_UUID   (random)   ext4 filesystem UUID; DISK_ROOT_PARTUUID the root partition's PARTUUID (gpt only), DISK_ID the disk's
#   DISK_BOOT_LABEL  SMBOOT     FAT volume label; DISK_ROOT_LABEL (syncmesh-root) the ext4 label
#   SOURCE_DATE_EPOCH           fixes file times and the FAT volume id (reproducible images)
set -o errexit -o nounset -o pipefail

out=${1:?usage: disk.sh OUT.raw BOOT_DIR ROOT_DIR}
boot_dir=${2:?}
root_dir=${3:?}
TABLE=${DISK_TABLE:-gpt}
BOOT_MIB=${DISK_BOOT_MIB:-256}
SLACK=${DISK_ROOT_SLACK:-25}
BOOT_LABEL=${DISK_BOOT_LABEL:-SMBOOT}
ROOT_LABEL=${DISK_ROOT_LABEL:-syncmesh-root}
for t in sfdisk mkfs.ext4 mformat mcopy mmd; do command -v "$t" >/dev/null || { echo "disk: $t is missing (apt-get install fdisk e2fsprogs mtools)" >&2; exit 1; }; done

work=$(mktemp -d "${out}.parts.XXXXXX")
trap 'rm -rf "$work"' EXIT

# --- boot partition: FAT32, filled with mtools -------------------------------------------------
boot_sectors=$((BOOT_MIB * 2048))
truncate -s "${BOOT_MIB}M" "$work/boot.img"
serial=$(printf '%08x' "$(( ${SOURCE_DATE_EPOCH:-$(date +%s)} & 0xffffffff ))")
mformat -i "$work/boot.img" -F -T "$boot_sectors" -h 64 -s 32 -N "$serial" -v "$BOOT_LABEL" ::
(
  cd "$boot_dir"
  find . -mindepth 1 -type d | sort | while read -r d; do mmd -i "$work/boot.img" "::${d#.}"; done
  find . -type f | sort | while read -r f; do mcopy -i "$work/boot.img" -m "$f" "::${f#.}"; done
)

# --- root partition: ext4 from the folder ------------------------------------------------------
used_kib=$(du -sk --apparent-size "$root_dir" | cut -f1)
inodes=$(find "$root_dir" -xdev | wc -l)
# content + slack + ext4 overhead (inode tables, journal): rounded up to whole MiB
root_mib=$(( (used_kib * (100 + SLACK) / 100 + inodes / 4 + 64 * 1024) / 1024 + 1 ))
mkfs_args=(-q -F -t ext4 -L "$ROOT_LABEL" -N $((inodes + inodes / 2 + 20000)) -d "$root_dir")
[[ -n "${DISK_ROOT_UUID:-}" ]] && mkfs_args+=(-U "$DISK_ROOT_UUID")
[[ -n "${SOURCE_DATE_EPOCH:-}" ]] && export E2FSPROGS_FAKE_TIME=$SOURCE_DATE_EPOCH
truncate -s "${root_mib}M" "$work/root.img"
mkfs.ext4 "${mkfs_args[@]}" "$work/root.img" >/dev/null

# --- the disk: 1 MiB alignment, boot partition first, then root; GPT's backup header at the end --
total_mib=$((1 + BOOT_MIB + root_mib + 1))
rm -f "$out.partial"
truncate -s "${total_mib}M" "$out.partial"
if [[ $TABLE == gpt ]]; then
  {
    echo "label: gpt"
    [[ -n "${DISK_ID:-}" ]] && echo "label-id: $DISK_ID"
    echo "first-lba: 2048"
    echo "start=2048, size=$boot_sectors, type=C12A7328-F81F-11D2-BA4B-00A0C93EC93B, name=\"syncmesh-boot\""
    echo "start=$((2048 + boot_sectors)), size=$((root_mib * 2048)), type=4F68BCE3-E8CD-4DB1-96E7-FBCAF984B709, name=\"$ROOT_LABEL\"${DISK_ROOT_PARTUUID:+, uuid=$DISK_ROOT_PARTUUID}"
  } | sfdisk --quiet --no-reread --no-tell-kernel "$out.partial"
else
  {
    echo "label: dos"
    [[ -n "${DISK_ID:-}" ]] && echo "label-id: $DISK_ID"
    echo "start=2048, size=$boot_sectors, type=c, bootable"
    echo "start=$((2048 + boot_sectors)), size=$((root_mib * 2048)), type=83"
  } | sfdisk --quiet --no-reread --no-tell-kernel "$out.partial"
fi
dd if="$work/boot.img" of="$out.partial" bs=1M seek=1 conv=notrunc,sparse status=none
dd if="$work/root.img" of="$out.partial" bs=1M seek=$((1 + BOOT_MIB)) conv=notrunc,sparse status=none
mv "$out.partial" "$out"
echo "disk: $out: $total_mib MiB ($TABLE; boot $BOOT_MIB MiB, root $root_mib MiB, content $((used_kib / 1024)) MiB)" >&2
