#!/usr/bin/env bash
# The image test tier (make test-images): runs after `make images` on its archives.
#
#   images/build/test.sh
#
# Checks, per image: the archive is a multi-arch OCI index (linux/amd64 + linux/arm64) named
# localhost/syncmesh-edge/<name>:<version>; the OCI labels; a non-root user; no shell, npm,
# tests, scripts or test-server code in the Node images; each image starts under a throwaway
# containerd (own root, state and socket, in a network namespace of its own) and stops promptly
# on SIGTERM; the arm64 variant's main program runs (qemu-user-static). Then builds the function
# image twice from the same inputs and compares the digests (reproducibility).
# Needs root, containerd, runc, umoci, skopeo, jq, qemu-user-static (make test-images installs them).
set -o errexit -o nounset -o pipefail
# shellcheck source=images/build/lib.sh
source "$(dirname "$0")/lib.sh"

IMAGES=(gateway queue-worker nats-streaming nats-server prometheus syncmesh-fn listener miso-agent miso-counter async-worker mongo-test-server)
NODE_IMAGES=(syncmesh-fn listener miso-agent miso-counter async-worker)
# Longest a container may take to exit after SIGTERM: the listener drains for up to
# LISTENER_DRAIN_TIMEOUT_MS (10 s) when MongoDB is unreachable.
STOP_DEADLINE_S=15
# Longest a service may take to answer its health endpoint after start.
START_DEADLINE_S=30

PREFIX="smi$$"
TMP=$(mktemp -d "/tmp/${PREFIX}.XXXX")
NETNS="${PREFIX}img"
SOCK="$TMP/containerd.sock"
CTR=(ctr -a "$SOCK" -n images-test)
CONTAINERD_PID=

passed=0 failed=0
pass() { passed=$((passed + 1)); printf 'ok - %s\n' "$*"; }
fail() { failed=$((failed + 1)); printf 'not ok - %s\n' "$*"; }
check() { local name=$1; shift; if "$@"; then pass "$name"; else fail "$name"; fi; }

cleanup() {
  # best effort: every step runs even when one fails, and the tests' status is kept
  set +o errexit +o pipefail
  local c
  if [[ -n $CONTAINERD_PID ]]; then
    for c in $("${CTR[@]}" tasks ls -q 2>/dev/null); do "${CTR[@]}" tasks kill -s SIGKILL "$c" >/dev/null 2>&1 || true; done
    for c in $("${CTR[@]}" containers ls -q 2>/dev/null); do
      "${CTR[@]}" tasks delete -f "$c" >/dev/null 2>&1 || true
      "${CTR[@]}" containers delete "$c" >/dev/null 2>&1 || true
    done
    kill "$CONTAINERD_PID" 2>/dev/null || true
    wait "$CONTAINERD_PID" 2>/dev/null || true
  fi
  ip netns del "$NETNS" 2>/dev/null || true
  # containerd leaves no mount once its tasks are gone; make sure before deleting its root
  grep -o " $TMP/[^ ]*" /proc/mounts | sort -r | while read -r m; do umount -l "$m" || true; done
  rm -rf "$TMP"
}
trap cleanup EXIT

# poll SECONDS COMMAND...: true as soon as COMMAND succeeds, false after SECONDS.
poll() {
  local deadline=$((SECONDS + $1)); shift
  until "$@" >/dev/null 2>&1; do ((SECONDS < deadline)) || return 1; sleep 0.2; done
}

for img in "${IMAGES[@]}"; do
  [[ -f $OUT/$img.oci.tar ]] || die "$OUT/$img.oci.tar is missing: run make images"
done

