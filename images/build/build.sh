#!/usr/bin/env bash
# Builds the container images of a node (see images/README.md) without a Docker engine.
#
#   images/build/build.sh [NAME...]      default: every image, core services first
#
# Each image is specified by images/<NAME>/image.sh (labels, user, entrypoint, env and a
# function that fills its top layer). Per image this writes
#   .cache/images/<NAME>.oci.tar   OCI archive: one multi-arch index (linux/amd64, linux/arm64)
#                                  named localhost/syncmesh-edge/<NAME>:<version>
#   .cache/images/<NAME>.ref       the version (the tag)
#   .cache/images/<NAME>.digest    the index digest
#   .cache/images/<NAME>.sizes     "arch compressed-bytes" per architecture
# Cached: an image is rebuilt only when the hash of its inputs (spec, build scripts, files it
# copies, base layers, SOURCE_DATE_EPOCH and revision) differs from its stamp. Debian base
# layers are built once per architecture (delete .cache/images/base to refresh them).
# Gated: before an image is (re)built, the unit tests of the workspaces its spec names in
# IMAGE_UNIT_TESTS run (`npm run -w WS test:unit`, on the compiled dist/); one failing test
# builds nothing. This is the one build of each image: there is no other Dockerfile.
set -o errexit -o nounset -o pipefail
# shellcheck source=images/build/lib.sh
source "$(dirname "$0")/lib.sh"

ALL_IMAGES=(gateway queue-worker nats-streaming nats-server prometheus registry syncmesh-fn listener miso-agent miso-counter fn-node20 async-worker mongo-test-server)
FAASD_BIN="$REPO/.cache/faasd/bin"
FAASD_LICENSES="$REPO/.cache/faasd/licenses"
BUNDLES="$OUT/bundles"
BUILD_HASH=$(hash_inputs "$IMAGES_DIR/build/lib.sh" "$IMAGES_DIR/build/build.sh")

for tool in umoci jq mmdebstrap; do
  command -v "$tool" >/dev/null || die "$tool is missing (make images installs it with apt-get)"
done

# ---------------------------------------------------------------------------------------------
# Helpers for the image specs
# ---------------------------------------------------------------------------------------------

# base_layer KIND ARCH: path of the cached Debian base layer (built on first use).
base_layer() {
  local kind=$1 arch=$2 dir="$OUT/base/$1-$2" key
  key=$(hash_inputs "$IMAGES_DIR/build/debian-layer.sh")
  if [[ ! -f $dir/layer.tar || "$(cat "$dir/stamp" 2>/dev/null)" != "$key" ]]; then
    "$IMAGES_DIR/build/debian-layer.sh" "$kind" "$arch" "$dir"
    printf '%s' "$key" | put "$dir/stamp"
  fi
  printf '%s\n' "$dir/layer.tar"
}

# base_layout KIND: an OCI layout (tags amd64, arm64) holding only the base layer KIND, made
# once: images built on it start from a hard-linked copy, so the base is compressed only once.
base_layout() {
  local kind=$1 dir="$OUT/base/$1-oci" key="" arch
  for arch in "${ARCHES[@]}"; do key+=$(cat "$OUT/base/$kind-$arch/stamp")$(cat "$OUT/base/$kind-$arch/epoch"); done
  key=$(printf '%s %s' "$key" "$BUILD_HASH" | sha256sum | cut -c1-64)
  if [[ ! -f $dir/stamp || "$(cat "$dir/stamp")" != "$key" ]]; then
    rm -rf "$dir"
    umoci init --layout "$dir/layout"
    for arch in "${ARCHES[@]}"; do
      local created
      created=$(date -u -d "@$(cat "$OUT/base/$kind-$arch/epoch")" +%Y-%m-%dT%H:%M:%SZ)
      umoci new --image "$dir/layout:$arch"
      umoci raw add-layer --image "$dir/layout:$arch" --history.created="$created" \
        --history.created_by="images/build: base layer $kind ($arch, Debian packages)" "$OUT/base/$kind-$arch/layer.tar"
    done
    printf '%s' "$key" | put "$dir/stamp"
  fi
  printf '%s\n' "$dir/layout"
}

# faasd_bin NAME ARCH: a binary of `make faasd-bins` (fails with the fix when it is missing).
faasd_bin() {
  local f="$FAASD_BIN/$2/$1"
  [[ -x $f ]] || die "$f is missing: run make faasd-bins"
  printf '%s\n' "$f"
}

