# shellcheck shell=bash
# nats-server 2.15.3 with JetStream (Apache-2.0), built by `make faasd-bins` from the Go module:
# the mesh's NATS (coordination objects, R3 over the core nodes; the async queue of gateway patch
# 0003). Its configuration is rendered per node by coordination/src/nats-config.ts and mounted at
# /etc/nats/nats.conf with the node's route certificate, key and the core bundle beside it;
# JetStream stores in /data (a bind mount in faasd).
IMAGE_VERSION=2.15.3
faasd_binary_spec nats-server Apache-2.0
IMAGE_TITLE="NATS server (JetStream)"
IMAGE_DESCRIPTION="nats-server 2.15.3 with JetStream for the mesh's coordination objects and async queue on a Syncmesh Edge node (static binary, no shell)."
IMAGE_ENTRYPOINT=(/nats-server)
IMAGE_CMD=(-c /etc/nats/nats.conf)
# client, monitoring, routes (core nodes), leaf nodes (core nodes accept them)
IMAGE_PORTS=(4222/tcp 8222/tcp 6222/tcp 7422/tcp)

image_rootfs() {
  local root=$1 arch=$2
  install_faasd_bin "$root" "$arch" nats-server /nats-server
  install -d -m 0755 "$root/etc/nats"
  # JetStream's store_dir: a bind mount in faasd; writable by nobody when run without one
  install -d -m 0755 -o 65534 -g 65534 "$root/data"
}
