#!/usr/bin/env bash
# make test-tf-local: scenario local-3 applied for real with the appliance VM image
# (.cache/appliance/out/syncmesh-edge-vm-amd64.qcow2, make image-vm): 3 libvirt VMs (software
# emulation) become a mesh on their first boot from the node files Terraform generates (NoCloud
# seeds), then each node's database gets its sensor's readings, the mesh checks of the appliance
# tier run against the Terraform-made topology (aggregate through every node equal to the value
# computed from the CSVs, collect complete, health, gateway API); then, on every node, that faasd's
# containers cannot reach the cloud metadata address (emulated: a listener on 169.254.169.254 the
# node itself reaches, routed as on GCE); the measurement `make scenario TARGET=terraform` with a
# few requests (its report's numbers are printed); then tf-down and nothing left. Before the data
# load, `syncmesh.edge.verify` with a few readings runs through the Terraform-written inventory
# (SSH as root, the write key where the playbooks read it).
# Root. Prints the time of each step, and one JSON line (`tf-local-result: {...}`: up, load,
# checks, down, host memory of the VMs) that make test-scale collects.
#
# Env (documented defaults): SCENARIO (local-3; make test-scale runs local-12), TF_PREFIX (smt;
# every libvirt object, interface and the namespace carry it), DATA (../shared/data/sofia or ../../shared/data/sofia;
# without it the nodes get generated readings and the expected value comes from the databases),
# LOAD_DAYS (empty: node i gets Sofia sensor i's month from DATA; N: N generated days per node,
# the expected value from the databases, and the aggregate over the first day: many nodes under
# software emulation), MESH_TEST_WINDOW (week: the aggregate's window, month|week|day), TF_KEEP=1 (leave the mesh up for `make scenario TARGET=terraform`; then
# `make tf-down`), MESH_TEST_EXTRAS (1: the metadata, verify and scenario steps; test-scale's 12 nodes
# set 0), VERIFY_READINGS (3 per node), SCENARIO_REQUESTS (5: the scenario cell's request count),
# and those of terraform/hack/tf.sh.
set -o errexit -o nounset -o pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$root"
tf="$root/terraform/hack/tf.sh"
export TF_PREFIX=${TF_PREFIX:-smt}
SCENARIO=${SCENARIO:-local-3}
mesh="${TF_PREFIX}${SCENARIO#local-}"
state="$root/.mesh/$mesh"
DATA=${DATA:-}
# beside the clone, or beside the folder of worktrees (as terraform/hack/tf.sh looks)
for d in "$root/../shared/data/sofia" "$root/../../shared/data/sofia"; do
  [[ -z "$DATA" && -f "$d/1.csv" ]] && DATA=$(cd "$d" && pwd)