# install_faasd_bin ROOT ARCH NAME PATH [LICENSE_DIR]: the binary NAME of `make faasd-bins` at
# PATH in ROOT (mode 0755, its folder made) and its licence in /licenses/LICENSE_DIR (default NAME).
install_faasd_bin() {
  local root=$1 arch=$2 name=$3 path=$4 dir
  dir=$(dirname "$path")
  [[ $dir == / ]] || install -d -m 0755 "$root$dir"
  install -m 0755 "$(faasd_bin "$name" "$arch")" "$root$path"
  add_license "$root" "${5:-$name}" "$FAASD_LICENSES/$name/LICENSE"
}

# faasd_binary_spec NAME LICENSES: the spec of an image that is the one static binary NAME of
# `make faasd-bins` and nothing else (gateway, queue-worker, nats-server, nats-streaming): dated by
# images/faasd, run as nobody; its inputs are the binary and its licences. Its image_rootfs puts
# the binary in place with install_faasd_bin.
faasd_binary_spec() {
  FAASD_BINARY=$1
  IMAGE_LICENSES=$2
  IMAGE_SOURCES=(images/faasd)
  IMAGE_USER=65534:65534
  image_inputs() { faasd_bin "$FAASD_BINARY" "$1"; printf '%s\n' "$FAASD_LICENSES/$FAASD_BINARY"; }
}

# bundle NAME: the esbuild bundle of a Node service (images/build/bundle.mjs), cached on the
# compiled dist/ of the workspaces and the lockfile.
BUNDLE_KEY=$(hash_inputs "$REPO/package-lock.json" "$IMAGES_DIR/build/bundle.mjs" "$IMAGES_DIR/build/package-lock.json" \
  "$REPO/functions/syncmesh/dist/src" "$REPO/functions/miso-counter/dist/src" "$REPO/listeners/dist/src" \
  "$REPO/miso-agent/dist/src" "$REPO/miso-agent/sdk/dist/src" "$REPO/miso-agent/proto" "$REPO/coordination/dist/src" \
  "$REPO/lib/backoff/dist/src" "$REPO/lib/log/dist/src" "$REPO/lib/mesh-auth/dist/src")
bundle() {
  local name=$1 dir="$BUNDLES/$1"
  if [[ ! -f $dir/main.mjs || "$(cat "$dir.stamp" 2>/dev/null)" != "$BUNDLE_KEY" ]]; then
    [[ -d $IMAGES_DIR/build/node_modules/esbuild ]] || npm ci --prefix "$IMAGES_DIR/build" --no-audit --no-fund >&2
    log "$name: bundling with esbuild"
    node "$IMAGES_DIR/build/bundle.mjs" "$name" "$dir"
    printf '%s' "$BUNDLE_KEY" | put "$dir.stamp"
  fi
  printf '%s\n' "$dir"
}

# node_app ROOT NAME: the bundle of NAME at /app/NAME/dist/src/main.mjs, read-only, with the
# licences of every npm package in it under /licenses/npm/.
node_app() {
  local root=$1 name=$2 dir
  dir=$(bundle "$name")
  install -d -m 0755 "$root/app/$name/dist/src" "$root/licenses"
  install -m 0644 "$dir/main.mjs" "$root/app/$name/dist/src/main.mjs"
  cp -r "$dir/licenses" "$root/licenses/npm"
  install -m 0644 "$dir/packages.txt" "$root/licenses/npm/packages.txt"
  install -d -m 0755 "$root/licenses/node-runtime"
  cp "$OUT/base/node-$ARCH/packages.txt" "$root/licenses/node-runtime/debian-packages.txt"
}

# bin_version BINARY SED: the version the amd64 BINARY of `make faasd-bins` prints with --version
# (SED's expression picks it out; a +suffix such as Debian's +ds is dropped).
bin_version() {
  local v
  v=$("$(faasd_bin "$1" amd64)" --version 2>&1 | sed -n "$2")
  [[ -n $v ]] || die "cannot read the version of $(faasd_bin "$1" amd64)"
  printf '%s\n' "${v%%+*}"
}

# sdk_function_inputs ARCH NAME, sdk_function_rootfs ROOT ARCH NAME: a function image with the
# MISO SDK (miso-counter, fn-node20): of-watchdog at /usr/bin/fwatchdog, sdk.proto at
# /app/proto, the bundle of NAME (node_app).
sdk_function_inputs() {
  faasd_bin fwatchdog "$1"
  printf '%s\n' "$FAASD_LICENSES/fwatchdog" "$(bundle "$2")" "$REPO/miso-agent/proto/sdk.proto"
}
sdk_function_rootfs() {
  local root=$1 arch=$2 name=$3
  install -d -m 0755 "$root/app/proto"
  install_faasd_bin "$root" "$arch" fwatchdog /usr/bin/fwatchdog of-watchdog
  install -m 0644 "$REPO/miso-agent/proto/sdk.proto" "$root/app/proto/sdk.proto"
  node_app "$root" "$name"
}

