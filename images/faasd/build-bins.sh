#!/usr/bin/env bash
# Build every Go binary a faasd node runs, for amd64 and arm64, from the MIT source snapshots in
# ../shared/third_party (faasd, gateway, of-watchdog, queue worker) and the Go module proxy
# (NATS Streaming, nats-server); Prometheus is taken from Debian's package.
#
# Output (never committed):
#   .cache/faasd/bin/<arch>/{faasd,gateway,fwatchdog,queue-worker,nats-streaming-server,nats-server,prometheus,registry}
#   .cache/faasd/bin/<arch>/prometheus.NOTE   only when Debian's prometheus is not static
#   .cache/faasd/licenses/<binary>/LICENSE
#
# Cached: each binary has a stamp holding the hash of its inputs (archive, patches, this script,
# Go version); a second run with nothing changed only compares stamps.
#
# Env: THIRD_PARTY_DIR (default: ../shared/third_party beside the repo, else /work/shared/third_party)
#      FAASD_ARCHES (default "amd64 arm64")
#      FAASD_BINS (default: every binary; else the ones named, e.g. "nats-server gateway")
set -o errexit -o nounset -o pipefail

repo=$(cd "$(dirname "$0")/../.." && pwd)
here="$repo/images/faasd"
cache="$repo/.cache/faasd"
arches=${FAASD_ARCHES:-"amd64 arm64"}

if [[ -z "${THIRD_PARTY_DIR:-}" ]]; then
  for d in "$repo/../shared/third_party" "/work/shared/third_party"; do
    if [[ -d "$d" ]]; then THIRD_PARTY_DIR=$d; break; fi
  done
fi
: "${THIRD_PARTY_DIR:?set THIRD_PARTY_DIR to the folder holding faasd-0.19.0.tar.xz etc.}"

# Pinned inputs: archive name, Go package dir inside it, binary name, version, commit, ldflags.
FAASD_VER=0.19.0;      FAASD_COMMIT=e4848cd829286c174bda45b40fc8c5ae5c571d08
GATEWAY_VER=0.27.5;    GATEWAY_COMMIT=5c13f1f01c6a9f596857d81c889d77bd04fbc5c1
WATCHDOG_VER=0.10.0;   WATCHDOG_COMMIT=a7b8b445544451dab9a1f4457780e74b43966f63
QWORKER_VER=0.14.1;    QWORKER_COMMIT=fa54e89c9db2eb4c11d141031850e171b9a073f9
NATS_STREAMING_VER=0.25.6
NATS_SERVER_VER=2.15.3
PROMETHEUS_DEB_VER=${PROMETHEUS_DEB_VER:-}   # empty: the candidate apt offers
REGISTRY_DEB_VER=${REGISTRY_DEB_VER:-}       # docker-registry (distribution 2.8); empty: the candidate

export GOTOOLCHAIN=local CGO_ENABLED=0 GOOS=linux GOFLAGS=-buildvcs=false
go_version=$(go env GOVERSION)
script_hash=$(sha256sum "$0" | cut -c1-16)

log() { printf 'faasd-bins: %s\n' "$*" >&2; }
# want BINARY: true when FAASD_BINS is empty (build everything) or names BINARY.
want() { [[ -z ${FAASD_BINS:-} || " $FAASD_BINS " == *" $1 "* ]]; }

# stamp_ok NAME ARCH HASH: true when the binary exists and was built from the same inputs.
stamp_ok() {
  local bin="$cache/bin/$2/$1" stamp="$cache/stamps/$2/$1"
  [[ -x "$bin" && -f "$stamp" && "$(cat "$stamp")" == "$3" ]]
}
# Files in .cache may be hard links shared with other clones: never write one in place, write a
# new file and rename it over the old (put FILE < content; install_new SRC DST).
put() { cat > "$1.new.$$" && mv -f "$1.new.$$" "$1"; }
install_new() { cp "$1" "$2.new.$$" && mv -f "$2.new.$$" "$2"; }
stamp_write() { mkdir -p "$cache/stamps/$2"; printf '%s' "$3" | put "$cache/stamps/$2/$1"; }

