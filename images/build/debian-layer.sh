#!/usr/bin/env bash
# A base layer from Debian packages, for one architecture, without running any maintainer
# script (mmdebstrap --variant=extract: the packages and their dependencies are unpacked, so
# arm64 needs no emulation), then cut down to what a program needs at run time.
#
#   images/build/debian-layer.sh KIND ARCH OUTDIR
#
# KIND is one of the recipes below (node: Debian trixie's nodejs 20 with its shared libraries,
# no npm, no shell; libc: bookworm's C library for a dynamically linked Go binary; jre: a
# minimal Java 17 runtime made by jlink from Debian bookworm's openjdk-17 jmods of ARCH, with
# the libraries it links). Writes OUTDIR/layer.tar (every mtime clamped to the
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
  jre) suite=bookworm packages=libc6,zlib1g,libstdc++6 ;;
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

# Modules of the jlink'd runtime (what the MongoDB test server and its libraries use).
JRE_MODULES=java.base,java.logging,java.management,java.naming,java.sql,jdk.unsupported
JDK_PACKAGE=openjdk-17-jdk-headless

# jdk_tree ARCH: Debian's JDK of ARCH unpacked once into .cache/images/base/jdk-ARCH (jlink runs
# from the amd64 one in a chroot; the ARCH one gives the jmods).
jdk_tree() {
  local a=$1 dir="$OUT/base/jdk-$1"
  if [[ ! -f $dir/.done ]]; then
    rm -rf "$dir"
    log "base layer jre: unpacking Debian bookworm's $JDK_PACKAGE ($a)"
    mmdebstrap --quiet --variant=extract --architectures="$a" --include="$JDK_PACKAGE" \
      --aptopt='APT::Install-Recommends "false"' --skip=download/empty bookworm "$dir" >&2
    local l
    for l in bin lib lib64 sbin; do [[ -e $dir/$l ]] || ln -s "usr/$l" "$dir/$l"; done
    touch "$dir/.done"
  fi
  printf '%s\n' "$dir"
}

# jlink_runtime: a minimal JRE of ARCH at /usr/lib/jvm/jre of the layer, /usr/bin/java.
jlink_runtime() {
  local tool jmods_tree jdk="/usr/lib/jvm/java-17-openjdk"
  tool=$(jdk_tree amd64)
  jmods_tree=$(jdk_tree "$arch")
  local v_tool v_target
  v_tool=$(sed -n 's/^JAVA_VERSION="\(.*\)"/\1/p' "$tool$jdk-amd64/release")
  v_target=$(sed -n 's/^JAVA_VERSION="\(.*\)"/\1/p' "$jmods_tree$jdk-$arch/release")
  [[ $v_tool == "$v_target" ]] || die "jlink $v_tool cannot link the $arch jmods of $v_target: delete $OUT/base/jdk-* and rebuild"
  rm -rf "$tool/smi-jmods" "$tool/smi-jre"
  mkdir -p "$tool/smi-jmods"
  cp -r "$jmods_tree$jdk-$arch/jmods" "$tool/smi-jmods/$arch"
  # Debian's jlink strips native debug symbols with objcopy (absent in the chroot): Debian's
  # libraries are stripped already, so only Java debug attributes are dropped.
  LD_LIBRARY_PATH="$jdk-amd64/lib" chroot "$tool" "$jdk-amd64/bin/jlink" --module-path "/smi-jmods/$arch" \
    --add-modules "$JRE_MODULES" --strip-java-debug-attributes --no-man-pages --no-header-files \
    --compress=2 --output /smi-jre >&2
  install -d -m 0755 "$root/usr/lib/jvm" "$root/usr/bin"
  mv "$tool/smi-jre" "$root/usr/lib/jvm/jre"
  rm -rf "$tool/smi-jmods"
  ln -s ../lib/jvm/jre/bin/java "$root/usr/bin/java"
  local deb_version
  deb_version=$(find "$jmods_tree/var/cache/apt/archives" -name "${JDK_PACKAGE}_*" -printf '%f\n' 2>/dev/null | head -n1 | cut -d_ -f2 | sed 's/%3a/:/g')
  printf '%s %s %s (jlink %s: %s)\n' "$JDK_PACKAGE" "${deb_version:-$v_target}" "$arch" "$v_tool" "$JRE_MODULES" >> "$out/packages.txt"
}

# Every mtime is clamped to the newest file the packages shipped (stable across commits and days).
epoch=$(find "$root/usr" -type f -printf '%T@\n' | sort -n | tail -n1 | cut -d. -f1)

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
  libc)
    rm -rf "$root/usr/bin"
    prune_common
    ;;
  jre)
    rm -rf "$root/usr/bin"
    prune_common
    jlink_runtime
    ;;
esac

chown -R 0:0 "$root"
make_tar "$root" "$out/layer.tar" "$epoch"
printf '%s\n' "$epoch" > "$out/epoch"
log "base layer $kind ($arch): $(wc -l < "$out/packages.txt") packages, $(du -sm "$root" | cut -f1) MB unpacked"
