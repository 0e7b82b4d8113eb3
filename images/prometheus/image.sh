# shellcheck shell=bash
# Prometheus (Apache-2.0) from Debian bookworm's `prometheus` package (extracted by `make
# faasd-bins`). Laid out like upstream's image (/bin/prometheus, config in /etc/prometheus,
# data in /prometheus, user nobody) so faasd's docker-compose.yaml works unchanged. When Debian's
# binary is dynamically linked, bookworm's C library comes with it as a base layer.
IMAGE_VERSION=$(bin_version prometheus 's/^prometheus, version \([^ ]*\).*/\1/p')
# Sources in git whose last commit gives the image its time and revision label.
IMAGE_SOURCES=(images/faasd)
IMAGE_TITLE="Prometheus"
IMAGE_DESCRIPTION="Prometheus $IMAGE_VERSION (Debian bookworm's build) for the metrics of a Syncmesh Edge faasd node (no shell)."
IMAGE_LICENSES=Apache-2.0
IMAGE_USER=65534:65534
IMAGE_WORKDIR=/prometheus
IMAGE_ENTRYPOINT=(/bin/prometheus)
IMAGE_CMD=(--config.file=/etc/prometheus/prometheus.yml --storage.tsdb.path=/prometheus)
IMAGE_PORTS=(9090/tcp)
IMAGE_VOLUMES=(/prometheus)
if file -b "$(faasd_bin prometheus amd64)" | grep -q 'dynamically linked'; then IMAGE_BASE=libc; fi

image_inputs() {
  faasd_bin prometheus "$1"
  printf '%s\n' "$FAASD_BIN/$1/prometheus-share" "$FAASD_LICENSES/prometheus" "$IMAGES_DIR/prometheus/prometheus.yml"
}

image_rootfs() {
  local root=$1 arch=$2
  # with the libc base layer, /bin is a link to usr/bin
  if [[ -n $IMAGE_BASE ]]; then install -d -m 0755 "$root/usr/bin"; install -m 0755 "$(faasd_bin prometheus "$arch")" "$root/usr/bin/prometheus"
  else install -d -m 0755 "$root/bin"; install -m 0755 "$(faasd_bin prometheus "$arch")" "$root/bin/prometheus"; fi
  # Debian's build serves its web UI from /usr/share/prometheus/web
  if [[ -d $FAASD_BIN/$arch/prometheus-share ]]; then
    install -d -m 0755 "$root/usr/share/prometheus"
    cp -r "$FAASD_BIN/$arch/prometheus-share/web" "$root/usr/share/prometheus/web"
  fi
  install -d -m 0755 "$root/etc/prometheus"
  install -m 0644 "$IMAGES_DIR/prometheus/prometheus.yml" "$root/etc/prometheus/prometheus.yml"
  install -d -m 0755 -o 65534 -g 65534 "$root/prometheus"
  add_license "$root" prometheus "$FAASD_LICENSES/prometheus/LICENSE"
}
