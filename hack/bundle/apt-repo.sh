#!/usr/bin/env bash
# A flat apt repository of the Debian packages a bare node lacks (containerd, runc, CNI plugins,
# and what the base role installs) for one suite and architecture, resolved against the same
# minimal base the lab hosts are built from (arm64 through qemu-user-static), in
# .cache/bundle/apt/<suite>/<arch>/ (.deb files + Packages). Cached: a second run is instant.
#
#   hack/bundle/apt-repo.sh bookworm amd64
set -o errexit -o nounset -o pipefail

suite=${1:?usage: apt-repo.sh SUITE ARCH}
arch=${2:?usage: apt-repo.sh SUITE ARCH}
out=${BUNDLE_APT_DIR:-.cache/bundle/apt}/$suite/$arch
# What the roles install from the bundle (containerd role, then base role).
NODE_PACKAGES=(containerd runc containernetworking-plugins nftables systemd-timesyncd unattended-upgrades)
stamp="$out/.packages-$(printf '%s ' "${NODE_PACKAGES[@]}" | sha256sum | cut -c1-12)"

if [[ -e $stamp ]]; then echo "$out"; exit 0; fi
# another architecture's rootfs (mmdebstrap) and chroot below run through qemu-user (binfmt_misc)
hack/bundle/binfmt.sh "$arch"
rootfs=$(LAB_SUITE=$suite LAB_ARCH=$arch ansible/lab/rootfs.sh)
work=$(mktemp -d)
cleanup() { for m in proc dev; do mountpoint -q "$work/$m" && umount -l "$work/$m"; done; rm -rf --one-file-system "$work"; }
trap cleanup EXIT
tar -xf "$rootfs" -C "$work"
mount -t proc proc "$work/proc"
echo "bundle: resolving ${NODE_PACKAGES[*]} for $suite/$arch against the bare-host base" >&2
chroot "$work" apt-get -qq update
chroot "$work" apt-get -qq install --download-only -y --no-install-recommends "${NODE_PACKAGES[@]}"
rm -rf "$out"; mkdir -p "$out"
cp "$work"/var/cache/apt/archives/*.deb "$out/"
(cd "$out" && dpkg-scanpackages --multiversion . /dev/null > Packages 2>/dev/null)
touch "$stamp"
echo "bundle: $(ls "$out"/*.deb | wc -l) packages in $out" >&2
echo "$out"