done
export DATA
LOAD_DAYS=${LOAD_DAYS:-}
[[ -z "$LOAD_DAYS" || "$LOAD_DAYS" =~ ^([1-9]|[12][0-9]|3[01])$ ]] || { echo "LOAD_DAYS must be empty or 1..31, not '$LOAD_DAYS'" >&2; exit 2; }
# the aggregate over the first week (MESH_TEST_WINDOW): under software emulation a month's scan by
# three VMs at once took 20 to more than 45 s each, past the longest peer deadline (45 s)
test_data=$DATA window=${MESH_TEST_WINDOW:-week} data_desc="Sofia sensor i's month on node i"
[[ -z "$DATA" ]] && data_desc="a generated month per node"
[[ -n "$LOAD_DAYS" ]] && test_data="" window=day data_desc="$LOAD_DAYS generated day(s) per node"
t0=$(date +%s)
log() { printf '[tf-local %s] %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }

tmp=$(mktemp -d "/tmp/${TF_PREFIX}-tflocal.XXXXXX")
result=""
finish() {
  local rc=$?
  trap - EXIT INT TERM
  if [[ "${TF_KEEP:-0}" != 1 || $rc != 0 ]]; then
    local t_down=$(date +%s)
    "$tf" down "$SCENARIO" || rc=1
    log "tf-down in $(($(date +%s) - t_down)) s"
    [[ -n "${result:-}" ]] && echo "tf-local-result: ${result%\}}, \"down_s\": $(($(date +%s) - t_down))}"
  fi
  rm -rf "$tmp"
  log "done in $(($(date +%s) - t0)) s (exit $rc)"
  exit $rc
}
trap finish EXIT
trap 'exit 130' INT TERM

ssh-keygen -q -t ed25519 -N '' -C "$mesh-test" -f "$tmp/id_ed25519"
# -n: ssh must not read the loop's node list from standard input (it took the rest of it: only node-1 got its password file)
ssh_opts=(-i "$tmp/id_ed25519" -o BatchMode=yes -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o ConnectTimeout=10 -o LogLevel=ERROR)
SSH=(ssh -n "${ssh_opts[@]}")
SSH_IN=(ssh "${ssh_opts[@]}")  # the same, reading a script from standard input

TF_SSH_PUBKEY_FILE="$tmp/id_ed25519.pub" "$tf" up "$SCENARIO"
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

# each node's registry takes the password Terraform made (node-config: the node file's
# registry_password): the registry_auth_file topology.json names opens it (200), no credentials do
# not (401), the node's health says the password was given, never generated
python3 - "$state/topology.json" <<'PY' || { log "a node's registry does not take the registry_auth_file Terraform wrote"; exit 1; }
import base64, json, sys, urllib.error, urllib.request
def status(url, headers={}):
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=30) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as err:
        return err.code, err.read()
for n in json.load(open(sys.argv[1]))["nodes"]:
    auth = base64.b64encode(open(n["registry_auth_file"], "rb").read()).decode()
    codes = [status(f"http://{n['registry']}/v2/", h)[0] for h in ({"Authorization": f"Basic {auth}"}, {})]
    # the health URL answers 503 while a part is failing, with the same JSON (the boot's fields too)
    code, body = status(f"http://{n['address']}:8099/health")
    health = json.loads(body or b"{}")
    given = health.get("registry", {}).get("password")
    print(f"{n['id']}: registry {n['registry']} with its registry_auth_file {codes[0]}, without {codes[1]}; password {given}; health {code} (failing: {health.get('failing')})", file=sys.stderr)
    assert codes == [200, 401] and given == "given", n["id"]
PY

# the Terraform-written inventory as the playbooks use it: SSH as root with the node files' key, the
# write key from .secrets/write-key beside the inventory. Before the month of data: its mesh-wide
# count scans every reading, which under software emulation outlasts the peer deadline; its own
# readings are dated today, outside the checks' July 2017 windows.
if [[ "${MESH_TEST_EXTRAS:-1}" == 1 ]]; then
  t_verify=$(date +%s)
  ANSIBLE_CONFIG="$root/ansible/ansible.cfg" ANSIBLE_PRIVATE_KEY_FILE="$tmp/id_ed25519" \
    "$root/.cache/ansible-venv/bin/ansible-playbook" -i "$state/inventory.yml" syncmesh.edge.verify -e verify_readings="${VERIFY_READINGS:-3}" > "$tmp/verify.log" 2>&1 ||
    { tail -n 40 "$tmp/verify.log" >&2; log "syncmesh.edge.verify on the Terraform inventory failed"; exit 1; }
  log "syncmesh.edge.verify -e verify_readings=${VERIFY_READINGS:-3} on $state/inventory.yml: $(grep -cE ' failed=0 ' "$tmp/verify.log") host(s) failed=0 (SSH as root, the write key from .secrets/write-key) in $(($(date +%s) - t_verify)) s"
fi

