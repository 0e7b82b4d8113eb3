#!/usr/bin/env bash
# Builds the pinned Terraform toolchain OFFLINE, for this project's machines without internet:
# OpenTofu and every provider the modules use, from the Go module proxy (and the google provider
# from its source snapshot in ../shared/third_party), into a filesystem mirror under
# .cache/terraform. Cached: a run with everything present takes seconds. A pinned version the
# proxy no longer serves fails the run with its name; nothing falls back to another version.
#
# A user with internet needs none of this: install OpenTofu (>= 1.9; the project pins 1.12.6) and
# run `tofu init` in a root (terraform/roots/local or terraform/roots/gcp). It downloads
# the same pinned provider versions (the `version = "..."` constraints are exact) from the public
# registry, checks them against their published, signed checksums and writes those hashes into
# that root's .terraform.lock.hcl. The builds here are not the published binaries (their hashes
# differ), which is why the repository commits no lock file and this machine keeps its own under
# .cache (terraform/hack/tf.sh; terraform/hack/check_locks.py fails on a committed lock file
# holding a hash of a build from here).
#
#   terraform/hack/toolchain.sh            build what is missing (all of it)
#   terraform/hack/toolchain.sh --no-google   skip the google provider (8.5 min, 1.9 GB cold)
#
# Outputs (under $TF_CACHE, default .cache/terraform):
#   bin/tofu                        OpenTofu
#   mirror/registry.opentofu.org/NAMESPACE/TYPE/VERSION/linux_amd64/terraform-provider-TYPE_vVERSION
#   tofurc                          CLI config: the mirror only (TF_CLI_CONFIG_FILE points here)
#
# Binaries are built with CGO_ENABLED=0 -trimpath and the local Go toolchain, so the same Go
# version gives the same bytes, and the lock files tofu wrote under .cache/terraform/src keep
# matching. A provider built again drops those lock files (they would pin the old build).
set -o errexit -o nounset -o pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
cache="${TF_CACHE:-$root/.cache/terraform}"
third_party="${THIRD_PARTY:-$root/../shared/third_party}"
# /work/wt/<name> worktrees sit one level deeper than a plain clone next to shared/.
[ -d "$third_party" ] || third_party="$root/../../shared/third_party"
with_google=1
for arg in "$@"; do
  case "$arg" in
    --no-google) with_google=0 ;;
    *) echo "terraform/hack/toolchain.sh: unknown argument $arg (allowed: --no-google)" >&2; exit 2 ;;
  esac
done

TOFU_VERSION=1.12.6
# namespace type version go-module@version
PROVIDERS=(
  "dmacvicar libvirt 0.8.3 github.com/dmacvicar/terraform-provider-libvirt@v0.8.3"
  "hashicorp local 2.9.0 github.com/terraform-providers/terraform-provider-local@v1.4.1-0.20260513075820-3561e410f9fe"
  "hashicorp random 3.9.0 github.com/terraform-providers/terraform-provider-random@v1.3.2-0.20260513075824-f8d869dc98d9"
  "hashicorp time 0.14.2 github.com/hashicorp/terraform-provider-time@v0.14.2"
)
GOOGLE_VERSION=7.45.0
GOOGLE_ARCHIVE="terraform-provider-google-$GOOGLE_VERSION.tar.xz"

export CGO_ENABLED=0 GOTOOLCHAIN=local GOFLAGS="-buildvcs=false -trimpath -mod=mod"
platform="$(go env GOOS)_$(go env GOARCH)"
mirror="$cache/mirror/registry.opentofu.org"
mkdir -p "$cache/bin" "$mirror" "$cache/tmp"

log() { printf 'toolchain: %s\n' "$*" >&2; }
die() { printf 'toolchain: ERROR: %s\n' "$*" >&2; exit 1; }