# watchdog_function NAME READY_PATH TIMEOUT: the spec of a function image (syncmesh-fn and the SDK
# functions): of-watchdog on :8080 in http mode in front of the bundle of NAME (node_app), which
# listens on 127.0.0.1:3000. healthcheck_interval stays 1 s: an update or delete waits one interval
# after SIGTERM before the watchdog drains. /_/ready answers 200 once READY_PATH does; TIMEOUT
# bounds a call (exec, read and write). The spec appends its own variables to IMAGE_ENV.
watchdog_function() {
  IMAGE_BASE=node
  IMAGE_ENTRYPOINT=(/usr/bin/fwatchdog)
  IMAGE_PORTS=(8080/tcp)
  IMAGE_ENV=(
    "fprocess=node /app/$1/dist/src/main.mjs"
    mode=http
    upstream_url=http://127.0.0.1:3000
    healthcheck_interval=1s
    "ready_path=$2"
    "exec_timeout=$3" "read_timeout=$3" "write_timeout=$3"
  )
}

# sdk_function_spec NAME VAR=VALUE: watchdog_function for a function with the MISO SDK
# (miso-counter, fn-node20; ready at /_/health, 10 s per call), then VAR=VALUE, the node's agent
# socket (mounted at /run/miso/agent.sock) and sdk.proto (sdk_function_rootfs puts it in /app/proto).
sdk_function_spec() {
  watchdog_function "$1" /_/health 10s
  IMAGE_ENV+=("$2" MISO_SDK_SOCKET=/run/miso/agent.sock MISO_SDK_PROTO=/app/proto/sdk.proto NODE_ENV=production)
}

# node_service NAME PORT: the spec of a long-running Node service on the node base (miso-agent,
# async-worker): node is PID 1 and runs the bundle of NAME (node_app) with a 1 MiB semi-space and
# two malloc arenas, listening on PORT.
node_service() {
  IMAGE_BASE=node
  IMAGE_WORKDIR=/app
  IMAGE_ENTRYPOINT=(/usr/bin/node --max-semi-space-size=1 "/app/$1/dist/src/main.mjs")
  IMAGE_PORTS=("$2")
  IMAGE_ENV=(NODE_ENV=production MALLOC_ARENA_MAX=2)
}

