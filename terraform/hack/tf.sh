#!/usr/bin/env bash
# The Terraform scenarios' driver (the Makefile's tf-* targets call it; see terraform/README.md).
#
#   terraform/hack/tf.sh up SCENARIO      local-*: toolchain, libvirtd, tofu apply, wait for every node ready
#   terraform/hack/tf.sh down SCENARIO    tofu destroy, stop libvirtd, check nothing is left (idempotent)
#   terraform/hack/tf.sh plan SCENARIO    gcp-*: tofu plan with TF_VAR_run from the environment or GCP_VARS
#   terraform/hack/tf.sh test             fmt -check, validate and tofu test of every module, scenario and example
#   terraform/hack/tf.sh topology SCENARIO  print the topology.json tf-up wrote for it (make scenario TARGET=terraform)
#   terraform/hack/tf.sh wait TOPOLOGY    poll every node of a topology.json until its health URL says ready
#                                         (any mesh: local, or GCP's STATE_DIR/NAME/topology.json; needs no toolchain)
#   terraform/hack/tf.sh gcp-image [OUT]  the appliance image as GCP imports it: disk.raw (a whole number of
#                                         GiB) in an oldgnu .tar.gz (default .cache/terraform/gcp/syncmesh-edge-vm-amd64.tar.gz)
#   terraform/hack/tf.sh memory SCENARIO    the host memory of its VMs (QEMU processes' PSS and RSS), one JSON line
#   terraform/hack/tf.sh tofu DIR ARGS..  run tofu in DIR with the pinned toolchain (TF_DATA_DIR under .cache)
#
# SCENARIO is a preset of terraform/roots/presets.json (local-3, local-12, local-30,
# gcp-regional-3, gcp-regional-12): its root (roots/local or roots/gcp) with TF_VAR_preset.
#
# Offline, here: tofu runs in a copy of terraform/ under .cache/terraform/src (refreshed on every
# call), so the lock files `tofu init` writes for the providers built here (toolchain.sh: their
# hashes are this machine's builds) stay under .cache and never beside the committed sources. The
# repository holds no lock file: a user with internet runs plain `tofu init` in a root, which
# downloads the pinned versions from the public registry and writes the published hashes
# (docs/guides/terraform-scenarios.md; terraform/hack/check_locks.py keeps local hashes out).
#
# Env (documented defaults):
#   TF_IMAGE        .cache/appliance/out/syncmesh-edge-vm-amd64.qcow2 (make image-vm)
#   TF_TINY=1       use the tiny test VM of terraform/tests/tiny-image.sh instead (plumbing only, no mesh)
#   TF_MEMORY_MB    2048 per VM (a full node: ~650 MB PSS plus page cache; tiny: 256)
#   TF_BOOT_TIMEOUT 1500 s until every node's health URL says ready (software emulation is slow)
#   TF_MONGODB_PUBLISH  0.0.0.0 for local scenarios (the mesh tools load data from the host)
#   TF_PARALLELISM  1: tofu apply's -parallelism for local scenarios. The libvirt provider (0.8.3)
#                   can deadlock creating many NoCloud seed disks at once (its issue 594; here
#                   local-30's 30 seeds hung for 7+ min with tofu's default of 10)
#   TF_APPLY_TIMEOUT 1200 s for tofu apply (and destroy) of a local scenario: a hung apply fails
#                   with its log; a hung destroy is left to the sweep
#   TF_TCG_TB_CACHE_MB 256: QEMU's translation block cache per VM in MiB (software emulation). QEMU's
#                   default, 1 GiB, comes on top of TF_MEMORY_MB as each VM fills it: 12 full nodes of
#                   1280 MiB reached 2.2 GB RSS each and outgrew this 24 GiB host (a VM was OOM-killed)
#   TF_PEER_TIMEOUT_S  45 for local scenarios: the node files' peer_timeout_s (under software
#                   emulation one node scans a month of readings in 15-20 s; the image's default is 20)
#   TF_PREFIX       smt: name prefix of every libvirt object, interface and namespace (mesh PREFIX<N>)
#   TF_SSH_PUBKEY_FILE  (none) public key(s) put in every node file (root's SSH keys)
#   DATA            folder of the Sofia CSVs for placement (default ../shared/data/sofia; without it: a grid)
set -o errexit -o nounset -o pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
tfdir="$root/terraform"
cache="${TF_CACHE:-$root/.cache/terraform}"
export TF_CLI_CONFIG_FILE="$cache/tofurc" TF_IN_AUTOMATION=1 CHECKPOINT_DISABLE=1
tofu_bin="$cache/bin/tofu"
PREFIX=${TF_PREFIX:-smt}
export TF_PREFIX=$PREFIX TF_VAR_prefix=$PREFIX TF_NETNS=${TF_NETNS:-$PREFIX-lv}

