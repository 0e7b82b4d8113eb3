#!/usr/bin/env bash
# mmdebstrap customize hook of rootfs.sh: runs once on the finished tree "$1" (cached with it).
# No per-node state may stay in the image: SSH host keys and machine-id are made at first boot.
set -o errexit -o nounset -o pipefail
ROOT=$1
rm -f "$ROOT"/etc/ssh/ssh_host_*_key*
rm -f "$ROOT/etc/machine-id" "$ROOT/var/lib/dbus/machine-id"
: > "$ROOT/etc/machine-id"
echo syncmesh-node > "$ROOT/etc/hostname"
# no password for anybody: root is locked, SSH by key only
chroot "$ROOT" passwd --lock root >/dev/null
mkdir -p "$ROOT/etc/ssh/sshd_config.d"
cat > "$ROOT/etc/ssh/sshd_config.d/10-syncmesh.conf" <<'EOC'
# Syncmesh Edge appliance: keys only
PasswordAuthentication no
KbdInteractiveAuthentication no
PermitRootLogin prohibit-password
EOC
# Debian's containerd unit is enabled by the package; faasd's units come with the node files.
rm -f "$ROOT"/var/cache/apt/archives/*.deb "$ROOT"/var/lib/apt/lists/*_Packages* 2>/dev/null || true
if [[ -n "${TARGET_HOOK:-}" ]]; then
  # shellcheck disable=SC1090
  source "$TARGET_HOOK"
fi
