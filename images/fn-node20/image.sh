# shellcheck shell=bash
# The base image of functions built from the repository's templates (template/miso-node20,
# template/syncmesh-query-node20): of-watchdog 0.10.0 in http mode in front of the MISO SDK's
# handler server (miso-agent/sdk/src/run-handler.ts, an esbuild bundle with sdk.proto) on Debian
# trixie's Node.js 20. A template's Dockerfile only copies the user's handler folder to
# /home/app/function (no RUN step), so one build makes every architecture without emulation.
IMAGE_VERSION=$(jq -r .version "$REPO/miso-agent/sdk/package.json")
IMAGE_SOURCES=(miso-agent/sdk miso-agent/proto lib/log images/faasd package-lock.json)
IMAGE_UNIT_TESTS=(@syncmesh-edge/miso-sdk)
IMAGE_TITLE="Node.js 20 function base (MISO SDK)"
IMAGE_DESCRIPTION="Base of Syncmesh Edge function templates: of-watchdog http mode, Node.js 20, the MISO SDK serving /home/app/function/handler.js."
IMAGE_LICENSES="MIT AND Apache-2.0 AND BSD-3-Clause"
IMAGE_WORKDIR=/home/app
sdk_function_spec fn-node20 FUNCTION_HANDLER=/home/app/function/handler.js

image_inputs() { sdk_function_inputs "$1" fn-node20; }

image_rootfs() {
  install -d -m 0755 -o 10001 -g 10001 "$1/home/app" "$1/home/app/function"
  sdk_function_rootfs "$1" "$2" fn-node20
}
