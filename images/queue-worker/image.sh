# shellcheck shell=bash
# OpenFaaS NATS queue worker 0.14.1 (MIT; asynchronous invocations), built by `make faasd-bins`.
IMAGE_VERSION=0.14.1
faasd_binary_spec queue-worker MIT
IMAGE_TITLE="OpenFaaS queue worker"
IMAGE_DESCRIPTION="OpenFaaS NATS queue worker 0.14.1 built from its MIT-licensed source for a Syncmesh Edge faasd node (static binary, no shell)."
IMAGE_CMD=(/usr/bin/queue-worker)

image_rootfs() { install_faasd_bin "$1" "$2" queue-worker /usr/bin/queue-worker; }
