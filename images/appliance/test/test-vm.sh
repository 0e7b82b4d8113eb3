#!/usr/bin/env bash
# make test-appliance: boots the VM image 3 times (a mesh) + once with a bad node file under QEMU
# (TCG: /dev/kvm is unusable here) on a private bridge with static addresses, loads data with the
# function's loader, writes .mesh/topology.json (the local mesh's format), runs the checks
# (scenarios/mesh/test/integration/appliance.test.ts: exact aggregate and complete collect through
# every node, the gateway API, the health URL, the bad node), then stops every QEMU by its pid
# and removes everything it created. Root.
#
# Node 1 gets its node file by cloud-init (a NoCloud seed disk, like a libvirt cloudinit disk) on
# a qcow2 overlay of the .qcow2 output; nodes 2, 3 and the bad one on the EFI partition of
# their overlay (the file a user edits), written with mtools + qemu-io (no mounts).
#
# Env (documented defaults):
#   APPLIANCE_VM_RAM_MB   2048     RAM per VM (a node: ~650 MB PSS, plus page cache)
#   APPLIANCE_VM_CPUS     2        vCPUs per VM (TCG threads)
#   APPLIANCE_READY_S     3600     how long a VM may take from start to ready (TCG on a busy host)
#   APPLIANCE_SUBNET      10.77.0  the private /24 (host .1, nodes .11-.13, bad node .14)
#   DATA                  ""       folder with N.csv (Sofia); empty: ../shared/data/sofia or ../../shared/data/sofia if present, else generated
#   APPLIANCE_KEEP_LOGS   .cache/appliance/test-logs   serial logs and timings are kept here
#   PEER_TIMEOUT_S        45       the node files' peer_timeout_s (TCG: one node scans a month in 15-20 s)
#   MESH_TEST_WINDOW      week     the aggregate check's window (month|week|day): three VMs scanning a
#                                  month at once took 20 to more than 45 s each under TCG
set -o errexit -o nounset -o pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../../.." && pwd)
cd "$repo"
RAM=${APPLIANCE_VM_RAM_MB:-2048}
CPUS=${APPLIANCE_VM_CPUS:-2}
READY_S=${APPLIANCE_READY_S:-3600}
PEER_TIMEOUT_S=${PEER_TIMEOUT_S:-45}
NET=${APPLIANCE_SUBNET:-10.77.0}
LOGS=${APPLIANCE_KEEP_LOGS:-$repo/.cache/appliance/test-logs}
P=${APPLIANCE_TEST_PREFIX:-sma}
BR=${P}-br0
MESH=${P}-appliance
QCOW=$repo/.cache/appliance/out/syncmesh-edge-vm-amd64.qcow2
OVMF_CODE=/usr/share/OVMF/OVMF_CODE_4M.fd
OVMF_VARS=/usr/share/OVMF/OVMF_VARS_4M.fd
DATA=${DATA:-}
# beside the clone, or beside the folder of worktrees (as terraform/hack/tf.sh looks)
for d in "$repo/../shared/data/sofia" "$repo/../../shared/data/sofia"; do
  [[ -z "$DATA" && -f "$d/1.csv" ]] && DATA=$(cd "$d" && pwd)
done
t_start=$(date +%s)

