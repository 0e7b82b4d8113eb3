#!/bin/sh
# Grows the root partition to the end of its disk and the ext4 filesystem to the partition.
# A no-op once grown (growpart exits 1 with NOCHANGE).
set -eu
root=$(findmnt -no SOURCE /)
part=$(basename "$(readlink -f "$root")")
disk=$(basename "$(dirname "$(readlink -f "/sys/class/block/$part")")")
num=$(cat "/sys/class/block/$part/partition")
rc=0
out=$(growpart "/dev/$disk" "$num" 2>&1) || rc=$?
case $rc in
  0) echo "syncmesh-growfs: $out"; resize2fs "/dev/$part" ;;
  1) echo "syncmesh-growfs: /dev/$part already fills /dev/$disk" ;;
  *) echo "syncmesh-growfs: growpart failed: $out" >&2; exit 1 ;;
esac
