#!/usr/bin/env bash
# A base layer from Debian packages, for one architecture, without running any maintainer
# script (mmdebstrap --variant=extract: the packages and their dependencies are unpacked, so
# arm64 needs no emulation), then cut down to what a program needs at run time.
#
#   images/build/debian-layer.sh KIND ARCH OUTDIR
#
# KIND is one of the recipes below (node: Debian trixie's nodejs 20 with its shared libraries,
# no npm, no shell; libc: bookworm's C library for a dynamically linked Go binary; jre-libs:
# the libraries of a jlink'd Java runtime). Writes OUTDIR/layer.tar (every mtime clamped to the
# newest file of the packages, so the layer's digest depends on the packages only),
# OUTDIR/packages.txt ("name version arch", the exact package versions) and OUTDIR/rootfs/.
set -o errexit -o nounset -o pipefail

kind=${1:?kind: node | libc | jre-libs}
arch=${2:?arch: amd64 | arm64}
out=${3:?outdir}
# shellcheck source=images/build/lib.sh
source "$(dirname "$0")/lib.sh"

# Recipes: suite and the packages whose dependency closure is unpacked.
case $kind in
  node) suite=trixie packages=nodejs ;;
  libc) suite=bookworm packages=libc6 ;;
  jre-libs) suite=bookworm packages=libc6,zlib1g ;;
  *) die "unknown base layer kind: $kind" ;;
esac

rm -rf "$out"
mkdir -p "$out"
root="$out/rootfs"
log "base layer $kind ($arch): unpacking Debian $suite packages ($packages and their dependencies)"
# Debian's own sources (no mirror given: mmdebstrap uses Debian's default mirror); the
# downloaded .deb files are kept until their names have been recorded.
mmdebstrap --quiet --variant=extract --architectures="$arch" --include="$packages" \
  --aptopt='APT::Install-Recommends "false"' --skip=download/empty,cleanup/apt \
  "$suite" "$root" >&2

# The exact package versions, from the .deb names (name_version_arch.deb; version has %3a for ':').
find "$root/var/cache/apt/archives" -name '*.deb' -printf '%f\n' | LC_ALL=C sort \
  | sed -E 's/\.deb$//; s/%3a/:/g; s/_/ /g' > "$out/packages.txt"

# What a program needs at run time: the libraries, the dynamic loader, each package's copyright.
t=$(triplet "$arch")
prune_common() {
  rm -rf "$root/var" "$root/dev" "$root/etc" "$root/run" "$root/tmp" "$root/usr/share/man" \
    "$root/usr/share/lintian" "$root/usr/share/locale" "$root/usr/share/bug" "$root/usr/share/info" \
    "$root/usr/lib/$t/gconv" "$root/usr/libexec" "$root/usr/sbin" "$root/sbin"
  # keep /usr/share/doc/<pkg>/copyright (the licence of every package), nothing else of the docs
  find "$root/usr/share/doc" -mindepth 1 \( -type f -o -type l \) ! -name copyright -delete
  find "$root/usr/share/doc" -mindepth 1 -type d -empty -delete
  # merged /usr: the loader is looked up under /lib (/lib64 on amd64)
  ln -sfn usr/lib "$root/lib"
  [[ $arch == amd64 ]] && ln -sfn usr/lib64 "$root/lib64"
  ln -sfn usr/bin "$root/bin"
  return 0
}

case $kind in
  node)
    # node only: no corepack, no npm, no acorn CLI, no TypeScript typings.
    find "$root/usr/bin" -mindepth 1 ! -name node -delete
    rm -rf "$root/usr/share/nodejs/corepack" "$root/usr/share/nodejs/@types" "$root/usr/share/nodejs/undici-types"
    find "$root/usr/share/nodejs" -name '*.d.ts' -delete
    prune_common
    # Debian's node reads extra CAs from this file and warns when it is missing: an empty
    # placeholder (mount a CA bundle over it to trust more roots).
    install -d -m 0755 "$root/etc/ssl/certs"
    : > "$root/etc/ssl/certs/ca-certificates.crt"
    ;;
  libc | jre-libs)
    rm -rf "$root/usr/bin"
    prune_common
    ;;
esac

# Clamp every mtime to the newest file the packages shipped (stable across commits and days).
epoch=$(find "$root" -type f -printf '%T@\n' | sort -n | tail -n1 | cut -d. -f1)
chown -R 0:0 "$root"
make_tar "$root" "$out/layer.tar" "$epoch"
printf '%s\n' "$epoch" > "$out/epoch"
log "base layer $kind ($arch): $(wc -l < "$out/packages.txt") packages, $(du -sm "$root" | cut -f1) MB unpacked"