# data: node-i gets sensor i (placement puts node-i at the Sofia sensor i); the nodes load at
# the same time (each VM's one vCPU is the bottleneck under software emulation), each into its log
loader=$root/functions/syncmesh/dist/src/load/cli.js
t_load=$(date +%s)
i=0
pids=()
while read -r id addr; do
  i=$((i + 1))
  if [[ -n "$LOAD_DAYS" ]]; then src=(--generate --sensor "$i" --days "$LOAD_DAYS")
  elif [[ -n "$DATA" ]]; then src=(--file "$DATA/$i.csv")
  else src=(--generate --sensor "$i"); fi
  node "$loader" --mongodb-uri "mongodb://$addr:27017/?directConnection=true" "${src[@]}" < /dev/null > "$tmp/load-$id.log" 2>&1 &
  pids+=("$!:$id")
done < "$tmp/nodes"
for p in "${pids[@]}"; do
  wait "${p%%:*}" || { log "${p#*:}: loading failed: $(tail -n3 "$tmp/load-${p#*:}.log")"; exit 1; }
  log "${p#*:}: loaded $(tail -n1 "$tmp/load-${p#*:}.log") ($(($(date +%s) - t_load)) s since the loads began)"
done

t_checks=$(date +%s)
APPLIANCE_TOPOLOGY="$state/topology.checks.json" APPLIANCE_SSH_KEY="$tmp/id_ed25519" MESH_TEST_DATA="$test_data" \
  MESH_TEST_WINDOW="$window" node --test --test-concurrency=1 scenarios/mesh/dist/test/integration/appliance.test.js
t_done=$(date +%s)
log "mesh checks passed in $((t_done - t_checks)) s; up $((t_up - t0)) s"
extras_s=0
if [[ "${MESH_TEST_EXTRAS:-1}" == 1 ]]; then
  t_extras=$(date +%s)
  # faasd's containers must not reach the metadata server (its user-data holds the node's secrets).
  # Emulated on each VM as on GCE: 169.254.169.254 in a namespace of its own behind a veth, routed,
  # with a listener; the node reaches it, the function's network namespace must not, and does
  # once the node's rule is taken out (so the rule, not the set-up, is what stops it).
  while read -r id addr; do
    "${SSH_IN[@]}" "root@$addr" bash -s < "$root/terraform/tests/metadata-block.sh" || { log "$id: metadata block check failed"; exit 1; }
  done < "$tmp/nodes"
  # the measurement cell on these VMs (make scenario TARGET=terraform), a few requests
  run_id="tf-$SCENARIO-$(date -u +%Y%m%dT%H%M%SZ)"
  make -C "$root" --no-print-directory scenario TARGET=terraform SCENARIO="$SCENARIO" SYSTEM=syncmesh WORKLOAD=aggregate DAYS=1 \
    REQUESTS="${SCENARIO_REQUESTS:-5}" RUN="$run_id" || { log "make scenario TARGET=terraform failed"; exit 1; }
  log "make scenario TARGET=terraform SCENARIO=$SCENARIO: scenarios/results/$run_id/report.md"
  sed -n '/^|/p' "$root/scenarios/results/$run_id/report.md" | head -n 12 >&2
  extras_s=$(($(date +%s) - t_extras))
  log "metadata block and scenario in $extras_s s"
fi
mem=$("$tf" memory "$SCENARIO")
log "host memory of the VMs: $mem"
result=$(python3 -c 'import json,sys; m=json.loads(sys.argv[1]); m.pop("per_vm"); print(json.dumps({"scenario": sys.argv[2], "kind": "appliance", "memory_mb_per_vm": int(sys.argv[3]), "up_s": int(sys.argv[4]), "load_s": int(sys.argv[5]), "checks_s": int(sys.argv[6]), "extras_s": int(sys.argv[8]), "data": sys.argv[7], **m}))' \
  "$mem" "$SCENARIO" "${TF_MEMORY_MB:-2048}" "$((t_up - t0))" "$((t_checks - t_load))" "$((t_done - t_checks))" "$data_desc" "$extras_s")
