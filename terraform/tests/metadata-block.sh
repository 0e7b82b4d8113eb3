#!/usr/bin/env bash
# Runs ON an appliance node (as root; terraform/tests/local-mesh.sh sends it over SSH): checks that
# faasd's containers cannot reach the cloud metadata server while the node itself can.
# The metadata server is emulated as GCE has it: 169.254.169.254 is not on the node but routed to
# (here a veth into a namespace of its own, smmeta, with an HTTP listener), so a container's
# request is forwarded and masqueraded as it would be on GCE. Checked: the node reaches it; the
# function's network namespace (the syncmesh-fn task, on the bridge openfaas0) does not; with the
# node's rule taken out it does (so the rule is what stops it); with the rule back it does not.
# Everything it adds is removed at the end, the rule always restored. One line per outcome.
set -o errexit -o nounset -o pipefail
node=$(hostname)
rule=(PREROUTING -i openfaas0 -d 169.254.169.254/32 -j DROP)  # table raw
url=http://169.254.169.254/computeMetadata/v1/instance/attributes/user-data
fail() { echo "metadata-block: $node: FAIL: $*" >&2; exit 1; }
cleanup() {
  iptables -w -t raw -C "${rule[@]}" 2>/dev/null || iptables -w -t raw -I "${rule[@]}"
  systemctl stop smmeta-listener.service 2>/dev/null || true
  ip netns del smmeta 2>/dev/null || true
  ip link del smmd0 2>/dev/null || true
}
trap cleanup EXIT
# GET url from the current network namespace (or PID's with nsenter): prints the status, or the error
get() {
  local pfx=()
  [[ -n ${1:-} ]] && pfx=(nsenter -t "$1" -n)
  "${pfx[@]}" python3 -c 'import sys, urllib.request
try:
    r = urllib.request.urlopen(sys.argv[1], timeout=4)
    print(r.status, r.read().decode().strip())
except Exception as e:
    print(type(e).__name__, e)' "$url"
}

systemctl is-active --quiet syncmesh-metadata-block.service || fail "syncmesh-metadata-block.service is not active"
iptables -w -t raw -C "${rule[@]}" 2>/dev/null || fail "the rule is missing: iptables -t raw ${rule[*]}"

# the emulated metadata server (anything a failed earlier run left removed first)
systemctl stop smmeta-listener.service 2>/dev/null || true
systemctl reset-failed smmeta-listener.service 2>/dev/null || true
ip link del smmd0 2>/dev/null || true
ip netns del smmeta 2>/dev/null || true
ip netns add smmeta
ip link add smmd0 type veth peer name smmd1 netns smmeta
ip addr add 169.254.169.253/30 dev smmd0
ip link set smmd0 up
ip -n smmeta addr add 169.254.169.254/30 dev smmd1
ip -n smmeta link set smmd1 up
ip -n smmeta link set lo up
ip -n smmeta route add default via 169.254.169.253
mkdir -p /run/smmeta/computeMetadata/v1/instance/attributes
echo "emulated-user-data-of-$node" > /run/smmeta/computeMetadata/v1/instance/attributes/user-data
systemd-run --quiet --unit smmeta-listener ip netns exec smmeta python3 -m http.server 80 --bind 169.254.169.254 --directory /run/smmeta
for _ in $(seq 1 50); do [[ $(get) == 200* ]] && break; sleep 0.2; done

host=$(get)
[[ $host == "200 emulated-user-data-of-$node" ]] || fail "the node itself cannot reach the emulated metadata server: $host"
pid=$(ctr -n openfaas-fn task ls | awk '$1 == "syncmesh-fn" {print $2}')
[[ -n $pid ]] || fail "no syncmesh-fn task (ctr -n openfaas-fn task ls)"
nsenter -t "$pid" -n ip -4 route show default | grep -q 'dev eth' || fail "the function's namespace has no default route"

blocked=$(get "$pid")
[[ $blocked != 200* ]] || fail "the function's network namespace reached the metadata server: $blocked"
iptables -w -t raw -D "${rule[@]}"
open=$(get "$pid")
iptables -w -t raw -I "${rule[@]}"
[[ $open == "200 emulated-user-data-of-$node" ]] || fail "without the rule the function's namespace still did not reach it ($open): the check proves nothing"
again=$(get "$pid")
[[ $again != 200* ]] || fail "with the rule back the function's namespace reached it: $again"
echo "metadata-block: $node: the node reaches 169.254.169.254 ($host); the function's namespace (pid $pid, openfaas0) does not ($blocked); without the rule it did (${open%% *}); with it again it does not"
