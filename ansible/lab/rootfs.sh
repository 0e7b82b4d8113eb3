#!/usr/bin/env bash
# Builds (once) the root filesystem of a bare lab host from Debian packages with mmdebstrap and
# keeps it as a tarball under .cache/lab/. A lab host is what an operator starts from: systemd as
# PID 1, sshd, python3 (+ python3-apt, which Ansible's apt module needs), sudo, nothing else.
#
#   ansible/lab/rootfs.sh            prints the path of the cached tarball (builds it when missing)
#
# Env: LAB_SUITE (bookworm), LAB_ARCH (amd64), LAB_CACHE (.cache/lab).
set -o errexit -o nounset -o pipefail

LAB_SUITE=${LAB_SUITE:-bookworm}
LAB_ARCH=${LAB_ARCH:-amd64}
LAB_CACHE=${LAB_CACHE:-.cache/lab}
# The package list is data: change it and the tarball name changes, so the cache rebuilds.
PACKAGES=systemd,systemd-sysv,dbus,openssh-server,python3,python3-apt,iproute2,sudo,iputils-ping,procps
key=$(printf '%s|%s|%s' "$LAB_SUITE" "$LAB_ARCH" "$PACKAGES" | sha256sum | cut -c1-12)
out="$LAB_CACHE/rootfs-$LAB_SUITE-$LAB_ARCH-$key.tar"

if [[ -s "$out" ]]; then
  echo "$out"
  exit 0
fi
command -v mmdebstrap >/dev/null || { echo "lab: mmdebstrap is missing: apt-get install mmdebstrap" >&2; exit 1; }
[[ $LAB_ARCH == "$(dpkg --print-architecture)" ]] || command -v arch-test >/dev/null ||
  { echo "lab: mmdebstrap needs arch-test to build the $LAB_ARCH rootfs on this machine: apt-get install arch-test (make images-tools)" >&2; exit 1; }
mkdir -p "$LAB_CACHE"
echo "lab: building the $LAB_SUITE/$LAB_ARCH host rootfs with mmdebstrap (once; cached as $out)" >&2
t0=$(date +%s)
# minbase + the list above; no recommends (a bare host, like a cloud or Pi OS Lite image).
mmdebstrap --quiet --variant=minbase --arch="$LAB_ARCH" --include="$PACKAGES" \
  --aptopt='APT::Install-Recommends "false"' \
  --customize-hook='rm -f "$1"/etc/ssh/ssh_host_*_key*' \
  --customize-hook='rm -f "$1"/etc/machine-id; touch "$1"/etc/machine-id' \
  "$LAB_SUITE" "$out.partial.tar" >&2
mv "$out.partial.tar" "$out"
echo "lab: rootfs built in $(( $(date +%s) - t0 )) s" >&2
echo "$out"
