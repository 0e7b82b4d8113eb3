#!/usr/bin/env bash
# make test-tf-local: scenario local-3 applied for real with the appliance VM image
# (.cache/appliance/out/syncmesh-edge-vm-amd64.qcow2, make image-vm): 3 libvirt VMs (software
# emulation) become a mesh on their first boot from the node files Terraform generates (NoCloud
# seeds), then each node's database gets its sensor's readings, the mesh checks of the appliance
# tier run against the Terraform-made topology (aggregate through every node equal to the value
# computed from the CSVs, collect complete, health, gateway API), then tf-down and nothing left.
# Root. Prints the time of each step.
#
# Env (documented defaults): TF_PREFIX (smt; every libvirt object, interface and the namespace
# carry it), DATA (../shared/data/sofia; without it the nodes get generated readings and the
# expected value comes from the databases), TF_KEEP=1 (leave the mesh up for `make scenario
# TARGET=terraform`; then `make tf-down`), and those of terraform/hack/tf.sh.
set -o errexit -o nounset -o pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$root"
tf="$root/terraform/hack/tf.sh"
export TF_PREFIX=${TF_PREFIX:-smt}
mesh="${TF_PREFIX}3"
state="$root/.mesh/$mesh"
DATA=${DATA:-}
[[ -z "$DATA" && -f "$root/../shared/data/sofia/1.csv" ]] && DATA=$(cd "$root/../shared/data/sofia" && pwd)
export DATA
t0=$(date +%s)
log() { printf '[tf-local %s] %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }

tmp=$(mktemp -d "/tmp/${TF_PREFIX}-tflocal.XXXXXX")
finish() {
  local rc=$?
  trap - EXIT INT TERM
  if [[ "${TF_KEEP:-0}" != 1 || $rc != 0 ]]; then
    local t_down=$(date +%s)
    "$tf" down local-3 || rc=1
    log "tf-down in $(($(date +%s) - t_down)) s"
  fi
  rm -rf "$tmp"
  log "done in $(($(date +%s) - t0)) s (exit $rc)"
  exit $rc
}
trap finish EXIT
trap 'exit 130' INT TERM

ssh-keygen -q -t ed25519 -N '' -C "$mesh-test" -f "$tmp/id_ed25519"
SSH=(ssh -i "$tmp/id_ed25519" -o BatchMode=yes -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o ConnectTimeout=10 -o LogLevel=ERROR)

TF_SSH_PUBKEY_FILE="$tmp/id_ed25519.pub" "$tf" up local-3
t_up=$(date +%s)
log "tf-up (apply + first boot until every node is ready) in $((t_up - t0)) s"

# the gateway's basic-auth password is per node and root-only on the node: fetched over SSH into
# a copy of the topology for the checks (the Terraform-written topology.json stays as applied)
python3 - "$state/topology.json" > "$tmp/nodes" <<'PY'
import json, sys
for n in json.load(open(sys.argv[1]))["nodes"]:
    print(n["id"], n["address"])
PY
while read -r id addr; do
  mkdir -p "$state/$id"
  (umask 077 && "${SSH[@]}" "root@$addr" cat /var/lib/syncmesh/node/basic-auth > "$state/$id/basic-auth")
done < "$tmp/nodes"
python3 - "$state" <<'PY'
import json, sys
state = sys.argv[1]
topo = json.load(open(f"{state}/topology.json"))
for n in topo["nodes"]:
    n["basic_auth_file"] = f"{state}/{n['id']}/basic-auth"
json.dump(topo, open(f"{state}/topology.checks.json", "w"), indent=2)
PY

# data: node-i gets sensor i (placement puts node-i at the Sofia sensor i); the nodes load at
# the same time (each VM's one vCPU is the bottleneck under software emulation), each into its log
loader=$root/functions/syncmesh/dist/src/load/cli.js
t_load=$(date +%s)
i=0
pids=()
while read -r id addr; do
  i=$((i + 1))
  if [[ -n "$DATA" ]]; then src=(--file "$DATA/$i.csv"); else src=(--generate --sensor "$i"); fi
  node "$loader" --mongodb-uri "mongodb://$addr:27017/?directConnection=true" "${src[@]}" < /dev/null > "$tmp/load-$id.log" 2>&1 &
  pids+=("$!:$id")
done < "$tmp/nodes"
for p in "${pids[@]}"; do
  wait "${p%%:*}" || { log "${p#*:}: loading failed: $(tail -n3 "$tmp/load-${p#*:}.log")"; exit 1; }
  log "${p#*:}: loaded $(tail -n1 "$tmp/load-${p#*:}.log") ($(($(date +%s) - t_load)) s since the loads began)"
done

t_checks=$(date +%s)
APPLIANCE_TOPOLOGY="$state/topology.checks.json" APPLIANCE_SSH_KEY="$tmp/id_ed25519" MESH_TEST_DATA="$DATA" \
  node --test --test-concurrency=1 scenarios/mesh/dist/test/integration/appliance.test.js
log "mesh checks passed in $(($(date +%s) - t_checks)) s; up $((t_up - t0)) s"
