# shellcheck shell=bash
# OpenFaaS gateway 0.27.5 (MIT), built from ../shared/third_party by `make faasd-bins`; laid out
# like upstream's image (/home/app/gateway, CMD ./gateway) so faasd's docker-compose.yaml works
# unchanged. The web UI (upstream's assets/) is not included.
IMAGE_VERSION=0.27.5
# Sources in git whose last commit gives the image its time and revision label.
IMAGE_SOURCES=(images/faasd)
IMAGE_TITLE="OpenFaaS gateway"
IMAGE_DESCRIPTION="OpenFaaS gateway 0.27.5 built from its MIT-licensed source for a Syncmesh Edge faasd node (static binary, no shell)."
IMAGE_LICENSES=MIT
IMAGE_USER=65534:65534
IMAGE_WORKDIR=/home/app
IMAGE_CMD=(./gateway)
IMAGE_PORTS=(8080/tcp 8082/tcp)

image_inputs() { faasd_bin gateway "$1"; printf '%s\n' "$FAASD_LICENSES/gateway"; }

image_rootfs() {
  local root=$1 arch=$2
  install -d -m 0755 "$root/home/app"
  install -m 0755 "$(faasd_bin gateway "$arch")" "$root/home/app/gateway"
  add_license "$root" gateway "$FAASD_LICENSES/gateway/LICENSE"
}