log() { printf 'tf: %s\n' "$*" >&2; }
die() { printf 'tf: ERROR: %s\n' "$*" >&2; exit 1; }
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN{printf "%.1f", b-a}'; }

stage="$cache/src"

# Refreshes the copy of terraform/ that tofu runs in (.cache/terraform/src/terraform): every file as
# in the checkout, files the checkout no longer has removed, the lock files tofu wrote there kept
# (a lock file in the checkout, e.g. a user's, is not copied). ansible/ is linked beside it: the
# tests compare what Terraform writes with what the playbooks read.
sync_stage() {
  mkdir -p "$stage"
  python3 - "$tfdir" "$stage/terraform" <<'PY'
import filecmp, os, shutil, sys
src, dst = sys.argv[1], sys.argv[2]
LOCK = ".terraform.lock.hcl"
for d, dirs, files in os.walk(dst):
    dirs[:] = [x for x in dirs if x != ".terraform"]
    rel = os.path.relpath(d, dst)
    if not os.path.isdir(os.path.join(src, rel)):
        shutil.rmtree(d)
        dirs[:] = []
        continue
    for f in files:
        if f != LOCK and not os.path.isfile(os.path.join(src, rel, f)):
            os.remove(os.path.join(d, f))
for d, dirs, files in os.walk(src):
    dirs[:] = [x for x in dirs if x != ".terraform"]
    out = os.path.join(dst, os.path.relpath(d, src))
    os.makedirs(out, exist_ok=True)
    for f in files:
        if f == LOCK:
            continue
        a, b = os.path.join(d, f), os.path.join(out, f)
        if not os.path.isfile(b) or not filecmp.cmp(a, b, shallow=False):
            shutil.copy2(a, b)
PY
  ln -sfn "$root/ansible" "$stage/ansible"
}

