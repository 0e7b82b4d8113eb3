#!/usr/bin/env bash
# Builds the functions of an OpenFaaS stack file made from the repository's templates
# (template/miso-node20, template/syncmesh-query-node20) without a Docker engine, for several
# architectures, and pushes them to a node's registry:
#
#   hack/fn-build.sh -f stack.yml --registry HOST:PORT --auth-file FILE [--filter NAME] [--tag TAG] [--arch amd64,arm64]
#
#   1. faas-cli build --shrinkwrap (the upstream CLI, hack/faas-cli.sh): build/<name>/ with the
#      template's Dockerfile and the handler folder
#   2. the templates' base image (images/fn-node20, every architecture) into the registry, once
#      (from IMAGES_DIR/fn-node20.oci.tar)
#   3. buildah bud --platform linux/<arch>,... --manifest, FROM the base in the registry (the
#      Dockerfile only copies files: no emulation), then buildah manifest push --all to
#      HOST:PORT/<image>:<tag> (the stack's image name without a registry; --tag overrides its tag)
#
# Prints one line per function: NAME HOST:PORT/IMAGE:TAG. FILE holds user:password (the node's
# registry_auth_file); it goes to skopeo and buildah in a temporary auth file, never on a command line.
# Env: FAAS_CLI (default: hack/faas-cli.sh builds it), IMAGES_DIR (default .cache/images).
set -o errexit -o nounset -o pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
stack="" registry="" auth_file="" filter="" tag="" arches=$(dpkg --print-architecture)
fail() { echo "fn-build: $*" >&2; exit 1; }
while (($#)); do
  case $1 in
    -f | --yaml) stack=$2; shift 2 ;;
    --registry) registry=$2; shift 2 ;;
    --auth-file) auth_file=$2; shift 2 ;;
    --filter) filter=$2; shift 2 ;;
    --tag) tag=$2; shift 2 ;;
    --arch) arches=${2//,/ }; shift 2 ;;
    *) fail "unknown argument $1 (see the comment at the top of $0)" ;;
  esac
done
[[ -r $stack ]] || fail "-f: the stack file '$stack' is not readable"
[[ $registry =~ ^[A-Za-z0-9.-]+:[0-9]+$ ]] || fail "--registry must be host:port (the node's registry in topology.json), not '$registry'"
[[ -r $auth_file ]] || fail "--auth-file must name a readable file holding user:password (the node's registry_auth_file)"
[[ -z $tag || $tag =~ ^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$ ]] || fail "--tag '$tag' is not a valid tag"
for a in $arches; do [[ $a == amd64 || $a == arm64 ]] || fail "--arch: amd64 and/or arm64, not $a"; done
for t in buildah skopeo python3; do command -v "$t" >/dev/null || fail "$t is missing (make images-tools)"; done
faas_cli=${FAAS_CLI:-$("$repo/hack/faas-cli.sh")}
images_dir=${IMAGES_DIR:-$repo/.cache/images}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
creds=$(tr -d '\n' < "$auth_file")
[[ $creds == *:* ]] || fail "$auth_file must hold user:password"
(umask 077 && printf '{"auths":{"%s":{"auth":"%s"}}}\n' "$registry" "$(printf '%s' "$creds" | base64 -w0)" > "$work/auth.json")
tls=(--tls-verify=false) # the node's registry speaks plain HTTP with basic auth, like its gateway

# the stack's functions from our templates: name, image, handler language
mapfile -t fns < <(python3 - "$stack" "$filter" <<'PY'
import sys, yaml
stack, only = sys.argv[1], sys.argv[2]
doc = yaml.safe_load(open(stack)) or {}
for name, fn in (doc.get("functions") or {}).items():
    if only and name != only:
        continue
    print(name, fn.get("image", f"{name}:latest"), fn.get("lang", "-"))
PY
)
((${#fns[@]} > 0)) || fail "no function${filter:+ named $filter} in $stack"

(cd "$(dirname "$stack")" && "$faas_cli" build --shrinkwrap -f "$(basename "$stack")" ${filter:+--filter "$filter"} >&2) || fail "faas-cli build --shrinkwrap failed (above)"
platforms=$(for a in $arches; do printf 'linux/%s,' "$a"; done); platforms=${platforms%,}

for line in "${fns[@]}"; do
  read -r name image lang <<< "$line"
  dir="$(dirname "$stack")/build/$name"
  [[ -f $dir/Dockerfile ]] || fail "$dir/Dockerfile is missing after faas-cli build --shrinkwrap"
  base=$(sed -n 's/^ARG BASE=//p' "$dir/Dockerfile" | head -n1)
  [[ $base == localhost/syncmesh-edge/* ]] || fail "$name (lang $lang) is not built from one of the repository's templates (no ARG BASE=localhost/syncmesh-edge/... in its Dockerfile)"
  base_in_registry="$registry/${base#localhost/}"
  if ! skopeo inspect --raw --authfile "$work/auth.json" "${tls[@]}" "docker://$base_in_registry" > "$work/base.json" 2>/dev/null; then
    archive="$images_dir/$(basename "${base%%:*}").oci.tar"
    [[ -r $archive ]] || fail "the templates' base $base is neither in $registry nor at $archive (make images IMAGE_NAMES=fn-node20)"
    echo "fn-build: the templates' base into $registry (once): $base_in_registry" >&2
    skopeo copy --quiet --all --authfile "$work/auth.json" --dest-tls-verify=false "oci-archive:$archive" "docker://$base_in_registry" >&2 ||
      fail "cannot push the base to $registry (above): check the credentials in $auth_file and the registry's free space"
  fi
  repo_tag=${image##*/}
  [[ $image == */* && ${image%%/*} != *[.:]* ]] && repo_tag=$image # keep a path without a registry host
  [[ $repo_tag == *:* ]] || repo_tag="$repo_tag:latest"
  [[ -n $tag ]] && repo_tag="${repo_tag%:*}:$tag"
  manifest="localhost/fn-build/$name:$$"
  buildah manifest rm "$manifest" >/dev/null 2>&1 || true
  echo "fn-build: $name for $platforms" >&2
  buildah bud --quiet --layers=false --platform "$platforms" --manifest "$manifest" --build-arg "BASE=$base_in_registry" \
    --authfile "$work/auth.json" "${tls[@]}" "$dir" >&2 || fail "buildah could not build $name (above)"
  buildah manifest push --quiet --all --authfile "$work/auth.json" "${tls[@]}" "$manifest" "docker://$registry/$repo_tag" >&2 ||
    fail "cannot push $name to $registry (above): check the credentials in $auth_file and the registry's free space"
  buildah manifest rm "$manifest" >/dev/null 2>&1 || true
  echo "$name $registry/$repo_tag"
done