# ---------------------------------------------------------------------------------------------
# One image
# ---------------------------------------------------------------------------------------------
build_image() (
  IMAGE_NAME=$1
  local spec="$IMAGES_DIR/$IMAGE_NAME/image.sh"
  [[ -f $spec ]] || die "no spec $spec"
  # spec defaults
  IMAGE_USER=10001:10001 IMAGE_WORKDIR=/ IMAGE_LICENSES=MIT IMAGE_STOPSIGNAL=SIGTERM IMAGE_BASE=
  IMAGE_ENTRYPOINT=() IMAGE_CMD=() IMAGE_ENV=() IMAGE_PORTS=() IMAGE_VOLUMES=() IMAGE_LABELS=() IMAGE_SOURCES=() IMAGE_UNIT_TESTS=()
  # shellcheck source=/dev/null
  source "$spec"
  # time and revision: the last commit touching the image's sources, its spec or the build
  image_epoch "${IMAGE_SOURCES[@]}" "images/$IMAGE_NAME" images/build
  [[ -n ${IMAGE_VERSION:-} && -n ${IMAGE_TITLE:-} && -n ${IMAGE_DESCRIPTION:-} ]] ||
    die "$spec must set IMAGE_VERSION, IMAGE_TITLE and IMAGE_DESCRIPTION"
  local ref="$IMAGE_REPO_PREFIX/$IMAGE_NAME:$IMAGE_VERSION" work="$OUT/work/$IMAGE_NAME"
  # image_key ARCH...: the hash of every input of the image built for these architectures
  image_key() {
    local arch bases=() inputs=() list
    for arch in "$@"; do
      ARCH=$arch
      [[ -n $IMAGE_BASE ]] && bases+=("$(base_layer "$IMAGE_BASE" "$arch")")
      list=$(image_inputs "$arch")
      mapfile -t -O "${#inputs[@]}" inputs <<< "$list"
    done
    { printf '%s\n' "$BUILD_HASH" "$SOURCE_DATE_EPOCH" "$IMAGE_REVISION" "$ref";
      hash_inputs "$spec" "${inputs[@]}"; for b in "${bases[@]}"; do cat "$(dirname "$b")/stamp"; echo; done; } | sha256sum | cut -c1-64
  }
  local key stamp
  key=$(image_key "${ARCHES[@]}")
  stamp=$(cat "$OUT/$IMAGE_NAME.stamp" 2>/dev/null || true)
  if [[ -f $OUT/$IMAGE_NAME.oci.tar && $stamp == "$key" ]]; then
    log "$IMAGE_NAME: up to date ($ref)"
    return 0
  fi
  # an up-to-date image with more architectures (make images) also serves a build for fewer
  # (make test and make demo ask for the host's only): it is kept, not rebuilt smaller
  local built=()
  [[ -f $OUT/$IMAGE_NAME.sizes ]] && mapfile -t built < <(cut -d' ' -f1 "$OUT/$IMAGE_NAME.sizes")
  if [[ -f $OUT/$IMAGE_NAME.oci.tar && ${#built[@]} -gt ${#ARCHES[@]} ]] &&
    [[ -z $(comm -23 <(printf '%s\n' "${ARCHES[@]}" | sort) <(printf '%s\n' "${built[@]}" | sort)) ]] &&
    [[ $stamp == "$(image_key "${built[@]}")" ]]; then
    log "$IMAGE_NAME: up to date ($ref, ${built[*]})"
    return 0
  fi

  log "$IMAGE_NAME: building $ref for ${ARCHES[*]}"
  rm -rf "$work"
  mkdir -p "$work"
  # the component's unit tests gate the image (the compiled dist/ of make build)
  local ws
  for ws in "${IMAGE_UNIT_TESTS[@]}"; do
    log "$IMAGE_NAME: unit tests of $ws"
    if ! (cd "$REPO" && npm run --silent -w "$ws" test:unit) > "$work/unit-tests.log" 2>&1; then
      tail -n 30 "$work/unit-tests.log" >&2
      die "$IMAGE_NAME: the unit tests of $ws failed (whole log: $work/unit-tests.log); no image built"
    fi
    log "$IMAGE_NAME: $(grep -E '^# (pass|fail) ' "$work/unit-tests.log" | tr '\n' ' ')"
  done
  if [[ -n $IMAGE_BASE ]]; then
    # start from the cached base layout (hard links; index.json is replaced, never edited in place)
    cp -al "$(base_layout "$IMAGE_BASE")" "$work/layout"
    cp --remove-destination "$work/layout/index.json" "$work/layout/index.json.tmp"
    mv "$work/layout/index.json.tmp" "$work/layout/index.json"
  else
    umoci init --layout "$work/layout"
  fi
  local arch
  for arch in "${ARCHES[@]}"; do
    ARCH=$arch
    local root="$work/rootfs-$arch" layers=()
    mkdir -p "$root"
    chmod 0755 "$root"
    base_files "$root"
    image_rootfs "$root" "$arch"
    make_tar "$root" "$work/$IMAGE_NAME-$arch.tar"
    layers+=("$work/$IMAGE_NAME-$arch.tar")
    oci_arch_image "$work/layout" "$arch" "${layers[@]}"
  done
  local digest
  digest=$(oci_index "$work/layout" "$ref" "$IMAGE_VERSION")
  oci_archive "$work/layout" "$OUT/$IMAGE_NAME.oci.tar"
  # compressed size per architecture: the layers + config of its manifest
  local m
  for m in $(jq -r '.manifests[] | "\(.platform.architecture)=\(.digest)"' "$work/layout/blobs/sha256/${digest#sha256:}"); do
    jq -r --arg a "${m%%=*}" '"\($a) \(([.layers[].size] | add) + .config.size)"' "$work/layout/blobs/sha256/${m#*=sha256:}"
  done | put "$OUT/$IMAGE_NAME.sizes"
  printf '%s\n' "$IMAGE_VERSION" | put "$OUT/$IMAGE_NAME.ref"
  printf '%s\n' "$digest" | put "$OUT/$IMAGE_NAME.digest"
  printf '%s' "$key" | put "$OUT/$IMAGE_NAME.stamp"
  rm -rf "$work"/rootfs-* "$work"/*.tar
  log "$IMAGE_NAME: $ref $digest ($(tr '\n' ' ' < "$OUT/$IMAGE_NAME.sizes")bytes compressed)"
)

mkdir -p "$OUT"
names=("$@")
[[ ${#names[@]} -gt 0 ]] || names=("${ALL_IMAGES[@]}")
for n in "${names[@]}"; do build_image "$n"; done
