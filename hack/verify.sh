#!/usr/bin/env bash
# `make verify`: checks only, never writes (the fixer is `make fmt`, hack/fmt.sh). Runs every
# check even when one fails, prints one line per check with its time, exits 1 if any failed.
#
#   types         tsc -b over every workspace
#   ships         tsc -b tsconfig.build.json: what the services ship (src/ without tests, test
#                 support or scripts) compiles on its own, without test-only packages
#   lint+format   biome ci (lint rules and formatting of TS/JS/JSON; config: biome.json)
#   python        ruff check + ruff format --check (config: ruff.toml)
#   errors table  hack/check-errors.mjs: docs/errors.md rows vs the EDGE_* codes in every source
#                 file; no other Markdown file keeps a table of codes
#   docs          mkdocs build --strict (broken links and missing pages fail; config: mkdocs.yml)
#   docs paths    hack/check-doc-paths.py: no Markdown file quotes a build machine's path (/work/..., /root/...)
#   import cycles dpdm over every TypeScript workspace (package.json "workspaces"): no file imports
#                 itself through others, type-only imports included (the build's project
#                 references already keep the workspaces themselves acyclic)
#   tf locks      terraform/hack/check_locks.py: no committed Terraform lock file holds a hash of a
#                 provider built here (users' tofu init would refuse the published providers)
#
# Needs node_modules (npm ci) and the tools venv (make tools-venv); `make verify` provides both.
set -o errexit -o nounset -o pipefail
cd "$(dirname "$0")/.."

TOOLS_VENV=${TOOLS_VENV:-.cache/tools-venv}
failed=()

step() {
  local name=$1
  shift
  local t0=$SECONDS
  if "$@"; then
    printf 'verify: %-13s ok    (%ds)\n' "$name" $((SECONDS - t0))
  else
    printf 'verify: %-13s FAIL  (%ds)\n' "$name" $((SECONDS - t0))
    failed+=("$name")
  fi
}

lint_format() {
  local out rc=0
  out=$(hack/biome ci --colors=off --error-on-warnings --no-errors-on-unmatched . 2>&1) || rc=$?
  [ $rc = 0 ] || tail -n 60 <<<"$out"
  return $rc
}

python_checks() {
  "$TOOLS_VENV/bin/ruff" check --quiet . && "$TOOLS_VENV/bin/ruff" format --check --quiet .
}

import_cycles() {
  local globs out rc=0
  mapfile -t globs < <(node -p 'require("./package.json").workspaces.map((w) => `${w}/**/*.ts`).join("\n")')
  out=$(npx --no-install dpdm --no-tree --no-warning --no-progress --exit-code circular:1 --exclude '/(node_modules|dist)/' "${globs[@]}" 2>&1) || rc=$?
  [ $rc = 0 ] || grep -A 50 'Circular Dependencies' <<<"$out"
  return $rc
}

# Not --quiet: it hides the warnings that --strict counts, and the build would pass.
docs_build() {
  local out rc=0
  out=$(NO_MKDOCS_2_WARNING=1 "$TOOLS_VENV/bin/mkdocs" build --strict --site-dir .cache/site 2>&1) || rc=$?
  grep -v '^INFO' <<<"$out" || true
  return $rc
}

t_all=$SECONDS
step types npx --no-install tsc -b
step ships npx --no-install tsc -b tsconfig.build.json
step lint+format lint_format
step python python_checks
step 'errors table' node hack/check-errors.mjs
step docs docs_build
step 'docs paths' python3 hack/check-doc-paths.py
step 'import cycles' import_cycles
step 'tf locks' python3 terraform/hack/check_locks.py

if [ ${#failed[@]} -gt 0 ]; then
  echo "verify: FAILED: ${failed[*]} ($((SECONDS - t_all)) s); \`make fmt\` fixes formatting and the safe lint fixes" >&2
  exit 1
fi
echo "verify: all checks passed ($((SECONDS - t_all)) s)"
