# shellcheck shell=bash
# The MISO counter example function (functions/miso-counter): of-watchdog in http mode in
# front of the function's server (esbuild bundle with the MISO SDK and sdk.proto), on Debian
# trixie's Node.js 20. The node's MISO agent socket is mounted at /run/miso/agent.sock.
IMAGE_VERSION=$(jq -r .version "$REPO/functions/miso-counter/package.json")
# Sources in git whose last commit gives the image its time and revision label.
IMAGE_SOURCES=(functions/miso-counter miso-agent/sdk miso-agent/proto lib/log images/faasd package-lock.json)
# Workspaces whose unit tests must pass before the image is built (the example has none of its
# own: its tests run against real agents, in make test; the SDK it ships has them).
IMAGE_UNIT_TESTS=(@syncmesh-edge/miso-sdk)
IMAGE_TITLE="MISO counter function"
IMAGE_DESCRIPTION="Example OpenFaaS function using MISO Objects: a replicated counter (of-watchdog http mode, Node.js 20)."
IMAGE_LICENSES="MIT AND Apache-2.0 AND BSD-3-Clause"
IMAGE_WORKDIR=/app
sdk_function_spec miso-counter MISO_FUNCTION=miso-counter

image_inputs() { sdk_function_inputs "$1" miso-counter; }
image_rootfs() { sdk_function_rootfs "$1" "$2" miso-counter; }
