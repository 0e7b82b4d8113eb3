#!/usr/bin/env bash
# Builds (once) the Debian root filesystem of an appliance image with mmdebstrap and keeps it as a
# tarball under .cache/appliance/rootfs/. Shared by every appliance target: the target only adds
# packages (kernel, boot loader, firmware). Nothing of Syncmesh is in it: build-*.sh adds the
# node's files, binaries and images on top (so a change there never rebuilds the rootfs).
#
#   images/appliance/rootfs.sh     prints the path of the cached tarball (builds it when missing)
#
# Env (documented defaults):
#   APPLIANCE_ARCH      amd64       Debian architecture (arm64 runs the maintainer scripts under qemu-user-static)
#   APPLIANCE_SUITE     trixie
#   APPLIANCE_PACKAGES  ""          the target's packages, comma-separated (e.g. linux-image-cloud-amd64,systemd-boot-efi)
#   APPLIANCE_CACHE     <repo>/.cache/appliance
#   APPLIANCE_ROOTFS_HOOK ""        file with extra `chroot "$ROOT" ...` lines of the target (sourced in the customize hook)
#   APPLIANCE_COMPONENTS  main      Debian components (the Pi adds non-free-firmware: raspi-firmware, firmware-brcm80211)
#   APPLIANCE_SETUP_HOOK  ""        script run as `bash FILE ROOT` on the empty tree before any package is configured
#                                   (the Pi writes /etc/default/raspi-firmware there, read by the kernel hook)
#   APPLIANCE_VERBOSE     0         1: mmdebstrap without --quiet (every maintainer script's output, to find a failing package)
set -o errexit -o nounset -o pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
ARCH=${APPLIANCE_ARCH:-amd64}
SUITE=${APPLIANCE_SUITE:-trixie}
CACHE=${APPLIANCE_CACHE:-$repo/.cache/appliance}
TARGET_PACKAGES=${APPLIANCE_PACKAGES:-}
TARGET_HOOK=${APPLIANCE_ROOTFS_HOOK:-}
COMPONENTS=${APPLIANCE_COMPONENTS:-main}
SETUP_HOOK=${APPLIANCE_SETUP_HOOK:-}

# What every appliance has (packages.common: one per line, comments allowed).
common=$(grep -v '^\s*#' "$here/packages.common" | tr -s ' \n' ',' | sed 's/^,//; s/,$//')
packages="$common${TARGET_PACKAGES:+,$TARGET_PACKAGES}"
hook_sum=$(cat "$here/rootfs-hook.sh" ${TARGET_HOOK:+"$TARGET_HOOK"} ${SETUP_HOOK:+"$SETUP_HOOK"} | sha256sum | cut -c1-12)
key=$(printf '%s|%s|%s|%s|%s' "$SUITE" "$ARCH" "$packages" "$hook_sum" "$COMPONENTS" | sha256sum | cut -c1-12)
out="$CACHE/rootfs/rootfs-$SUITE-$ARCH-$key.tar"

if [[ -s "$out" ]]; then
  echo "$out"
  exit 0
fi
command -v mmdebstrap >/dev/null || { echo "appliance: mmdebstrap is missing: apt-get install mmdebstrap" >&2; exit 1; }
if [[ $ARCH != "$(dpkg --print-architecture)" ]]; then
  command -v arch-test >/dev/null ||
    { echo "appliance: mmdebstrap needs arch-test to build the $ARCH rootfs on this machine: apt-get install arch-test (make images-tools)" >&2; exit 1; }
  "$repo/hack/bundle/binfmt.sh" "$ARCH" >&2   # its maintainer scripts run through qemu-user
fi
[[ $(id -u) == 0 ]] || { echo "appliance: building the rootfs needs root (mmdebstrap --mode=root)" >&2; exit 1; }
mkdir -p "$CACHE/rootfs"
echo "appliance: building the $SUITE/$ARCH rootfs with mmdebstrap (once; cached as $out)" >&2
t0=$(date +%s)
# The target's setup hook runs on the empty tree, before any package is configured.
setup=()
[[ -z "$SETUP_HOOK" ]] || setup=(--setup-hook="bash '$SETUP_HOOK' \"\$1\"")
# minbase + the lists; no recommends. The hook runs inside the finished tree ("$1").
quiet=(--quiet)
[[ ${APPLIANCE_VERBOSE:-0} != 1 ]] || quiet=()
mmdebstrap "${quiet[@]}" --mode=root --variant=minbase --arch="$ARCH" --include="$packages" \
  --components="$COMPONENTS" "${setup[@]}" \
  --aptopt='APT::Install-Recommends "false"' \
  --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-include=/usr/share/doc/*/copyright' \
  --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/locale/*' \
  --dpkgopt='path-exclude=/usr/share/info/*' \
  --customize-hook="TARGET_HOOK='$TARGET_HOOK' bash '$here/rootfs-hook.sh' \"\$1\"" \
  "$SUITE" "$out.partial.tar" >&2
mv "$out.partial.tar" "$out"
echo "appliance: rootfs built in $(($(date +%s) - t0)) s" >&2
echo "$out"
