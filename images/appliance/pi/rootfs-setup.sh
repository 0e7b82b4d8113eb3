#!/usr/bin/env bash
# mmdebstrap setup hook of the Pi rootfs (APPLIANCE_SETUP_HOOK of images/appliance/rootfs.sh):
# runs on the empty tree "$1" before any package is configured. raspi-firmware's kernel hook
# writes cmdline.txt from /etc/default/raspi-firmware; unset, ROOTPART would be the BUILD
# HOST's root device. The values are the Pi image's fixed disk layout (pi/common.sh); CMA=0
# keeps cma= out of cmdline.txt (the hook omits it for a Pi 4 only when it runs on one).
set -o errexit -o nounset -o pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=images/appliance/pi/common.sh
source "$here/common.sh"
mkdir -p "$1/etc/default" "$1/boot/firmware"
cat > "$1/etc/default/raspi-firmware" <<EOC
# Syncmesh Edge Pi image (images/appliance/pi): read by raspi-firmware's kernel hook, which
# rewrites /boot/firmware/cmdline.txt and config.txt on every kernel update.
ROOTPART=$PI_ROOTPART
CONSOLES="$PI_CONSOLES"
CMA=$PI_CMA
EOC
