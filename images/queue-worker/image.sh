# shellcheck shell=bash
# OpenFaaS NATS queue worker 0.14.1 (MIT; asynchronous invocations), built by `make faasd-bins`.
IMAGE_VERSION=0.14.1
# Sources in git whose last commit gives the image its time and revision label.
IMAGE_SOURCES=(images/faasd)
IMAGE_TITLE="OpenFaaS queue worker"
IMAGE_DESCRIPTION="OpenFaaS NATS queue worker 0.14.1 built from its MIT-licensed source for a Syncmesh Edge faasd node (static binary, no shell)."
IMAGE_LICENSES=MIT
IMAGE_USER=65534:65534
IMAGE_CMD=(/usr/bin/queue-worker)

image_inputs() { faasd_bin queue-worker "$1"; printf '%s\n' "$FAASD_LICENSES/queue-worker"; }

image_rootfs() {
  local root=$1 arch=$2
  install -d -m 0755 "$root/usr/bin"
  install -m 0755 "$(faasd_bin queue-worker "$arch")" "$root/usr/bin/queue-worker"
  add_license "$root" queue-worker "$FAASD_LICENSES/queue-worker/LICENSE"
}
