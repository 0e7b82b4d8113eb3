#!/usr/bin/env bash
# make test-scale: the local-12 and local-30 Terraform scenarios, applied for real here (root;
# not in make test: about an hour under software emulation). What fits on this 2-core, 24 GiB
# host is measured, not assumed:
#
#   1. local-12 and local-30 with the tiny test VM (plumbing at scale: 12 / 30 domains, seeds,
#      taps, static addresses, teardown), each with its apply + boot time and the VMs' host memory;
#   2. local-12 with the appliance image: 12 full nodes (faasd, MongoDB stand-in, listener,
#      agent, function) become a mesh on first boot; each gets generated readings (LOAD_DAYS,
#      default 1) and the aggregate of the first day through every node must equal the value
#      computed from the 12 databases; apply, boot, load, query times and memory.
#
# Step 2 needs more CPU than this 2-core host gives under software emulation: on 2026-11-24 the
# 12 full nodes fit in memory (15.5 GB with QEMU's translation cache capped at 256 MiB per VM), but
# only 2 of 12 were ready after 37 min, the others cycling through the boot program's time limits
# (docs/guides/terraform-scenarios.md). It is meant for a host with more cores or KVM.
#
# local-30 with full nodes is not run: 30 VMs of the 1280 MiB a node is given are 37.5 GiB, more than
# this host has, and under software emulation 30 first boots on 2 cores take hours. The tiny run
# covers local-30's Terraform and libvirt side.
#
# Env (documented defaults): SCALE_FULL_MEMORY_MB (1280 per full VM), SCALE_BOOT_TIMEOUT (3600 s
# until the 12 full nodes are ready: 12 first boots under TCG share 2 cores), SCALE_TINY (1: run step
# 1), SCALE_FULL (1: run step 2), LOAD_DAYS (1), TF_PREFIX (smt), SCALE_RESULTS
# (.cache/terraform/scale; one JSON per run and a table). A step that fails stops the run after
# tf-down.
set -o errexit -o nounset -o pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$root"
out=${SCALE_RESULTS:-$root/.cache/terraform/scale}
mkdir -p "$out"
run="$out/$(date -u +%Y%m%dT%H%M%SZ)"
: > "$run.jsonl"
log() { printf '[tf-scale %s] %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }

step() { # name, command... : runs it, keeps its log, appends its result line
  local name=$1 t0; shift
  t0=$(date +%s)
  log "$name: started (log $run-$name.log)"
  if ! "$@" > "$run-$name.log" 2>&1; then
    tail -n 30 "$run-$name.log" >&2
    log "$name: FAILED after $(($(date +%s) - t0)) s"
    return 1
  fi
  grep -h '^tf-\(smoke\|local\)-result: ' "$run-$name.log" | sed 's/^tf-[a-z]*-result: //' >> "$run.jsonl"
  log "$name: passed in $(($(date +%s) - t0)) s"
}

if [[ "${SCALE_TINY:-1}" == 1 ]]; then
  step tiny-local-12 terraform/tests/local.sh local-12
  step tiny-local-30 terraform/tests/local.sh local-30
fi
if [[ "${SCALE_FULL:-1}" == 1 ]]; then
  step full-local-12 env SCENARIO=local-12 MESH_TEST_EXTRAS=0 TF_MEMORY_MB="${SCALE_FULL_MEMORY_MB:-1280}" LOAD_DAYS="${LOAD_DAYS:-1}" TF_BOOT_TIMEOUT="${SCALE_BOOT_TIMEOUT:-3600}" \
    terraform/tests/local-mesh.sh
fi

python3 - "$run.jsonl" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
print(f"\n{'scenario':<10} {'VM':<10} {'VMs':>4} {'up s':>6} {'load s':>7} {'checks s':>9} {'down s':>7} {'PSS MB':>8} {'per VM':>7}")
for r in rows:
    print(f"{r['scenario']:<10} {r['kind']:<10} {r['vms']:>4} {r['up_s']:>6} {r.get('load_s', '-'):>7} {r.get('checks_s', '-'):>9} "
          f"{r['down_s']:>7} {r['pss_total_mb']:>8} {r['pss_per_vm_mb']:>7}")
print(f"\nresults: {sys.argv[1]}")
PY
