#!/usr/bin/env bash
# Runs the tests of every workspace that has them, one workspace after another, then the faasd
# tier alone (a 3-node faasd mesh in namespaces: root, and `make faasd-tier-deps` built first).
# Each workspace's `npm test` runs node:test over its compiled unit (src/**/*.test.js)
# and integration (test/**/*.test.js) files; there the faasd tier reports itself skipped.
# The faasd tier runs even when a workspace failed (one run shows every failure); the exit
# status is the first failure's.
#
#   hack/test.sh          every workspace, then the faasd tier (make test)
#   hack/test.sh faasd    only the faasd tier (make test-faasd)
set -o errexit -o nounset -o pipefail
cd "$(dirname "$0")/.."
rc=0
if [[ ${1:-all} != faasd ]]; then
  npm test --workspaces --if-present || rc=$?
fi
t0=$SECONDS
MESH_FAASD_TEST=1 node --test --test-concurrency=1 scenarios/mesh/dist/test/integration/faasd.test.js scenarios/mesh/dist/test/integration/functions.test.js || { tier=$?; ((rc != 0)) || rc=$tier; }
echo "faasd tier: $((SECONDS - t0)) s"
exit "$rc"
