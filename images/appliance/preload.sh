#!/usr/bin/env bash
# Imports the node's bundled images into the image's own containerd store at build time, so the
# first boot imports nothing (under QEMU's software emulation the guest's `ctr images import` of
# the same archives took 21 minutes). Runs the rootfs's containerd (the version the node runs)
# on the build host, in a throwaway mount namespace, with its root at the node's containerd root
# inside ROOT (images/node/containerd.toml: $NODE_STATE/containerd/root) and the overlayfs
# snapshotter, then imports and unpacks each archive of payload.sh with the same command as
# images/node/node-import.sh. The node's first boot finds every reference present and skips it.
#
#   preload.sh ROOT
#
# The compressed layer blobs are dropped from the content store once unpacked (the snapshots
# hold the files; manifests and configs stay, which is what containerd needs to run them), and
# the archives themselves leave the image: /usr/lib/syncmesh/images keeps the .ref files and
# preloaded.json (reference, namespace, archive sha256 and size of each, for manifest.json);
# appliance.py then runs node-prepare.sh with IMAGES_PRELOADED=1. Each image is in the image once.
set -o errexit -o nounset -o pipefail

root=${1:?usage: preload.sh ROOT}
lib=$root/usr/lib/syncmesh
ctrd_root=$root/var/lib/syncmesh/node/containerd/root
fail() { echo "preload: $*" >&2; exit 1; }
[[ -x "$root/usr/bin/containerd" && -x "$root/usr/bin/ctr" ]] || fail "no containerd/ctr in $root"
[[ "$(stat -fc %T "$root")" != overlayfs ]] || fail "$root is on overlayfs; the overlayfs snapshotter needs a real filesystem"

# A foreign-architecture rootfs (the Pi's arm64 on an amd64 build host): its dynamically linked
# containerd and ctr run through qemu-user-static (binfmt), which loads their interpreter and
# libraries from the rootfs when QEMU_LD_PREFIX points there.
arch=$(chroot "$root" dpkg --print-architecture)
[[ "$arch" == "$(dpkg --print-architecture)" ]] || export QEMU_LD_PREFIX=$root

tmp=$(mktemp -d /tmp/s5a-preload.XXXXXX)
pid=
stop() {
  if [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid"
    for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
  fi
  rm -rf "$tmp"
}
trap stop EXIT

mkdir -p "$ctrd_root" "$tmp/state" "$tmp/opt"
chmod 0711 "$ctrd_root"
cat > "$tmp/config.toml" <<EOC
version = 2
root = "$ctrd_root"
state = "$tmp/state"
disabled_plugins = ["io.containerd.grpc.v1.cri", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.aufs"]
[grpc]
  address = "$tmp/containerd.sock"
[plugins."io.containerd.internal.v1.opt"]
  path = "$tmp/opt"
EOC
t0=$(date +%s)
unshare --mount --propagation private "$root/usr/bin/containerd" --config "$tmp/config.toml" --log-level warn > "$tmp/containerd.log" 2>&1 &
pid=$!
ctr=("$root/usr/bin/ctr" --address "$tmp/containerd.sock")
for _ in $(seq 1 300); do
  "${ctr[@]}" version >/dev/null 2>&1 && break
  kill -0 "$pid" 2>/dev/null || fail "containerd exited: $(tail -n 5 "$tmp/containerd.log")"
  sleep 0.1
done
"${ctr[@]}" version >/dev/null || fail "containerd did not answer in 30 s: $(tail -n 5 "$tmp/containerd.log")"

for archive in "$lib"/images/*.oci.tar; do
  name=$(basename "$archive" .oci.tar)
  v=$(tr -d ' \n' < "$lib/images/$name.ref")
  ref=$v; [[ "$v" == */* ]] || ref="localhost/syncmesh-edge/$name:$v"
  # faasd's namespaces: core services in openfaas, functions in openfaas-fn (node-prepare.sh's images.list)
  ns=openfaas; [[ $name == syncmesh-fn ]] && ns=openfaas-fn
  "${ctr[@]}" -n "$ns" images import --platform "linux/$arch" --snapshotter overlayfs "$archive" >/dev/null
  "${ctr[@]}" -n "$ns" images ls -q | grep -qx "$ref" || fail "import of $archive did not give $ref"
done
python3 - "$lib/images" <<'PY'
import hashlib, json, os, sys
d = sys.argv[1]
out = []
for f in sorted(os.listdir(d)):
    if not f.endswith(".oci.tar"):
        continue
    name = f[: -len(".oci.tar")]
    h = hashlib.sha256()
    with open(os.path.join(d, f), "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    out.append({"name": name, "archive_sha256": h.hexdigest(), "bytes": os.path.getsize(os.path.join(d, f))})
json.dump({"images": out}, open(os.path.join(d, "preloaded.json"), "w"), indent=1)
PY
count=$(ls "$lib"/images/*.oci.tar | wc -l)
rm -f "$lib"/images/*.oci.tar
# drop the compressed layers: their unpacked snapshots are what the node runs
for ns in openfaas openfaas-fn; do
  "${ctr[@]}" -n "$ns" content ls 2>/dev/null | awk 'NR > 1 && /containerd\.io\/uncompressed=/ {print $1}'
done | sort -u > "$tmp/layers"
layers=$(wc -l < "$tmp/layers")
if (( layers > 0 )); then
  for ns in openfaas openfaas-fn; do xargs -r "${ctr[@]}" -n "$ns" content rm < "$tmp/layers" >/dev/null 2>&1 || true; done
fi
kill -TERM "$pid"; wait "$pid" 2>/dev/null || true; pid=
rm -rf "$ctrd_root/io.containerd.content.v1.content/ingest"/*
echo "preload: $count images unpacked into $ctrd_root ($(du -sm "$ctrd_root" | cut -f1) MiB, $layers layer blobs dropped) in $(($(date +%s) - t0)) s" >&2
