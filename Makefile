# Syncmesh Edge: the one entry point.
#
# Common uses:
#   make demo            set up everything on a fresh machine and run the local demo
#   make test            set up everything and run every test tier (unit + integration)
#   make build           compile the TypeScript workspaces (tsc -b)
#   make bench-function  latency/throughput of the Syncmesh function against direct queries
#   make clean           remove build output (keeps node_modules and tool caches)
#
# Targets are thin: scripts under each component do the work.

SHELL := /usr/bin/env bash
.SHELLFLAGS := -o errexit -o nounset -o pipefail -c
.DEFAULT_GOAL := help

################################################################################
# OPTIONS (override on the command line: make demo NODES=3)
################################################################################
# Where the Sofia CSVs are; empty means "generate deterministic data instead".
DATA ?=
# Test server jar (mongo-java-server launcher), built by Maven on first use.
TEST_SERVER_JAR := scenarios/mongo-test-server/java/target/mongo-test-server.jar
# Stamp that records a completed `npm ci` for the current lockfile.
NPM_STAMP := node_modules/.package-lock.json

################################################################################
# Dependencies
################################################################################
$(NPM_STAMP): package-lock.json package.json
	npm ci --no-audit --no-fund
	@touch $@

$(TEST_SERVER_JAR): scenarios/mongo-test-server/java/pom.xml $(shell find scenarios/mongo-test-server/java/src -name '*.java')
	cd scenarios/mongo-test-server/java && mvn -q -B package -DskipTests

.PHONY: deps
deps: $(NPM_STAMP) $(TEST_SERVER_JAR) ## Install npm packages and build the test server jar.

################################################################################
# Building
################################################################################
.PHONY: build
build: deps ## Compile all TypeScript workspaces.
	npx tsc -b

################################################################################
# Testing
################################################################################
.PHONY: test
test: build ## Run every test tier of every workspace.
	hack/test.sh

################################################################################
# Demo and benchmarks
################################################################################
.PHONY: demo
demo: build ## One node with data, answering a collect and an aggregate query.
	node functions/syncmesh/dist/scripts/demo.js $(if $(DATA),--data "$(DATA)")

.PHONY: bench-function
bench-function: build ## Function latency/throughput vs direct driver queries (needs ../shared/data or DATA=).
	node functions/syncmesh/dist/scripts/bench.js $(if $(DATA),--data "$(DATA)")

################################################################################
# Cleanup
################################################################################
.PHONY: clean
clean: ## Remove build output.
	npx tsc -b --clean || true
	rm -rf functions/*/dist listeners/dist miso-agent/dist scenarios/*/dist

.PHONY: help
help: ## List the targets.
	@grep -E '^[a-zA-Z_-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-18s %s\n", $$1, $$2}'
