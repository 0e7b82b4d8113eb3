#!/usr/bin/env bash
# make bundle: one tarball for air-gapped installs. It holds the Ansible collection and playbooks
# (ansible/), and a payload: a flat apt repository per Debian suite and architecture (containerd,
# runc, CNI plugins, what the base role installs), the faasd binary per architecture with its
# licences, the images (multi-arch OCI archives + their references), the node's faasd files, and
# SHA256SUMS + manifest.json over all of it. The roles install from the payload with no network
# on the node.
#
# Inputs (contract with the faasd-node work): .cache/faasd/bin/<arch>/faasd,
# .cache/faasd/licenses/<binary>/LICENSE (make faasd-bins); .cache/images/<name>.oci.tar and
# <name>.ref (make images); images/node/ (node.yml, the node description, and prometheus.yml).
# Missing inputs make a partial bundle (listed in manifest.json, and the faasd role refuses it
# naming the make target); BUNDLE_STRICT=1 fails instead.
#
# Env: BUNDLE_SUITES (bookworm), BUNDLE_ARCHES (amd64 arm64), BUNDLE_STRICT (0); the input folders
# BUNDLE_FAASD_DIR (.cache/faasd), BUNDLE_IMAGES_DIR (.cache/images), BUNDLE_NODE_DIR (images/node).
set -o errexit -o nounset -o pipefail

BUNDLE_SUITES=${BUNDLE_SUITES:-bookworm}
BUNDLE_ARCHES=${BUNDLE_ARCHES:-amd64 arm64}
BUNDLE_STRICT=${BUNDLE_STRICT:-0}
faasd_dir=${BUNDLE_FAASD_DIR:-.cache/faasd}
images_dir=${BUNDLE_IMAGES_DIR:-.cache/images}
node_dir=${BUNDLE_NODE_DIR:-images/node}
out=.cache/bundle
payload=$out/payload
version=$(git describe --tags --always --dirty 2>/dev/null || echo dev)
missing=()

rm -rf "$payload"; mkdir -p "$payload"/{apt,faasd,images,node}
for suite in $BUNDLE_SUITES; do
  for arch in $BUNDLE_ARCHES; do
    repo=$(hack/bundle/apt-repo.sh "$suite" "$arch")
    mkdir -p "$payload/apt/$suite"
    cp -al "$repo" "$payload/apt/$suite/$arch"
    rm -f "$payload/apt/$suite/$arch"/.packages-*
  done
done
for arch in $BUNDLE_ARCHES; do
  if [[ -x $faasd_dir/bin/$arch/faasd ]]; then
    mkdir -p "$payload/faasd/bin/$arch"; { cp -l "$faasd_dir/bin/$arch/faasd" "$payload/faasd/bin/$arch/" 2>/dev/null || cp "$faasd_dir/bin/$arch/faasd" "$payload/faasd/bin/$arch/"; }
  else
    missing+=("faasd/bin/$arch/faasd (make faasd-bins)")
  fi
done
[[ -d $faasd_dir/licenses ]] && cp -a "$faasd_dir/licenses" "$payload/faasd/" || missing+=("faasd/licenses (make faasd-bins)")
shopt -s nullglob
images=("$images_dir"/*.oci.tar)
(( ${#images[@]} )) || missing+=("images/*.oci.tar (make images)")
for img in "${images[@]}"; do
  name=$(basename "$img" .oci.tar)
  cp -l "$img" "$payload/images/" 2>/dev/null || cp "$img" "$payload/images/"
  [[ -f $images_dir/$name.ref ]] && cp "$images_dir/$name.ref" "$payload/images/" || missing+=("images/$name.ref (make images)")
done
if [[ -d $node_dir ]]; then cp -a "$node_dir/." "$payload/node/"; else missing+=("node/ (images/node from the faasd-node work)"); fi

if (( ${#missing[@]} )); then
  printf 'bundle: missing %s\n' "${missing[@]}" >&2
  [[ $BUNDLE_STRICT == 1 ]] && { echo "bundle: BUNDLE_STRICT=1: refusing a partial bundle" >&2; exit 1; }
fi
(cd "$payload" && find . -type f ! -name SHA256SUMS ! -name manifest.json -printf '%P\n' | LC_ALL=C sort | xargs -r sha256sum > SHA256SUMS)
python3 - "$payload" "$version" "${missing[@]}" <<'PY'
import json, os, sys
payload, version, missing = sys.argv[1], sys.argv[2], sys.argv[3:]
files = []
for line in open(os.path.join(payload, "SHA256SUMS")):
    digest, path = line.rstrip("\n").split("  ", 1)
    files.append({"path": path, "sha256": digest, "bytes": os.path.getsize(os.path.join(payload, path))})
json.dump({"name": "syncmesh-edge-bundle", "version": version, "partial": bool(missing), "missing": missing,
           "files": files}, open(os.path.join(payload, "manifest.json"), "w"), indent=2)
PY
tarball="$out/syncmesh-edge-bundle-$version.tar"
stage=$(mktemp -d); trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/syncmesh-edge"
git ls-files -z ansible | xargs -0 -I{} cp --parents {} "$stage/syncmesh-edge/"
cp -al "$payload" "$stage/syncmesh-edge/payload"
tar --sort=name --owner=0 --group=0 --numeric-owner --mtime="@${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct)}" \
  -C "$stage" -cf "$tarball" syncmesh-edge
(cd "$out" && sha256sum "$(basename "$tarball")" > "$(basename "$tarball").sha256")
echo "bundle: $tarball ($(du -h "$tarball" | cut -f1))$( (( ${#missing[@]} )) && echo ", PARTIAL: ${#missing[@]} inputs missing, see manifest.json")"
