#!/usr/bin/env bash
# make test-lab: the whole life of a provisioned mesh on bare lab hosts, as one script.
#   bundle tarball -> lab-up (4 hosts) -> syncmesh.edge.site on 3 of them from the unpacked bundle
#   (the hosts reach nothing but this machine) -> site again (changed=0 on every host) ->
#   topology.json -> verify with data -> add_node (the 4th joins) -> verify with data on 4 + agents'
#   peers -> remove_node (it leaves) -> verify with data on 3 while nothing may reach the removed
#   host -> upgrade to a next bundle (new function, listener and agent versions), rolling, while a
#   poller asks the mesh through every node -> the new versions run, verify with data -> lab-down
#   leaves nothing. (The playbooks are the collection's: syncmesh.edge.site, .verify, ...)
# Prints each step as it starts and its time when done, and a table of times at the end. Logs per
# step in .cache/lab/test-lab/. Needs root, the bundle inputs (make faasd-bins images), the venv.
#
# LAB_TEST_TIER=ci (make test-lab-ci) stops after the first verify: bundle, 3 hosts, site cold,
# site again (changed=0), topology.json, each registry opens with its registry_auth_file, verify
# with data, agents' peers, the health URL under kill -9 of each service
# (ansible/lab/health-kill.py), lab-down, nothing left.
#
# Env: LAB_TEST_TIER (full, or ci), LAB_TEST_READINGS (20 readings per node per verify run),
# LAB_TEST_KEEP (1: leave the lab up at the end or after a failure, for a look; make lab-down
# removes it), LAB_PREFIX and LAB_SUBNET (as lab-up).
set -o errexit -o nounset -o pipefail

venv=${ANSIBLE_VENV:-$PWD/.cache/ansible-venv}
readings=${LAB_TEST_READINGS:-20}
keep=${LAB_TEST_KEEP:-0}
tier=${LAB_TEST_TIER:-full}
[[ $tier == full || $tier == ci ]] || { echo "test-lab: LAB_TEST_TIER must be full or ci, got '$tier'" >&2; exit 2; }
prefix=${LAB_PREFIX:-smn}
subnet=${LAB_SUBNET:-10.231.77}
export PATH=$venv/bin:$PATH ANSIBLE_NOCOLOR=1 ANSIBLE_FORCE_COLOR=0
# each playbook run ends with its slowest tasks (ansible/lab/callback_plugins/lab_task_times.py)
export ANSIBLE_CALLBACK_PLUGINS=$PWD/ansible/lab/callback_plugins ANSIBLE_CALLBACKS_ENABLED=lab_task_times
# the build machine is shared (load 40-90 seen): sudo on a lab host took longer than the 10 s default
export ANSIBLE_TIMEOUT=${ANSIBLE_TIMEOUT:-60}
logs=.cache/lab/test-lab; rm -rf "$logs"; mkdir -p "$logs"
poller=""
cleanup() {
  [[ -n $poller ]] && kill "$poller" 2>/dev/null || true
  if [[ $keep == 1 ]]; then echo "test-lab: LAB_TEST_KEEP=1: the lab stays up (make lab-down removes it)"; else ansible/lab/lab-down.sh >/dev/null 2>&1 || true; fi
}
trap cleanup EXIT

