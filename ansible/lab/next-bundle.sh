#!/usr/bin/env bash
# test-lab's upgrade step: a "next release" of a bundle payload in which the function, the listener
# and the MISO agent carry a new version (<version>-<suffix>): the same image content, re-tagged
# (index.json's io.containerd.image.name and org.opencontainers.image.ref.name), so the upgrade playbook
# imports new image references, redeploys the function and restarts each node's services, one
# node at a time. Everything else is hard-linked from the source payload (never modified: files
# that change are removed and written anew). Prints the new payload's folder.
#
#   ansible/lab/next-bundle.sh [SRC_PAYLOAD (.cache/bundle/payload)] [OUT (.cache/lab/bundle-next)]
# Env: LAB_NEXT_SUFFIX (lab-next), LAB_NEXT_IMAGES (syncmesh-fn listener miso-agent).
set -o errexit -o nounset -o pipefail

src=${1:-.cache/bundle/payload}
out=${2:-.cache/lab/bundle-next}
suffix=${LAB_NEXT_SUFFIX:-lab-next}
read -r -a names <<< "${LAB_NEXT_IMAGES:-syncmesh-fn listener miso-agent}"
[[ -f $src/manifest.json ]] || { echo "next-bundle: no bundle payload at $src (make bundle)" >&2; exit 1; }

rm -rf "$out"; mkdir -p "$out"
cp -al "$src" "$out/payload"
payload=$out/payload
work=$(mktemp -d "${TMPDIR:-/tmp}/smn-next-bundle.XXXXXX"); trap 'rm -rf "$work"' EXIT
for name in "${names[@]}"; do
  version=$(cat "$src/images/$name.ref")
  next="${version%%-"$suffix"}-$suffix"
  rm -rf "$work/layout"; mkdir -p "$work/layout"
  tar -xf "$src/images/$name.oci.tar" -C "$work/layout"
  jq -c --arg ref "localhost/syncmesh-edge/$name:$next" --arg v "$next" \
    '.manifests[0].annotations["io.containerd.image.name"] = $ref | .manifests[0].annotations["org.opencontainers.image.ref.name"] = $v' \
    "$work/layout/index.json" > "$work/index.json"
  mv "$work/index.json" "$work/layout/index.json"
  rm -f "$payload/images/$name.oci.tar" "$payload/images/$name.ref"
  (cd "$work/layout" && tar --sort=name --format=posix -cf - oci-layout index.json blobs) > "$payload/images/$name.oci.tar"
  echo "$next" > "$payload/images/$name.ref"
  echo "next-bundle: $name $version -> $next" >&2
done
rm -f "$payload/SHA256SUMS" "$payload/manifest.json"
(cd "$payload" && find . -type f ! -name SHA256SUMS ! -name manifest.json -printf '%P\n' | LC_ALL=C sort | xargs -r sha256sum > SHA256SUMS)
jq --arg s "$suffix" '.version += "-" + $s' "$src/manifest.json" > "$work/manifest.json"
python3 - "$payload" "$work/manifest.json" <<'PY'
import json, os, sys
payload, manifest = sys.argv[1], json.load(open(sys.argv[2]))
manifest["files"] = []
for line in open(os.path.join(payload, "SHA256SUMS")):
    digest, path = line.rstrip("\n").split("  ", 1)
    manifest["files"].append({"path": path, "sha256": digest, "bytes": os.path.getsize(os.path.join(payload, path))})
json.dump(manifest, open(os.path.join(payload, "manifest.json"), "w"), indent=2)
PY
echo "$payload"
