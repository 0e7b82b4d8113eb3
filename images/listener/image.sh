# shellcheck shell=bash
# The MongoDB change-stream listener (listeners/): a long-running faasd service, one esbuild
# bundle on Debian trixie's Node.js 20. node is PID 1 and the listener drains on SIGTERM within
# LISTENER_DRAIN_TIMEOUT_MS (see listeners/README.md for every variable).
IMAGE_VERSION=$(jq -r .version "$REPO/listeners/package.json")
# Sources in git whose last commit gives the image its time and revision label.
IMAGE_SOURCES=(listeners functions/syncmesh lib/backoff lib/log lib/mesh-auth package-lock.json)
# Workspaces whose unit tests must pass before the image is built.
IMAGE_UNIT_TESTS=(@syncmesh-edge/listener)
IMAGE_TITLE="Syncmesh change-stream listener"
IMAGE_DESCRIPTION="MongoDB change-stream listener: delivers every change to the Syncmesh function, at least once, resuming where it stopped."
IMAGE_LICENSES="MIT AND Apache-2.0 AND BSD-2-Clause"
IMAGE_BASE=node
IMAGE_WORKDIR=/app
IMAGE_ENTRYPOINT=(/usr/bin/node /app/listener/dist/src/main.mjs)
IMAGE_ENV=(NODE_ENV=production)

image_inputs() { bundle listener; }

image_rootfs() { node_app "$1" listener; }