# Unpacked module source of MODULE@VERSION from the proxy, copied somewhere writable.
module_source() {
  local modver="$1" dest="$2" dir
  if ! dir="$(go mod download -json "$modver" | python3 -c 'import json,sys; d=json.load(sys.stdin); e=d.get("Error"); print(d["Dir"]) if not e else sys.exit(e)')"; then
    die "pinned module $modver is not available from the Go module proxy; pin another version deliberately"
  fi
  rm -rf "$dest"
  cp -r "$dir" "$dest"
  chmod -R u+w "$dest"
}

# go build PKG in SRC to OUT, atomically (a killed build leaves no half binary).
build() {
  local src="$1" pkg="$2" out="$3" ldflags="${4:-}"
  mkdir -p "$(dirname "$out")"
  (cd "$src" && go build -ldflags "-s -w $ldflags" -o "$out.tmp" "$pkg")
  mv -f "$out.tmp" "$out"
}

start=$(date +%s)
tofu="$cache/bin/tofu"
# (the output is read whole first: `tofu version | grep -q` can fail on SIGPIPE under pipefail)
have_version=$([ -x "$tofu" ] && "$tofu" version 2>/dev/null || true)
if grep -q "^OpenTofu v$TOFU_VERSION$" <<<"$have_version"; then
  log "tofu $TOFU_VERSION cached"
else
  log "building OpenTofu $TOFU_VERSION (about 7 min cold)"
  module_source "github.com/opentofu/opentofu@v$TOFU_VERSION" "$cache/tmp/opentofu"
  build "$cache/tmp/opentofu" ./cmd/tofu "$tofu" "-X github.com/opentofu/opentofu/version.dev=no"
  rm -rf "$cache/tmp/opentofu"
fi

for spec in "${PROVIDERS[@]}"; do
  read -r ns type version modver <<<"$spec"
  out="$mirror/$ns/$type/$version/$platform/terraform-provider-${type}_v$version"
  if [ -x "$out" ]; then log "$ns/$type $version cached"; continue; fi
  log "building $ns/$type $version from $modver"
  module_source "$modver" "$cache/tmp/$type"
  build "$cache/tmp/$type" . "$out"
  rm -rf "$cache/tmp/$type"
  rebuilt=1
done

if [ "$with_google" = 1 ]; then
  out="$mirror/hashicorp/google/$GOOGLE_VERSION/$platform/terraform-provider-google_v$GOOGLE_VERSION"
  if [ -x "$out" ]; then
    log "hashicorp/google $GOOGLE_VERSION cached"
  else
    [ -f "$third_party/$GOOGLE_ARCHIVE" ] || die "$third_party/$GOOGLE_ARCHIVE is missing (set THIRD_PARTY=)"
    log "building hashicorp/google $GOOGLE_VERSION from $GOOGLE_ARCHIVE (about 8.5 min and 1.9 GB cold)"
    rm -rf "$cache/tmp/google" && mkdir -p "$cache/tmp/google"
    tar -xJf "$third_party/$GOOGLE_ARCHIVE" -C "$cache/tmp/google"
    src="$(dirname "$(find "$cache/tmp/google" -maxdepth 2 -name go.mod | head -n1)")"
    build "$src" . "$out"
    rm -rf "$cache/tmp/google"
    rebuilt=1
  fi
fi
# the lock files of this machine's offline runs pin the hashes of the previous builds
if [ "${rebuilt:-0}" = 1 ] && [ -d "$cache/src" ]; then
  find "$cache/src" -name .terraform.lock.hcl -delete
  log "providers built: dropped the lock files under $cache/src (tofu init writes new ones)"
fi

# The CLI config: providers come from the mirror and nowhere else, so a missing pinned provider
# is an error of `tofu init`, never a silent download attempt.
cat >"$cache/tofurc.tmp" <<RC
provider_installation {
  filesystem_mirror {
    path    = "$cache/mirror"
    include = ["registry.opentofu.org/*/*"]
  }
}
RC
mv -f "$cache/tofurc.tmp" "$cache/tofurc"
log "done in $(($(date +%s) - start)) s: $tofu, mirror $cache/mirror, TF_CLI_CONFIG_FILE=$cache/tofurc (offline builds; with internet, plain tofu init downloads the published providers instead)"
