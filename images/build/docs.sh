#!/usr/bin/env bash
# Regenerates the generated parts of images/README.md (the sizes table) and images/NOTICE (the
# lists of Debian and npm packages in the images) from the last `make images`.
#
#   images/build/docs.sh          (make images-docs)
set -o errexit -o nounset -o pipefail
# shellcheck source=images/build/lib.sh
source "$(dirname "$0")/lib.sh"

IMAGES=(gateway queue-worker nats-streaming nats-server prometheus syncmesh-fn listener miso-agent miso-counter async-worker mongo-test-server)

# replace_between FILE BEGIN END CONTENT-FILE: the lines between the two markers become CONTENT.
replace_between() {
  local file=$1 begin=$2 end=$3 content=$4
  if ! grep -qF -- "$begin" "$file" || ! grep -qF -- "$end" "$file"; then die "$file lacks the markers $begin / $end"; fi
  awk -v b="$begin" -v e="$end" -v c="$content" '
    index($0, b) { print; while ((getline line < c) > 0) print line; skip = 1; next }
    index($0, e) { skip = 0 }
    !skip { print }' "$file" > "$file.tmp"
  mv "$file.tmp" "$file"
}

mb() { awk -v b="$1" 'BEGIN { printf "%.1f", b / 1000000 }'; }

# Sizes: compressed bytes per architecture (what a node downloads or imports), and how much of
# it is a base layer that several images share (stored once by containerd).
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
{
  echo "| image | tag | amd64 (MB, compressed) | arm64 (MB, compressed) | of which Debian base layer, amd64 / arm64 (MB) |"
  echo "| --- | --- | ---: | ---: | --- |"
  for img in "${IMAGES[@]}"; do
    [[ -f $OUT/$img.sizes ]] || die "$OUT/$img.sizes is missing: run make images"
    amd=$(awk '$1 == "amd64" { print $2 }' "$OUT/$img.sizes")
    arm=$(awk '$1 == "arm64" { print $2 }' "$OUT/$img.sizes")
    base=$(tar -xOf "$OUT/$img.oci.tar" index.json | jq -r '.manifests[0].digest' | cut -d: -f2)
    shared=$(tar -xOf "$OUT/$img.oci.tar" "blobs/sha256/$base" | jq -r '.manifests[].digest' | while read -r m; do
      tar -xOf "$OUT/$img.oci.tar" "blobs/sha256/${m#sha256:}" | jq -r 'if (.layers | length) > 1 then .layers[0].size else 0 end'
    done | while read -r s; do printf '%s ' "$(mb "$s")"; done)
    read -r sa sr <<< "$shared"
    if [[ $sa == 0.0 ]]; then shared="none"; else shared="$sa / $sr"; fi
    echo "| \`$img\` | $(cat "$OUT/$img.ref") | $(mb "$amd") | $(mb "$arm") | $shared |"
  done
} > "$tmp"
replace_between "$IMAGES_DIR/README.md" '<!-- BEGIN_IMAGE_SIZES -->' '<!-- END_IMAGE_SIZES -->' "$tmp"

# NOTICE: the Debian packages of each base layer and the npm packages of each bundle.
{
  for kind in node libc jre; do
    for arch in "${ARCHES[@]}"; do
      f="$OUT/base/$kind-$arch/packages.txt"
      [[ -f $f ]] || continue
      echo "Debian packages of the \"$kind\" base layer ($arch): name version architecture"
      sed 's/^/  /' "$f"
      echo
    done
  done
  for b in syncmesh-fn listener miso-agent miso-counter; do
    f="$OUT/bundles/$b/packages.txt"
    [[ -f $f ]] || continue
    echo "npm packages bundled into $b: name version licence"
    sed 's/^/  /' "$f"
    echo
  done
} > "$tmp"
replace_between "$IMAGES_DIR/NOTICE" '--- BEGIN GENERATED PACKAGE LISTS ---' '--- END GENERATED PACKAGE LISTS ---' "$tmp"
log "updated images/README.md (sizes) and images/NOTICE (package lists)"