names=() times=() n=0 t_all=$SECONDS
# step NAME CMD...: runs CMD with its output in its own log; prints the time, or the log's end on failure.
step() {
  local name=$1 t0=$SECONDS log; shift
  n=$((n + 1)); log=$(printf '%s/%02d-%s.log' "$logs" "$n" "${name// /-}")
  echo "test-lab: [$n] $name"
  if ! "$@" > "$log" 2>&1; then
    echo "test-lab: [$n] $name FAILED after $((SECONDS - t0)) s; the end of $log:" >&2
    tail -40 "$log" >&2
    exit 1
  fi
  names+=("$name"); times+=($((SECONDS - t0)))
  echo "  done in $((SECONDS - t0)) s"
}
# recap_ok LOG HOSTS WANT_CHANGED0: every host of the play recap has failed=0 (and changed=0 when asked).
recap_ok() {
  local log=$1 hosts=$2 want_unchanged=$3 recap
  recap=$(grep -E "^${prefix}[0-9]+ +: ok=" "$log") || { echo "no play recap in $log" >&2; return 1; }
  echo "$recap" | sed 's/^/  /'
  (( $(grep -c ' failed=0 ' <<<"$recap") == hosts )) || { echo "a host failed" >&2; return 1; }
  if [[ $want_unchanged == 1 ]] && (( $(grep -c ' changed=0 ' <<<"$recap") != hosts )); then
    echo "test-lab: not idempotent: these tasks changed something:" >&2
    grep -E '^(changed|TASK)' "$log" | grep -B1 '^changed' >&2 || true
    return 1
  fi
}
playbook() {  # playbook INVENTORY PLAYBOOK ARGS...: the collection's playbook (site, verify, ...) from the unpacked bundle, with its ansible.cfg
  local inv=$1 pb=$2; shift 2
  ANSIBLE_CONFIG=$bundle/ansible/ansible.cfg ansible-playbook -i "$inv" "syncmesh.edge.$pb" "$@"
}
converge() {  # converge INVENTORY HOSTS WANT_CHANGED0 PLAYBOOK ARGS...
  local inv=$1 hosts=$2 unchanged=$3 log; shift 3
  log=$(mktemp "$logs/run.XXXXXX")
  playbook "$inv" "$@" > "$log" 2>&1 && rc=0 || rc=$?
  cat "$log"; echo "--- recap"
  recap_ok "$log" "$hosts" "$unchanged" && (( rc == 0 ))
}
topology() {  # topology INVENTORY: .mesh/topology.json for the mesh of that inventory
  mkdir -p .mesh &&
  ANSIBLE_CONFIG=$bundle/ansible/ansible.cfg ansible-inventory -i "$1" --list > .lab/inventory.json &&
  python3 ansible/lab/topology.py .lab/inventory.json "$PWD/.lab/.secrets/mesh-secret" .mesh/topology.json &&
  python3 -c 'import json,sys; t=json.load(open(".mesh/topology.json")); print("\n".join(n["id"]+" "+n["function_url"] for n in t["nodes"]))'
}
# registries: every node of .mesh/topology.json names its registry_auth_file (user:password, mode
# 0600, kept by the faasd role on this machine), and its registry answers /v2/ with it (200) and
# refuses a request without it (401): the operator can push to a provisioned node.
registries() {
  python3 - .mesh/topology.json <<'PY'
import base64, json, os, stat, sys, urllib.error, urllib.request
for n in json.load(open(sys.argv[1]))["nodes"]:
    f = n["registry_auth_file"]
    assert f and stat.S_IMODE(os.stat(f).st_mode) == 0o600, f"{n['id']}: registry_auth_file {f!r} (mode 0600 expected)"
    auth = base64.b64encode(open(f, "rb").read()).decode()
    codes = []
    for headers in ({"Authorization": f"Basic {auth}"}, {}):
        try:
            codes.append(urllib.request.urlopen(urllib.request.Request(f"http://{n['registry']}/v2/", headers=headers), timeout=30).status)
        except urllib.error.HTTPError as err:
            codes.append(err.code)
    print(n["id"], n["registry"], "with its registry_auth_file:", codes[0], "without:", codes[1])
    assert codes == [200, 401], f"{n['id']}: {codes}"
PY
}
# agents_peers INVENTORY HOSTS: every MISO agent of the mesh has HOSTS-1 connected peers (its metrics).
agents_peers() {
  local inv=$1 want=$(($2 - 1)) out
  out=$(ANSIBLE_CONFIG=$bundle/ansible/ansible.cfg ansible -i "$inv" syncmesh_nodes -o -m ansible.builtin.shell -a \
    "ip=\$(awk '\$2 == \"miso-agent\" {print \$1}' /var/lib/faasd/hosts | tail -1); python3 -c \"import urllib.request,sys; t=urllib.request.urlopen('http://'+sys.argv[1]+':9464/metrics',timeout=5).read().decode(); print([l for l in t.splitlines() if l.startswith('edge_miso_peers{state=\\\"connected\\\"}')][0])\" \$ip") || { echo "$out"; return 1; }
  echo "$out"
  (( $(grep -cE "edge_miso_peers\{state=\"connected\"\} $want\b" <<<"$out") == $2 ))
}
# health_kill INVENTORY HOST: on HOST, kill -9 of each service in turn: its health URL answers 503 naming
# it within 10 s and 200 once it is back (ansible/lab/health-kill.py, run there by the script module).
health_kill() {
  ANSIBLE_CONFIG=$bundle/ansible/ansible.cfg ansible -i "$1" "$2" -m ansible.builtin.script -a "$PWD/ansible/lab/health-kill.py executable=python3"
}
# quiet_host HOST_ADDR SECONDS CMD...: runs CMD while capturing on the host's veth; fails if any other
# lab host sent it an IP packet meanwhile (the controller, .1, may: it runs the playbooks).
quiet_host() {
  local addr=$1 ifname=$2; shift 2
  local cap=$logs/quiet.pcap
  tcpdump -i "$ifname" -n -w "$cap" "ip and dst host $addr and src net $subnet.0/24 and not src host $subnet.1" 2>"$logs/tcpdump.err" &
  local tpid=$!
  sleep 1
  "$@" && rc=0 || rc=$?
  kill "$tpid"; wait "$tpid" 2>/dev/null || true
  local packets
  packets=$(tcpdump -r "$cap" -n 2>/dev/null | wc -l)
  echo "packets from the other lab hosts to $addr while checking: $packets"
  tcpdump -r "$cap" -n 2>/dev/null | head -5
  (( rc == 0 && packets == 0 ))
}
upgraded() {  # upgraded INVENTORY HOSTS SUFFIX: every node runs the function, listener and agent of the next version
  local out
  out=$(ANSIBLE_CONFIG=$bundle/ansible/ansible.cfg ansible -i "$1" syncmesh_nodes -o -m ansible.builtin.shell -a \
    "ctr -n openfaas-fn containers ls | awk 'NR>1 {print \$2}'; ctr -n openfaas containers ls | awk 'NR>1 {print \$2}' | grep -E 'listener|miso-agent'") || { echo "$out"; return 1; }
  echo "$out"
  (( $(grep -o "syncmesh-fn:[^ ]*-$3" <<<"$out" | wc -l) >= $2 && $(grep -o "listener:[^ ]*-$3" <<<"$out" | wc -l) == $2 \
     && $(grep -o "miso-agent:[^ ]*-$3" <<<"$out" | wc -l) == $2 ))
}
nothing_left() {
  local left
  left=$( { ip netns list | grep -E "^${prefix}[0-9]+" || true; ip -o link show | grep -oE " ${prefix}[0-9a-z-]+" || true;
    pgrep -f "systemd-nspawn .*--machine=${prefix}[0-9]" || true; [[ -e .lab ]] && echo ".lab"; [[ -e .mesh/topology.json ]] && grep -l '"mesh": "ansible"' .mesh/topology.json || true; } )
  [[ -z $left ]] || { echo "left behind: $left"; return 1; }
  echo "nothing left"
}

