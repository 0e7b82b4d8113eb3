# shellcheck shell=bash
# Functions of the image build (sourced by images/build/build.sh and images/build/test.sh).
#
# An image is made of layers (deterministic tar files: sorted names, owner 0 unless set, every
# mtime = SOURCE_DATE_EPOCH or older), turned into a per-arch OCI image by umoci, then joined
# into one multi-arch index (linux/amd64 + linux/arm64) and written as an OCI archive.

# Paths and identity (callers may override before sourcing).
REPO=${REPO:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
IMAGES_DIR="$REPO/images"
OUT=${IMAGES_OUT:-$REPO/.cache/images}
# Reference names: localhost/syncmesh-edge/<name>:<version>
IMAGE_REPO_PREFIX=${IMAGE_REPO_PREFIX:-localhost/syncmesh-edge}
# org.opencontainers.image.source: the origin remote of this clone unless given.
IMAGE_SOURCE_URL=${IMAGE_SOURCE_URL:-$(git -C "$REPO" config --get remote.origin.url || echo "unpublished (set IMAGE_SOURCE_URL)")}
# Architectures of every image (a multi-arch index); IMAGE_ARCHES=amd64 builds one (make demo: the host's).
read -ra ARCHES <<< "${IMAGE_ARCHES:-amd64 arm64}"

log() { printf 'images: %s\n' "$*" >&2; }
# put FILE < content: files in .cache may be hard links shared with other clones, so one is never
# written in place: a new file is renamed over it.
put() { cat > "$1.new.$$" && mv -f "$1.new.$$" "$1"; }
die() { printf 'images: error: %s\n' "$*" >&2; exit 1; }

# Time and revision of an image: SOURCE_DATE_EPOCH and IMAGE_REVISION when given, else the
# last commit that touched the image's sources (image_epoch), so an unrelated commit changes
# no image. Set per image by image_epoch; these are the defaults (the last commit).
SOURCE_DATE_EPOCH_GIVEN=${SOURCE_DATE_EPOCH:-}
IMAGE_REVISION_GIVEN=${IMAGE_REVISION:-}
: "${SOURCE_DATE_EPOCH:=$(git -C "$REPO" log -1 --format=%ct)}"
export SOURCE_DATE_EPOCH
IMAGE_REVISION=${IMAGE_REVISION:-$(git -C "$REPO" rev-parse HEAD)}
IMAGE_CREATED=$(date -u -d "@$SOURCE_DATE_EPOCH" +%Y-%m-%dT%H:%M:%SZ)

# image_epoch PATH...: set SOURCE_DATE_EPOCH, IMAGE_REVISION and IMAGE_CREATED from the last
# commit touching PATHs (relative to the repository), unless they were given.
image_epoch() {
  local t h
  read -r t h < <(git -C "$REPO" log -1 --format='%ct %H' -- "$@")
  [[ -n ${t:-} ]] || { t=$(git -C "$REPO" log -1 --format=%ct); h=$(git -C "$REPO" rev-parse HEAD); }
  SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH_GIVEN:-$t}
  IMAGE_REVISION=${IMAGE_REVISION_GIVEN:-$h}
  IMAGE_CREATED=$(date -u -d "@$SOURCE_DATE_EPOCH" +%Y-%m-%dT%H:%M:%SZ)
  export SOURCE_DATE_EPOCH
}

# Debian's name for each architecture's library directory.
triplet() { case $1 in amd64) echo x86_64-linux-gnu ;; arm64) echo aarch64-linux-gnu ;; *) die "unknown arch $1" ;; esac; }

# make_tar DIR OUT.tar [EPOCH]: a reproducible tar of DIR's contents. Names are sorted, mtimes
# are clamped to EPOCH (default SOURCE_DATE_EPOCH), owners kept numerically (the staging tree
# sets them), no atime/ctime/pax noise.
make_tar() {
  local dir=$1 out=$2 epoch=${3:-$SOURCE_DATE_EPOCH}
  tar --sort=name --format=posix \
    --pax-option=exthdr.name=%d/PaxHeaders/%f,delete=atime,delete=ctime \
    --mtime="@$epoch" --clamp-mtime --numeric-owner \
    -C "$dir" -cf "$out" .
}

