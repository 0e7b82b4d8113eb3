# shellcheck shell=bash
# The MISO CRDT agent (miso-agent/): a long-running faasd service, one esbuild bundle plus the
# .proto files it loads at run time, on Debian trixie's Node.js 20. The agent looks for its
# protos three directories above its module (protoDir() in src/transport/grpc/protos.ts), so the
# bundle sits at /app/miso-agent/dist/src/main.mjs and the protos at /app/proto. The SDK socket
# (MISO_SDK_SOCKET, default /run/miso/agent.sock) needs a directory mounted from the node, owned
# by uid 10001 and shared with the functions: /run is a fresh tmpfs in every container.
IMAGE_VERSION=$(jq -r .version "$REPO/miso-agent/package.json")
# Sources in git whose last commit gives the image its time and revision label.
IMAGE_SOURCES=(miso-agent functions/syncmesh lib/backoff lib/log lib/mesh-auth package-lock.json)
# Workspaces whose unit tests must pass before the image is built.
IMAGE_UNIT_TESTS=(@syncmesh-edge/miso-agent @syncmesh-edge/miso-sdk)
IMAGE_TITLE="MISO agent"
IMAGE_DESCRIPTION="MISO agent: CRDT-based replicated state for serverless functions (gRPC, mDNS, delta replication, MongoDB persistence)."
IMAGE_LICENSES="MIT AND Apache-2.0 AND BSD-3-Clause AND BSD-2-Clause"
node_service miso-agent 7650/tcp

image_inputs() { bundle miso-agent; printf '%s\n' "$REPO/miso-agent/proto"; }

image_rootfs() {
  local root=$1
  install -d -m 0755 "$root/app/proto"
  install -m 0644 "$REPO"/miso-agent/proto/*.proto "$root/app/proto/"
  node_app "$root" miso-agent
}
