#!/usr/bin/env bash
# Lets this machine run another architecture's Debian binaries in a chroot (the arm64 bundle's apt
# repository is resolved inside an arm64 bare-host rootfs; mmdebstrap builds that rootfs the same
# way): qemu-user-static registered with binfmt_misc, flag F (the interpreter is opened at
# registration, so it works inside a chroot that lacks it). Idempotent: when the registration is
# already there and enabled, nothing changes. Needs root for a change.
#
#   hack/bundle/binfmt.sh ARCH...     (Debian architecture names; this machine's own is skipped)
set -o errexit -o nounset -o pipefail

declare -A qemu=([arm64]=aarch64 [armhf]=arm [riscv64]=riscv64 [ppc64el]=ppc64le [s390x]=s390x [amd64]=x86_64)
host=$(dpkg --print-architecture)
for arch in "$@"; do
  [[ $arch == "$host" ]] && continue
  q=${qemu[$arch]:-}
  [[ -n $q ]] || { echo "binfmt: no qemu-user mapping for '$arch'" >&2; exit 1; }
  entry=/proc/sys/fs/binfmt_misc/qemu-$q
  if [[ -r $entry ]] && grep -qx enabled "$entry" && grep -q '^flags: .*F' "$entry"; then
    echo "binfmt: $arch ($q) already registered: $(sed -n 's/^interpreter //p' "$entry")" >&2
    continue
  fi
  [[ $(id -u) == 0 ]] || { echo "binfmt: registering $arch needs root" >&2; exit 1; }
  if ! command -v "qemu-$q-static" >/dev/null; then
    echo "binfmt: installing qemu-user-static" >&2
    "$(dirname "${BASH_SOURCE[0]}")/../apt-install.sh" qemu-user-static
  fi
  mountpoint -q /proc/sys/fs/binfmt_misc || mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc
  if [[ -e $entry ]]; then
    echo 1 > "$entry"   # registered but disabled, or without F: re-register below when F is missing
    grep -q '^flags: .*F' "$entry" || { echo -1 > "$entry"; }
  fi
  if [[ ! -e $entry ]]; then
    # the package's systemd-binfmt line (:name:type:offset:magic:mask:interpreter:flags), flag F enforced
    conf=/usr/lib/binfmt.d/qemu-$q.conf
    [[ -r $conf ]] || { echo "binfmt: $conf is missing (qemu-user-static)" >&2; exit 1; }
    line=$(grep -v '^#' "$conf" | head -1)
    flags=${line##*:}; [[ $flags == *F* ]] || line="${line%:*}:${flags}F"
    printf '%s' "$line" > /proc/sys/fs/binfmt_misc/register
  fi
  grep -qx enabled "$entry" || { echo "binfmt: qemu-$q did not register" >&2; exit 1; }
  echo "binfmt: $arch ($q) registered: $(sed -n 's/^interpreter //p' "$entry")" >&2
done
