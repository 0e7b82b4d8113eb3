#!/usr/bin/env bash
# `make fmt`: the fixer that goes with `make verify`. Formats every TS/JS/JSON file of the tree
# (biome, config biome.json) and applies biome's safe lint fixes, then formats the Python scripts
# and applies ruff's safe fixes (config ruff.toml). Lint findings without a safe fix are printed
# at the end: fix those by hand.
set -o errexit -o nounset -o pipefail
cd "$(dirname "$0")/.."

TOOLS_VENV=${TOOLS_VENV:-.cache/tools-venv}

# biome exits non-zero when findings remain after the safe fixes; they are reported below.
hack/biome check --write --colors=off . >/dev/null 2>&1 || true
# A second, format-only pass: one pass of `check --write` can leave a file that a format pass
# changes again (seen with long function signatures).
hack/biome format --write --colors=off . >/dev/null 2>&1 || true
"$TOOLS_VENV/bin/ruff" check --fix --quiet . || true
"$TOOLS_VENV/bin/ruff" format --quiet .

status=0
hack/biome lint --colors=off --max-diagnostics=none --reporter=github . 2>/dev/null |
  sed -nE 's/^::(error|warning) title=([^,]*),file=([^,]*),line=([0-9]+).*::(.*)$/\3:\4  \2  \5/p' |
  sed "s|^$PWD/||" >.cache/fmt-remaining.txt || true
"$TOOLS_VENV/bin/ruff" check --quiet --output-format=concise . >>.cache/fmt-remaining.txt 2>&1 || true
if [ -s .cache/fmt-remaining.txt ]; then
  echo "fmt: formatted; $(wc -l <.cache/fmt-remaining.txt) lint finding(s) need a hand fix:"
  cat .cache/fmt-remaining.txt
  status=1
else
  echo "fmt: formatted; no lint findings left"
fi
exit $status
