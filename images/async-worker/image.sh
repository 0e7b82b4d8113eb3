# shellcheck shell=bash
# The async worker (coordination/): runs the calls the gateway queued in JetStream (gateway
# patch 0003), with retries, a dead-letter stream and a status endpoint; one esbuild bundle on
# Debian's Node.js 20. Configured by ASYNC_WORKER_* (coordination/README.md); its nkey seed is
# a faasd secret (ASYNC_WORKER_NKEY_SEED_FILE=/var/openfaas/secrets/nats-nkey).
IMAGE_VERSION=$(jq -r .version "$REPO/coordination/package.json")
# Sources in git whose last commit gives the image its time and revision label.
IMAGE_SOURCES=(coordination lib/backoff lib/log package-lock.json)
IMAGE_TITLE="Async worker (JetStream)"
IMAGE_DESCRIPTION="Runs a Syncmesh Edge node's asynchronous function calls from NATS JetStream: retries with backoff, dead-letter stream, status endpoint."
IMAGE_LICENSES="MIT AND Apache-2.0"
node_service async-worker 8093/tcp
IMAGE_ENV+=(ASYNC_WORKER_STATUS_ADDR=0.0.0.0:8093)

image_inputs() { bundle async-worker; }

image_rootfs() {
  local root=$1
  node_app "$root" async-worker
}