# tofu in a configuration folder of the checkout (run in its copy under .cache; see sync_stage);
# its working data (providers, modules) under .cache too, one folder per preset for the roots
tofu_in() {
  local dir="$1"; shift
  local rel="${dir#"$tfdir"/}" key
  key="$rel"
  [[ "$rel" == roots/* && -n "${TF_VAR_preset:-}" ]] && key="$rel/$TF_VAR_preset"
  [[ -d "$stage/terraform/$rel" ]] || sync_stage
  TF_DATA_DIR="$cache/data/$key" "$tofu_bin" -chdir="$stage/terraform/$rel" "$@"
}

# The root of a preset (terraform/roots/presets.json); exports TF_VAR_preset for it.
scenario_dir() {
  local s="${1:?SCENARIO (a preset of terraform/roots/presets.json: local-3, local-12, local-30, gcp-regional-3, gcp-regional-12)}" target
  target=$(python3 -c 'import json,sys; p=json.load(open(sys.argv[1])); print(p[sys.argv[2]]["target"] if sys.argv[2] in p else "")' "$tfdir/roots/presets.json" "$s")
  [[ -n "$target" ]] || die "no scenario $s (allowed: $(python3 -c 'import json,sys; print(" ".join(json.load(open(sys.argv[1]))))' "$tfdir/roots/presets.json"))"
  echo "$tfdir/roots/$target"
}

sofia_dir() {
  local d
  for d in "${DATA:-}" "$root/../shared/data/sofia" "$root/../../shared/data/sofia"; do
    [[ -n "$d" && -f "$d/1.csv" ]] && { (cd "$d" && pwd); return; }
  done
}

run_json() {
  local scenario="$1" work="$2" image="$3" sofia
  sofia=$(sofia_dir)
  python3 - "$scenario" "$work" "$image" "$sofia" "$root/.mesh" <<'PY'
import json, os, sys
scenario, work, image, sofia, state = sys.argv[1:6]
run = {"image_path": image, "state_dir": state, "work_dir": work,
       "host_address": "10.61.0.2", "libvirt_netns": os.environ["TF_NETNS"],
       "memory_mb": int(os.environ.get("TF_MEMORY_MB", "256" if os.environ.get("TF_TINY") == "1" else "2048")),
       "mongodb_publish": os.environ.get("TF_MONGODB_PUBLISH", "0.0.0.0"),
       "peer_timeout_s": int(os.environ.get("TF_PEER_TIMEOUT_S", "45")),
       "tcg_tb_cache_mb": int(os.environ.get("TF_TCG_TB_CACHE_MB", "256"))}
keys = os.environ.get("TF_SSH_PUBKEY_FILE")
if keys:
    run["ssh_authorized_keys"] = [l.strip() for l in open(keys) if l.strip()]
if sofia:
    run.update(placement="sofia", sofia_dir=sofia)
else:
    run.update(placement="grid")
if os.environ.get("TF_TINY") == "1":
    tiny = os.path.join(os.path.dirname(image))
    run.update(image_format="raw", kernel=os.path.join(tiny, "vmlinuz"), initrd=os.path.join(tiny, "initrd.img"))
elif image.endswith(".raw"):
    run.update(image_format="raw")
print(json.dumps(run))
PY
}

# Polls every node's health URL until it is ready; prints each node's time.
wait_ready() {
  local topology="$1" t0="$2" timeout="${TF_BOOT_TIMEOUT:-1500}"
  python3 - "$topology" "$timeout" "$t0" "${TF_TINY:-0}" <<'PY'
import json, sys, time, urllib.request
topo, timeout, t0, tiny = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), sys.argv[4] == "1"
nodes = json.load(open(topo))["nodes"]
pending = {n["id"]: n["address"] for n in nodes}
last, said = {}, {}
deadline = time.time() + timeout
while pending and time.time() < deadline:
    for node, addr in list(pending.items()):
        url = f"http://{addr}:8080/healthz" if tiny else f"http://{addr}:8099/health"
        try:
            with urllib.request.urlopen(url, timeout=10) as r:
                body = json.loads(r.read() or b"{}")
                if tiny or body.get("ready"):
                    print(f"tf: {node} ready after {time.time() - t0:.0f} s (node's own boot_to_ready_s: {body.get('boot_to_ready_s')})", file=sys.stderr, flush=True)
                    del pending[node]
                    continue
                last[node] = body.get("state")
        except urllib.error.HTTPError as e:
            try:
                b = json.loads(e.read() or b"{}")
            except (ValueError, OSError):  # not JSON, or the body did not arrive in time (a busy VM)
                last[node] = f"HTTP {e.code}"
                continue
            state = f"{b.get('state')}: {b.get('message')}"
            # a bad node file stays bad until someone edits it; a failed start is retried by
            # systemd (syncmesh-node.service restarts 15 s later), so it is said and waited out
            if b.get("state") == "invalid-node-file":
                sys.exit(f"tf: {node} is {state} {b.get('problems') or ''}")
            # booted, with a part failing its probe (under software emulation a probe can outlast
            # its timeout): the boot is what this waits for; the mesh checks that follow use it
            if b.get("ready"):
                print(f"tf: {node} ready after {time.time() - t0:.0f} s (node's own boot_to_ready_s: {b.get('boot_to_ready_s')}; health 503, failing: {b.get('failing')})", file=sys.stderr, flush=True)
                del pending[node]
                continue
            if b.get("state") == "failed" and said.get(node) != b.get("updated_at"):  # each failure once
                said[node] = b.get("updated_at")
                print(f"tf: {node} {state} (after {time.time() - t0:.0f} s; the node retries)", file=sys.stderr, flush=True)
            last[node] = state
        except Exception as e:
            last[node] = type(e).__name__
    time.sleep(2)
if pending:
    sys.exit(f"tf: not ready within {timeout:.0f} s: " + ", ".join(f"{n} ({last.get(n)})" for n in pending))
print(f"tf: all {len(nodes)} nodes ready after {time.time() - t0:.0f} s", file=sys.stderr)
PY
}

# TF_PARALLELISM and TF_APPLY_TIMEOUT, checked before anything is created or destroyed
check_apply_env() {
  [[ "${TF_PARALLELISM:-1}" =~ ^[1-9][0-9]?$ ]] || die "TF_PARALLELISM must be a whole number from 1 to 99, got '${TF_PARALLELISM}'"
  [[ "${TF_APPLY_TIMEOUT:-1200}" =~ ^[1-9][0-9]*$ ]] || die "TF_APPLY_TIMEOUT must be a whole number of seconds, got '${TF_APPLY_TIMEOUT}'"
  [[ "${TF_TCG_TB_CACHE_MB:-256}" =~ ^[1-9][0-9]{1,3}$ ]] || die "TF_TCG_TB_CACHE_MB must be a whole number of MiB from 32 to 2048, got '${TF_TCG_TB_CACHE_MB}'"
}

up() {
  local scenario="$1" dir work image t0 t1 bridge
  dir=$(scenario_dir "$scenario")
  [[ "$scenario" == local-* ]] || die "tf-up applies local-* scenarios here; for $scenario see docs/guides/terraform-scenarios.md (Google Cloud)"
  export TF_VAR_preset="$scenario"
  check_apply_env
  "$root/terraform/hack/toolchain.sh" --no-google
  sync_stage
  work="$cache/run/$scenario"
  if [[ "${TF_TINY:-0}" == 1 ]]; then
    image="$("$root/terraform/tests/tiny-image.sh" "$cache/tiny")/disk.raw"
  else
    image="${TF_IMAGE:-$root/.cache/appliance/out/syncmesh-edge-vm-amd64.qcow2}"
    [[ -f "$image" ]] || die "no VM image at $image: run make image-vm (or set TF_IMAGE=, or TF_TINY=1 for the plumbing-only test VM)"
  fi
  if ! "$root/terraform/hack/libvirt.sh" running; then
    # no scenario of this checkout is up without its libvirtd: a state or run folder here is what a
    # killed run left, and libvirt.sh start removes its VMs, so tofu must not believe in them
    local stale
    for stale in "$cache"/state/local-*.tfstate "$cache"/run/local-*; do
      [[ -e "$stale" ]] || continue
      log "removing $stale: left by an interrupted run (its libvirtd is gone)"
      rm -rf "$stale" "$stale.backup"
    done
  fi
  "$root/terraform/hack/libvirt.sh" start
  mkdir -p "$work/pool" "$work/logs"
  export TF_VAR_run
  TF_VAR_run=$(run_json "$scenario" "$work" "$image")
  tofu_in "$dir" init -input=false -no-color -reconfigure -backend-config="path=$cache/state/$scenario.tfstate" >"$work/init.log" || { cat "$work/init.log" >&2; die "tofu init failed"; }
  t0=$(now)
  log "apply $scenario"
  timeout --kill-after=30 "${TF_APPLY_TIMEOUT:-1200}" "$tfdir/hack/tf.sh" tofu "$dir" apply -input=false -auto-approve -no-color -parallelism="${TF_PARALLELISM:-1}" >"$work/apply.log" 2>&1 ||
    { tail -40 "$work/apply.log" >&2; die "tofu apply failed or took more than ${TF_APPLY_TIMEOUT:-1200} s (log: $work/apply.log; make tf-down SCENARIO=$scenario cleans up)"; }
  log "applied in $(since "$t0") s"
  t1=$(now)
  tofu_in "$dir" output -json stack > "$work/stack.json"
  bridge=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["network"]["bridge"])' "$work/stack.json")
  "$root/terraform/hack/libvirt.sh" attach "$bridge"
  # this mesh's own topology (.mesh/topology.json is whichever mesh was made last)
  wait_ready "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["topology_path"])' "$work/stack.json")" "$t1"
  log "up: $scenario in $(since "$t0") s (apply + boot); topology $root/.mesh/topology.json, inventory $root/.mesh/$PREFIX${scenario#local-}/inventory.yml"
}

down() {
  local scenario="$1" dir t0 left
  dir=$(scenario_dir "$scenario")
  export TF_VAR_preset="$scenario"
  check_apply_env
  sync_stage
  t0=$(now)
  if [[ -s "$cache/state/$scenario.tfstate" ]] && [[ -x "$tofu_bin" ]] && "$root/terraform/hack/libvirt.sh" status >/dev/null 2>&1 && virsh -q -c qemu:///system version >/dev/null 2>&1; then
    export TF_VAR_run
    TF_VAR_run=$(run_json "$scenario" "$cache/run/$scenario" "/nonexistent")
    # no refresh: reading back 30 seed ISOs at once is the provider's deadlock again (TF_PARALLELISM)
    timeout --kill-after=30 "${TF_APPLY_TIMEOUT:-1200}" "$tfdir/hack/tf.sh" tofu "$dir" destroy -input=false -auto-approve -no-color -refresh=false -parallelism="${TF_PARALLELISM:-1}" >"$cache/destroy-$scenario.log" 2>&1 ||
      { tail -20 "$cache/destroy-$scenario.log" >&2; log "tofu destroy failed or took more than ${TF_APPLY_TIMEOUT:-1200} s; the sweep below removes what is left"; }
  fi
  "$root/terraform/hack/libvirt.sh" stop
  rm -rf "$cache/run/$scenario" "$cache/state/$scenario.tfstate" "$cache/state/$scenario.tfstate.backup"
  rm -rf "$root/.mesh/$PREFIX${scenario#local-}"
  # nothing may be left: no QEMU of ours, no interface of ours (PREFIX-h0; PREFIX<N>-* if it escaped the
  # namespace; not another tier's PREFIX<digits> test mesh), no namespace, no libvirt definition
  left=$( (pgrep -af "qemu-system.*-name guest=$PREFIX" || true; ip -o link show | awk -F': ' -v p="^($PREFIX|$PREFIX${scenario#local-})-" '$2 ~ p {print "interface " $2}' || true; ip netns list | awk -v n="^$TF_NETNS" '$0 ~ n {print "netns " $1}' || true; "$root/terraform/hack/libvirt.sh" defined | sed 's/^/definition /') )
  [[ -z "$left" ]] || die "left behind after down: $left"
  log "down: $scenario in $(since "$t0") s; no domain, network, volume, bridge or process left"
}

# The topology.json `up` wrote for a local scenario (mesh PREFIX<N>, state dir .mesh): what
# `make scenario TARGET=terraform` measures. Fails when the scenario is not up.
topology() {
  local scenario="$1" file
  scenario_dir "$scenario" >/dev/null
  [[ "$scenario" == local-* ]] || die "make scenario TARGET=terraform captures on the VMs' bridge on this machine: local-* scenarios only, not $scenario"
  file="$root/.mesh/$PREFIX${scenario#local-}/topology.json"
  [[ -f "$file" ]] || die "no topology for $scenario at $file: run make tf-up SCENARIO=$scenario first"
  echo "$file"
}

# The host memory the scenario's VMs use: PSS and RSS of each QEMU process (guest RAM the guest has
# touched, QEMU itself, TCG's code cache), as one JSON line.
memory() {
  local scenario="$1"
  scenario_dir "$scenario" >/dev/null
  python3 - "$PREFIX${scenario#local-}" <<'PY2'
import json, os, re, sys
mesh = sys.argv[1]
vms = {}
for pid in filter(str.isdigit, os.listdir("/proc")):
    try:
        cmd = open(f"/proc/{pid}/cmdline", "rb").read().split(b"\0")
        if not cmd[0].endswith(b"qemu-system-x86_64"):
            continue
        name = next((a.decode() for a in cmd if a.startswith(b"guest=")), "")
        m = re.match(rf"guest={re.escape(mesh)}-([^,]+)", name)
        if not m:
            continue
        kb = {l.split(":")[0]: int(l.split()[1]) for l in open(f"/proc/{pid}/smaps_rollup") if l.split(":")[0] in ("Pss", "Rss")}
        vms[m.group(1)] = {"pss_mb": round(kb["Pss"] / 1024), "rss_mb": round(kb["Rss"] / 1024)}
    except (OSError, StopIteration, KeyError):
        continue
total = sum(v["pss_mb"] for v in vms.values())
print(json.dumps({"mesh": mesh, "vms": len(vms), "pss_total_mb": total, "pss_per_vm_mb": round(total / max(len(vms), 1)), "per_vm": vms}))
PY2
}

# The appliance's raw disk as Compute Engine imports one: a file named disk.raw whose size is a
# multiple of 1 GiB (padded; GPT's backup header moved to the new end), in a gzip'd tar of the
# oldgnu format. Input: TF_RAW_IMAGE (default the .raw.zst of make image-vm).
gcp_image() {
  local out="${1:-$cache/gcp/syncmesh-edge-vm-amd64.tar.gz}" raw="${TF_RAW_IMAGE:-$root/.cache/appliance/out/syncmesh-edge-vm-amd64.raw.zst}" tmp size gib
  [[ -f "$raw" ]] || die "no raw image at $raw: run make image-vm (or set TF_RAW_IMAGE=)"
  for t in zstd tar; do command -v "$t" >/dev/null || die "$t is missing (apt: zstd, tar)"; done
  mkdir -p "$(dirname "$out")"
  tmp=$(mktemp -d "$(dirname "$out")/.gcp-image.XXXXXX")
  trap 'rm -rf "$tmp"' EXIT  # gcp-image is a command of its own: the script ends after it
  if [[ "$raw" == *.zst ]]; then zstd -q -d -c "$raw" > "$tmp/disk.raw"; else cp --sparse=always "$raw" "$tmp/disk.raw"; fi
  size=$(stat -c %s "$tmp/disk.raw")
  gib=$(((size + 1073741823) / 1073741824))
  truncate -s "${gib}G" "$tmp/disk.raw"
  # the backup GPT header belongs at the (new) end of the disk (else the node's growfs moves it at boot)
  if command -v sfdisk >/dev/null; then sfdisk --quiet --relocate gpt-bak-std "$tmp/disk.raw" 2>/dev/null || die "sfdisk could not move the backup GPT header of $tmp/disk.raw"; fi
  tar --format=oldgnu -Sczf "$tmp/out.tar.gz" -C "$tmp" disk.raw
  mv -f "$tmp/out.tar.gz" "$out"
  log "gcp-image: $out (disk.raw $gib GiB, $(du -m "$out" | cut -f1) MiB compressed): set run.image_tarball to it"
}

plan() {
  local scenario="$1" dir
  dir=$(scenario_dir "$scenario")
  export TF_VAR_preset="$scenario"
  [[ -n "${TF_VAR_run:-}" || -n "${GCP_VARS:-}" ]] || die "set GCP_VARS=file.tfvars (run = { project = ..., ... }) or TF_VAR_run; see docs/guides/terraform-scenarios.md"
  "$root/terraform/hack/toolchain.sh"
  sync_stage
  tofu_in "$dir" init -input=false -reconfigure -backend-config="path=$cache/state/$scenario.tfstate"
  tofu_in "$dir" plan -input=false ${GCP_VARS:+-var-file="$GCP_VARS"} "${@:2}"
}

test_all() {
  local t0 dir rel failed=0
  t0=$(now)
  "$root/terraform/hack/toolchain.sh"
  log "fmt -check"
  "$tofu_bin" fmt -check -recursive -diff "$tfdir" || die "tofu fmt -check failed: run $tofu_bin fmt -recursive terraform"
  python3 "$tfdir/hack/module_docs.py" --check || failed=1
  python3 "$tfdir/hack/check_locks.py" || failed=1
  sync_stage
  for dir in "$tfdir"/modules/* "$tfdir"/roots/* "$tfdir"/modules/*/examples/*; do
    [[ -d "$dir" ]] || continue
    ls "$dir"/*.tf >/dev/null 2>&1 || continue
    rel="${dir#"$tfdir"/}"
    tofu_in "$dir" init -input=false -backend=false -no-color >"$cache/init.log" 2>&1 || { cat "$cache/init.log" >&2; log "FAIL init $rel"; failed=1; continue; }
    if ! tofu_in "$dir" validate -no-color; then log "FAIL validate $rel"; failed=1; continue; fi
    if [[ -d "$dir/tests" ]]; then
      if ! tofu_in "$dir" test -no-color; then log "FAIL test $rel"; failed=1; fi
    fi
  done
  # contract: the node files Terraform writes are accepted by the appliance's own validator
  local contract="$cache/run/node-file-contract"
  rm -rf "$contract" && mkdir -p "$contract"
  if tofu_in "$tfdir/modules/node-config/examples/static" apply -input=false -auto-approve -no-color -state="$contract/state" >"$contract/apply.log" 2>&1 &&
    tofu_in "$tfdir/modules/node-config/examples/static" output -no-color -state="$contract/state" -json node_files >"$contract/node_files.json" &&
    PYTHONDONTWRITEBYTECODE=1 python3 - "$contract/node_files.json" "$root/images/appliance/firstboot" <<'PY2'
import json, sys
sys.path.insert(0, sys.argv[2])
import nodefile
files = json.load(open(sys.argv[1]))
for node_id, text in files.items():
    cfg = nodefile.validate(nodefile.parse_yaml(text))
    assert cfg.node_id == node_id and cfg.peer_timeout_s == 45 and cfg.network.interface == "en* eth*", cfg
    assert cfg.registry_password is not None, f"{node_id}: no registry_password in its node file"
print(f"tf: contract: the {len(files)} node files of modules/node-config/examples/static pass the appliance's validator", file=sys.stderr)
PY2
  then :; else cat "$contract/apply.log" >&2; log "FAIL contract: node files vs images/appliance/firstboot/nodefile.py"; failed=1; fi
  rm -rf "$contract"
  # contract: the mesh description Terraform writes is the format the syncmesh CLI reads
  # (docs/reference/mesh-description.md): the CLI checks it (make build compiles the CLI first)
  contract="$cache/run/mesh-description-contract"
  rm -rf "$contract" && mkdir -p "$contract"
  if [[ ! -f $root/cli/dist/src/main.js ]]; then
    log "FAIL contract: mesh description: $root/cli/dist/src/main.js is missing (make build)"; failed=1
  elif TF_VAR_state_dir="$contract/out" tofu_in "$tfdir/modules/mesh-files/examples/contract" apply -input=false -auto-approve -no-color -state="$contract/state" >"$contract/apply.log" 2>&1 &&
    "$root/bin/syncmesh" mesh --mesh "$contract/out/smtc/topology.json" >"$contract/mesh.txt" &&
    python3 - "$contract/out/smtc/topology.json" <<'PY3'
import json, os, re, stat, sys
# each node's registry_auth_file: user:password (the format scenarios/mesh's deploy and hack/fn-build.sh read), mode 0600
for n in json.load(open(sys.argv[1]))["nodes"]:
    f = n["registry_auth_file"]
    assert stat.S_IMODE(os.stat(f).st_mode) == 0o600 and re.fullmatch(r"syncmesh:[^:\s]+", open(f).read()), f"{n['id']}: {f}"
PY3
  then
    log "contract: the topology.json of modules/mesh-files/examples/contract reads with the syncmesh CLI ($(grep -c '^node-' "$contract/mesh.txt") nodes); each registry_auth_file is user:password, mode 0600"
  else cat "$contract/apply.log" >&2; log "FAIL contract: terraform's topology.json vs the syncmesh CLI (bin/syncmesh mesh)"; failed=1; fi
  rm -rf "$contract"
  ((failed == 0)) || die "test-tf-plans failed (see FAIL lines above)"
  log "test-tf-plans passed in $(since "$t0") s"
}

case "${1:-}" in
  up) up "${2:-}" ;;
  down) down "${2:-}" ;;
  plan) plan "${2:-}" "${@:3}" ;;
  topology) topology "${2:-}" ;;
  gcp-image) gcp_image "${2:-}" ;;
  wait) [[ -f "${2:-}" ]] || die "usage: $0 wait TOPOLOGY.json (e.g. .mesh/smg3/topology.json)"; wait_ready "$2" "$(now)" ;;
  memory) memory "${2:-}" ;;
  test) test_all ;;
  tofu) shift; d="$1"; shift; sync_stage; tofu_in "$(cd "$d" && pwd)" "$@" ;;
  *) die "usage: $0 up|down|plan|topology|memory SCENARIO | wait TOPOLOGY | gcp-image [OUT] | test | tofu DIR ARGS" ;;
esac