# ---------------------------------------------------------------------------------------------
# Static checks: index, names, labels, user, contents
# ---------------------------------------------------------------------------------------------
for img in "${IMAGES[@]}"; do
  archive="$OUT/$img.oci.tar" version=$(cat "$OUT/$img.ref")
  mkdir -p "$TMP/oci/$img"
  tar -xf "$archive" -C "$TMP/oci/$img"
  layout="$TMP/oci/$img"
  name=$(jq -r '.manifests[0].annotations["io.containerd.image.name"]' "$layout/index.json")
  check "$img - named localhost/syncmesh-edge/$img:$version" [ "$name" == "$IMAGE_REPO_PREFIX/$img:$version" ]
  idx="$layout/blobs/sha256/$(jq -r '.manifests[0].digest' "$layout/index.json" | cut -d: -f2)"
  platforms=$(jq -r '[.manifests[].platform | "\(.os)/\(.architecture)"] | sort | join(",")' "$idx")
  check "$img - multi-arch index linux/amd64 + linux/arm64" [ "$platforms" == "linux/amd64,linux/arm64" ]
  for arch in "${ARCHES[@]}"; do
    cfg=$(skopeo inspect --config --override-os linux --override-arch "$arch" "oci-archive:$archive")
    labels_ok=true
    for l in title description version revision created source licenses; do
      [[ -n $(jq -r --arg l "org.opencontainers.image.$l" '.config.Labels[$l] // empty' <<< "$cfg") ]] || labels_ok=false
    done
    check "$img/$arch - OCI labels title, description, version, revision, created, source, licenses" $labels_ok
    user=$(jq -r '.config.User // ""' <<< "$cfg")
    check "$img/$arch - runs as a non-root user ($user)" [ -n "$user" ] && [[ ! $user =~ ^(0|root)(:|$) ]]
    check "$img/$arch - config architecture is $arch" [ "$(jq -r .architecture <<< "$cfg")" == "$arch" ]
  done
done

if [[ -d $TMP/oci/mongo-test-server ]]; then
  cfg=$(skopeo inspect --config "oci-archive:$OUT/mongo-test-server.oci.tar")
  check "mongo-test-server - labelled test-only" [ "$(jq -r '.config.Labels["dev.syncmesh-edge.test-only"]' <<< "$cfg")" == true ]
  check "mongo-test-server - description says test only" grep -qi 'test only\|test-only' <<< "$(jq -r '.config.Labels["org.opencontainers.image.description"]' <<< "$cfg")"
fi

