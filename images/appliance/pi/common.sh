# Settings shared by the Pi image's scripts (sourced; documented in images/appliance/README.md).
# shellcheck shell=bash disable=SC2034
PI_REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)
APPLIANCE_CACHE=${APPLIANCE_CACHE:-$PI_REPO/.cache/appliance}
PI_CACHE=${PI_CACHE:-$APPLIANCE_CACHE/pi}
PI_OUT=${PI_OUT:-$APPLIANCE_CACHE/out/pi}
PI_IMAGE_NAME=${PI_IMAGE_NAME:-syncmesh-edge-pi4-arm64}

# The disk: a fixed MBR disk identifier, so the root partition's PARTUUID is known when the
# firmware hook writes cmdline.txt inside the build (partition 1 boot FAT32, partition 2 root).
# rootfs-setup.sh writes the same three values into /etc/default/raspi-firmware (it is part of
# the rootfs cache key); build.sh checks that the cached tree agrees with these.
PI_DISK_ID=0x534d5049
PI_ROOTPART=PARTUUID=534d5049-02
PI_BOOTPART=PARTUUID=534d5049-01
PI_BOOT_LABEL=SMBOOT
PI_BOOT_MIB=256
# Debian's kernel names the Pi 4's GPIO UART (the mini UART with enable_uart=1) ttyS1.
PI_CONSOLES="ttyS1,115200 tty1"
# CMA=0: no cma= on the command line. raspi-firmware's hook leaves cma= out on a Pi 4 (it
# "renders it unbootable") only when it detects one from the device tree, which a build host
# has not: with CMA=64M the image built here would carry cma=64M. 0 is the hook's "omit".
PI_CMA=0

# Added to packages.common (the Pi has no RTC: timesyncd; FAT tools for /boot/firmware).
PI_PACKAGES=raspi-firmware,linux-image-arm64,firmware-brcm80211,wireless-regdb,systemd-timesyncd,dosfstools
PI_COMPONENTS=main,non-free-firmware
# rootfs-setup.sh's build-only dpkg setting (rootfs-customize.sh removes it by this name)
PI_DPKG_CONFOLD=syncmesh-pi-build-confold