ansible/lab/lab-down.sh > /dev/null
version=$(git describe --tags --always --dirty 2>/dev/null || echo dev)
tarball=.cache/bundle/syncmesh-edge-bundle-$version.tar
step "bundle" env BUNDLE_STRICT=1 hack/bundle/build.sh
if [[ $tier == ci ]]; then hosts=3; else hosts=4; fi
step "lab-up $hosts hosts" env LAB_HOSTS=$hosts LAB_PREFIX="$prefix" LAB_SUBNET="$subnet" ansible/lab/lab-up.sh
bundle=$PWD/.lab/bundle/syncmesh-edge
step "unpack the bundle" tar -xf "$tarball" -C "$(mkdir -p .lab/bundle && echo .lab/bundle)"
python3() { "$venv/bin/python3" "$@"; }
python3 ansible/lab/inventory.py .lab/inventory.yml .lab/inventory-3.yml "${prefix}1,${prefix}2,${prefix}3"
if [[ $tier == full ]]; then cp .lab/inventory.yml .lab/inventory-4.yml; fi
step "site cold on 3 hosts" converge .lab/inventory-3.yml 3 0 site
step "site again (changed=0)" converge .lab/inventory-3.yml 3 1 site
step "topology.json (3 nodes)" topology .lab/inventory-3.yml
step "registries: each opens with its registry_auth_file" registries
step "verify with data (3 nodes)" playbook .lab/inventory-3.yml verify -e verify_readings="$readings"
step "agents: 2 connected peers each" agents_peers .lab/inventory-3.yml 3
step "health: kill -9 of each service on ${prefix}1, 503 naming it, then 200" health_kill .lab/inventory-3.yml "${prefix}1"
if [[ $tier == full ]]; then
step "add_node (${prefix}4 joins)" converge .lab/inventory-4.yml 4 0 add_node -e syncmesh_new_node="${prefix}4"
step "topology.json (4 nodes)" topology .lab/inventory-4.yml
step "verify with data (4 nodes)" playbook .lab/inventory-4.yml verify -e verify_readings="$readings"
step "agents: 3 connected peers each" agents_peers .lab/inventory-4.yml 4
step "remove_node (${prefix}4 leaves)" converge .lab/inventory-4.yml 4 0 remove_node -e syncmesh_old_node="${prefix}4"
step "topology.json (3 nodes)" topology .lab/inventory-3.yml
step "verify with data (3 nodes), nothing reaches ${prefix}4" quiet_host "$subnet.14" "${prefix}4-h" \
  playbook .lab/inventory-3.yml verify -e verify_readings="$readings"
step "agents: 2 connected peers each" agents_peers .lab/inventory-3.yml 3
step "next bundle (new function, listener, agent versions)" ansible/lab/next-bundle.sh "$bundle/payload" .lab/bundle-next
"$venv/bin/python3" ansible/lab/mesh-poll.py .mesh/topology.json 1 > "$logs/poll.json" 2> "$logs/poll.err" &
poller=$!
step "upgrade (rolling, one node at a time)" converge .lab/inventory-3.yml 3 0 upgrade -e syncmesh_bundle_dir="$PWD/.lab/bundle-next/payload"
kill "$poller"; wait "$poller" || true; poller=""
echo "  the mesh during the upgrade (a query every second, round robin over the nodes): $(cat "$logs/poll.json")"
step "every node runs the new versions" upgraded .lab/inventory-3.yml 3 lab-next
step "verify with data after the upgrade" playbook .lab/inventory-3.yml verify -e verify_readings="$readings"
fi
if [[ $keep != 1 ]]; then
  step "lab-down" ansible/lab/lab-down.sh
  step "nothing left" nothing_left
fi
echo "test-lab ($tier): passed in $((SECONDS - t_all)) s"
printf '\n| step | seconds |\n| --- | ---: |\n'
for i in "${!names[@]}"; do printf '| %s | %s |\n' "${names[$i]}" "${times[$i]}"; done
printf '| **total** | **%s** |\n' "$((SECONDS - t_all))"