# base_files ROOT: what every image has: root, nobody and app (10001) users, a sticky /tmp,
# /etc/hosts and /etc/resolv.conf placeholders (faasd bind-mounts its own over them).
base_files() {
  local root=$1
  install -d -m 0755 "$root/etc"
  install -d -m 1777 "$root/tmp"
  printf '%s\n' 'root:x:0:0:root:/root:/sbin/nologin' \
    'nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin' \
    'app:x:10001:10001:app:/home/app:/sbin/nologin' > "$root/etc/passwd"
  printf '%s\n' 'root:x:0:' 'nogroup:x:65534:' 'app:x:10001:' > "$root/etc/group"
  : > "$root/etc/hosts"
  : > "$root/etc/resolv.conf"
  chmod 0644 "$root/etc/passwd" "$root/etc/group" "$root/etc/hosts" "$root/etc/resolv.conf"
}

# add_license ROOT NAME FILE...: upstream licence texts under /licenses/NAME/ in the image.
add_license() {
  local root=$1 name=$2; shift 2
  install -d -m 0755 "$root/licenses/$name"
  local f
  for f in "$@"; do install -m 0644 "$f" "$root/licenses/$name/"; done
}

# hash_inputs PATH...: one sha256 over the names (relative to the repository) and contents of
# every file and symlink under PATHs.
hash_inputs() {
  local p
  for p in "$@"; do
    [[ -e $p ]] || { echo "missing:$p"; continue; }
    find "$p" -type f -print0 | LC_ALL=C sort -z | xargs -0 -r sha256sum
    find "$p" -type l -printf '%p -> %l\n' | LC_ALL=C sort
  done | sed "s|$REPO/||" | sha256sum | cut -c1-64
}

# oci_arch_image LAYOUT ARCH LAYER.tar...: one image for ARCH in LAYOUT under the tag ARCH
# (created unless the layout already has it: a copy of a cached base layout), with the IMAGE_*
# settings of the spec as its config. umoci compresses the layers (gzip) and writes the blobs;
# every timestamp is IMAGE_CREATED.
oci_arch_image() {
  local layout=$1 arch=$2; shift 2
  umoci stat --image "$layout:$arch" >/dev/null 2>&1 || umoci new --image "$layout:$arch"
  local layer i=0
  for layer in "$@"; do
    i=$((i + 1))
    umoci raw add-layer --image "$layout:$arch" --history.created="$IMAGE_CREATED" \
      --history.created_by="images/build: ${IMAGE_NAME} layer $i ($(basename "$layer" .tar))" "$layer"
  done
  local args=(--image "$layout:$arch" --no-history --created="$IMAGE_CREATED" --author="Syncmesh Edge"
    --os=linux --architecture="$arch" --config.user="$IMAGE_USER" --config.workingdir="${IMAGE_WORKDIR:-/}"
    --clear=config.labels --clear=config.env --clear=config.entrypoint --clear=config.cmd)
  local x
  for x in "${IMAGE_ENTRYPOINT[@]}"; do args+=(--config.entrypoint="$x"); done
  for x in "${IMAGE_CMD[@]}"; do args+=(--config.cmd="$x"); done
  args+=(--config.env="PATH=/usr/local/bin:/usr/bin:/bin")
  for x in "${IMAGE_ENV[@]}"; do args+=(--config.env="$x"); done
  for x in "${IMAGE_PORTS[@]}"; do args+=(--config.exposedports="$x"); done
  for x in "${IMAGE_VOLUMES[@]}"; do args+=(--config.volume="$x"); done
  [[ -n ${IMAGE_STOPSIGNAL:-} ]] && args+=(--config.stopsignal="$IMAGE_STOPSIGNAL")
  while IFS= read -r x; do args+=(--config.label="$x"); done < <(image_labels)
  umoci config "${args[@]}"
}

