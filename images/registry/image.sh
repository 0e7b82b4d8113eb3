# shellcheck shell=bash
# The node's OCI registry: Debian bookworm's docker-registry (distribution 2.8, Apache-2.0),
# extracted by `make faasd-bins`, with the node's configuration (config.yml beside this file:
# plain HTTP on :5000, htpasswd basic auth from /run/secrets/registry-htpasswd, storage in
# /var/lib/registry). When Debian's binary is dynamically linked, bookworm's C library comes
# with it as a base layer.
IMAGE_VERSION=$(bin_version registry 's/.*distribution \([0-9.]*\).*/\1/p')
IMAGE_SOURCES=(images/faasd images/registry)
IMAGE_TITLE="OCI registry"
IMAGE_DESCRIPTION="distribution $IMAGE_VERSION (Debian bookworm's docker-registry): a Syncmesh Edge node's registry for its users' function images (no shell)."
IMAGE_LICENSES=Apache-2.0
IMAGE_ENTRYPOINT=(/usr/bin/registry)
IMAGE_CMD=(serve /etc/registry/config.yml)
IMAGE_PORTS=(5000/tcp)
IMAGE_VOLUMES=(/var/lib/registry)
if file -b "$(faasd_bin registry amd64)" | grep -q 'dynamically linked'; then IMAGE_BASE=libc; fi

image_inputs() {
  faasd_bin registry "$1"
  printf '%s\n' "$FAASD_LICENSES/registry" "$IMAGES_DIR/registry/config.yml"
}

image_rootfs() {
  local root=$1 arch=$2
  install -d -m 0755 "$root/usr/bin" "$root/etc/registry"
  install -m 0755 "$(faasd_bin registry "$arch")" "$root/usr/bin/registry"
  install -m 0644 "$IMAGES_DIR/registry/config.yml" "$root/etc/registry/config.yml"
  install -d -m 0750 -o 10001 -g 10001 "$root/var/lib/registry"
  add_license "$root" distribution "$FAASD_LICENSES/registry/LICENSE"
}
