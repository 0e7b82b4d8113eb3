#!/usr/bin/env bash
# Puts the Syncmesh node into an unpacked appliance root (shared by every target): the boot
# program (appliance.py and its modules in boot/) and validator, the node's scripts and its
# description from images/node (the ONE node setup: node-prepare.sh, node-import.sh, node.yml,
# rendered by the collection's node_stack.py, ...), faasd's systemd units
# rendered from the Ansible role's templates, the faasd binary, the node's OCI images (one
# architecture), the overlay (units, sshd, cloud-init) and the links faasd's fixed paths need.
#
#   payload.sh ROOT ARCH
#
# Env: IMAGES_DIR (<repo>/.cache/images), FAASD_DIR (<repo>/.cache/faasd), APPLIANCE_CACHE
# (<repo>/.cache/appliance; single-architecture image archives are cached there),
# MONGO_IMAGE (empty: the test server; an OCI archive or pull[:REF]: MongoDB's official image;
# mongo-image.sh and README.md, MongoDB), MONGO_IMAGE_REF.
set -o errexit -o nounset -o pipefail

root=${1:?usage: payload.sh ROOT ARCH}
arch=${2:?}
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
IMAGES_DIR=${IMAGES_DIR:-$repo/.cache/images}
FAASD_DIR=${FAASD_DIR:-$repo/.cache/faasd}
CACHE=${APPLIANCE_CACHE:-$repo/.cache/appliance}
role_dir=$repo/ansible/collections/ansible_collections/syncmesh/edge
lib=$root/usr/lib/syncmesh

fail() { echo "payload: $*" >&2; exit 1; }
[[ -x "$FAASD_DIR/bin/$arch/faasd" ]] || fail "no faasd binary at $FAASD_DIR/bin/$arch/faasd (run: make faasd-bins)"
# the database: the test server, or MongoDB's official image (bundled or pulled at first boot)
db=$("$here/mongo-image.sh" check "$arch") || exit 1
read -r db_kind db_source db_ref db_version <<< "$db"

