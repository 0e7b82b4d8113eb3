#!/usr/bin/env bash
# The database an appliance image carries, from MONGO_IMAGE (shared by the VM and the Pi image):
#
#   (empty)      the MongoDB-compatible test server (mongo-java-server): the images built and
#                tested here; the node says so on its console and at its health URL
#   PATH         an OCI archive of MongoDB's official image, bundled and preloaded: no network
#                needed at first boot. Made on a machine with internet, e.g.
#                  skopeo copy --override-arch amd64 docker://<mongodb_image_repository>:7.0 \
#                    oci-archive:mongo-7.0-amd64.oci.tar:<mongodb_image_repository>:7.0
#   pull[:REF]   the official image, pulled by the node at first boot (it needs internet then,
#                and says so while it waits); REF defaults to the Ansible mongodb role's
#                repository and version: mongodb_version_modern (x86-64) or
#                mongodb_version_legacy (arm64: the Pi image is for the Pi 4's ARMv8.0)
#
#   mongo-image.sh check ARCH     validates MONGO_IMAGE before anything long is built and prints
#                                 "<kind> <source> <reference> <version>" (kind: test-server or
#                                 mongodb; source: bundled, pull or -)
#   mongo-image.sh render REF OUT the mongodb service's compose settings for the official image:
#                                 the Ansible mongodb role's templates/compose-official.yml.j2
#                                 with the role's defaults (node-prepare.sh merges them in)
#
# Env: MONGO_IMAGE (above), MONGO_IMAGE_REF (the reference of an archive whose index names none,
# or names a bare tag).
set -o errexit -o nounset -o pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
role=$repo/ansible/collections/ansible_collections/syncmesh/edge/roles/mongodb
fail() { echo "mongo-image: $*" >&2; exit 1; }

# a value of the mongodb role's defaults/main.yml
role_default() { python3 -c 'import sys, yaml; print(yaml.safe_load(open(sys.argv[1]))[sys.argv[2]])' "$role/defaults/main.yml" "$1"; }

# the tag's version: 7.0 of ...mongo:7.0, 4.4.18 of ...mongo:4.4.18-focal
version_of() {
  local ref=$1 tag
  [[ $ref != *@* ]] || fail "$ref: name the image by a tag with its version (such as :7.0 or :4.4.18), not by a digest"
  tag=${ref##*:}
  [[ $ref == *:* && $tag != */* && $tag =~ ^([0-9]+\.[0-9]+(\.[0-9]+)?) ]] \
    || fail "cannot tell MongoDB's version from $ref: use a versioned tag such as :7.0 or :4.4.18"
  printf '%s' "${BASH_REMATCH[1]}"
}

check() {
  local arch=${1:?usage: mongo-image.sh check ARCH} ref version source arch_seen
  [[ $arch == amd64 || $arch == arm64 ]] || fail "ARCH must be amd64 or arm64, not $arch"
  local image=${MONGO_IMAGE:-}
  if [[ -z $image ]]; then
    echo "test-server - - -"
    return
  fi
  if [[ $image == pull || $image == pull:* ]]; then
    source=pull
    ref=${image#pull}
    ref=${ref#:}
    if [[ -z $ref ]]; then
      if [[ $arch == arm64 ]]; then version=$(role_default mongodb_version_legacy); else version=$(role_default mongodb_version_modern); fi
      ref="$(role_default mongodb_image_repository):$version"
    fi
    [[ $ref == */*:* ]] || fail "MONGO_IMAGE=pull:$ref: give a full reference (repository/name:version), as containerd pulls it"
  else
    source=bundled
    [[ -f $image && -r $image ]] || fail "MONGO_IMAGE=$image is neither a readable OCI archive nor pull[:REF]"
    local index
    # (archives made with `tar -C layout .` name it ./index.json)
    index=$(tar -xOf "$image" index.json 2> /dev/null || tar -xOf "$image" ./index.json 2> /dev/null) || fail "MONGO_IMAGE=$image is not an OCI archive (no index.json; make one with skopeo copy ... oci-archive:FILE:REF)"
    ref=${MONGO_IMAGE_REF:-$(python3 -c '
import json, sys
names = [m.get("annotations", {}).get("org.opencontainers.image.ref.name", "") for m in json.loads(sys.stdin.read()).get("manifests", [])]
print(next((n for n in names if n), ""))' <<< "$index")}
    [[ -n $ref ]] || fail "MONGO_IMAGE=$image names no image reference: set MONGO_IMAGE_REF (such as $(role_default mongodb_image_repository):7.0)"
    # a bare tag (skopeo copy ... oci-archive:FILE:7.0) is the role's repository
    [[ $ref == *:* ]] || ref="$(role_default mongodb_image_repository):$ref"
    [[ $ref == */* ]] || fail "the image reference $ref of $image is not a full reference (repository/name:version): set MONGO_IMAGE_REF"
    command -v skopeo > /dev/null || fail "skopeo is missing (make images-tools)"
    arch_seen=$(skopeo inspect --override-arch "$arch" --override-os linux --format '{{.Architecture}}' "oci-archive:$image" 2>&1) \
      || fail "MONGO_IMAGE=$image has no linux/$arch image skopeo can read: $arch_seen"
    [[ $arch_seen == "$arch" ]] || fail "MONGO_IMAGE=$image holds a linux/$arch_seen image; this build needs linux/$arch"
  fi
  version=$(version_of "$ref")
  if [[ $arch == arm64 && ${version%%.*} -ge 5 ]]; then
    fail "MONGO_IMAGE names MongoDB $version, but the Pi image is for the Pi 4 / Pi 400 / CM4, whose ARMv8.0 CPU runs MongoDB 4.4 at most (5.0+ needs ARMv8.2-A): use $(role_default mongodb_image_repository):$(role_default mongodb_version_legacy). A Pi 5 runs Raspberry Pi OS with the Ansible roles (docs/guides/flash-a-node.md)"
  fi
  echo "mongodb $source $ref $version"
}

render() {
  local ref=${1:?usage: mongo-image.sh render REF OUT} out=${2:?usage: mongo-image.sh render REF OUT}
  python3 - "$role" "$ref" "$out" << 'PY'
import re, sys, jinja2, yaml
role, ref, out = sys.argv[1:]
values = yaml.safe_load(open(f"{role}/defaults/main.yml"))
values = {k: v for k, v in values.items() if isinstance(v, (str, int)) and "{{" not in str(v)}
# the node's own folders, relative to faasd's /var/lib/faasd as the rest of docker-compose.yaml
values.update(mongodb_image_ref=ref, mongodb_data_dir="./mongodb", mongodb_secrets_dir="./secrets")
env = jinja2.Environment(loader=jinja2.FileSystemLoader(f"{role}/templates"), undefined=jinja2.StrictUndefined, trim_blocks=True)  # as Ansible renders
env.tests["search"] = lambda value, pattern: re.search(pattern, value) is not None  # Ansible's test of that name
text = env.get_template("compose-official.yml.j2").render(**values)
yaml.safe_load(text)  # it must be YAML
with open(out, "w") as f:
    f.write(f"# The mongodb service's settings for {ref}: the Ansible mongodb role's compose-official.yml.j2\n")
    f.write("# with the role's defaults (images/appliance/mongo-image.sh); node-prepare.sh merges them in.\n")
    f.write(text.rstrip("\n") + "\n")
PY
}

case ${1:-} in
  check) shift; check "$@" ;;
  render) shift; render "$@" ;;
  *) fail "usage: mongo-image.sh check ARCH | render REF OUT" ;;
esac
