# shellcheck shell=bash
# The Syncmesh GraphQL function: of-watchdog 0.10.0 (MIT, built from ../shared/third_party by
# `make faasd-bins`: the one watchdog version the project ships) in http mode in front of our
# server (one esbuild bundle of functions/syncmesh, no tests, no scripts, no test server), on
# Debian trixie's Node.js 20 with only its shared libraries (no npm, no shell). The function's
# unit tests gate the build. The node description (images/node/node.yml) overrides the timeouts
# per deployment.
IMAGE_VERSION=$(jq -r .version "$REPO/functions/syncmesh/package.json")
# Sources in git whose last commit gives the image its time and revision label.
IMAGE_SOURCES=(functions/syncmesh lib/backoff lib/log lib/mesh-auth images/faasd package-lock.json)
# Workspaces whose unit tests must pass before the image is built.
IMAGE_UNIT_TESTS=(@syncmesh-edge/syncmesh-fn)
IMAGE_TITLE="Syncmesh function"
IMAGE_DESCRIPTION="Syncmesh GraphQL function (OpenFaaS, of-watchdog http mode) on Node.js 20: exact mesh-wide answers from any node."
IMAGE_LICENSES="MIT AND Apache-2.0 AND BSD-2-Clause"
IMAGE_WORKDIR=/app
# ready once our server answers /healthz (it listens a moment after the watchdog); 30 s a call: a
# mesh answer may take SYNCMESH_DEADLINE_MS (15 s) plus the local query
watchdog_function syncmesh-fn /healthz 30s
IMAGE_ENV+=(PORT=3000 HOST=127.0.0.1 NODE_ENV=production)

image_inputs() {
  faasd_bin fwatchdog "$1"
  printf '%s\n' "$FAASD_LICENSES/fwatchdog" "$(bundle syncmesh-fn)"
}

image_rootfs() {
  local root=$1 arch=$2
  install_faasd_bin "$root" "$arch" fwatchdog /usr/bin/fwatchdog of-watchdog
  node_app "$root" syncmesh-fn
}
