#!/usr/bin/env bash
# A tiny OCI image (this machine's static busybox) for the lab tier only: proves that runc starts a
# container inside a lab host. Not part of the bundle, never on a real node.
#   ansible/lab/test-image.sh      prints the path of .cache/lab/lab-test-busybox.oci.tar
set -o errexit -o nounset -o pipefail
out=.cache/lab/lab-test-busybox.oci.tar
[[ -s $out ]] && { echo "$out"; exit 0; }
busybox=$(command -v busybox) && file -L "$busybox" | grep -q 'statically linked' \
  || { echo "lab: needs a static busybox: apt-get install busybox-static" >&2; exit 1; }
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
umoci init --layout "$work/layout" >&2
umoci new --image "$work/layout:test" >&2
umoci unpack --image "$work/layout:test" "$work/bundle" >&2
mkdir -p "$work/bundle/rootfs/bin"
cp "$busybox" "$work/bundle/rootfs/bin/busybox"
ln -s busybox "$work/bundle/rootfs/bin/sh"
umoci repack --image "$work/layout:test" "$work/bundle" >&2
umoci config --image "$work/layout:test" --config.cmd /bin/sh --config.label org.opencontainers.image.title=syncmesh-edge-lab-test >&2
mkdir -p "$(dirname "$out")"
tar -C "$work/layout" -cf "$out.partial" . && mv "$out.partial" "$out"
echo "$out"