# Unpacked rootfs of one architecture (umoci needs a single manifest: pick it from the index).
unpack_arch() {
  local img=$1 arch=$2 layout="$TMP/oci/$1" dest="$TMP/rootfs/$1-$2" idx mdigest
  [[ -d $dest ]] && { printf '%s\n' "$dest/rootfs"; return; }
  idx="$layout/blobs/sha256/$(jq -r '.manifests[0].digest' "$layout/index.json" | cut -d: -f2)"
  mdigest=$(jq -r --arg a "$arch" '.manifests[] | select(.platform.architecture == $a) | .digest' "$idx")
  cp -r "$layout" "$TMP/layout-$1-$2"
  jq -c --arg d "$mdigest" --argjson s "$(stat -c %s "$layout/blobs/sha256/${mdigest#sha256:}")" \
    '{schemaVersion:2, manifests:[{mediaType:"application/vnd.oci.image.manifest.v1+json", digest:$d, size:$s, annotations:{"org.opencontainers.image.ref.name":"x"}}]}' -n \
    > "$TMP/layout-$1-$2/index.json"
  umoci unpack --image "$TMP/layout-$1-$2:x" "$dest" >/dev/null
  rm -rf "$TMP/layout-$1-$2"
  printf '%s\n' "$dest/rootfs"
}

for img in "${NODE_IMAGES[@]}"; do
  root=$(unpack_arch "$img" amd64)
  check "$img - no shell" [ ! -e "$root/usr/bin/sh" ] && [ ! -e "$root/usr/bin/bash" ] && [ ! -e "$root/usr/bin/dash" ]
  check "$img - no npm" [ ! -e "$root/usr/bin/npm" ] && [ ! -e "$root/usr/share/nodejs/npm" ]
  found=$(find "$root/app" \( -name '*.test.*' -o -path '*/test/*' -o -path '*/testing/*' -o -path '*/scripts/*' \) -print -quit)
  check "$img - no test or script files under /app" [ -z "$found" ]
  check "$img - no test-server code in the bundle" \
    bash -c "! grep -lE 'mongo-java-server|mongo-test-server|testing/harness|fast-check' '$root'/app/*/dist/src/main.mjs"
  check "$img - licences of the bundled npm packages" [ -s "$root/licenses/npm/packages.txt" ]
done

# The arm64 variant's main program runs (user-mode emulation, no binfmt registration needed).
arm64_runs() {
  local img=$1 root; shift
  root=$(unpack_arch "$img" arm64)
  qemu-aarch64-static -L "$root" "$root$1" "${@:2}"
}
if command -v qemu-aarch64-static >/dev/null; then
  check "syncmesh-fn/arm64 - node 20 runs" arm64_runs syncmesh-fn /usr/bin/node -e 'process.exit(process.version.startsWith("v20.") && process.arch === "arm64" ? 0 : 1)'
  check "syncmesh-fn/arm64 - the bundle parses" arm64_runs syncmesh-fn /usr/bin/node --check "$(unpack_arch syncmesh-fn arm64)/app/syncmesh-fn/dist/src/main.mjs"
  check "syncmesh-fn/arm64 - fwatchdog runs" arm64_runs syncmesh-fn /usr/bin/fwatchdog --version
  check "gateway/arm64 - the binary is arm64 and static" bash -c "file -b '$(unpack_arch gateway arm64)/home/app/gateway' | grep -q 'ARM aarch64.*statically linked'"
  check "nats-streaming/arm64 - runs" arm64_runs nats-streaming /nats-streaming-server --version
  check "nats-server/arm64 - runs" arm64_runs nats-server /nats-server --version
  check "prometheus/arm64 - runs" arm64_runs prometheus /bin/prometheus --version
else
  fail "arm64 - qemu-aarch64-static is missing"
fi

# ---------------------------------------------------------------------------------------------
# Each image starts under containerd and stops on SIGTERM
# ---------------------------------------------------------------------------------------------
mkdir -p "$TMP/root" "$TMP/state"
cat > "$TMP/config.toml" <<EOF
version = 2
root = "$TMP/root"
state = "$TMP/state"
disabled_plugins = ["io.containerd.grpc.v1.cri"]
[grpc]
  address = "$SOCK"
[ttrpc]
  address = "$SOCK.ttrpc"
[debug]
  address = ""
[metrics]
  address = ""
EOF
containerd --config "$TMP/config.toml" > "$TMP/containerd.log" 2>&1 &
CONTAINERD_PID=$!
poll 20 "${CTR[@]}" version || die "containerd did not start: $(tail -5 "$TMP/containerd.log")"
ip netns add "$NETNS"
ip -n "$NETNS" link set lo up

for img in "${IMAGES[@]}"; do
  out=$("${CTR[@]}" images import --base-name "$IMAGE_REPO_PREFIX/$img" "$OUT/$img.oci.tar" 2>&1) || true
  ref="$IMAGE_REPO_PREFIX/$img:$(cat "$OUT/$img.ref")"
  check "$img - ctr images import names it $ref" bash -c "${CTR[*]} images ls -q | grep -qx '$ref'"
done

in_ns() { ip netns exec "$NETNS" "$@"; }
http_ok() { in_ns curl -fsS -m 2 -o /dev/null "$1"; }

# run_service NAME IMAGE [ctr run options...] [-- COMMAND ARGS...]: start a container in the
# test namespace (with COMMAND, the image's entrypoint and cmd are replaced, as faasd does).
run_service() {
  local id=$1 img=$2 opts=() args=(); shift 2
  while [[ $# -gt 0 && $1 != -- ]]; do opts+=("$1"); shift; done
  [[ $# -gt 0 ]] && { shift; args=("$@"); }
  "${CTR[@]}" run -d --with-ns "network:/var/run/netns/$NETNS" "${opts[@]}" \
    "$IMAGE_REPO_PREFIX/$img:$(cat "$OUT/$img.ref")" "$id" "${args[@]}" > "$TMP/$id.run" 2>&1
}
task_running() { "${CTR[@]}" tasks ls | awk -v id="$1" '$1 == id && $3 == "RUNNING" { found = 1 } END { exit !found }'; }
task_gone() { ! task_running "$1"; }
# stop_service NAME: SIGTERM, then the task must be gone within STOP_DEADLINE_S.
stop_service() {
  local id=$1 start=$SECONDS
  "${CTR[@]}" tasks kill -s SIGTERM "$id" >/dev/null 2>&1 || true
  if poll "$STOP_DEADLINE_S" task_gone "$id"; then
    pass "$id - stops on SIGTERM ($((SECONDS - start)) s)"
  else
    fail "$id - still running ${STOP_DEADLINE_S} s after SIGTERM"
  fi
  "${CTR[@]}" tasks delete -f "$id" >/dev/null 2>&1 || true
  "${CTR[@]}" containers delete "$id" >/dev/null 2>&1 || true
}

# Function image: of-watchdog answers /_/health, /_/ready once our server listens, and proxies a query.
run_service "${PREFIX}-fn" syncmesh-fn --env MONGODB_URI=mongodb://127.0.0.1:1/
check "syncmesh-fn - /_/health answers 200" poll "$START_DEADLINE_S" http_ok http://127.0.0.1:8080/_/health
check "syncmesh-fn - /_/ready answers 200 once the function listens" poll "$START_DEADLINE_S" http_ok http://127.0.0.1:8080/_/ready
reply=$(in_ns curl -sS -m 10 http://127.0.0.1:8080/healthz || true)
check "syncmesh-fn - the watchdog proxies to the function (${reply:0:60})" grep -q '"alive"' <<< "$reply"
# uids of every process of the container (fwatchdog and node)
uids=$("${CTR[@]}" tasks ps "${PREFIX}-fn" | awk 'NR > 1 { print $1 }' | while read -r pid; do
  awk '/^Uid:/ { print $2 }' "/proc/$pid/status"; done | sort -u | tr '\n' ' ')
check "syncmesh-fn - every process runs as uid 10001 ($uids)" [ "$uids" == "10001 " ]
stop_service "${PREFIX}-fn"

# MISO agent: its SDK socket appears in the mounted directory.
mkdir -p "$TMP/miso"
chown 10001:10001 "$TMP/miso"
run_service "${PREFIX}-agent" miso-agent --mount "type=bind,src=$TMP/miso,dst=/run/miso,options=rbind:rw" \
  --env MISO_MESH_SECRET=images-test-secret-0123456789
check "miso-agent - serves its SDK socket" poll "$START_DEADLINE_S" test -S "$TMP/miso/agent.sock"

# MISO counter: registers with that agent, then the watchdog serves it.
run_service "${PREFIX}-counter" miso-counter --mount "type=bind,src=$TMP/miso,dst=/run/miso,options=rbind:rw"
check "miso-counter - /_/ready answers 200 once registered with the agent" poll "$START_DEADLINE_S" http_ok http://127.0.0.1:8080/_/ready
stop_service "${PREFIX}-counter"
stop_service "${PREFIX}-agent"

# Listener: keeps running while MongoDB is unreachable (it retries), stops on SIGTERM.
run_service "${PREFIX}-listener" listener --env MONGODB_URI=mongodb://127.0.0.1:1/ --env SYNCMESH_MESH_SECRET=images-test-secret-0123456789 \
  --env LISTENER_HEALTH_ADDR=127.0.0.1:9464
check "listener - answers its health endpoint" poll "$START_DEADLINE_S" in_ns curl -sS -m 2 -o /dev/null http://127.0.0.1:9464/healthz
check "listener - still running" task_running "${PREFIX}-listener"
stop_service "${PREFIX}-listener"

# Core services: NATS first (the gateway and the queue worker connect to it at start).
run_service "${PREFIX}-prom" prometheus
check "prometheus - /-/ready answers 200" poll "$START_DEADLINE_S" http_ok http://127.0.0.1:9090/-/ready
stop_service "${PREFIX}-prom"
# the cluster id the gateway and the queue worker use (faasd's docker-compose.yaml passes it too)
run_service "${PREFIX}-nats" nats-streaming -- /nats-streaming-server -m 8222 --store=memory --cluster_id=faas-cluster
check "nats-streaming - monitoring endpoint answers" poll "$START_DEADLINE_S" http_ok http://127.0.0.1:8222/varz
run_service "${PREFIX}-gw" gateway --env basic_auth=false --env functions_provider_url=http://127.0.0.1:8081/ \
  --env faas_nats_address=127.0.0.1 --env faas_nats_port=4222 --env direct_functions=false
# /healthz goes to the provider (not running here); the metrics port is the gateway's own
check "gateway - serves its metrics on 8082" poll "$START_DEADLINE_S" http_ok http://127.0.0.1:8082/metrics
run_service "${PREFIX}-qw" queue-worker --env faas_nats_address=127.0.0.1 --env faas_gateway_address=127.0.0.1 --env basic_auth=false
check "queue-worker - starts and keeps running" poll 5 task_running "${PREFIX}-qw"
stop_service "${PREFIX}-qw"
stop_service "${PREFIX}-gw"
stop_service "${PREFIX}-nats"

# Test server: a MongoDB client could connect; here the port accepting is enough.
run_service "${PREFIX}-mongo" mongo-test-server
check "mongo-test-server - accepts connections on 27017" poll "$START_DEADLINE_S" in_ns bash -c 'exec 3<>/dev/tcp/127.0.0.1/27017'
stop_service "${PREFIX}-mongo"

# ---------------------------------------------------------------------------------------------
# Reproducible: the function image built twice from the same inputs has the same digest
# ---------------------------------------------------------------------------------------------
# the archive of `make images` must be current (a commit since then changes its time and revision)
env -u SOURCE_DATE_EPOCH -u IMAGE_REVISION "$IMAGES_DIR/build/build.sh" syncmesh-fn 2> "$TMP/repro0.log" ||
  { cat "$TMP/repro0.log" >&2; die "make images' syncmesh-fn cannot be brought up to date"; }
for run in 1 2; do
  mkdir -p "$TMP/repro$run"
  cp -al "$OUT/base" "$OUT/bundles" "$TMP/repro$run/"
  # build.sh's own time and revision (lib.sh exported this shell's default)
  env -u SOURCE_DATE_EPOCH -u IMAGE_REVISION IMAGES_OUT="$TMP/repro$run" "$IMAGES_DIR/build/build.sh" syncmesh-fn 2> "$TMP/repro$run.log" ||
    { cat "$TMP/repro$run.log" >&2; die "rebuild $run of syncmesh-fn failed"; }
done
d1=$(cat "$TMP/repro1/syncmesh-fn.digest") d2=$(cat "$TMP/repro2/syncmesh-fn.digest") d0=$(cat "$OUT/syncmesh-fn.digest")
check "syncmesh-fn - two builds from the same inputs have one digest ($d1)" [ "$d1" == "$d2" ]
check "syncmesh-fn - and it is the digest make images produced" [ "$d1" == "$d0" ]

printf '%d passed, %d failed\n' "$passed" "$failed"
[[ $failed -eq 0 ]]
