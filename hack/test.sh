#!/usr/bin/env bash
# Runs the tests of every workspace that has them, one workspace after another.
# Each workspace's `npm test` runs node:test over its compiled unit (src/**/*.test.js)
# and integration (test/**/*.test.js) files.
set -o errexit -o nounset -o pipefail
cd "$(dirname "$0")/.."
npm test --workspaces --if-present
