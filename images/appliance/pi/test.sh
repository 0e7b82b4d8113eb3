#!/usr/bin/env bash
# The Pi image's test tier (make test-pi, root): runs on the image `make image-pi` built.
#
#   images/appliance/pi/test.sh            static checks + the aarch64 boot
#   PI_TEST_BOOT=0 images/appliance/pi/test.sh   static checks only
#   PI_TEST_VIRT=0 / PI_TEST_RASPI3=0             skip the virt boot / the raspi3b SD-card boot
#   PI_TEST_PREFIX (smp)                          name prefix of the tmp dir and the QEMU machines
#
# Static (no Pi needed, seconds): the MBR partition table (types, sizes, boot flag, disk id),
# the boot partition's files (Pi 4 firmware, kernel, initrd, bcm2711 DTBs, config.txt,
# cmdline.txt whose root= is the root partition's PARTUUID), the node file template, and the
# root filesystem (fstab, firmware settings, no SSH host keys, root locked).
#
# Boot (no Pi here): the SAME disk image (a sparse copy grown by 2 GiB, with a test node file on
# its boot partition, snapshot=on) under qemu-system-aarch64 -M virt -cpu cortex-a72 in
# software emulation, with the kernel and initrd taken from the image's boot partition; serial
# console to a file; polled until the health URL says ready or PI_BOOT_TIMEOUT_S passes, then
# the test says how far the node got (kernel, userspace, node file, images, faasd, ready).
# QEMU is stopped by its process id.
set -o errexit -o nounset -o pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=images/appliance/pi/common.sh
source "$here/common.sh"

BOOT=${PI_TEST_BOOT:-1}
BOOT_TIMEOUT_S=${PI_BOOT_TIMEOUT_S:-3600}
IMG=${PI_TEST_IMAGE:-$PI_OUT/$PI_IMAGE_NAME.img}
PREFIX=${PI_TEST_PREFIX:-smp}
TMP=$(mktemp -d "/tmp/${PREFIX}-pi-test.XXXX")
QEMU_PID=
LOGS=${PI_TEST_LOGS:-$PI_CACHE/test-logs}

passed=0 failed=0
pass() { passed=$((passed + 1)); printf 'ok - %s\n' "$*"; }
fail() { failed=$((failed + 1)); printf 'not ok - %s\n' "$*"; }
check() { local name=$1; shift; if "$@"; then pass "$name"; else fail "$name"; fi; }
note() { printf '# %s\n' "$*"; }

# stop_qemu: SIGTERM to QEMU's process id, SIGKILL after 10 s.
stop_qemu() {
  if [[ -n $QEMU_PID ]] && kill -0 "$QEMU_PID" 2>/dev/null; then
    kill "$QEMU_PID"
    local deadline=$((SECONDS + 10))
    while kill -0 "$QEMU_PID" 2>/dev/null && ((SECONDS < deadline)); do sleep 0.2; done
    kill -9 "$QEMU_PID" 2>/dev/null || true
  fi
  QEMU_PID=
}
cleanup() {
  set +o errexit +o pipefail
  stop_qemu
  rm -rf "$TMP"
}
trap cleanup EXIT

[[ -s $IMG ]] || { echo "test-pi: no image at $IMG (make image-pi)" >&2; exit 1; }

# --- partition table ----------------------------------------------------------------------
table=$(sfdisk --json "$IMG")
jqt() { jq -r "$1" <<<"$table"; }
disk_id=$(jqt '.partitiontable.id')
check "partitions - MBR (dos) label" test "$(jqt '.partitiontable.label')" = dos
check "partitions - disk id is $PI_DISK_ID (the PARTUUIDs cmdline.txt and fstab name)" test "$disk_id" = "$PI_DISK_ID"
check "partitions - two partitions" test "$(jqt '.partitiontable.partitions | length')" = 2
check "partitions - 1 is FAT32 LBA (type c), bootable, 1 MiB aligned" \
  test "$(jqt '.partitiontable.partitions[0] | "\(.type) \(.bootable) \(.start % 2048)"')" = "c true 0"
