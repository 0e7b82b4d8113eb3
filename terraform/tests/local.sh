#!/usr/bin/env bash
# make test-tf-smoke: a real libvirt apply of scenario local-3 with the tiny test VM
# (terraform/tests/tiny-image.sh), then tf-down, then checks that nothing is left. It proves the
# libvirt plumbing (pool, volumes, NoCloud seeds, isolated network, taps, static addresses from
# the node file, teardown); it is not a mesh (the tiny VM runs no node).
set -o errexit -o nounset -o pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
tf="$root/terraform/hack/tf.sh"
t0=$(date +%s)
trap '"$tf" down local-3 || true' EXIT
TF_TINY=1 "$tf" up local-3
t1=$(date +%s)
python3 - "$root/.mesh/topology.json" <<'PY'
import json, sys, urllib.request
topo = json.load(open(sys.argv[1]))
for n in topo["nodes"]:
    body = json.load(urllib.request.urlopen(f"http://{n['address']}:8080/healthz", timeout=5))
    assert body["node"] == n["id"], f"{n['address']} answers as {body['node']}, expected {n['id']}"
    assert body["address"] == n["address"] + "/24", body
print(f"tf-smoke: {len(topo['nodes'])} VMs answer with their own id at their static address")
PY
trap - EXIT
"$tf" down local-3
echo "tf-smoke: up (apply + boot) $((t1 - t0)) s, total $(($(date +%s) - t0)) s"