log() { printf '[appliance test %s] %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }
fail() { log "FAIL: $*"; exit 1; }
[[ $(id -u) == 0 ]] || fail "needs root (bridge, taps)"
[[ -s "$QCOW" ]] || fail "no image at $QCOW (make image-vm)"
ip -4 route | grep -q "^$NET\." && fail "the subnet $NET.0/24 is in use here; set APPLIANCE_SUBNET"
ip link show "$BR" >/dev/null 2>&1 && fail "$BR exists (a previous run still up?); remove it: ip link del $BR"

T=$(mktemp -d /tmp/${P}-appliance.XXXXXX)
mkdir -p "$LOGS" "$repo/.mesh/$MESH"
rm -f "$LOGS"/${P}-vm*.serial.log
pids=()
cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  log "teardown"
  for pf in "$T"/vm*/pid; do
    [[ -f "$pf" ]] || continue
    p=$(cat "$pf")
    # our QEMU only: the pid file's process must be qemu-system-x86_64 with our name
    if [[ -r /proc/$p/cmdline ]] && tr '\0' ' ' < "/proc/$p/cmdline" | grep -q -- "-name ${P}-vm"; then
      kill -TERM "$p" 2>/dev/null || true
      for _ in $(seq 1 100); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
      kill -KILL "$p" 2>/dev/null || true
    fi
  done
  for i in 1 2 3 4; do ip link del "${P}-tap$i" 2>/dev/null || true; done
  ip link del "$BR" 2>/dev/null || true
  # the topology names VMs that are gone now
  rm -rf "$repo/.mesh/$MESH"
  if [[ -f "$repo/.mesh/topology.json" ]] && grep -q "\"mesh\": \"$MESH\"" "$repo/.mesh/topology.json"; then rm -f "$repo/.mesh/topology.json"; fi
  rm -rf "$T"
  left=$(pgrep -f -- "-name ${P}-vm" || true)
  [[ -z "$left" ]] || { log "QEMU processes left: $left"; rc=1; }
  log "done in $(($(date +%s) - t_start)) s (exit $rc)"
  exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# --- keys and secrets of this test mesh ---------------------------------------------------------
ssh-keygen -q -t ed25519 -N '' -C ${P}-appliance-test -f "$T/id_ed25519"
head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$T/secret"
head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$T/write-key"
pub=$(cat "$T/id_ed25519.pub")
SSH=(ssh -i "$T/id_ed25519" -o BatchMode=yes -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o ConnectTimeout=10 -o LogLevel=ERROR)

# --- network: a bridge on the host, one tap per VM ---------------------------------------------
# A fixed MAC: a bridge without one takes its lowest port MAC and changes it as ports join,
# which leaves the guests' ARP entries for its address pointing at a MAC it no longer answers.
ip link add "$BR" address "$(printf '%s' "$BR" | sha256sum | sed -E 's/^..(..)(..)(..)(..)(..).*/02:\1:\2:\3:\4:\5/')" type bridge
ip addr add "$NET.1/24" dev "$BR"
ip link set "$BR" up
for i in 1 2 3 4; do
  ip tuntap add dev "${P}-tap$i" mode tap
  ip link set "${P}-tap$i" master "$BR" up
done

# Sofia-ish locations, all within the queries' 50 km radius
lat=(0 42.6977 42.6650 42.7100 42.6800)
lon=(0 23.3219 23.2800 23.3700 23.3000)
node_file() { # i -> the node file of node-i
  local i=$1 peers="" j
  for j in 1 2 3; do [[ $j == "$i" ]] || peers+="  - node-$j@$NET.1$j"$'\n'; done
  cat <<EON
node_id: node-$i
lat: ${lat[$i]}
lon: ${lon[$i]}
mesh_secret: "$(cat "$T/secret")"
write_key: "$(cat "$T/write-key")"
peers:
${peers}network:
  address: $NET.1$i/24
  gateway: $NET.1
ssh_authorized_keys:
  - $pub
mongodb_publish: 0.0.0.0
peer_timeout_s: $PEER_TIMEOUT_S
EON
}

# the EFI partition of the image (offset 1 MiB, 256 MiB), with a node file, into a qcow2 overlay
esp_node_file() { # overlay node-file
  local overlay=$1 file=$2 esp
  esp=$(dirname "$overlay")/esp.img
  qemu-img dd -f qcow2 -O raw if="$QCOW" of="$esp" bs=1M skip=1 count=256 2>/dev/null
  mcopy -o -i "$esp" "$file" ::syncmesh-node.yaml
  qemu-io -f qcow2 -c "write -s $esp 1M 256M" "$overlay" >/dev/null
  rm -f "$esp"
}

for i in 1 2 3 4; do
  d=$T/vm$i
  mkdir -p "$d"
  cp "$OVMF_VARS" "$d/vars.fd"
  qemu-img create -q -f qcow2 -F qcow2 -b "$QCOW" "$d/disk.qcow2" 4G
done
# node 1: cloud-init NoCloud seed (FAT, label CIDATA)
node_file 1 > "$T/node-1.yaml"
{
  echo "#cloud-config"
  echo "write_files:"
  echo "  - path: /etc/syncmesh/syncmesh-node.yaml"
  echo "    permissions: '0600'"
  echo "    content: |"
  sed 's/^/      /' "$T/node-1.yaml"
} > "$T/user-data"
printf 'instance-id: %s-vm1\nlocal-hostname: node-1\n' "$P" > "$T/meta-data"
truncate -s 4M "$T/vm1/seed.img"
mformat -i "$T/vm1/seed.img" -v CIDATA ::
mcopy -i "$T/vm1/seed.img" "$T/user-data" "$T/meta-data" ::
# nodes 2, 3: the node file on the EFI partition
for i in 2 3; do
  node_file "$i" > "$T/node-$i.yaml"
  esp_node_file "$T/vm$i/disk.qcow2" "$T/node-$i.yaml"
done
# the bad node: lat missing, a short secret; network and SSH key valid (it must stay reachable)
cat > "$T/node-bad.yaml" <<EON
node_id: node-bad
lon: 23.3
mesh_secret: "too-short"
write_key: "$(cat "$T/write-key")"
network:
  address: $NET.14/24
ssh_authorized_keys:
  - $pub
EON
esp_node_file "$T/vm4/disk.qcow2" "$T/node-bad.yaml"
log "4 VM disks ready ($(du -sm "$T" | cut -f1) MiB in overlays)"

# --- boot -----------------------------------------------------------------------------------------
declare -A started
for i in 1 2 3 4; do
  d=$T/vm$i
  extra=()
  [[ $i == 1 ]] && extra=(-drive "file=$d/seed.img,if=virtio,format=raw,readonly=on")
  qemu-system-x86_64 -name "${P}-vm$i" -accel tcg,thread=multi -machine q35 -cpu max -smp "$CPUS" -m "$RAM" \
    -drive "if=pflash,format=raw,readonly=on,file=$OVMF_CODE" -drive "if=pflash,format=raw,file=$d/vars.fd" \
    -drive "file=$d/disk.qcow2,if=virtio,format=qcow2,cache=unsafe,discard=unmap" "${extra[@]}" \
    -netdev "tap,id=n0,ifname=${P}-tap$i,script=no,downscript=no" -device "virtio-net-pci,netdev=n0,mac=52:54:00:77:00:1$i" \
    -object rng-random,filename=/dev/urandom,id=rng0 -device virtio-rng-pci,rng=rng0 \
    -display none -monitor none -serial "file:$LOGS/${P}-vm$i.serial.log" -daemonize -pidfile "$d/pid"
  started[$i]=$(date +%s)
  log "${P}-vm$i started (pid $(cat "$d/pid"), $RAM MiB, $CPUS vCPUs, serial log $LOGS/${P}-vm$i.serial.log)"
done

health() { curl -s --max-time 10 "http://$NET.1$1:8099/health" || true; }
# one field of a JSON document on stdin ("" when absent or not JSON: the VM is still booting)
field() {
  python3 -c '
import json, sys
try:
    v = json.loads(sys.stdin.read().strip() or "{}")
except ValueError:
    v = {}
for k in sys.argv[1].split("."):
    v = v.get(k) if isinstance(v, dict) else None
print("" if v is None else (json.dumps(v) if isinstance(v, (dict, list)) else v))' "$1"
}

declare -A ready_at
deadline=$(( $(date +%s) + READY_S ))
last=0
while :; do
  all=1
  for i in 1 2 3 4; do
    [[ -n "${ready_at[$i]:-}" ]] && continue
    kill -0 "$(cat "$T/vm$i/pid")" 2>/dev/null || fail "${P}-vm$i (QEMU) exited; see $LOGS/${P}-vm$i.serial.log"
    h=$(health "$i")
    state=$(field state <<<"$h")
    if [[ $i == 4 && $state == invalid-node-file ]]; then ready_at[$i]=$(date +%s); log "${P}-vm4 (bad node file) reports: $(field problems <<<"$h")"; continue; fi
    if [[ $i != 4 && $state == ready && "$(field peers <<<"$h")" != *pending* ]]; then
      ready_at[$i]=$(date +%s)
      log "${P}-vm$i ready: $((ready_at[$i] - started[$i])) s from QEMU start (guest: ready $(field boot_to_ready_s <<<"$h") s after kernel start, peers at $(field peers_registered_s <<<"$h") s)"
      continue
    fi
    all=0
  done
  ((all)) && break
  (( $(date +%s) > deadline )) && fail "not every VM ready within $READY_S s"
  if (( $(date +%s) - last >= 60 )); then
    last=$(date +%s)
    for i in 1 2 3 4; do [[ -n "${ready_at[$i]:-}" ]] || log "  ${P}-vm$i: $(health "$i" | field state) $(health "$i" | field message)$(tail -c 300 "$LOGS/${P}-vm$i.serial.log" 2>/dev/null | tr -d '\r' | tail -n1 | cut -c1-100 | sed 's/^/ | console: /')"; done
  fi
  sleep 10
done

# --- the topology (the local mesh's format, topology.ts), data, checks ---------------------------
for i in 1 2 3; do
  mkdir -p "$T/node-$i"
  "${SSH[@]}" "root@$NET.1$i" cat /var/lib/syncmesh/node/basic-auth > "$T/node-$i/basic-auth"
  chmod 0600 "$T/node-$i/basic-auth"
done
cp "$T/secret" "$repo/.mesh/$MESH/secret"; cp "$T/write-key" "$repo/.mesh/$MESH/write-key"
for i in 1 2 3; do mkdir -p "$repo/.mesh/$MESH/node-$i"; cp "$T/node-$i/basic-auth" "$repo/.mesh/$MESH/node-$i/basic-auth"; done
python3 - "$repo/.mesh/$MESH" "$NET" "$MESH" "${lat[*]}" "${lon[*]}" "$P" <<'PY'
import datetime, json, sys
state, net, mesh = sys.argv[1], sys.argv[2], sys.argv[3]
lat, lon = [float(x) for x in sys.argv[4].split()], [float(x) for x in sys.argv[5].split()]
prefix = sys.argv[6]
fn = lambda i: f"http://{net}.1{i}:8080/function/syncmesh-fn"
topology = {
    "runtime": "faasd",
    "mesh": mesh,
    "isolation": "netns",
    "subnet": f"{net}.0/24",
    "host_address": f"{net}.1",
    "latency": "none",
    "forward_mode": "parallel",
    "toxiproxy_api": None,
    "secret_file": f"{state}/secret",
    "write_key_file": f"{state}/write-key",
    "created_at": datetime.datetime.now(datetime.timezone.utc).isoformat(),
    "nodes": [
        {
            "id": f"node-{i}",
            "function_url": fn(i),
            "mongodb_uri": f"mongodb://{net}.1{i}:27017/?directConnection=true",
            "agent_address": f"{net}.1{i}:7070",
            "lat": lat[i],
            "lon": lon[i],
            "namespace": None,
            "address": f"{net}.1{i}",
            "host_interface": f"{prefix}-tap{i}",
            "peers": {f"node-{j}": fn(j) for j in (1, 2, 3) if j != i},
            "gateway_url": f"http://{net}.1{i}:8080",
            "basic_auth_file": f"{state}/node-{i}/basic-auth",
        }
        for i in (1, 2, 3)
    ],
}
text = json.dumps(topology, indent=2)
open(f"{state}/topology.json", "w").write(text)
open(f"{state}/../topology.json", "w").write(text)
PY
log "topology: $repo/.mesh/topology.json"

# the three nodes load at the same time (each VM's one vCPU is the bottleneck under TCG)
loader=$repo/functions/syncmesh/dist/src/load/cli.js
t_load=$(date +%s)
for i in 1 2 3; do
  uri="mongodb://$NET.1$i:27017/?directConnection=true"
  if [[ -n "$DATA" ]]; then src=(--file "$DATA/$i.csv"); else src=(--generate --sensor "$i"); fi
  node "$loader" --mongodb-uri "$uri" "${src[@]}" < /dev/null > "$T/load-$i.log" 2>&1 &
  load_pid[i]=$!
done
for i in 1 2 3; do
  wait "${load_pid[i]}" || { log "node-$i: loading failed: $(tail -n3 "$T/load-$i.log")"; exit 1; }
  log "node-$i: loaded $(tail -n1 "$T/load-$i.log") ($(($(date +%s) - t_load)) s since the loads began)"
done

t_checks=$(date +%s)
APPLIANCE_TOPOLOGY="$repo/.mesh/$MESH/topology.json" APPLIANCE_BAD_NODE="$NET.14" APPLIANCE_SSH_KEY="$T/id_ed25519" \
  APPLIANCE_SERIAL_LOGS="$LOGS" MESH_TEST_DATA="$DATA" MESH_TEST_WINDOW="${MESH_TEST_WINDOW:-week}" \
  node --test --test-concurrency=1 scenarios/mesh/dist/test/integration/appliance.test.js
log "checks passed in $(($(date +%s) - t_checks)) s"

{
  echo "{"
  echo "  \"ram_mb\": $RAM, \"cpus\": $CPUS, \"load_at_end\": \"$(cut -d' ' -f1-3 /proc/loadavg)\","
  for i in 1 2 3 4; do echo "  \"${P}-vm$i\": {\"ready_s_from_qemu_start\": $((ready_at[$i] - started[$i]))},"; done
  echo "  \"tier_s_until_checks_done\": $(($(date +%s) - t_start))"
  echo "}"
} > "$LOGS/timings.json"
cat "$LOGS/timings.json" >&2