check "partitions - 1 is $PI_BOOT_MIB MiB" test "$(jqt '.partitiontable.partitions[0].size')" = $((PI_BOOT_MIB * 2048))
check "partitions - 2 is Linux (type 83), right after 1, not bootable" \
  test "$(jqt '.partitiontable.partitions | "\(.[1].type) \(.[1].start - .[0].start - .[0].size) \(.[1].bootable // false)"')" = "83 0 false"
check "partitions - 2 lies inside the image" \
  test $(( ($(jqt '.partitiontable.partitions[1] | .start + .size')) * 512 )) -le "$(stat -c %s "$IMG")"
partuuid_root="$(printf '%08x' "$disk_id")-02"
boot_off=$(( $(jqt '.partitiontable.partitions[0].start') * 512 ))
root_off=$(( $(jqt '.partitiontable.partitions[1].start') * 512 ))

# --- boot partition -----------------------------------------------------------------------
fat="$IMG@@$boot_off"
export MTOOLS_SKIP_CHECK=1
mdir -i "$fat" -b :: > "$TMP/fat.ls" 2>&1 || true
has() { grep -qx "::/$1" "$TMP/fat.ls"; }
mtype -i "$fat" ::config.txt > "$TMP/config.txt" 2>/dev/null || true
mtype -i "$fat" ::cmdline.txt > "$TMP/cmdline.txt" 2>/dev/null || true
check "boot - FAT32 with label $PI_BOOT_LABEL" bash -c "minfo -i '$fat' :: | grep -q 'disk type=\"FAT32' && minfo -i '$fat' :: | grep -q 'disk label=\"$PI_BOOT_LABEL'"
for f in start4.elf fixup4.dat bcm2711-rpi-4-b.dtb bcm2711-rpi-400.dtb bcm2711-rpi-cm4-io.dtb config.txt cmdline.txt syncmesh-node.yaml; do
  check "boot - $f present" has "$f"
done
check "boot - config.txt: arm_64bit=1" grep -qx 'arm_64bit=1' "$TMP/config.txt"
check "boot - config.txt: enable_uart=1" grep -qx 'enable_uart=1' "$TMP/config.txt"
kernel=$(sed -n 's/^kernel=//p' "$TMP/config.txt" | head -1)
initrd=$(sed -n 's/^initramfs \([^ ]*\).*/\1/p' "$TMP/config.txt" | head -1)
check "boot - config.txt's kernel ($kernel) present" has "$kernel"
check "boot - config.txt's initramfs ($initrd) present" has "$initrd"
check "boot - kernel is an arm64 Linux Image (gzip or raw)" bash -c "mtype -i '$fat' '::$kernel' > '$TMP/vmlinuz' && { file -b '$TMP/vmlinuz' | grep -qiE 'gzip|ARM64|aarch64'; }"
read -r -a cmdline < "$TMP/cmdline.txt" || true
check "boot - cmdline.txt: root=PARTUUID=$partuuid_root (partition 2 of this disk)" \
  bash -c "printf '%s\n' ${cmdline[*]@Q} | grep -qx 'root=PARTUUID=$partuuid_root'"
check "boot - cmdline.txt: serial console ttyS1,115200 (GPIO UART) and tty1 (HDMI)" \
  bash -c "printf '%s\n' ${cmdline[*]@Q} | grep -qx 'console=ttyS1,115200' && printf '%s\n' ${cmdline[*]@Q} | grep -qx 'console=tty1'"
check "boot - cmdline.txt: no cma= (raspi-firmware: a Pi 4 does not boot with it)" \
  bash -c "! grep -qE '(^| )cma=' '$TMP/cmdline.txt'"
check "boot - cmdline.txt: rootwait, no build-host device" \
  bash -c "printf '%s\n' ${cmdline[*]@Q} | grep -qx rootwait && ! grep -qE '/dev/(vd|sd|nvme)' '$TMP/cmdline.txt'"
mtype -i "$fat" ::syncmesh-node.yaml > "$TMP/node.yaml" 2>/dev/null || true
# nodefile FILE: the node's own validator (images/appliance/firstboot/nodefile.py) on FILE; prints the
# problems, exit 0 when valid, 1 when refused, 2 when the validator itself broke.
nodefile() {
  python3 - "$PI_REPO/images/appliance/firstboot" "$1" <<'PY'
import sys
sys.path.insert(0, sys.argv[1])
import nodefile
try:
    cfg = nodefile.load(sys.argv[2])
except nodefile.NodeFileError as err:
    print("\n".join(err.problems))
    sys.exit(1)
print(f"valid: {cfg.node_id}")
PY
}
rc=0; nodefile "$TMP/node.yaml" > "$TMP/node.problems" || rc=$?
check "boot - node file template: the node's validator refuses it until edited (node_id missing)" \
  bash -c "test $rc = 1 && grep -q 'node_id' '$TMP/node.problems'"

# --- root filesystem ----------------------------------------------------------------------
rootfs="$IMG?offset=$root_off"
rcat() { debugfs -R "cat $1" "$rootfs" 2>/dev/null; }
check "root - ext4 filesystem" bash -c "dumpe2fs -h '$rootfs' 2>/dev/null | grep -q '^Filesystem features:.*extent'"
check "root - fstab mounts / and /boot/firmware by PARTUUID" \
  bash -c "debugfs -R 'cat /etc/fstab' '$rootfs' 2>/dev/null | grep -q '^$PI_ROOTPART  */ ' && debugfs -R 'cat /etc/fstab' '$rootfs' 2>/dev/null | grep -q '^$PI_BOOTPART  */boot/firmware '"
check "root - /etc/default/raspi-firmware: ROOTPART=$PI_ROOTPART (kernel updates keep the right root)" \
  bash -c "debugfs -R 'cat /etc/default/raspi-firmware' '$rootfs' 2>/dev/null | grep -qx 'ROOTPART=$PI_ROOTPART'"
check "root - no SSH host keys in the image (made at first boot)" \
  bash -c "! debugfs -R 'ls /etc/ssh' '$rootfs' 2>/dev/null | grep -q 'ssh_host_'"
check "root - root's password is locked (no default password)" \
  bash -c "debugfs -R 'cat /etc/shadow' '$rootfs' 2>/dev/null | grep -qE '^root:[!*]'"
check "root - the Pi 4's Ethernet (genet) and SD (sdhci-iproc) drivers are in the kernel's modules" \
  bash -c "debugfs -R 'rdump /usr/lib/modules $TMP' '$rootfs' >/dev/null 2>&1; find '$TMP/modules' -name 'genet.ko*' | grep -q . && find '$TMP/modules' -name 'sdhci-iproc.ko*' | grep -q ."
rm -rf "$TMP/modules"

# --- aarch64 boot ---------------------------------------------------------------------------
# stage NAME PATTERN: the first time PATTERN shows in the serial log, record how long it took.
declare -A reached=()
stage_seen() {
  local name=$1 pattern=$2
  [[ -n ${reached[$name]:-} ]] && return 0
  if grep -aqE "$pattern" "$SERIAL" 2>/dev/null; then reached[$name]=$((SECONDS - BOOT_T0)); note "boot: $name after ${reached[$name]} s"; fi
}
health() { curl -fsS --max-time 10 "http://127.0.0.1:$HEALTH_FWD/health" 2>/dev/null || curl -sS --max-time 10 "http://127.0.0.1:$HEALTH_FWD/health" 2>/dev/null; }
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# test_node_file: a valid node file with a fresh SSH key ($TMP/id), once, for both boots.
test_node_file() {
  [[ -s "$TMP/syncmesh-node.yaml" ]] && return 0
  ssh-keygen -q -t ed25519 -N '' -C "$PREFIX-test" -f "$TMP/id"
  cat > "$TMP/syncmesh-node.yaml" <<EON
node_id: pi-test
lat: 42.6977
lon: 23.3219
mesh_secret: "$(openssl rand -hex 32)"
write_key: "$(openssl rand -hex 32)"
ssh_authorized_keys:
  - $(cat "$TMP/id.pub")
EON
  check "boot - the test node file is valid" nodefile "$TMP/syncmesh-node.yaml"
}

pi_test_boot() {
  command -v qemu-system-aarch64 >/dev/null || "$PI_REPO/hack/apt-install.sh" qemu-system-arm
  mkdir -p "$LOGS"
  SERIAL="$LOGS/serial.log"
  : > "$SERIAL"
  # the same image, grown by 2 GiB (first boot grows the root partition), with a node file
  cp --sparse=always "$IMG" "$TMP/disk.img"
  truncate -s +2G "$TMP/disk.img"
  test_node_file
  mcopy -o -i "$TMP/disk.img@@$boot_off" "$TMP/syncmesh-node.yaml" ::syncmesh-node.yaml
  mtype -i "$fat" "::$kernel" > "$TMP/vmlinuz"
  mtype -i "$fat" "::$initrd" > "$TMP/initrd"
  # the Pi's kernel command line, with the virt machine's PL011 (ttyAMA0) as the console
  local append
  append="$(sed -E 's/console=[^ ]+//g; s/ +/ /g' "$TMP/cmdline.txt" | tr -d '\n') console=ttyAMA0"
  HEALTH_FWD=$(free_port)
  SSH_FWD=$(free_port)
  note "boot: qemu-system-aarch64 -M virt -cpu cortex-a72 (TCG), kernel $kernel, append: $append"
  note "boot: serial log $SERIAL, health http://127.0.0.1:$HEALTH_FWD/health, ssh port $SSH_FWD"
  BOOT_T0=$SECONDS
  qemu-system-aarch64 -name "$PREFIX-pi-test" -M virt -cpu cortex-a72 -smp "${PI_TEST_CPUS:-2}" -m "${PI_TEST_MEM_MIB:-3072}" \
    -display none -daemonize -pidfile "$TMP/qemu.pid" -serial "file:$SERIAL" -monitor none \
    -kernel "$TMP/vmlinuz" -initrd "$TMP/initrd" -append "$append" \
    -drive "file=$TMP/disk.img,format=raw,if=virtio,snapshot=on" \
    -nic "user,model=virtio-net-pci,hostfwd=tcp:127.0.0.1:$HEALTH_FWD-:8099,hostfwd=tcp:127.0.0.1:$SSH_FWD-:22" \
    -object rng-random,filename=/dev/urandom,id=rng -device virtio-rng-pci,rng=rng
  QEMU_PID=$(cat "$TMP/qemu.pid")
  local deadline=$((SECONDS + BOOT_TIMEOUT_S)) state="" status=""
  while ((SECONDS < deadline)); do
    kill -0 "$QEMU_PID" 2>/dev/null || { note "boot: qemu exited"; break; }
    stage_seen kernel 'Booting Linux on physical CPU'
    stage_seen initramfs 'Run /init as init process|Loading, please wait'
    stage_seen userspace 'systemd\[1\]: |Welcome to .*Debian'
    stage_seen node-file 'syncmesh: '
    if [[ -n ${reached[userspace]:-} && -z ${reached[ssh-up]:-} ]] \
      && ssh -q -o BatchMode=yes -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o ConnectTimeout=5 \
        -i "$TMP/id" -p "$SSH_FWD" root@127.0.0.1 true 2>/dev/null; then
      reached[ssh-up]=$((SECONDS - BOOT_T0)); note "boot: ssh-up after ${reached[ssh-up]} s (root, by the node file's key)"
    fi
    status=$(health || true)
    if [[ -n $status ]]; then
      state=$(jq -r '.state // empty' <<<"$status" 2>/dev/null || true)
      [[ -n ${reached[health:$state]:-} ]] || { reached[health:$state]=$((SECONDS - BOOT_T0)); note "boot: health state '$state' after ${reached[health:$state]} s: $(jq -c 'del(.database)' <<<"$status" 2>/dev/null | cut -c1-300)"; }
      [[ $state == ready ]] && { reached[ready]=$((SECONDS - BOOT_T0)); break; }
    fi
    sleep 5
  done
  printf '%s\n' "$status" > "$LOGS/health.json"
  local k
  { printf '{'; for k in "${!reached[@]}"; do printf '"%s": %s, ' "$k" "${reached[$k]}"; done; printf '"timeout_s": %s}\n' "$BOOT_TIMEOUT_S"; } > "$LOGS/boot-times.json"
  note "boot: times (s since qemu start): $(cat "$LOGS/boot-times.json")"
  check "boot (aarch64 TCG) - kernel from the boot partition starts" test -n "${reached[kernel]:-}"
  check "boot (aarch64 TCG) - the root partition is found by PARTUUID and systemd starts" test -n "${reached[userspace]:-}"
  check "boot (aarch64 TCG) - the node file is read from the boot partition and reported on the console" test -n "${reached[node-file]:-}"
  check "boot (aarch64 TCG) - root logs in by SSH with the node file's key" test -n "${reached[ssh-up]:-}"
  check "boot (aarch64 TCG) - the database shown at the health URL is the test server, not hidden" \
    bash -c "jq -e '.database.kind == \"test-server\" or .database.kind == \"mongodb\"' '$LOGS/health.json' >/dev/null"
  check "boot (aarch64 TCG) - health URL says ready within ${BOOT_TIMEOUT_S} s (last state: ${state:-none})" test "$state" = ready
  if [[ -n ${reached[ssh-up]:-} ]]; then
    ssh -q -o BatchMode=yes -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o ConnectTimeout=10 \
      -i "$TMP/id" -p "$SSH_FWD" root@127.0.0.1 \
      'findmnt -no SOURCE,SIZE /; findmnt -no SOURCE /boot/firmware; systemctl --failed --no-legend; systemd-analyze 2>/dev/null; journalctl -b -u syncmesh-node --no-pager | tail -n 40' \
      > "$LOGS/guest.txt" 2>&1 || true
    note "boot: guest state in $LOGS/guest.txt"
    check "boot (aarch64 TCG) - first boot grew the root filesystem to the disk (> image size)" \
      bash -c "awk 'NR==1{print \$2}' '$LOGS/guest.txt' | grep -qE '^[0-9.]+G$' && test \"\$(awk 'NR==1{sub(/G/,\"\",\$2); print int(\$2*1024)}' '$LOGS/guest.txt')\" -gt $(( $(stat -c %s "$IMG") / 1048576 ))"
    check "boot (aarch64 TCG) - /boot/firmware is mounted from partition 1" grep -qx '/dev/vda1' <(sed -n 2p "$LOGS/guest.txt")
  fi
}

# The SD-card path on a Raspberry Pi machine: QEMU 7.2 has no Pi 4 (raspi4b came in 9.0), but its
# raspi3b (BCM2837, Cortex-A53) has the same kind of SD controller and mini UART, and Debian's
# kernel supports it with the bcm2837 DTB the firmware hook copied. The same image as an SD card:
# the kernel must find partition 2 by PARTUUID on mmcblk0 and print to the mini UART (ttyS1,
# the console cmdline.txt names) — proof that the Pi's own command line and drivers work,
# not just virtio. Checked up to the login prompt on ttyS1 (1 GiB, no network device).
pi_test_boot_raspi3() {
  local sd="$TMP/sd.img" log="$LOGS/serial-raspi3b.log" size=1 t0 seen_kernel="" seen_root="" seen_login=""
  rm -f "$TMP/disk.img"
  mkdir -p "$LOGS"
  test_node_file
  cp --sparse=always "$IMG" "$sd"
  while ((size < $(stat -c %s "$sd"))); do size=$((size * 2)); done
  truncate -s "$size" "$sd"   # an SD card's size is a power of two in QEMU
  mcopy -o -i "$sd@@$boot_off" "$TMP/syncmesh-node.yaml" ::syncmesh-node.yaml
  mtype -i "$fat" ::bcm2837-rpi-3-b.dtb > "$TMP/rpi3.dtb"
  : > "$log"
  note "raspi3b: qemu-system-aarch64 -M raspi3b, the image as SD card, cmdline.txt as is (console=ttyS1), serial $log"
  t0=$SECONDS
  qemu-system-aarch64 -name "$PREFIX-pi-test-raspi3" -M raspi3b -display none -daemonize -pidfile "$TMP/qemu3.pid" -monitor none \
    -serial null -serial "file:$log" \
    -kernel "$TMP/vmlinuz" -initrd "$TMP/initrd" -dtb "$TMP/rpi3.dtb" -append "$(tr -d '\n' < "$TMP/cmdline.txt")" \
    -drive "file=$sd,format=raw,if=sd,snapshot=on"
  QEMU_PID=$(cat "$TMP/qemu3.pid")
  local deadline=$((SECONDS + ${PI_RASPI3_TIMEOUT_S:-1500}))
  while ((SECONDS < deadline)) && kill -0 "$QEMU_PID" 2>/dev/null; do
    [[ -n $seen_kernel ]] || ! grep -aq 'Booting Linux on physical CPU' "$log" || { seen_kernel=$((SECONDS - t0)); note "raspi3b: kernel on ttyS1 after $seen_kernel s"; }
    [[ -n $seen_root ]] || ! grep -aqE 'EXT4-fs \(mmcblk0p2\): mounted|systemd\[1\]: ' "$log" || { seen_root=$((SECONDS - t0)); note "raspi3b: root mmcblk0p2 mounted / systemd after $seen_root s"; }
    grep -aqE 'login: ' "$log" && { seen_login=$((SECONDS - t0)); note "raspi3b: login prompt on ttyS1 after $seen_login s"; break; }
    sleep 5
  done
  stop_qemu
  check "boot (raspi3b) - the kernel from the boot partition prints on ttyS1 (cmdline.txt's serial console)" test -n "$seen_kernel"
  check "boot (raspi3b) - root=PARTUUID finds partition 2 on the SD card (mmcblk0p2)" grep -aqE 'mmcblk0: p1 p2' "$log"
  check "boot (raspi3b) - systemd starts from the SD card's root partition" test -n "$seen_root"
  check "boot (raspi3b) - login prompt on the serial console" test -n "$seen_login"
  printf '{"kernel": %s, "root": %s, "login": %s}\n' "${seen_kernel:-null}" "${seen_root:-null}" "${seen_login:-null}" > "$LOGS/boot-times-raspi3b.json"
}

if [[ $BOOT == 1 ]]; then
  if [[ ${PI_TEST_VIRT:-1} == 1 ]]; then
    pi_test_boot
    stop_qemu
  fi
  [[ ${PI_TEST_RASPI3:-1} == 1 ]] && pi_test_boot_raspi3
fi

printf '# %d passed, %d failed\n' "$passed" "$failed"
((failed == 0))
