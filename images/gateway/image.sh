# shellcheck shell=bash
# OpenFaaS gateway 0.27.5 (MIT), built from ../shared/third_party by `make faasd-bins`; laid out
# like upstream's image (/home/app/gateway, CMD ./gateway) so faasd's docker-compose.yaml works
# unchanged. The web UI (upstream's assets/) is not included.
IMAGE_VERSION=0.27.5
faasd_binary_spec gateway MIT
IMAGE_TITLE="OpenFaaS gateway"
IMAGE_DESCRIPTION="OpenFaaS gateway 0.27.5 built from its MIT-licensed source for a Syncmesh Edge faasd node (static binary, no shell)."
IMAGE_WORKDIR=/home/app
IMAGE_CMD=(./gateway)
IMAGE_PORTS=(8080/tcp 8082/tcp)

image_rootfs() { install_faasd_bin "$1" "$2" gateway /home/app/gateway; }