patch_hash() { # hash of the patches carried for one source tree (empty when none)
  local dir="$here/patches/$1"
  if [[ -d "$dir" ]]; then cat "$dir"/*.patch 2>/dev/null | sha256sum | cut -c1-16; else echo none; fi
}

# unpack NAME: unpack the archive fresh into .cache/faasd/src/NAME and apply our patches.
declare -A unpacked=()
unpack() {
  local name=$1 tree="$cache/src/$1"
  [[ -n "${unpacked[$name]:-}" ]] && return 0
  rm -rf "$tree"; mkdir -p "$cache/src"
  tar -xJf "$THIRD_PARTY_DIR/$name.tar.xz" -C "$cache/src"
  if [[ -d "$here/patches/$name" ]]; then
    local p
    for p in "$here/patches/$name"/*.patch; do
      [[ -f "$p" ]] || continue
      log "patch $name < ${p#"$repo/"}"
      patch -s -p1 -d "$tree" < "$p"
    done
  fi
  unpacked[$name]=1
}

# build_vendored ARCHIVE PKGDIR BINARY LDFLAGS LICENSE [TESTPKGS]
# TESTPKGS: Go packages (relative to PKGDIR) whose tests cover our patches; they run once, for
# the host, before the binary is built (only when it is built).
build_vendored() {
  local archive=$1 pkgdir=$2 binary=$3 ldflags=$4 license=$5 testpkgs=${6:-} arch tested=""
  local in_hash
  in_hash=$(printf '%s %s %s %s %s' "$(sha256sum "$THIRD_PARTY_DIR/$archive.tar.xz" | cut -c1-16)" \
    "$(patch_hash "$archive")" "$script_hash" "$go_version" "$ldflags" | sha256sum | cut -c1-32)
  for arch in $arches; do
    if stamp_ok "$binary" "$arch" "$in_hash"; then continue; fi
    unpack "$archive"
    if [[ -n $testpkgs && -z $tested ]]; then
      log "test $archive: $testpkgs (the tests of our patches)"
      # shellcheck disable=SC2086 # a list of packages
      (cd "$cache/src/$archive/$pkgdir" && GOPROXY=off GOARCH= go test -mod=vendor $testpkgs >&2)
      tested=1
    fi
    log "build $binary ($arch) from $archive"
    local t0=$SECONDS
    mkdir -p "$cache/bin/$arch"
    (cd "$cache/src/$archive/$pkgdir" &&
      GOPROXY=off GOARCH=$arch go build -mod=vendor -trimpath \
        -ldflags "-s -w -buildid= $ldflags" -o "$cache/bin/$arch/$binary.new.$$" . &&
      mv -f "$cache/bin/$arch/$binary.new.$$" "$cache/bin/$arch/$binary")
    log "built $binary ($arch) in $((SECONDS - t0)) s"
    stamp_write "$binary" "$arch" "$in_hash"
  done
  mkdir -p "$cache/licenses/$binary"
  if [[ ! -f "$cache/licenses/$binary/LICENSE" ]]; then
    unpack "$archive"
    install_new "$cache/src/$archive/$license" "$cache/licenses/$binary/LICENSE"
  fi
}

want faasd && build_vendored faasd-0.19.0 . faasd \
  "-X main.Version=$FAASD_VER -X main.GitCommit=$FAASD_COMMIT" LICENSE "./pkg/ ./pkg/provider/handlers/"
want gateway && build_vendored faas-gateway-0.27.5 gateway gateway \
  "-X github.com/openfaas/faas/gateway/version.GitCommitSHA=$GATEWAY_COMMIT -X github.com/openfaas/faas/gateway/version.Version=$GATEWAY_VER" LICENSE "./scaling/ ./types/ ./queue/ ./handlers/"
want fwatchdog && build_vendored of-watchdog-0.10.0 . fwatchdog \
  "-X main.Version=$WATCHDOG_VER -X main.GitCommit=$WATCHDOG_COMMIT" LICENSE
want queue-worker && build_vendored nats-queue-worker-0.14.1 . queue-worker \
  "-X github.com/openfaas/nats-queue-worker/version.GitCommit=$QWORKER_COMMIT -X github.com/openfaas/nats-queue-worker/version.Version=$QWORKER_VER" LICENSE

# build_module BINARY MODULE VERSION [PKG]: a Go module from the Go module proxy (its go.sum pins
# every dependency), downloaded once and built in a writable copy; PKG is the main package inside it.
build_module() {
  local binary=$1 module=$2 version=$3 pkg=${4:-.} arch hash mod_dir tree
  hash=$(printf '%s %s %s %s' "$module@$version" "$script_hash" "$go_version" "$pkg" | sha256sum | cut -c1-32)
  for arch in $arches; do
    stamp_ok "$binary" "$arch" "$hash" && continue
    mod_dir=$(GOFLAGS=-mod=mod go mod download -json "$module@$version" |
      python3 -c 'import json,sys; print(json.load(sys.stdin)["Dir"])')
    tree="$cache/src/$binary-$version"
    if [[ ! -f "$tree/go.mod" ]]; then
      rm -rf "$tree"; mkdir -p "$tree"; cp -r "$mod_dir/." "$tree"; chmod -R u+w "$tree"
    fi
    log "build $binary ($arch) $version"
    local t0=$SECONDS
    mkdir -p "$cache/bin/$arch"
    (cd "$tree" && GOARCH=$arch go build -mod=mod -trimpath -ldflags "-s -w -buildid=" \
      -o "$cache/bin/$arch/$binary.new.$$" "$pkg" && mv -f "$cache/bin/$arch/$binary.new.$$" "$cache/bin/$arch/$binary")
    log "built $binary ($arch) in $((SECONDS - t0)) s"
    mkdir -p "$cache/licenses/$binary"
    install_new "$tree/LICENSE" "$cache/licenses/$binary/LICENSE"
    stamp_write "$binary" "$arch" "$hash"
  done
}

# NATS Streaming (what the unpatched gateway's async path speaks) and nats-server with JetStream
# (the mesh's NATS: coordination objects and, with gateway patch 0003, the async queue).
want nats-streaming-server && build_module nats-streaming-server github.com/nats-io/nats-streaming-server "v$NATS_STREAMING_VER"
want nats-server && build_module nats-server github.com/nats-io/nats-server/v2 "v$NATS_SERVER_VER"

# Prometheus and the registry (distribution) from Debian's packages (amd64 + arm64), extracted.
deb_fetch() { # PACKAGE ARCH [VERSION] -> path of the .deb
  local pkg=$1 arch=$2 ver=${3:-} dir="$cache/debs/$2" deb
  mkdir -p "$dir"
  deb=$(ls "$dir"/"$pkg"_*_"$arch".deb 2>/dev/null | head -n1 || true)
  if [[ -z "$deb" ]]; then
    if [[ "$arch" != "$(dpkg --print-architecture)" ]] &&
       ! dpkg --print-foreign-architectures | grep -qx "$arch"; then
      log "adding dpkg architecture $arch so apt can fetch its packages"
      dpkg --add-architecture "$arch"
      apt-get update -qq
    fi
    (cd "$dir" && apt-get download -qq "$pkg:$arch${ver:+=$ver}" >&2)
    deb=$(ls "$dir"/"$pkg"_*_"$arch".deb | head -n1)
  fi
  printf '%s' "$deb"
}
deb_stamp() { # DEB -> the stamp of a binary taken from it (the .deb and this script)
  printf '%s %s' "$(sha256sum "$1" | cut -c1-16)" "$script_hash" | sha256sum | cut -c1-32
}
# deb_install NAME BINARY ARCH DEB: unpacks DEB in $x, installs its /usr/bin/BINARY as
# bin/ARCH/NAME and its package's copyright as licenses/NAME/LICENSE.
deb_install() {
  local name=$1 bin=$2 arch=$3 deb=$4 pkg
  pkg=${deb##*/}; pkg=${pkg%%_*}
  log "extract $name ($arch) from ${deb##*/}"
  x="$cache/debs/$arch/x"; rm -rf "$x"; dpkg-deb -x "$deb" "$x"
  mkdir -p "$cache/bin/$arch" "$cache/licenses/$name"
  install_new "$x/usr/bin/$bin" "$cache/bin/$arch/$name"
  install_new "$x/usr/share/doc/$pkg/copyright" "$cache/licenses/$name/LICENSE"
}
for arch in $arches; do
  want prometheus || break
  deb=$(deb_fetch prometheus "$arch" "$PROMETHEUS_DEB_VER")
  deb_hash=$(deb_stamp "$deb")
  stamp_ok prometheus "$arch" "$deb_hash" && continue
  deb_install prometheus prometheus "$arch" "$deb"
  note="$cache/bin/$arch/prometheus.NOTE"
  kind=$(file -b "$cache/bin/$arch/prometheus")
  if [[ "$kind" == *"statically linked"* ]]; then
    rm -f "$note"
  else
    { echo "Debian's prometheus ${deb##*/} is NOT static: $kind"
      echo "It needs (from the same Debian release, same architecture):"
      if [[ "$arch" == "$(dpkg --print-architecture)" ]]; then ldd "$cache/bin/$arch/prometheus" || true
      else readelf -d "$cache/bin/$arch/prometheus" | grep NEEDED || true; fi
      echo "An image must carry these libraries (e.g. libc6 from Debian) beside it."
    } | put "$note"
  fi
  # Web assets and consoles Debian ships with the binary (prometheus serves them).
  rm -rf "$cache/bin/$arch/prometheus-share"
  [[ -d "$x/usr/share/prometheus" ]] && cp -r "$x/usr/share/prometheus" "$cache/bin/$arch/prometheus-share"
  stamp_write prometheus "$arch" "$deb_hash"
done

# The node's registry: Debian's docker-registry (distribution 2.8, Apache-2.0; a Go binary).
for arch in $arches; do
  want registry || break
  deb=$(deb_fetch docker-registry "$arch" "$REGISTRY_DEB_VER")
  deb_hash=$(deb_stamp "$deb")
  stamp_ok registry "$arch" "$deb_hash" && continue
  deb_install registry docker-registry "$arch" "$deb"
  kind=$(file -b "$cache/bin/$arch/registry")
  if [[ "$kind" == *"statically linked"* ]]; then rm -f "$cache/bin/$arch/registry.NOTE"
  else echo "Debian's docker-registry ${deb##*/} is NOT static: $kind" | put "$cache/bin/$arch/registry.NOTE"; fi
  stamp_write registry "$arch" "$deb_hash"
done

for arch in $arches; do
  (cd "$cache/bin/$arch" && for b in faasd gateway fwatchdog queue-worker nats-streaming-server nats-server prometheus registry; do
    if [[ -f $b ]]; then sha256sum "$b"; fi
  done | put SHA256SUMS)
done
log "done: $(for a in $arches; do printf '%s ' "$cache/bin/$a"; done)"
