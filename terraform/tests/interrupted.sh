#!/usr/bin/env bash
# make test-tf-interrupted: a local scenario whose run was killed with its daemons (a CI job stopped,
# a session ended, the host rebooted) must not break the next run, here or in another checkout.
# libvirt keeps its definitions on disk (/etc/libvirt), so a killed run's domains, network and pool
# outlive it; a later apply used to fail with "network 'smt3-net' already exists".
#
# With the tiny test VM (terraform/tests/tiny-image.sh), about 3 min:
#   1. up; kill -9 libvirtd, virtlogd, QEMU and dnsmasq; drop this checkout's state and pid files
#      (what a fresh clone has): up again must remove the leftovers and bring the 3 VMs back
#   2. kill everything again, keep the state (same checkout): up again must work
#   3. kill everything again: down must remove the definitions on disk and leave nothing
#
#   terraform/tests/interrupted.sh [SCENARIO]   local-3 (default)
set -o errexit -o nounset -o pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
tf="$root/terraform/hack/tf.sh"
lv="$root/terraform/hack/libvirt.sh"
scenario=${1:-local-3}
cache="${TF_CACHE:-$root/.cache/terraform}"
run_dir="${TF_RUN_DIR:-$cache/libvirt}"
netns="${TF_NETNS:-${TF_PREFIX:-smt}-lv}"
export TF_TINY=1
out=$(mktemp -d "/tmp/${TF_PREFIX:-smt}-interrupted.XXXXXX")
t0=$(date +%s)
log() { printf '[tf-interrupted %s] %s\n' "$(date +%T)" "$*" >&2; }
fail() { log "FAIL: $*"; exit 1; }
trap '"$tf" down "$scenario" >/dev/null 2>&1 || true; rm -rf "$out"' EXIT

# What a SIGKILL of the whole run leaves: every daemon and VM dead, the netns, veth and libvirt's
# definitions (disk) and status files (/run/libvirt) still there.
kill_run() {
  local pids
  local f p deadline=$((SECONDS + 30))
  pids=$( (for f in "$run_dir"/libvirtd.pid "$run_dir"/virtlogd.pid; do [[ -s "$f" ]] && echo "$(<"$f")"; done; ip netns pids "$netns" 2>/dev/null) | sort -u | tr '\n' ' ')
  [[ -n "${pids// /}" ]] || fail "no process of the run to kill"
  kill -9 $pids
  for p in $pids; do
    while [[ -e "/proc/$p" && "$(awk '{print $3}' "/proc/$p/stat" 2>/dev/null)" != Z ]]; do
      ((SECONDS < deadline)) || fail "pid $p outlived kill -9 for 30 s"
      sleep 0.2
    done
  done
  [[ -n "$("$lv" defined)" ]] || fail "the killed run left no definition on disk: nothing to test"
  log "killed pids $pids; definitions left: $("$lv" defined | xargs -n1 basename | tr '\n' ' ')"
}

# the VMs of the scenario answer at their static addresses with their own ids
answer() {
  python3 - "$("$tf" topology "$scenario")" <<'PY'
import json, sys, urllib.request
topo = json.load(open(sys.argv[1]))
for n in topo["nodes"]:
    body = json.load(urllib.request.urlopen(f"http://{n['address']}:8080/healthz", timeout=5))
    assert body["node"] == n["id"], f"{n['address']} answers as {body['node']}, expected {n['id']}"
print(f"  {len(topo['nodes'])} VMs answer with their own id")
PY
}

up_expect() {
  local step="$1" want="$2" t
  t=$(date +%s)
  "$tf" up "$scenario" 2>"$out/$step.log" || { tail -30 "$out/$step.log" >&2; fail "$step: up failed after a killed run"; }
  grep -q -- "$want" "$out/$step.log" || { cat "$out/$step.log" >&2; fail "$step: up did not say '$want'"; }
  log "$step: up in $(($(date +%s) - t)) s; it said: $(grep -E 'interrupted run|leftover' "$out/$step.log" | sed 's/^[a-z]*: //' | tr '\n' ';')"
  answer
}

log "a first run of $scenario (tiny VMs)"
"$tf" up "$scenario" 2>"$out/first.log" || { tail -30 "$out/first.log" >&2; fail "the first up failed"; }
answer

log "1. killed, then up from a checkout without state (a fresh clone, as CI)"
kill_run
rm -f "$cache/state/$scenario.tfstate" "$cache/state/$scenario.tfstate.backup" "$run_dir"/*.pid
rm -rf "$cache/run/$scenario"
up_expect fresh-clone "removing leftover network"

log "2. killed, then up in the same checkout (state kept)"
kill_run
up_expect same-checkout "removing .*$scenario.tfstate: left by an interrupted run"

log "3. killed, then down"
kill_run
t=$(date +%s)
"$tf" down "$scenario" 2>"$out/down.log" || { cat "$out/down.log" >&2; fail "down failed after a killed run"; }
grep -q "definitions left on disk" "$out/down.log" || { cat "$out/down.log" >&2; fail "down did not say it found definitions"; }
[[ -z "$("$lv" defined)" ]] || fail "down left definitions: $("$lv" defined | tr '\n' ' ')"
log "3. down in $(($(date +%s) - t)) s: $(tail -1 "$out/down.log")"
trap 'rm -rf "$out"' EXIT
log "passed in $(($(date +%s) - t0)) s"