# image_labels: the OCI labels of the current image, one key=value per line.
image_labels() {
  printf '%s\n' \
    "org.opencontainers.image.title=$IMAGE_TITLE" \
    "org.opencontainers.image.description=$IMAGE_DESCRIPTION" \
    "org.opencontainers.image.version=$IMAGE_VERSION" \
    "org.opencontainers.image.revision=$IMAGE_REVISION" \
    "org.opencontainers.image.created=$IMAGE_CREATED" \
    "org.opencontainers.image.source=$IMAGE_SOURCE_URL" \
    "org.opencontainers.image.licenses=$IMAGE_LICENSES" \
    "org.opencontainers.image.vendor=Syncmesh Edge" \
    "org.opencontainers.image.ref.name=$IMAGE_VERSION"
  local x
  for x in "${IMAGE_LABELS[@]}"; do printf '%s\n' "$x"; done
}

# blob_put LAYOUT FILE: store FILE as a blob; prints "sha256:<hex> <size>".
blob_put() {
  local layout=$1 file=$2 hex
  hex=$(sha256sum < "$file" | cut -c1-64)
  install -m 0644 "$file" "$layout/blobs/sha256/$hex"
  printf 'sha256:%s %s\n' "$hex" "$(stat -c %s "$file")"
}

# oci_index LAYOUT REF VERSION: replace the per-arch tags of LAYOUT by one multi-arch image
# index named REF (io.containerd.image.name) with tag VERSION (org.opencontainers.image.ref.name).
oci_index() {
  local layout=$1 ref=$2 version=$3 tmp
  tmp=$(mktemp -d)
  local manifests='[]' arch digest size platform
  for arch in "${ARCHES[@]}"; do
    digest=$(jq -r --arg a "$arch" '.manifests[] | select(.annotations["org.opencontainers.image.ref.name"] == $a) | .digest' "$layout/index.json")
    size=$(jq -r --arg a "$arch" '.manifests[] | select(.annotations["org.opencontainers.image.ref.name"] == $a) | .size' "$layout/index.json")
    [[ -n $digest ]] || die "$IMAGE_NAME: no $arch manifest in $layout"
    platform=$(jq -nc --arg a "$arch" 'if $a == "arm64" then {architecture:$a, os:"linux", variant:"v8"} else {architecture:$a, os:"linux"} end')
    manifests=$(jq -c --arg d "$digest" --argjson s "$size" --argjson p "$platform" \
      '. + [{mediaType:"application/vnd.oci.image.manifest.v1+json", digest:$d, size:$s, platform:$p}]' <<< "$manifests")
  done
  jq -cj --argjson m "$manifests" --arg ref "$ref" --arg v "$version" --arg t "$IMAGE_TITLE" --arg c "$IMAGE_CREATED" --arg r "$IMAGE_REVISION" \
    '{schemaVersion:2, mediaType:"application/vnd.oci.image.index.v1+json", manifests:$m,
      annotations:{"org.opencontainers.image.title":$t, "org.opencontainers.image.version":$v,
        "org.opencontainers.image.created":$c, "org.opencontainers.image.revision":$r}}' -n > "$tmp/index-blob.json"
  read -r digest size < <(blob_put "$layout" "$tmp/index-blob.json")
  jq -cj -n --arg d "$digest" --argjson s "$size" --arg ref "$ref" --arg v "$version" \
    '{schemaVersion:2, manifests:[{mediaType:"application/vnd.oci.image.index.v1+json", digest:$d, size:$s,
      annotations:{"io.containerd.image.name":$ref, "org.opencontainers.image.ref.name":$v}}]}' > "$layout/index.json"
  rm -rf "$tmp"
  umoci gc --layout "$layout"
  printf '%s\n' "$digest"
}

# oci_archive LAYOUT OUT.tar: the layout as a reproducible OCI archive (ctr/skopeo/podman read it).
oci_archive() {
  local layout=$1 out=$2
  find "$layout" -type d -exec chmod 0755 {} + -o -type f -exec chmod 0644 {} +
  tar --sort=name --format=posix \
    --pax-option=exthdr.name=%d/PaxHeaders/%f,delete=atime,delete=ctime \
    --mtime="@$SOURCE_DATE_EPOCH" --owner=0 --group=0 --numeric-owner \
    -C "$layout" -cf "$out.tmp" oci-layout index.json blobs
  mv "$out.tmp" "$out"
}
