#!/usr/bin/env bash
# make test-tf-smoke: a real libvirt apply of a local scenario (default local-3) with the tiny test
# VM (terraform/tests/tiny-image.sh), then tf-down, then checks that nothing is left. It proves the
# libvirt plumbing (pool, volumes, NoCloud seeds, isolated network, taps, static addresses from
# the node file, teardown); it is not a mesh (the tiny VM runs no node).
#
#   terraform/tests/local.sh [SCENARIO]   local-3 (default), local-12 or local-30
#
# Prints the time of each step and one JSON line (`tf-smoke-result: {...}`: apply + boot, down,
# host memory of the VMs) that make test-scale collects.
set -o errexit -o nounset -o pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
tf="$root/terraform/hack/tf.sh"
scenario=${1:-local-3}
t0=$(date +%s)
trap '"$tf" down "$scenario" || true' EXIT
TF_TINY=1 "$tf" up "$scenario"
t1=$(date +%s)
topology=$("$tf" topology "$scenario")
python3 - "$topology" <<'PY'
import json, sys, urllib.request
topo = json.load(open(sys.argv[1]))
for n in topo["nodes"]:
    body = json.load(urllib.request.urlopen(f"http://{n['address']}:8080/healthz", timeout=5))
    assert body["node"] == n["id"], f"{n['address']} answers as {body['node']}, expected {n['id']}"
    assert body["address"] == n["address"] + "/24", body
print(f"tf-smoke: {len(topo['nodes'])} VMs answer with their own id at their static address")
PY
mem=$("$tf" memory "$scenario")
trap - EXIT
t2=$(date +%s)
"$tf" down "$scenario"
t3=$(date +%s)
echo "tf-smoke: $scenario up (apply + boot) $((t1 - t0)) s, down $((t3 - t2)) s, total $((t3 - t0)) s"
python3 -c 'import json,sys; m=json.loads(sys.argv[1]); m.pop("per_vm"); print("tf-smoke-result: " + json.dumps({"scenario": sys.argv[2], "kind": "tiny", "up_s": int(sys.argv[3]), "down_s": int(sys.argv[4]), **m}))' \
  "$mem" "$scenario" "$((t1 - t0))" "$((t3 - t2))"