# --- the node's images, one architecture each (the archives from make images hold two) ----------
# The image list is the one node-prepare.sh imports (images.list); the archive gets the
# io.containerd.image.name annotation so `ctr images import` names it.
mkdir -p "$lib/images" "$CACHE/images-$arch"
# single_arch NAME ARCHIVE REF: the image of this architecture from ARCHIVE as $lib/images/NAME.oci.tar
single_arch() {
  local name=$1 archive=$2 ref=$3 key cached tmp
  key=$(cat "$IMAGES_DIR/$name.digest" 2>/dev/null || sha256sum "$archive" | cut -c1-64)
  cached="$CACHE/images-$arch/$name-$(printf '%s' "$key|$ref" | sha256sum | cut -c1-12).oci.tar"
  if [[ ! -s "$cached" ]]; then
    tmp=$(mktemp -d "$CACHE/images-$arch/.tmp.XXXXXX")
    skopeo copy --quiet --override-arch "$arch" --override-os linux "oci-archive:$archive" "oci:$tmp/layout:$ref"
    python3 - "$tmp/layout/index.json" "$ref" <<'PY'
import json, sys
path, ref = sys.argv[1], sys.argv[2]
idx = json.load(open(path))
for m in idx["manifests"]:
    m.setdefault("annotations", {})["io.containerd.image.name"] = ref
json.dump(idx, open(path, "w"))
PY
    tar --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 -C "$tmp/layout" -cf "$tmp/out.tar" .
    mv "$tmp/out.tar" "$cached"
    rm -rf "$tmp"
  fi
  cp "$cached" "$lib/images/$name.oci.tar"
}
names=(gateway queue-worker nats-streaming prometheus listener miso-agent registry syncmesh-fn)
[[ $db_kind == test-server ]] && names+=(mongo-test-server)
for name in "${names[@]}"; do
  [[ -r "$IMAGES_DIR/$name.oci.tar" && -r "$IMAGES_DIR/$name.ref" ]] || fail "image $name is missing in $IMAGES_DIR (run: make images)"
  v=$(tr -d ' \n' < "$IMAGES_DIR/$name.ref")
  ref=$v; [[ "$v" == */* ]] || ref="localhost/syncmesh-edge/$name:$v"
  single_arch "$name" "$IMAGES_DIR/$name.oci.tar" "$ref"
  cp "$IMAGES_DIR/$name.ref" "$lib/images/$name.ref"
done
mkdir -p "$lib/node"
if [[ $db_kind == test-server ]]; then
  printf '%s\n' '{"kind": "test-server", "warning": "TEST-ONLY: this image runs the MongoDB-compatible test server (mongo-java-server), not MongoDB; build with MONGO_IMAGE=... for the official image"}' > "$lib/database.json"
else
  # the official image as node-prepare.sh's image `mongodb` (MONGODB_VARIANT=official); bundled:
  # preload.sh unpacks it like the others; pull: appliance.py pulls it at first boot
  [[ $db_source == pull ]] || single_arch mongodb "$MONGO_IMAGE" "$db_ref"
  printf '%s\n' "$db_ref" > "$lib/images/mongodb.ref"
  "$here/mongo-image.sh" render "$db_ref" "$lib/node/mongodb-official.yaml"
  install -m 0644 "$repo/ansible/collections/ansible_collections/syncmesh/edge/roles/mongodb/files/rs-init.js" "$lib/node/mongodb-rs-init.js"
  python3 -c 'import json, sys; print(json.dumps(dict(zip(("kind", "source", "image", "version"), sys.argv[1:])) | {"license": "MongoDB Community Server: SSPL-1.0 (the image carries its own notices)"}))' \
    "$db_kind" "$db_source" "$db_ref" "$db_version" > "$lib/database.json"
fi

# --- faasd, the node's scripts and templates, the boot program -----------------------------------
install -D -m 0755 "$FAASD_DIR/bin/$arch/faasd" "$lib/bin/faasd"
mkdir -p "$lib/node" "$lib/python" "$root/usr/share/doc/syncmesh-edge"
for f in node-prepare.sh node-import.sh node.yml prometheus.yml containerd.toml; do
  install -m 0644 "$repo/images/node/$f" "$lib/node/$f"
done
chmod 0755 "$lib/node/"*.sh
install -m 0755 "$here/firstboot/appliance.py" "$lib/appliance.py"
install -m 0644 "$here/firstboot/nodefile.py" "$lib/nodefile.py"
install -d -m 0755 "$lib/boot"
install -m 0644 "$here"/firstboot/boot/*.py "$lib/boot/"
for m in mesh_auth registry mongodb_cpu node_stack node_health; do
  install -m 0644 "$role_dir/plugins/module_utils/$m.py" "$lib/python/$m.py"
done
[[ -d "$FAASD_DIR/licenses" ]] && cp -r "$FAASD_DIR/licenses" "$root/usr/share/doc/syncmesh-edge/faasd-licenses"
cp "$repo/images/NOTICE" "$root/usr/share/doc/syncmesh-edge/NOTICE"

# faasd-provider.service and faasd.service: the Ansible role's templates, with the role's defaults
python3 - "$role_dir/roles/faasd" "$root/etc/systemd/system" <<'PY'
import sys, yaml, jinja2
role, dest = sys.argv[1], sys.argv[2]
defaults = yaml.safe_load(open(f"{role}/defaults/main.yml"))
values = {k: v for k, v in defaults.items() if isinstance(v, (str, int)) and "{{" not in str(v)}
values["ansible_managed"] = "Rendered from the syncmesh.edge faasd role's template by images/appliance/payload.sh"
env = jinja2.Environment(loader=jinja2.FileSystemLoader(f"{role}/templates"), undefined=jinja2.StrictUndefined, keep_trailing_newline=True)
for unit in ("faasd-provider", "faasd"):
    open(f"{dest}/{unit}.service", "w").write(env.get_template(f"{unit}.service.j2").render(**values))
PY

# faasd's containers never reach the cloud metadata server: the faasd role's unit, required by both
install -m 0644 "$role_dir/roles/faasd/files/syncmesh-metadata-block.service" "$root/etc/systemd/system/syncmesh-metadata-block.service"
for unit in faasd-provider faasd; do
  mkdir -p "$root/etc/systemd/system/$unit.service.requires"
  ln -sfn /etc/systemd/system/syncmesh-metadata-block.service "$root/etc/systemd/system/$unit.service.requires/syncmesh-metadata-block.service"
done

# --- slimming: what a node never runs (the packages stay in manifest.json's list) ---------------
# faasd's CNI network uses bridge + host-local + firewall (and loopback, portmap); runc v2 shim only
for plugin in "$root"/usr/lib/cni/*; do
  case $(basename "$plugin") in bridge | host-local | firewall | loopback | portmap) ;; *) rm -f "$plugin" ;; esac
done
rm -f "$root/usr/bin/containerd-shim-runc-v1" "$root/usr/bin/containerd-shim"
rm -rf "$root/usr/share/i18n" "$root/usr/share/locale"
# units a node does not need at boot (masked: each costs seconds to minutes under emulation):
# apt's and dpkg's timers (no apt sources to fetch offline; upgrades are a reflash), e2scrub
# (no LVM), fstrim (a weekly job a VM disk does not need at boot)
for unit in apt-daily.timer apt-daily-upgrade.timer dpkg-db-backup.timer e2scrub_all.timer e2scrub_reap.service fstrim.timer; do
  ln -sfn /dev/null "$root/etc/systemd/system/$unit"
done

# --- the overlay and the links faasd's fixed paths need ------------------------------------------
cp -a "$here/overlay/." "$root/"
mkdir -p "$root/var/lib/syncmesh/node" "$root/etc/cni/net.d" "$root/etc/syncmesh/authorized_keys" "$root/opt/cni" "$root/usr/local/bin" "$root/boot/efi"
chmod 0700 "$root/var/lib/syncmesh"
ln -sfn /var/lib/syncmesh/node/var-lib-faasd "$root/var/lib/faasd"
ln -sfn /var/lib/syncmesh/node/var-lib-faasd-provider "$root/var/lib/faasd-provider"
ln -sfn /var/lib/syncmesh/node/bin/faasd "$root/usr/local/bin/faasd"
ln -sfn /usr/lib/cni "$root/opt/cni/bin"
# enable the units (what systemctl enable does, without running systemctl in the tree)
wants() { mkdir -p "$root/etc/systemd/system/$1.wants"; ln -sfn "/etc/systemd/system/$2" "$root/etc/systemd/system/$1.wants/$2"; }
wants sysinit.target syncmesh-growfs.service
wants sysinit.target syncmesh-configure.service
wants multi-user.target syncmesh-node.service
wants multi-user.target syncmesh-health.service
wants multi-user.target syncmesh-hostkeys.service
mkdir -p "$root/etc/systemd/system/multi-user.target.wants" "$root/etc/systemd/system/sockets.target.wants"
ln -sfn /usr/lib/systemd/system/systemd-networkd.service "$root/etc/systemd/system/multi-user.target.wants/systemd-networkd.service"
ln -sfn /usr/lib/systemd/system/systemd-networkd.socket "$root/etc/systemd/system/sockets.target.wants/systemd-networkd.socket"
ln -sfn /usr/lib/systemd/system/systemd-resolved.service "$root/etc/systemd/system/multi-user.target.wants/systemd-resolved.service"
# the stub resolver for the host; functions get the upstream list (appliance.py)
ln -sfn /run/systemd/resolve/stub-resolv.conf "$root/etc/resolv.conf"
# wait for the network at most 30 s (a LAN without DHCP must not stall the boot for 2 min)
mkdir -p "$root/etc/systemd/system/systemd-networkd-wait-online.service.d"
printf "[Service]\nExecStart=\nExecStart=/usr/lib/systemd/systemd-networkd-wait-online --any --timeout=30\n" > "$root/etc/systemd/system/systemd-networkd-wait-online.service.d/syncmesh.conf"
echo "payload: node files, faasd and $(ls "$lib/images"/*.oci.tar | wc -l) images ($(du -sm "$lib/images" | cut -f1) MiB, $arch) in $root" >&2
