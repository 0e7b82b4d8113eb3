#!/usr/bin/env bash
# mmdebstrap setup hook of the Pi rootfs (APPLIANCE_SETUP_HOOK of images/appliance/rootfs.sh):
# runs on the empty tree "$1" before any package is configured. raspi-firmware's kernel hook
# writes cmdline.txt from /etc/default/raspi-firmware; unset, ROOTPART would be the BUILD
# HOST's root device. The values are the Pi image's fixed disk layout (pi/common.sh); CMA=0
# keeps cma= out of cmdline.txt (the hook omits it for a Pi 4 only when it runs on one).
#
# /etc/default/raspi-firmware is also a conffile of raspi-firmware: a file already there makes
# dpkg ASK whether to keep it, and with no terminal that is "end of file on stdin at conffile
# prompt", raspi-firmware left unconfigured and mmdebstrap's apt-get failing at the end of the
# emulated install (session 4's 50-minute failure). dpkg is told to keep ours (force-confold)
# for the build only: rootfs-customize.sh removes that setting from the finished tree.
set -o errexit -o nounset -o pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=images/appliance/pi/common.sh
source "$here/common.sh"
mkdir -p "$1/etc/default" "$1/boot/firmware" "$1/etc/dpkg/dpkg.cfg.d"
cat > "$1/etc/default/raspi-firmware" <<EOC
# Syncmesh Edge Pi image (images/appliance/pi): read by raspi-firmware's kernel hook, which
# rewrites /boot/firmware/cmdline.txt and config.txt on every kernel update.
ROOTPART=$PI_ROOTPART
CONSOLES="$PI_CONSOLES"
CMA=$PI_CMA
EOC
printf '# Syncmesh Edge Pi build only (removed by images/appliance/pi/rootfs-customize.sh)\nforce-confdef\nforce-confold\n' \
  > "$1/etc/dpkg/dpkg.cfg.d/$PI_DPKG_CONFOLD"
