# shellcheck shell=bash
# Pi part of the rootfs customize hook (APPLIANCE_ROOTFS_HOOK of images/appliance/rootfs.sh,
# sourced by rootfs-hook.sh with ROOT set): runs once on the finished tree (cached with it).
# The build-only dpkg setting of rootfs-setup.sh leaves the image, so a later `apt upgrade` on
# the Pi asks about changed conffiles as usual.
rm -f "$ROOT/etc/dpkg/dpkg.cfg.d/syncmesh-pi-build-confold"
# every package configured (a failed maintainer script must fail the build, not ship)
if chroot "$ROOT" dpkg --audit | grep -q .; then
  chroot "$ROOT" dpkg --audit >&2
  echo "image-pi: packages left unconfigured in the rootfs (dpkg --audit above)" >&2
  exit 1
fi
