# shellcheck shell=bash
# NATS Streaming server 0.25.6 (Apache-2.0; deprecated upstream, but what the 0.27.5 gateway
# speaks), built by `make faasd-bins` from the Go module. Laid out like upstream's image:
# faasd's docker-compose.yaml runs "/nats-streaming-server -m 8222 --store=file --dir=/nats ...".
IMAGE_VERSION=0.25.6
faasd_binary_spec nats-streaming-server Apache-2.0
IMAGE_TITLE="NATS Streaming server"
IMAGE_DESCRIPTION="NATS Streaming server 0.25.6 for the OpenFaaS queue of a Syncmesh Edge faasd node (static binary, no shell)."
IMAGE_ENTRYPOINT=(/nats-streaming-server)
IMAGE_CMD=(-m 8222)
IMAGE_PORTS=(4222/tcp 8222/tcp)

image_rootfs() {
  local root=$1 arch=$2
  install_faasd_bin "$root" "$arch" nats-streaming-server /nats-streaming-server
  # --store=file --dir=/nats: a bind mount in faasd; writable by nobody when run without one
  install -d -m 0755 -o 65534 -g 65534 "$root/nats"
}
